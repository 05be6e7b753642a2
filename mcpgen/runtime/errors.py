"""JSON-RPC and MCP error codes, and the exceptions that carry them."""

from __future__ import annotations

from typing import Any

from msgspec import UNSET, UnsetType

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
RESOURCE_NOT_FOUND = -32002
URL_ELICITATION_REQUIRED = -32042
# Implementation-defined (JSON-RPC reserves -32000..-32099 for servers): too many
# requests of one session are running and waiting already.
SERVER_BUSY = -32000


class McpError(Exception):
    """An error a peer answered with, or one a handler raises to answer with.

    Raise it (or a subclass) in a handler to send that JSON-RPC error; any other
    exception is answered with -32603 and no detail.
    """

    def __init__(self, code: int, message: str, data: Any | UnsetType = UNSET) -> None:
        super().__init__(f"{message} ({code})")
        self.code = code
        self.message = message
        self.data = data


class InvalidParams(McpError):
    def __init__(self, message: str, data: Any | UnsetType = UNSET) -> None:
        super().__init__(INVALID_PARAMS, message, data)


class MethodNotFound(McpError):
    def __init__(self, method: str, why: str = "") -> None:
        super().__init__(METHOD_NOT_FOUND, f"Method not found: {method}{f' ({why})' if why else ''}")


class ResourceNotFound(McpError):
    def __init__(self, uri: str) -> None:
        super().__init__(RESOURCE_NOT_FOUND, f"Resource not found: {uri}", {"uri": uri})


class CapabilityError(McpError):
    """A message the peer (or this side) did not declare the capability for."""

    def __init__(self, message: str) -> None:
        super().__init__(METHOD_NOT_FOUND, message)


class ConnectionClosed(ConnectionError):
    """The peer went away; pending requests fail with this."""


class RequestTimeout(TimeoutError):
    """A request got no response in time (it was cancelled at the peer)."""
