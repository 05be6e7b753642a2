"""The SSE streams of a handshake-era Streamable HTTP session: serving one on a connection,
keeping what comes while no connection reads it, and resuming it with ``Last-Event-ID``.

A session's server messages travel on streams: one per request (its POST's response, when
the handler sends something before its result) and the standalone one (the GET stream).
Every event sent is kept in the session's event store under an id; a client whose
connection dropped sends that id back on a GET and gets what followed it. A stream has one
reader at a time: a resume takes it over from a connection still reading it. With a shared
store (several workers), a stream no connection reads here goes to the store as it comes,
and a resume on any worker follows it there.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from mcpgen.runtime.errors import INTERNAL_ERROR
from mcpgen.runtime.jsonrpc.framing import error_frame
from mcpgen.runtime.stores.event_store import EventStore, SharedEventStore
from mcpgen.runtime.stores.shared_store import StoreUnavailable, WriterGone
from mcpgen.runtime.transports import sse
from mcpgen.runtime.transports.asgi import HttpError, Message, Receive, Send, send_within, sse_headers, wait_disconnect
from mcpgen.runtime.transports.asgi import body as send_body

if TYPE_CHECKING:
    from mcpgen.runtime.server.http_options import HttpOptions

log = logging.getLogger("mcpgen")

MAX_DETACHED = 10_000  # messages kept for a stream no connection is reading
WRITER_GONE = (
    "Internal error: the server process serving this request stopped before answering; "
    "its outcome is unknown (retry it if it is safe to)"
)
_PROGRESS = b'"method":"notifications/progress"'


def keeps(buffered: int, frame: bytes, budget: int, final: bool | None) -> bool:
    """Whether ``frame`` may join the ``buffered`` bytes waiting for a stream's reader:
    always a response (or a request to end the connection); below ``budget`` anything;
    up to twice it anything but progress (superseded by the next report anyway)."""
    if final is not False or buffered < budget:
        return True
    if frame.find(_PROGRESS, 0, 64) >= 0:
        return False
    return buffered < 2 * budget


def _more(chunk: bytes) -> Message:
    return {"type": "http.response.body", "body": chunk, "more_body": True}


class Dropped:
    """Counts what a stream dropped for a reader that was not reading, and says so once."""

    __slots__ = ("count", "where")

    def __init__(self, where: str) -> None:
        self.count = 0
        self.where = where

    def note(self) -> None:
        self.count += 1
        if self.count == 1:
            log.warning("mcpgen: %s: its client is not reading; dropping notifications past its buffer", self.where)


class StreamHolder(Protocol):
    """What serving a stream uses of the session transport that owns it (it sits above)."""

    events: EventStore
    shared: SharedEventStore | None  # ``events`` when other workers read it too
    standalone: Stream | None

    async def retire(self, stream: Stream, stored: bool) -> None: ...


class Holder(Protocol):
    """A live session, as serving its streams sees it."""

    @property
    def transport(self) -> StreamHolder: ...
    @property
    def extra(self) -> dict[str, Any]: ...


class FrameQueue(asyncio.Queue[tuple[bytes, bool | None]]):
    """A stream's frames waiting for its reader, and their bytes (``size``)."""

    size = 0

    def _put(self, item: tuple[bytes, bool | None]) -> None:
        self.size += len(item[0])
        super()._put(item)

    def _get(self) -> tuple[bytes, bool | None]:
        item = super()._get()
        self.size -= len(item[0])
        return item


class Stream:
    """The frames of one SSE stream (a POST's, or the standalone GET one), waiting for
    whichever HTTP connection is currently serving it."""

    def __init__(self, stream_id: str) -> None:
        self.id = stream_id
        # (frame, final); final None is no frame but a request to close the connection.
        self.queue = FrameQueue()
        self.dropped: Dropped | None = None  # what was dropped for a reader not reading
        self.done = False  # the final frame has been queued
        self.attached = False  # an HTTP connection is reading it
        # One reader at a time: a GET resuming this stream while a connection still reads it
        # resolves ``leave`` (that reader stores what it took and ends its response) and
        # waits for ``left`` before it replays, so nothing is split between the two.
        self.leave: asyncio.Future[None] | None = None
        self.left = asyncio.Event()


async def serve_stream(
    options: HttpOptions,
    live: Holder,
    stream: Stream,
    receive: Receive,
    send: Send,
    extra: list[tuple[bytes, bytes]],
    *,
    prime: bool,
    replay: Iterable[tuple[str, bytes]] = (),
    first: tuple[bytes, bool | None] | None = None,
) -> None:
    """Serve ``stream`` as SSE on this connection until its final frame or a disconnect
    (after which the frames wait in the store for a resuming GET)."""
    events = live.transport.events
    await send({"type": "http.response.start", "status": 200, "headers": sse_headers(extra)})
    disconnected = asyncio.ensure_future(wait_disconnect(receive))
    leave = stream.leave = asyncio.get_running_loop().create_future()
    stream.left.clear()
    stream.attached = True
    # Events ready at the same moment go out in one body message (one write): often the
    # priming event, a notification and the response of a request all at once.
    ready: list[bytes] = []
    try:
        if prime and (event_id := await keep(events, stream.id, b"")) is not None:
            ready.append(sse.event(b"", event_id, options.retry_ms))
        for event_id, frame in replay:
            if frame:
                ready.append(sse.event(frame, event_id))
        while first is not None or not (stream.done and stream.queue.empty()):
            if first is not None:
                frame, final = first
                first = None
            elif disconnected.done():
                return
            elif leave.done():  # another connection took this stream over
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                return
            elif not stream.queue.empty():  # no task and no wait for what is already here
                frame, final = stream.queue.get_nowait()
            else:
                if ready:
                    # A client not reading holds the send: ended after stall_timeout.
                    await send_within(send, _more(b"".join(ready)), options.stall_timeout)
                    ready.clear()
                getter = asyncio.ensure_future(stream.queue.get())
                done, _ = await asyncio.wait(
                    {getter, disconnected, leave}, timeout=options.keepalive, return_when=asyncio.FIRST_COMPLETED
                )
                if disconnected in done or leave in done:
                    getter.cancel()
                    if getter.done() and not getter.cancelled():
                        # Taken off the queue as the client left: into the store with it.
                        frame, final = getter.result()
                        if final is not None:
                            await keep(events, stream.id, frame)
                            if final:
                                await end_stream(live.transport.shared, stream.id)
                    if leave.done() and not disconnected.done():
                        await send({"type": "http.response.body", "body": b"", "more_body": False})
                    return
                if getter not in done:
                    getter.cancel()
                    await send_within(send, _more(sse.KEEPALIVE), options.stall_timeout)
                    continue
                frame, final = getter.result()
            if final is None:
                break  # the handler asked to end this connection (polling); the stream lives on
            ready.append(sse.event(frame, await keep(events, stream.id, frame)))
            if final:
                await end_stream(live.transport.shared, stream.id)
                break
        await send_within(send, {"type": "http.response.body", "body": b"".join(ready)}, options.stall_timeout)
    except TimeoutError:
        # The client took nothing for stall_timeout seconds: its connection is ended, the
        # stream parked (what was sent is in the store: a resume replays it).
        log.warning("mcpgen: a client read nothing of stream %s for %g s; ending its connection", stream.id,
                    options.stall_timeout)  # fmt: skip
    finally:
        stream.attached = False
        disconnected.cancel()
        if stream.leave is leave:
            stream.leave = None
        stream.left.set()
        await park(options, live, stream)


async def park(options: HttpOptions, live: Holder, stream: Stream) -> None:
    """A connection left before its stream ended: keep storing what comes, so a GET with
    Last-Event-ID can pick it up."""
    transport = live.transport
    if stream.done and stream.queue.empty():
        if stream is not transport.standalone:
            await transport.retire(stream, stored=True)
        return
    if stream is transport.standalone:
        return  # stays the session's standalone stream for the next GET
    if transport.shared is not None:
        # Another worker may serve the resume: what comes goes to the shared store.
        drains: set[asyncio.Task[None]] = live.extra.setdefault("drains", set())
        task = asyncio.ensure_future(drain(live, stream, transport.shared))
        drains.add(task)
        task.add_done_callback(drains.discard)
        return
    parked: dict[str, Stream] = live.extra.setdefault("parked", {})
    parked[stream.id] = stream
    while len(parked) > options.keep_finished_streams:  # nobody came back for the oldest
        oldest = next(iter(parked))
        await transport.retire(parked.pop(oldest), stored=True)


async def drain(live: Holder, stream: Stream, events: SharedEventStore) -> None:
    """Store a detached stream's frames as they come, then its end (shared store). A store
    that is away holds the frames back (they wait in the stream's queue, within its
    buffer) until it answers again: nothing is skipped, so a follower never meets a hole;
    the standalone stream is drained for as long as the session lives."""
    standalone = stream is live.transport.standalone
    patience = _Patience(f"stream {stream.id}")
    try:
        while True:
            frame, final = await stream.queue.get()
            if final is None:
                if stream.done:
                    break  # the request was cancelled: no response will come
                continue  # a request to end the connection: there is none
            await patience.retry(lambda: events.store(stream.id, frame))  # noqa: B023 (awaited here)
            if final and not standalone:
                break
        await patience.retry(lambda: events.end(stream.id))
    finally:
        if not standalone:
            await live.transport.retire(stream, stored=True)


class _Patience:
    """Retries a store write while the store is away (0.1 s, doubling to 2 s), one
    warning per outage."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.tries = 0

    async def retry(self, step: Callable[[], Awaitable[Any]]) -> Any:
        while True:
            try:
                found = await step()
            except StoreUnavailable as exc:
                if self.tries == 0:
                    log.warning("mcpgen: %s waits for its store: %s", self.what, exc.message)
                self.tries += 1
                await asyncio.sleep(min(2.0, 0.1 * 2 ** min(self.tries, 5)))
                continue
            if self.tries:
                log.warning("mcpgen: %s reaches its store again", self.what)
                self.tries = 0
            return found


async def serve_shared(
    options: HttpOptions,
    events: SharedEventStore,
    session_id: str,
    last: str,
    replayed: list[tuple[str, bytes]],
    receive: Receive,
    send: Send,
    *,
    follow: bool,
    writer: str | None = None,
    missing_ok: bool = False,
    first: bytes = b"",
    lives: Callable[[], Awaitable[bool]] | None = None,
) -> None:
    """SSE from the shared store: ``first`` (a priming event), ``replayed`` (the events
    after ``last``), then (``follow``) those stored later, until the stream's end or the
    client leaves.

    A writer that stopped (its lease lapsed) ends the stream with an error answering its
    request, which the client can act on; a store that is away keeps the connection (with
    keep-alives) for ``store_patience`` seconds, then ends it. ``writer`` and
    ``missing_ok``: see :meth:`SharedEventStore.follow` (the standalone stream's, which
    ends when its session does: ``lives`` says, at each keep-alive)."""
    extra = [(b"mcp-session-id", session_id.encode())]
    await send({"type": "http.response.start", "status": 200, "headers": sse_headers(extra)})
    disconnected = asyncio.ensure_future(wait_disconnect(receive))
    after = replayed[-1][0] if replayed else last  # the last event sent (where a new follow starts)

    def following() -> AsyncIterator[list[tuple[str, bytes]]]:
        return events.follow(after, writer=writer, missing_ok=missing_ok)

    batches = following() if follow else None
    pending: asyncio.Future[list[tuple[str, bytes]] | None] | None = None
    away: float | None = None  # since when the store has been away
    loop = asyncio.get_running_loop()
    try:
        if first:
            await send_body(send, first)
        batch: list[tuple[str, bytes]] | None = replayed
        while batch is not None:
            body = b"".join(sse.event(frame, event_id) for event_id, frame in batch if frame)
            if batch:
                after = batch[-1][0]
            if body:
                async with asyncio.timeout(options.stall_timeout):  # a client not reading holds it
                    await send_body(send, body)
            if batches is None:
                break
            if pending is None:
                pending = asyncio.ensure_future(next_batch(batches))
            waiting: set[asyncio.Future[Any]] = {pending, disconnected}
            done, _ = await asyncio.wait(waiting, timeout=options.keepalive, return_when=asyncio.FIRST_COMPLETED)
            if disconnected in done:
                return
            if pending not in done:
                if lives is not None and not await lives():
                    break  # its session has ended
                async with asyncio.timeout(options.stall_timeout):
                    await send_body(send, sse.KEEPALIVE)
                batch = []
                continue
            try:
                batch, pending = pending.result(), None
                away = None
            except StoreUnavailable as exc:
                # Away (frozen, restarting): hold on, then follow again from the last event.
                pending = None
                now = loop.time()
                away = now if away is None else away
                if now - away > options.store_patience:
                    log.warning("mcpgen: a shared SSE stream was cut short: %s", exc.message)
                    return
                await asyncio.wait({disconnected}, timeout=min(1.0, options.keepalive))
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await batches.aclose()  # type: ignore[attr-defined]
                batches = following()
                batch = []
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    except WriterGone as gone:
        # The worker writing it has stopped: nothing more will come. Said, not left hanging.
        log.warning("mcpgen: the worker writing a followed stream of session %s stopped", session_id[:8])
        body = b""
        if gone.request is not None:
            body = sse.event(error_frame(INTERNAL_ERROR, WRITER_GONE, msgspec.json.decode(gone.request)))
        with contextlib.suppress(Exception):
            await send({"type": "http.response.body", "body": body, "more_body": False})
    except TimeoutError:
        log.warning("mcpgen: a client read nothing of a shared stream for %g s; ending it", options.stall_timeout)
    finally:
        disconnected.cancel()
        if pending is not None:
            pending.cancel()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await pending
        closing = getattr(batches, "aclose", None)  # an async generator's cleanup
        if closing is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await closing()


async def take_over(stream: Stream) -> None:
    """Ask the connection reading ``stream`` to leave it, and wait until it has."""
    if stream.leave is not None and not stream.leave.done():
        stream.leave.set_result(None)
    try:
        async with asyncio.timeout(5):
            await stream.left.wait()
    except TimeoutError:
        raise HttpError(409, "Conflict: the stream's other connection did not let go") from None


async def replay(events: EventStore, last: str, session_id: str) -> tuple[str, list[tuple[str, bytes]]]:
    """The stream of ``last`` and its events after it; 404 unless it is this session's."""
    try:
        found = await events.replay_after(last)
    except StoreUnavailable as exc:
        raise HttpError(503, f"Service Unavailable: {exc.message}", code=exc.code) from None
    if found is None or not of_session(found[0], session_id):
        raise HttpError(404, "Not Found: unknown Last-Event-ID")
    return found[0], list(found[1])


async def next_batch(batches: AsyncIterator[list[tuple[str, bytes]]]) -> list[tuple[str, bytes]] | None:
    """The next batch, or None after the last."""
    return await anext(batches, None)


async def keep(events: EventStore, stream_id: str, frame: bytes) -> str | None:
    """Store an event; its id, or None when a shared store is down: the event then goes
    out without an id (the client gets it, but cannot resume after it)."""
    try:
        return await events.store(stream_id, frame)
    except StoreUnavailable as exc:
        _store_down(exc)
        return None


async def end_stream(shared: SharedEventStore | None, stream_id: str) -> None:
    """Mark a stream's end in a shared store (if any), for a reader following it on another
    worker."""
    if shared is not None:
        try:
            await shared.end(stream_id)
        except StoreUnavailable as exc:
            _store_down(exc)


_store_warned = [0.0]  # when the last "store down" warning was logged


def _store_down(exc: StoreUnavailable) -> None:
    """Log a shared store's outage, at most once every 10 s (each event would say it)."""
    now = time.monotonic()
    if now - _store_warned[0] >= 10.0:
        _store_warned[0] = now
        log.warning("mcpgen: SSE events sent without ids (not resumable): %s", exc.message)


def of_session(stream_id: str, session_id: str) -> bool:
    """Whether a stream is one of this session's (stream ids start with the session id's
    first 8 characters): a Last-Event-ID of another session is unknown here."""
    return stream_id.startswith(session_id[:8] + "-")
