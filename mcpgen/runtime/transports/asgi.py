"""What the HTTP transports share: ASGI types, reading a body, answering, streaming events.

Hand-written on purpose: mcpgen serves raw ASGI (no framework) because the per-request
cost of the HTTP layer is most of what a small MCP call costs."""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from mcpgen.runtime.errors import INVALID_REQUEST
from mcpgen.runtime.jsonrpc.framing import FrameDropped, error_frame

log = logging.getLogger("mcpgen")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class HttpError(Exception):
    def __init__(
        self, status: int, message: str, code: int = INVALID_REQUEST, headers: list[tuple[bytes, bytes]] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.headers = headers  # extra response headers (Retry-After on a 503)


def accepts(accept: str, media: str) -> bool:
    kinds = _media_kinds(accept)
    major = media.split("/")[0]
    return media in kinds or "*/*" in kinds or f"{major}/*" in kinds


@functools.lru_cache(maxsize=64)
def _media_kinds(accept: str) -> frozenset[str]:
    # A client sends the same Accept on every request: parsed once (bounded, so a peer
    # varying it only costs the parse).
    return frozenset(part.split(";")[0].strip().lower() for part in accept.split(","))


async def read_body(receive: Receive, limit: int) -> bytes:
    message = await receive()
    if message["type"] == "http.request" and not message.get("more_body", False):
        body: bytes = message.get("body", b"")  # the whole body in one message: the common case
        if len(body) > limit:
            raise HttpError(413, f"Payload Too Large: the limit is {limit} bytes")
        return body
    return await _read_rest(receive, limit, message)


async def _read_rest(receive: Receive, limit: int, message: Any) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        if message["type"] == "http.disconnect":
            raise HttpError(400, "Bad Request: the client went away")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise HttpError(413, f"Payload Too Large: the limit is {limit} bytes")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)
        message = await receive()


async def wait_disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def respond(
    send: Send,
    status: int,
    body: bytes,
    content_type: bytes = b"application/json",
    extra: list[tuple[bytes, bytes]] | None = None,
) -> None:
    headers = [(b"content-length", str(len(body)).encode())]
    if body:
        headers.append((b"content-type", content_type))
    headers.extend(extra or ())
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def sse_headers(extra: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    return [
        (b"content-type", b"text/event-stream"),
        (b"cache-control", b"no-cache"),
        (b"x-accel-buffering", b"no"),
        *extra,
    ]


async def body(send: Send, chunk: bytes) -> None:
    await send({"type": "http.response.body", "body": chunk, "more_body": True})


async def refuse_unreadable(send: Send, exc: FrameDropped) -> None:
    """A response (or error) we cannot read gets no JSON-RPC answer; over HTTP the POST
    still needs a status: 400, with an error that names no request."""
    log.warning("mcpgen: dropped %s", exc)
    await respond(send, 400, error_frame(INVALID_REQUEST, f"Invalid Request: {exc}"))
