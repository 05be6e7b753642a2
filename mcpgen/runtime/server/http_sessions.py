"""The handshake era's Streamable HTTP sessions: each one's transport (frames in from POST
bodies, out to the stream of the request they belong to), and the table of the sessions
open in this process (how many, whose, idle for how long, known to the other workers)."""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from msgspec import UNSET, UnsetType

from mcpgen.runtime.auth.info import current_owner
from mcpgen.runtime.errors import SERVER_BUSY
from mcpgen.runtime.jsonrpc.framing import RequestId
from mcpgen.runtime.server.http_streams import MAX_DETACHED, Dropped, Stream, drain, keeps
from mcpgen.runtime.server.session import ServerSession
from mcpgen.runtime.shared.caller import caller_key
from mcpgen.runtime.stores.event_store import SharedEventStore
from mcpgen.runtime.stores.shared_store import SessionRegistry, StoreUnavailable
from mcpgen.runtime.transports.asgi import HttpError
from mcpgen.runtime.versions import HTTP_DEFAULT

if TYPE_CHECKING:
    from mcpgen.runtime.server.host import Host
    from mcpgen.runtime.server.http_options import HttpOptions

log = logging.getLogger("mcpgen")


class HttpSessionTransport:
    """The transport one :class:`ServerSession` sees: frames in from POST bodies, frames
    out to the stream of the request they belong to."""

    def __init__(self, options: HttpOptions, session_id: str) -> None:
        self.options = options
        self.session_id = session_id
        self.inbox: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.streams: dict[RequestId, Stream] = {}
        self.events = options.event_store()
        # The same store when other workers read it too; checked once here, since checking
        # a Protocol costs about 60 calls and this is asked for every request.
        self.shared: SharedEventStore | None = self.events if isinstance(self.events, SharedEventStore) else None
        self.stream_ids: set[str] = set()
        # Finished streams whose events are kept for a late resume, oldest first.
        self.finished: deque[str] = deque()
        self.abandoned: deque[str] = deque(maxlen=256)  # streams of cancelled requests
        self.last_active = time.monotonic()
        self.readers = 0  # GET streams of this worker following the session's streams in a shared store
        self._counter = 0
        self.closed = False
        # Exists from the start, so messages sent before the client's GET wait for it.
        self.standalone: Stream | None = self.new_stream()

    async def retire(self, stream: Stream, stored: bool) -> None:
        """A stream has ended. Its events stay for a client that missed the end (to
        resume with Last-Event-ID), but only for the last few streams of the session."""
        if stream.id not in self.stream_ids:
            return
        if not stored:
            self.stream_ids.discard(stream.id)
            return
        self.finished.append(stream.id)
        while len(self.finished) > self.options.keep_finished_streams:
            old = self.finished.popleft()
            self.stream_ids.discard(old)
            await self.events.forget(old)

    def new_stream(self) -> Stream:
        self._counter += 1
        stream = Stream(f"{self.session_id[:8]}-{self._counter}")
        self.stream_ids.add(stream.id)
        return stream

    async def receive(self) -> bytes | None:
        return await self.inbox.get()

    async def send(self, frame: bytes, *, related: RequestId | UnsetType = UNSET, final: bool = False) -> None:
        self.send_now(frame, related=related, final=final)

    def send_now(self, frame: bytes, *, related: RequestId | UnsetType = UNSET, final: bool = False) -> bool:
        """Route a frame to its request's stream (or the standalone one); never waits."""
        if self.closed:
            raise ConnectionError("session closed")
        stream = self.streams.get(related) if related is not UNSET else None
        if stream is None or (self.options.json_response and not final):
            stream = self.standalone
            final = False
        if stream is None:
            log.debug("mcpgen: no stream for a server message; dropped")
            return True
        if final and related is not UNSET:
            self.streams.pop(related, None)
            stream.done = True
        elif (not stream.attached and stream.queue.qsize() >= MAX_DETACHED) or not keeps(
            stream.queue.size, frame, self.options.max_stream_buffer, final
        ):
            # Its reader is not reading (or there is none): beyond the stream's buffer its
            # notifications are dropped (progress first), never its response.
            if stream.dropped is None:
                stream.dropped = Dropped(f"stream {stream.id}")
            stream.dropped.note()
            return True
        stream.queue.put_nowait((frame, final))
        return True

    async def drain(self) -> None:
        pass  # streams are unbounded queues, read by each request's HTTP response

    def abandon(self, related: RequestId) -> None:
        """The request was cancelled and gets no response: end the POST waiting for one,
        and refuse to resume its stream (a client would otherwise poll it forever)."""
        stream = self.streams.pop(related, None)
        if stream is not None:
            stream.done = True
            self.abandoned.append(stream.id)
            stream.queue.put_nowait((b"", None))

    async def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.inbox.put_nowait(None)
            for stream_id in self.stream_ids:
                await self.events.forget(stream_id)

    @property
    def busy(self) -> bool:
        return bool(self.streams) or self.readers > 0 or (self.standalone is not None and self.standalone.attached)

    def standalone_name(self) -> str:
        """The standalone stream's name in a shared event store ("" without one)."""
        shared, standalone = self.shared, self.standalone
        return shared.name_of(standalone.id) if standalone is not None and shared is not None else ""


@dataclass
class Live:
    transport: HttpSessionTransport
    session: ServerSession
    task: asyncio.Task[None]
    protocol_version: str = HTTP_DEFAULT
    extra: dict[str, Any] = field(default_factory=dict)
    caller: str | None = None  # who opened it (caller_key), counted against its share of the sessions


class SessionTable:
    """The handshake-era sessions this process holds: opening them within the bounds,
    finding them for a request, ending them, reaping the idle ones, and telling the other
    workers about them (``registry``, with a shared store)."""

    def __init__(
        self,
        host: Host,
        options: HttpOptions,
        registry: SessionRegistry | None,
        others: Callable[[], int] = lambda: 0,
    ) -> None:
        self.host = host
        self.options = options
        self.registry = registry
        self.others = others  # sessions held elsewhere that count against max_sessions (legacy SSE)
        self.sessions: dict[str, Live] = {}
        self.worker = options.store.worker if options.store is not None else ""  # recorded as their home
        # Sessions open per caller, the legacy HTTP+SSE ones included (see admit()).
        self.by_caller: dict[str, int] = {}
        self._reaper: asyncio.Task[None] | None = None
        self._closing: set[asyncio.Task[None]] = set()  # reaped sessions being closed

    # ------------------------------------------------------------ finding

    def find(self, session_id: str | None) -> Live:
        """The session a request names, owned by the request's principal; else 400 or 404."""
        if session_id is None:
            raise HttpError(400, "Bad Request: Mcp-Session-Id header is required")
        live = self.sessions.get(session_id)
        if live is None:
            raise HttpError(404, "Not Found: unknown or ended session", code=-32001)
        return self.owned(live)

    @staticmethod
    def owned(live: Live) -> Live:
        if live.extra.setdefault("owner", current_owner()) != current_owner():
            # A protected session answers only whoever opened it: someone else's token
            # with its id finds nothing (the id alone is no credential).
            raise HttpError(404, "Not Found: unknown or ended session", code=-32001)
        live.transport.last_active = time.monotonic()
        return live

    # ------------------------------------------------------------ opening

    def count(self) -> int:
        """Sessions open now: the handshake era's and the legacy HTTP+SSE ones."""
        return len(self.sessions) + self.others()

    def admit(self) -> str | None:
        """Room for one more session of the request's caller (counted from here on: give it
        back with :meth:`release`), or the refusal: 429 when the caller holds its share
        (``max_sessions_per_caller``), 503 when the server is full. Both carry Retry-After.
        Sessions idle past their timeout are ended first; the idlest other one only with
        ``evict_when_full``."""
        caller = caller_key(current_owner())
        share = self.options.per_caller_sessions()
        if self.count() >= self.options.max_sessions:
            self.reap()
            if self.count() >= self.options.max_sessions and self.options.evict_when_full:
                self.reap(force=True)
            if self.count() >= self.options.max_sessions:
                log.warning("mcpgen: refusing a new session: %d open (max_sessions)", self.count())
                raise HttpError(
                    503,
                    "Service Unavailable: too many sessions; retry later",
                    code=SERVER_BUSY,
                    headers=[(b"retry-after", str(self.options.retry_after).encode())],
                )
        if caller is not None and self.by_caller.get(caller, 0) >= share:
            self.reap()  # the caller's own idle sessions may go first
            if self.by_caller.get(caller, 0) >= share:
                log.warning("mcpgen: refusing a new session: its caller holds %d (max_sessions_per_caller)", share)
                raise HttpError(
                    429,
                    f"Too Many Requests: this caller has {share} sessions open; end one or retry later",
                    code=SERVER_BUSY,
                    headers=[(b"retry-after", str(self.options.retry_after).encode())],
                )
        if caller is not None:
            self.by_caller[caller] = self.by_caller.get(caller, 0) + 1
        return caller

    def release(self, caller: str | None) -> None:
        """A session of ``caller`` (as :meth:`admit` counted it) has ended."""
        if caller is not None:
            left = self.by_caller.get(caller, 0) - 1
            if left > 0:
                self.by_caller[caller] = left
            else:
                self.by_caller.pop(caller, None)

    def open(self) -> Live:
        caller = self.admit()
        session_id = secrets.token_urlsafe(24)  # 192 random bits, visible ASCII
        transport = HttpSessionTransport(self.options, session_id)
        session = ServerSession(transport, self.host, **self.host.session_options)
        self.host.sessions.add(session)
        task = asyncio.ensure_future(session.run())
        task.add_done_callback(lambda _: self.host.sessions.discard(session))
        live = Live(transport, session, task, caller=caller)
        self.sessions[session_id] = live
        if transport.standalone is not None and transport.shared is not None:
            # Several workers: the standalone stream goes to the store, where a GET on any
            # worker follows it (its frames wait in its queue, within its buffer, meanwhile).
            drains: set[asyncio.Task[None]] = live.extra.setdefault("drains", set())
            drained = asyncio.ensure_future(drain(live, transport.standalone, transport.shared))
            drains.add(drained)
            drained.add_done_callback(drains.discard)
        return live

    async def register(self, live: Live) -> None:
        """Tell the other workers that this session exists (shared store); a store that
        is down refuses the session rather than leave it unknown to the others."""
        if self.registry is None:
            return
        name = live.transport.standalone_name()
        try:
            await self.registry.add(
                live.transport.session_id, name, self.options.session_idle_timeout, owner_text(), self.worker
            )
        except StoreUnavailable as exc:
            await self.end(live.transport.session_id)
            raise HttpError(503, f"Service Unavailable: {exc.message}", code=exc.code) from None

    # ------------------------------------------------------------ ending

    async def end(self, session_id: str) -> None:
        live = self.sessions.pop(session_id, None)
        if live is not None:
            self.release(live.caller)
            await self._close(session_id, live)

    async def close(self) -> None:
        """End every session (cancelling their handlers) and stop reaping."""
        for session_id in list(self.sessions):
            await self.end(session_id)
        if self._reaper is not None:
            self._reaper.cancel()

    async def _close(self, session_id: str, live: Live) -> None:
        for draining in list(live.extra.get("drains", ())):
            draining.cancel()
        if self.registry is not None:
            await self.registry.remove(session_id)
        await live.transport.close()
        await asyncio.wait([live.task], timeout=5)

    def start_reaper(self) -> None:
        if self._reaper is None and not self.options.sessionless:
            self._reaper = asyncio.ensure_future(self._reap_forever())

    async def _reap_forever(self) -> None:
        interval = max(1.0, min(60.0, self.options.session_idle_timeout / 4))
        while True:
            await asyncio.sleep(interval)
            self.reap()
            if self.registry is not None and self.sessions:
                await self.registry.touch(list(self.sessions), self.options.session_idle_timeout)

    def reap(self, force: bool = False) -> None:
        """End sessions idle longer than the timeout (or, when full, the idlest one)."""
        now = time.monotonic()
        idle = [(live.transport.last_active, sid) for sid, live in self.sessions.items() if not live.transport.busy]
        expired = [sid for last, sid in idle if now - last > self.options.session_idle_timeout]
        if force and not expired and idle:
            expired = [min(idle)[1]]
        for sid in expired:
            live = self.sessions.pop(sid, None)  # at once: the slot is free for the caller
            if live is not None:
                self.release(live.caller)
                # Closed here, not through end(), which would no longer find it (the
                # session's task and transport were left running).
                closing = asyncio.ensure_future(self._close(sid, live))
                self._closing.add(closing)
                closing.add_done_callback(self._closing.discard)


def owner_text() -> str:
    """The principal of the request being served, as the session registry keeps it ("" on
    an unprotected server)."""
    owner = current_owner()
    return "\n".join(owner) if owner is not None else ""
