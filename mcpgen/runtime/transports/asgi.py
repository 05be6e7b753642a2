"""What the HTTP transports share: ASGI types, reading a body, answering, streaming events.

Hand-written on purpose: mcpgen serves raw ASGI (no framework) because the per-request
cost of the HTTP layer is most of what a small MCP call costs."""

from __future__ import annotations

import asyncio
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
    stall: float | None = None,
) -> None:
    """A whole response; with ``stall``, TimeoutError if the client takes nothing for
    that long (see :func:`send_within`)."""
    headers = [(b"content-length", str(len(body)).encode())]
    if body:
        headers.append((b"content-type", content_type))
    headers.extend(extra or ())
    await send({"type": "http.response.start", "status": status, "headers": headers})
    if stall is None:
        await send({"type": "http.response.body", "body": body})
    else:
        await send_within(send, {"type": "http.response.body", "body": body}, stall)


async def send_within(send: Send, message: Message, limit: float) -> None:
    """``send(message)``, or TimeoutError once the client has taken nothing for about
    ``limit`` seconds (a send waits while the client does not read). Sends under way are
    checked by one timer per limit, ticking only while some are: ``asyncio.timeout`` would
    start and stop a timer for every send, which under uvloop cost more than the whole
    answer of a small call (about 15 µs of 40)."""
    task = asyncio.current_task()
    assert task is not None
    watch = _watches.get(limit)
    if watch is None:
        watch = _watches[limit] = _StallWatch(limit)
    watch.sending[task] = watch.now()
    cancelling = task.cancelling()  # cancellations already under way (not ours), as asyncio.timeout
    try:
        await send(message)
    except asyncio.CancelledError:
        if task in watch.expired:
            watch.expired.discard(task)
            if task.uncancel() <= cancelling:
                raise TimeoutError from None
        raise
    finally:
        watch.sending.pop(task, None)


class _StallWatch:
    """The sends under way with one limit, and the timer that ends those past it."""

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self.sending: dict[asyncio.Task[Any], float] = {}  # -> when its send began
        self.expired: set[asyncio.Task[Any]] = set()  # cancelled here: a timeout
        self.loop: asyncio.AbstractEventLoop | None = None
        self.tick: asyncio.TimerHandle | None = None

    def now(self) -> float:
        loop = asyncio.get_running_loop()
        if loop is not self.loop:  # a new loop (tests run several): the old one's sends are gone
            self.loop, self.tick = loop, None
            self.sending.clear()
            self.expired.clear()
        if self.tick is None:
            self.tick = loop.call_later(max(self.limit / 4, 0.01), self.check)
        return loop.time()

    def check(self) -> None:
        assert self.loop is not None
        self.tick = None
        now = self.loop.time()
        for task, since in list(self.sending.items()):
            if now - since >= self.limit and task not in self.expired:
                self.expired.add(task)
                task.cancel()  # the task waits in its send (callbacks run between steps)
        if self.sending:
            self.tick = self.loop.call_later(max(self.limit / 4, 0.01), self.check)


_watches: dict[float, _StallWatch] = {}


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
