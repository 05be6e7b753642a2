"""Streamable HTTP in the stateless era (2026-07-28): one POST, one answer.

No session, no GET stream, no resumption. A request's answer is plain JSON when its
handler sends nothing before the result, and an SSE stream when it does (progress, logs,
a ``subscriptions/listen`` stream): the notifications as they come, then the result, then
the end. A client closing the response stream cancels the handler (its task is cancelled
and freed); nothing else is kept per request beyond that task.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from msgspec import UNSET

from mcpgen.runtime import sse
from mcpgen.runtime.asgi import Receive, Send, respond, sse_headers
from mcpgen.runtime.errors import INVALID_REQUEST, UNSUPPORTED_VERSION
from mcpgen.runtime.framing import Envelope, error_frame
from mcpgen.runtime.stateless import http_status
from mcpgen.runtime.versions import SUPPORTED, era_of

if TYPE_CHECKING:
    from mcpgen.runtime.server import Server

_END: Any = object()


async def post(server: Server, env: Envelope, headers: Mapping[str, str], receive: Receive, send: Send) -> None:
    """Answer one stateless-era POST (its body already read and decoded into ``env``)."""
    if not isinstance(env.method, str):
        await respond(send, 400, error_frame(INVALID_REQUEST, "Invalid Request: POST a request or notification"))
        return
    if env.id is UNSET:
        # A notification: the stateless era defines none from client to server, so it is
        # accepted and ignored, unless it names a version this server does not speak.
        version = headers.get("mcp-protocol-version", "").strip(" \t")
        if era_of(version) is None:
            data = {"supported": list(SUPPORTED), "requested": version}
            await respond(
                send, 400, error_frame(UNSUPPORTED_VERSION, f"Unsupported protocol version: {version!r}", data=data)
            )
            return
        await respond(send, 202, b"")
        return
    queue: asyncio.Queue[Any] = asyncio.Queue()

    async def sink(frame: bytes) -> None:
        queue.put_nowait(frame)

    answer = server.stateless.handle_now(env, sink=sink, headers=headers)
    if isinstance(answer, tuple):
        # Refused, or answered on the spot (a tool declared blocking=False): nothing was
        # sent before the result, so it is plain JSON, with no task to start or watch.
        frame, code = answer
        await respond(send, 200 if code is None else http_status(code), frame)
        return
    pending = answer

    async def run() -> tuple[bytes, int | None]:
        try:
            return await pending
        finally:
            queue.put_nowait(_END)

    task = asyncio.ensure_future(run())
    disconnected = asyncio.ensure_future(_disconnect(receive))
    try:
        first = await _next(queue, disconnected)
        if first is None:
            return  # the client went away before anything was sent
        if first is _END:
            frame, code = task.result()
            await respond(send, 200 if code is None else http_status(code), frame)
            return
        await _stream(first, queue, task, disconnected, send)
    finally:
        disconnected.cancel()
        if not task.done():
            task.cancel()  # the client closed the stream: that cancels the request
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task


async def _stream(
    first: bytes,
    queue: asyncio.Queue[Any],
    task: asyncio.Future[tuple[bytes, int | None]],
    disconnected: asyncio.Future[None],
    send: Send,
) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": sse_headers([])})
    item: Any = first
    while item is not _END:
        await send({"type": "http.response.body", "body": sse.event(item), "more_body": True})
        item = await _next(queue, disconnected)
        if item is None:
            return
    await send({"type": "http.response.body", "body": sse.event(task.result()[0]), "more_body": False})


async def _next(queue: asyncio.Queue[Any], disconnected: asyncio.Future[None]) -> Any:
    """The next frame, or None once the client has gone."""
    if not queue.empty():
        return queue.get_nowait()
    getter = asyncio.ensure_future(queue.get())
    await asyncio.wait((getter, disconnected), return_when=asyncio.FIRST_COMPLETED)
    if getter.done():
        return getter.result()
    getter.cancel()
    return None


async def _disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
