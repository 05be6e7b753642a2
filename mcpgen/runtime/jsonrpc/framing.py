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


class FrameDropped(Exception):
    """A frame that gets no answer (a response we cannot read); the session logs it."""


class FrameError(Exception):
    """An incoming frame that must be answered with a JSON-RPC error."""

    def __init__(self, code: int, message: str, id: RequestId | UnsetType = UNSET) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.id = id


def valid_id(value: Any) -> bool:
    # bool is an int subclass in Python, but JSON true/false are not ids.
    if isinstance(value, str):
        return value.isascii() or _encodable(value)
    return isinstance(value, int) and not isinstance(value, bool)


def _encodable(text: str) -> bool:
    """False for a string holding a lone surrogate (JSON allows the escape; UTF-8 does not,
    so it could never be echoed back)."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def decode_envelope(data: bytes | bytearray | memoryview | str) -> Envelope:
    """Decode and classify-check one frame; raise FrameError for a malformed one."""
    try:
        env = _envelope.decode(data)
    except RecursionError:
        raise FrameError(INVALID_REQUEST, "Invalid Request: nested too deeply") from None
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        raise _failure(data, exc) from None
    if env.id is None and env.method is UNSET and env.error is not UNSET:
        env.id = UNSET  # an error answering something the peer could not read (JSON-RPC: id null)
    rid = env.id if type(env.id) is int or valid_id(env.id) else UNSET  # an int id: the usual case, checked inline
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


def _failure(data: bytes | bytearray | memoryview | str, exc: Exception) -> Exception:
    """Why a frame msgspec could not decode is bad, found with the (slower, stricter
    about nothing) standard parser; only failing frames take this path.

    msgspec stops at the first thing it dislikes, which may come before a syntax error
    (``[`` is "expected an object") or be JSON it cannot represent (``1e400``)."""
    import json  # only failing frames need it: not imported before a server's first answer

    try:
        doc = json.loads(bytes(data) if not isinstance(data, str) else data, parse_constant=_not_json)
        json.dumps(doc, ensure_ascii=False).encode()  # lone surrogate escapes are not text
    except (ValueError, RecursionError):
        return FrameError(PARSE_ERROR, "Parse error: invalid JSON")
    if not isinstance(doc, dict):
        return FrameError(INVALID_REQUEST, "Invalid Request: expected one JSON-RPC object")
    raw_id: Any = doc.get("id")
    rid: RequestId | UnsetType = raw_id if valid_id(raw_id) else UNSET
    answerable = rid is not UNSET or (raw_id is None and "error" in doc)
    if "method" not in doc and ("result" in doc or "error" in doc) and doc.get("jsonrpc") == "2.0" and answerable:
        return FrameDropped(f"an unreadable response: {exc}")  # never answer a response
    return FrameError(INVALID_REQUEST, f"Invalid Request: {exc}", rid)


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # Python's parser would accept NaN and Infinity


def error_frame(code: int, message: str, id: RequestId | UnsetType = UNSET, data: Any = UNSET) -> bytes:
    return encode(OutError(error=ErrorObject(code, message, data), id=id))
