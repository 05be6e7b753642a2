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
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from msgspec import UNSET

from mcpgen.runtime.errors import INVALID_REQUEST, SERVER_BUSY, UNSUPPORTED_VERSION
from mcpgen.runtime.jsonrpc import eager
from mcpgen.runtime.jsonrpc.framing import Envelope, error_frame
from mcpgen.runtime.server.stateless import http_status
from mcpgen.runtime.transports import sse
from mcpgen.runtime.transports.asgi import Receive, Send, respond, sse_headers
from mcpgen.runtime.versions import SUPPORTED, era_of

if TYPE_CHECKING:
    from mcpgen.runtime.server.host import Host

_END: Any = object()
_UNBOUNDED = frozenset({"subscriptions/listen"})


class Slots:
    """At most ``running`` handlers at once; up to ``4 * running`` more wait their turn in
    order. Taking a free slot costs no task and no wait (the common case)."""

    def __init__(self, running: int) -> None:
        self.free = running
        self.max_waiting = 4 * running
        self._line: deque[asyncio.Future[None]] = deque()

    def take(self) -> bool:
        """Take a free slot now, if there is one and nobody waits before us."""
        if self.free > 0 and not self._line:
            self.free -= 1
            return True
        return False

    def queue(self) -> asyncio.Future[None] | None:
        """A place in line: the future is resolved when a slot is handed over (cancel it
        to leave the line). None when the line is full."""
        if len(self._line) >= self.max_waiting:
            return None
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._line.append(turn)
        return turn

    def leave(self) -> None:
        """Give a slot back: to the first one still waiting, else to the free ones."""
        while self._line:
            turn = self._line.popleft()
            if not turn.done():
                turn.set_result(None)
                return
        self.free += 1


async def post(
    server: Host, env: Envelope, headers: Mapping[str, str], receive: Receive, send: Send, slots: Slots | None = None
) -> None:
    """Answer one stateless-era POST (its body already read and decoded into ``env``);
    ``slots`` bounds the handlers running at once."""
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
    # Made when first needed: most requests are answered on the spot, sending nothing first.
    frames: _Frames | None = None

    async def sink(frame: bytes) -> None:
        nonlocal frames
        if frames is None:
            frames = _Frames()
        frames.put(frame)

    answer = server.stateless.handle_now(env, sink=sink, headers=headers)
    if isinstance(answer, tuple):
        # Refused, or answered on the spot (a tool declared blocking=False): nothing was
        # sent before the result, so it is plain JSON, with no task to start or watch.
        frame, code = answer
        await respond(send, 200 if code is None else http_status(code), frame)
        return
    pending = answer
    disconnected: asyncio.Future[None] | None = None
    gate = slots if slots is not None and env.method not in _UNBOUNDED else None
    if gate is not None and not gate.take():
        # No free slot: wait in line, watching for the client going away meanwhile.
        disconnected = asyncio.ensure_future(_disconnect(receive))
        if not await take_slot(gate, disconnected):
            close = getattr(pending, "close", None)
            if close is not None:
                close()  # never started: closed unrun
            gone = disconnected.done()
            disconnected.cancel()
            if not gone:
                busy = error_frame(SERVER_BUSY, "Server busy: too many requests in flight; retry later", env.id)
                await respond(send, 200, busy)
            return

    async def run() -> tuple[bytes, int | None]:
        try:
            return await pending
        finally:
            if gate is not None:
                gate.leave()
            if frames is not None:  # someone waits for frames (else the result is read off the task)
                frames.put(_END)

    task = eager.start(run())
    try:
        if disconnected is None:
            # Most handlers finish (an async def that awaits nothing slow) or send their
            # first message in their task's first step: let it take that step (an eager
            # task has taken it already) before setting up the wait (a task watching for
            # a disconnect), which only a handler still running needs.
            if not task.done():
                await asyncio.sleep(0)
            if frames is None and task.done():
                frame, code = task.result()
                await respond(send, 200 if code is None else http_status(code), frame)
                return
            disconnected = asyncio.ensure_future(_disconnect(receive))
        if frames is None:
            frames = _Frames()
            if task.done():
                frames.put(_END)  # it ended before there was anywhere to say so
        frames.watch(disconnected)
        first = await frames.next()
        if first is None:
            return  # the client went away before anything was sent
        if first is _END:
            frame, code = task.result()
            await respond(send, 200 if code is None else http_status(code), frame)
            return
        await _stream(first, frames, task, send)
    finally:
        if disconnected is not None:
            disconnected.cancel()
        if not task.done():
            task.cancel()  # the client closed the stream: that cancels the request
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task


class _Frames:
    """What one POST's handler sends before its end, in order, and one future to wait on
    for the next of them or the client leaving (what an ``asyncio.Queue`` read raced
    against a disconnect with ``asyncio.wait`` did, without a task and a wait per frame)."""

    def __init__(self) -> None:
        self.items: deque[Any] = deque()
        self.gone: asyncio.Future[None] | None = None  # the client's disconnect
        self._wake: asyncio.Future[None] | None = None

    def put(self, item: Any) -> None:
        self.items.append(item)
        self._poke()

    def watch(self, gone: asyncio.Future[None]) -> None:
        self.gone = gone
        gone.add_done_callback(self._poke)

    def _poke(self, _: Any = None) -> None:
        wake = self._wake
        if wake is not None and not wake.done():
            wake.set_result(None)

    async def next(self) -> Any:
        """The next frame (or ``_END``), or None once the client has gone."""
        while not self.items:
            if self.gone is not None and self.gone.done():
                return None
            self._wake = asyncio.get_running_loop().create_future()
            try:
                await self._wake
            finally:
                self._wake = None
        return self.items.popleft()


async def take_slot(slots: Slots, disconnected: asyncio.Future[None]) -> bool:
    """A slot, at once or after waiting in line; False when the line is full or the
    client went away while waiting."""
    if slots.take():
        return True
    turn = slots.queue()
    if turn is None:
        return False
    await asyncio.wait((turn, disconnected), return_when=asyncio.FIRST_COMPLETED)
    if turn.done() and not turn.cancelled():
        if not disconnected.done():
            return True
        slots.leave()  # handed over just as the client went: pass it on
        return False
    turn.cancel()
    return False


async def _stream(first: bytes, frames: _Frames, task: asyncio.Future[tuple[bytes, int | None]], send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": sse_headers([])})
    item: Any = first
    while item is not _END:
        await send({"type": "http.response.body", "body": sse.event(item), "more_body": True})
        item = await frames.next()
        if item is None:
            return
    await send({"type": "http.response.body", "body": sse.event(task.result()[0]), "more_body": False})


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
