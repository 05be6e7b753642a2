"""Streamable HTTP in the stateless era (2026-07-28): one POST, one answer.

No session, no GET stream, no resumption. A request's answer is plain JSON when its
handler sends nothing before the result, and an SSE stream when it does (progress, logs,
a ``subscriptions/listen`` stream): the notifications as they come, then the result, then
the end. A client closing the response stream cancels the handler (its task is cancelled
and freed); nothing else is kept per request beyond that task.

There is no session to bound the requests of one client, so the server bounds them all
together (:class:`Slots`): ``max_concurrency`` handlers run at once, four times as many
wait in order, and past that a request is refused (-32000, "server busy") before its
handler starts. Answers given on the spot take no slot (nothing waits), and neither does
a ``subscriptions/listen`` stream (it lasts as long as the client listens).

A client that stops reading its stream holds nothing without bound: past ``budget`` bytes
waiting, the handler's progress notifications are dropped, past twice that its other
notifications too (its answer is always kept), and a connection that takes nothing for
``stall`` seconds is ended, which cancels the handler.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from msgspec import UNSET

from mcpgen.runtime.errors import INVALID_REQUEST, UNSUPPORTED_VERSION
from mcpgen.runtime.jsonrpc import kernel
from mcpgen.runtime.jsonrpc.framing import Envelope, error_frame
from mcpgen.runtime.jsonrpc.kernel import Slots
from mcpgen.runtime.server.http_streams import Dropped, keeps
from mcpgen.runtime.server.stateless import http_status
from mcpgen.runtime.transports import sse
from mcpgen.runtime.transports.asgi import Receive, Send, respond, send_within, sse_headers
from mcpgen.runtime.versions import SUPPORTED, era_of

if TYPE_CHECKING:
    from mcpgen.runtime.server.host import Host

log = logging.getLogger("mcpgen")
BUDGET = 4 * 1024 * 1024  # bytes of notifications waiting for a reader (see the module's docstring)
STALL = 60.0  # seconds a connection may take nothing before it is ended


async def post(
    server: Host,
    env: Envelope,
    headers: Mapping[str, str],
    receive: Receive,
    send: Send,
    slots: Slots | None = None,
    *,
    budget: int = BUDGET,
    stall: float = STALL,
) -> None:
    """Answer one stateless-era POST (its body already read and decoded into ``env``);
    ``slots`` bounds the handlers running at once; ``budget`` and ``stall`` bound what a
    client that does not read makes it hold (see the module's docstring)."""
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
    front = server.stateless
    reply = kernel.OneReply()
    outbox = _Outbox(reply, budget)
    try:
        request = front.admit(env, sink=outbox.sink, reply=reply, slots=slots, headers=headers)
    except Exception as exc:
        frame, code = front.refusal(env.id, env.method, exc)
        await respond(send, 200 if code is None else http_status(code), frame)
        return
    kernel.serve(request)
    disconnected: asyncio.Future[None] | None = None
    try:
        if not reply.ended and not reply.items:
            # Most handlers finish (an async def that awaits nothing slow) or send their
            # first message in their task's first step: let it take that step (an eager
            # task has taken it already) before setting up the wait (a task watching for
            # a disconnect), which only a handler still running needs.
            await asyncio.sleep(0)
        if reply.ended and not reply.items:
            await _answer(send, reply, stall)  # refused, or answered: plain JSON
            return
        disconnected = asyncio.ensure_future(_disconnect(receive))
        disconnected.add_done_callback(reply.poke)
        while not reply.items and not reply.ended:
            if disconnected.done():
                return  # the client went away before anything was sent
            await reply.wait()
        if not reply.items:
            await _answer(send, reply, stall)
            return
        await _stream(outbox, disconnected, send, stall)
    finally:
        if disconnected is not None:
            disconnected.cancel()
        if not reply.ended:
            kernel.cancel(request)  # the client closed the stream: that cancels the request


class _Outbox:
    """The request's notifications waiting for its stream, within ``budget`` bytes."""

    def __init__(self, reply: kernel.OneReply, budget: int) -> None:
        self.reply = reply
        self.budget = budget
        self.size = 0  # bytes of notifications waiting in reply.items
        self.dropped: Dropped | None = None

    async def sink(self, frame: bytes) -> None:
        if keeps(self.size, frame, self.budget, False):
            self.size += len(frame)
            self.reply.put(frame)
            return
        if self.dropped is None:
            self.dropped = Dropped("a stateless-era response stream")
        self.dropped.note()

    def take(self) -> bytes:
        frame = self.reply.items.popleft()
        self.size -= len(frame)
        return frame


async def _answer(send: Send, reply: kernel.OneReply, stall: float) -> None:
    if reply.answer_frame is not None:  # else: cancelled, nothing to say
        frame, code = reply.answer_frame
        try:
            await respond(send, 200 if code is None else http_status(code), frame, stall=stall)
        except TimeoutError:
            log.warning("mcpgen: a client read nothing of its answer for %g s; ending it", stall)


async def _stream(outbox: _Outbox, disconnected: asyncio.Future[None], send: Send, stall: float) -> None:
    reply = outbox.reply
    await send({"type": "http.response.start", "status": 200, "headers": sse_headers([])})
    try:
        while True:
            while reply.items:
                event = sse.event(outbox.take())
                # A client not reading holds the send: ended after ``stall`` seconds.
                await send_within(send, {"type": "http.response.body", "body": event, "more_body": True}, stall)
            if reply.ended:
                last = reply.answer_frame
                body = sse.event(last[0]) if last else b""
                await send_within(send, {"type": "http.response.body", "body": body, "more_body": False}, stall)
                return
            if disconnected.done():
                return
            await reply.wait()
    except TimeoutError:
        # The client took nothing for ``stall`` seconds: the stream ends here (the
        # connection is closed, the handler cancelled by the caller).
        log.warning("mcpgen: a client read nothing of its event stream for %g s; ending it", stall)


async def next_frame(queue: asyncio.Queue[Any], disconnected: asyncio.Future[None]) -> Any:
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
