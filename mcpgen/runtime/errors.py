"""JSON-RPC and MCP error codes, and the exceptions that carry them."""

from __future__ import annotations

import signal
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
# The stateless era's own codes (2026-07-28 on).
HEADER_MISMATCH = -32020
MISSING_CAPABILITY = -32021
UNSUPPORTED_VERSION = -32022


NO_ANSWER = "dev.mcpgen/noAnswer"
"""In an error's ``data``: the client made the error itself, because no answer came (the
response stream ended, the connection was lost before the response): see
:meth:`McpError.answered`."""


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

    @property
    def answered(self) -> bool:
        """Whether the peer answered with this error (False: the client made it because no
        answer came, e.g. a response stream that ended before its response)."""
        data = self.data
        return not (isinstance(data, dict) and data.get(NO_ANSWER) is True)


class InvalidParams(McpError):
    def __init__(self, message: str, data: Any | UnsetType = UNSET) -> None:
        super().__init__(INVALID_PARAMS, message, data)


class MethodNotFound(McpError):
    def __init__(self, method: str, why: str = "") -> None:
        super().__init__(METHOD_NOT_FOUND, f"Method not found: {method}{f' ({why})' if why else ''}")


class ResourceNotFound(McpError):
    """Raise in a resource or template handler for a URI it has nothing at: the client gets
    the revision's "resource not found" error (-32002 in the handshake era, -32602 in the
    stateless era) naming ``uri`` in its data."""

    def __init__(self, uri: str) -> None:
        super().__init__(RESOURCE_NOT_FOUND, f"Resource not found: {uri}", {"uri": uri})


class CapabilityError(McpError):
    """A message the peer (or this side) did not declare the capability for; ``data``, when
    known: ``{"requiredCapabilities": {...}}``, what was missing."""

    def __init__(self, message: str, data: Any | UnsetType = UNSET) -> None:
        super().__init__(METHOD_NOT_FOUND, message, data)


class ConnectionClosed(ConnectionError):
    """The peer went away; pending requests fail with this."""


class ServerExited(ConnectionClosed):
    """A stdio server went away: its exit status (None while it still runs) and the last
    lines it wrote to stderr, which usually say why (a traceback's last line, "fatal: ...")."""

    def __init__(self, command: str, returncode: int | None, stderr_tail: list[str]) -> None:
        self.command = command
        self.returncode = returncode
        self.stderr_tail = stderr_tail
        super().__init__(self.summary() + "".join(f"\n  {line}" for line in stderr_tail))

    def status(self) -> str:
        if self.returncode is None:
            return "closed its stdout without exiting"
        if self.returncode < 0:
            try:
                name = signal.Signals(-self.returncode).name
            except ValueError:
                name = f"signal {-self.returncode}"
            return f"was killed by {name}"
        return f"exited with status {self.returncode}"

    def summary(self) -> str:
        """One line: what happened, and the server's last stderr line (the reason, mostly)."""
        last = next((line.strip() for line in reversed(self.stderr_tail) if line.strip()), "")
        reason = f": {last}" if last else " (it wrote nothing to stderr)"
        return f"the server {self.status()} before answering{reason}"


class RequestTimeout(TimeoutError):
    """A request got no response in time (it was cancelled at the peer)."""
