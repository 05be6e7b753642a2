"""JSON-RPC 2.0 framing: one decode of the envelope, params and results kept raw until
the method (or the pending request) says which generated type they decode into."""

from __future__ import annotations

from typing import Any, Literal

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType

from mcpgen.runtime.errors import INVALID_REQUEST, PARSE_ERROR

RequestId = str | int


class Envelope(Struct, gc=False):
    """Any incoming message. Loosely typed on purpose: the classifier below turns each
    kind of malformation into the right JSON-RPC error instead of a generic one."""

    jsonrpc: Any = UNSET
    id: Any = UNSET
    method: Any = UNSET
    params: Raw | UnsetType = UNSET
    result: Raw | UnsetType = UNSET
    error: Any = UNSET


class ErrorObject(Struct, gc=False):
    code: int
    message: str
    data: Any = UNSET


class OutRequest(Struct, gc=False):
    id: RequestId
    method: str
    params: Any = UNSET
    jsonrpc: Literal["2.0"] = "2.0"


class OutNotification(Struct, gc=False):
    method: str
    params: Any = UNSET
    jsonrpc: Literal["2.0"] = "2.0"


class OutResult(Struct, gc=False):
    id: RequestId
    result: Any
    jsonrpc: Literal["2.0"] = "2.0"


class OutError(Struct, gc=False):
    error: ErrorObject
    id: RequestId | UnsetType = UNSET  # left out when the request's id could not be read
    jsonrpc: Literal["2.0"] = "2.0"


_envelope = msgspec.json.Decoder(Envelope)
encode = msgspec.json.Encoder().encode


class FrameTooLarge(Exception):
    """A transport received a message over its size limit (and dropped it)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"a message exceeded {limit} bytes")
        self.limit = limit


class FrameError(Exception):
    """An incoming frame that must be answered with a JSON-RPC error."""

    def __init__(self, code: int, message: str, id: RequestId | UnsetType = UNSET) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.id = id


def valid_id(value: Any) -> bool:
    # bool is an int subclass in Python, but JSON true/false are not ids.
    return (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, str)


def decode_envelope(data: bytes | bytearray | memoryview | str) -> Envelope:
    """Decode and classify-check one frame; raise FrameError for a malformed one."""
    try:
        env = _envelope.decode(data)
    except RecursionError:
        raise FrameError(INVALID_REQUEST, "Invalid Request: nested too deeply") from None
    except msgspec.ValidationError:
        # Valid JSON, but not an object: a batch array or a bare scalar.
        raise FrameError(INVALID_REQUEST, "Invalid Request: expected one JSON-RPC object") from None
    except msgspec.DecodeError:
        raise FrameError(PARSE_ERROR, "Parse error: invalid JSON") from None
    rid = env.id if valid_id(env.id) else UNSET
    if env.jsonrpc != "2.0":
        raise FrameError(INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"', rid)
    if env.id is not UNSET and rid is UNSET:
        raise FrameError(INVALID_REQUEST, "Invalid Request: id must be a string or an integer")
    if env.method is not UNSET:
        if not isinstance(env.method, str):
            raise FrameError(INVALID_REQUEST, "Invalid Request: method must be a string", rid)
        if env.result is not UNSET or env.error is not UNSET:
            raise FrameError(INVALID_REQUEST, "Invalid Request: a request carries no result or error", rid)
        return env
    if rid is UNSET:
        if env.error is not UNSET and env.result is UNSET:
            return env  # the peer could not read one of our messages; the session logs it
        raise FrameError(INVALID_REQUEST, "Invalid Request: no method and no id")
    if (env.result is UNSET) == (env.error is UNSET):
        raise FrameError(INVALID_REQUEST, "Invalid Request: a response has exactly one of result, error", rid)
    return env


def error_frame(code: int, message: str, id: RequestId | UnsetType = UNSET, data: Any = UNSET) -> bytes:
    return encode(OutError(error=ErrorObject(code, message, data), id=id))
