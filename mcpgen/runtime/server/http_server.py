"""The Streamable HTTP transport, server side: an ASGI app with one MCP endpoint.

POST carries one JSON-RPC message. A request is answered with ``application/json`` when
its handler sends nothing else first, and with ``text/event-stream`` when it sends
progress, logs or requests to the client before its result (they travel on that stream).
A notification or response gets 202. GET opens the session's standalone stream for
server-initiated messages; DELETE ends the session. Streams are resumable: every SSE
event has an id, kept in an event store, and a GET with ``Last-Event-ID`` replays what
followed it.

Sessions (``Mcp-Session-Id``) are created by ``initialize``; stateless mode has none and
serves each POST on its own, for many workers behind a load balancer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from msgspec import UNSET, UnsetType

from mcpgen.runtime.auth.info import current_owner
from mcpgen.runtime.errors import INVALID_REQUEST, SERVER_BUSY
from mcpgen.runtime.jsonrpc.capabilities import Declared
from mcpgen.runtime.jsonrpc.framing import Envelope, FrameDropped, FrameError, RequestId, decode_envelope, error_frame
from mcpgen.runtime.jsonrpc.kernel import Slots
from mcpgen.runtime.server import http_exchange
from mcpgen.runtime.server.era import request_era
from mcpgen.runtime.server.session import ServerSession
from mcpgen.runtime.stores.event_store import EventStore, MemoryEventStore, SharedEventStore
from mcpgen.runtime.stores.shared_store import SessionRegistry, SharedStore, StoreUnavailable
from mcpgen.runtime.transports import sse
from mcpgen.runtime.transports.asgi import HttpError, Receive, Scope, Send
from mcpgen.runtime.transports.asgi import accepts as _accepts
from mcpgen.runtime.transports.asgi import body as _body
from mcpgen.runtime.transports.asgi import read_body as _read_body
from mcpgen.runtime.transports.asgi import refuse_unreadable as _refuse_unreadable
from mcpgen.runtime.transports.asgi import respond as _respond
from mcpgen.runtime.transports.asgi import sse_headers as _sse_headers
from mcpgen.runtime.transports.asgi import wait_disconnect as _wait_disconnect
from mcpgen.runtime.versions import HTTP_DEFAULT, era_of, primes_streams

if TYPE_CHECKING:
    from mcpgen.runtime.server.host import Host
    from mcpgen.runtime.server.legacy_sse import LegacySseEndpoints
    from mcpgen.runtime.server.lifespan import LifespanRunner

log = logging.getLogger("mcpgen")

LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]")


@dataclass
class HttpOptions:
    path: str = "/mcp"
    stateless: bool = False
    json_response: bool = False  # never stream: related messages go to the GET stream
    allowed_hosts: tuple[str, ...] = LOCAL_HOSTS  # host names, any port; "*" allows all
    allowed_origins: tuple[str, ...] | None = None  # None: origins on allowed_hosts
    max_body: int = 16 * 1024 * 1024
    session_idle_timeout: float = 30 * 60
    max_sessions: int = 10_000  # handshake-era and legacy HTTP+SSE sessions together
    # Past max_sessions a new session is refused (503, Retry-After) and the sessions already
    # open are kept: a flood of initialize cannot log users out. True ends the idlest idle
    # session instead, as before (a choice for servers whose clients reconnect cheaply).
    evict_when_full: bool = False
    retry_after: int = 5  # seconds, in the Retry-After of a refusal when full
    retry_ms: int = 1000  # SSE reconnection hint
    keep_finished_streams: int = 64  # per session, for clients resuming after the end
    keepalive: float = 15.0
    event_store: Callable[[], EventStore] = MemoryEventStore
    legacy_sse: bool = True  # also serve the 2024-11-05 HTTP+SSE endpoints
    # State shared by several workers (e.g. mcpgen.runtime.stores.redis_store.RedisStore): the
    # sessions' events, the session registry (a stream resumes on any worker) and, unless
    # the Server was given its own, the task store.
    store: SharedStore | None = None
    # At start-up, tune Python's garbage collector for serving (server/collector.py: gc.freeze
    # and rarer collections), unless the application set its own thresholds.
    tune_gc: bool = True


class _Stream:
    """The frames of one SSE stream (a POST's, or the standalone GET one), waiting for
    whichever HTTP connection is currently serving it."""

    def __init__(self, stream_id: str) -> None:
        self.id = stream_id
        # (frame, final); final None is no frame but a request to close the connection.
        self.queue: asyncio.Queue[tuple[bytes, bool | None]] = asyncio.Queue()
        self.done = False  # the final frame has been queued
        self.attached = False  # an HTTP connection is reading it
        # One reader at a time: a GET resuming this stream while a connection still reads it
        # resolves ``leave`` (that reader stores what it took and ends its response) and
        # waits for ``left`` before it replays, so nothing is split between the two.
        self.leave: asyncio.Future[None] | None = None
        self.left = asyncio.Event()


class HttpSessionTransport:
    """The transport one :class:`ServerSession` sees: frames in from POST bodies, frames
    out to the stream of the request they belong to."""

    def __init__(self, app: McpHttpApp, session_id: str) -> None:
        self.app = app
        self.session_id = session_id
        self.inbox: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.streams: dict[RequestId, _Stream] = {}
        self.events = app.options.event_store()
        self.stream_ids: set[str] = set()
        # Finished streams whose events are kept for a late resume, oldest first.
        self.finished: deque[str] = deque()
        self.abandoned: deque[str] = deque(maxlen=256)  # streams of cancelled requests
        self.last_active = time.monotonic()
        self._counter = 0
        self.closed = False
        # Exists from the start, so messages sent before the client's GET wait for it.
        self.standalone: _Stream | None = self.new_stream()

    async def retire(self, stream: _Stream, stored: bool) -> None:
        """A stream has ended. Its events stay for a client that missed the end (to
        resume with Last-Event-ID), but only for the last few streams of the session."""
        if stream.id not in self.stream_ids:
            return
        if not stored:
            self.stream_ids.discard(stream.id)
            return
        self.finished.append(stream.id)
        while len(self.finished) > self.app.options.keep_finished_streams:
            old = self.finished.popleft()
            self.stream_ids.discard(old)
            await self.events.forget(old)

    def new_stream(self) -> _Stream:
        self._counter += 1
        stream = _Stream(f"{self.session_id[:8]}-{self._counter}")
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
        if stream is None or (self.app.options.json_response and not final):
            stream = self.standalone
            final = False
        if stream is None:
            log.debug("mcpgen: no stream for a server message; dropped")
            return True
        if final and related is not UNSET:
            self.streams.pop(related, None)
            stream.done = True
        elif not stream.attached and stream.queue.qsize() >= _MAX_DETACHED:
            log.warning("mcpgen: nobody reads this session's stream; dropping a message")
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
        return bool(self.streams) or (self.standalone is not None and self.standalone.attached)


@dataclass
class _Live:
    transport: HttpSessionTransport
    session: ServerSession
    task: asyncio.Task[None]
    protocol_version: str = HTTP_DEFAULT
    extra: dict[str, Any] = field(default_factory=dict)


class McpHttpApp:
    """ASGI application serving one server over Streamable HTTP."""

    def __init__(self, server: Host, options: HttpOptions, lifespan: LifespanRunner | None = None) -> None:
        self.server = server
        self.options = options
        self.lifespan = lifespan
        self.sessions: dict[str, _Live] = {}
        self._reaper: asyncio.Task[None] | None = None
        self._legacy: LegacySseEndpoints | None = None
        self.guard = server.auth  # OAuth (mcpgen.runtime.auth.bearer), or None
        self.registry: SessionRegistry | None = None
        self._closing: set[asyncio.Task[None]] = set()  # reaped sessions being closed
        if options.store is not None:
            self.registry = options.store.sessions
            if options.event_store is MemoryEventStore:
                options.event_store = options.store.event_store
            from mcpgen.runtime.stores.task_store import MemoryTaskStore

            tasks = server.tasks
            if isinstance(tasks.store, MemoryTaskStore) and not len(tasks.store):  # Server(task_store=...) wins
                tasks.store = options.store.task_store()
        # Stateless-era requests have no session to bound them: the app bounds them all.
        self.slots = Slots(server.session_options["max_concurrency"])
        # Header values that passed the Host/Origin and media checks: every request pays
        # for those checks, and a client sends the same values each time.
        self._admitted: set[tuple[str, str | None]] = set()
        self._media_ok: set[tuple[str, str]] = set()
        if options.legacy_sse:
            from mcpgen.runtime.server.legacy_sse import LegacySseEndpoints

            self._legacy = LegacySseEndpoints(
                server,
                max_body=options.max_body,
                keepalive=options.keepalive,
                guard=self.guard,
                make_room=self.make_room,
            )

    # ------------------------------------------------------------ ASGI entry

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.guard is not None and scope["type"] == "http":
            # A protected server: the OAuth layer serves the metadata and the refusals,
            # and passes on what it admits with the verified token as current_auth.
            await self.guard(scope, receive, send, self._serve)
            return
        await self._serve(scope, receive, send)

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        self._start_reaper()
        path = _route(scope)
        headers = _headers(scope)
        try:
            self._check_host_and_origin(headers)
            if path == self.options.path or (path == "/" and self.options.path == "/"):
                method = scope["method"]
                if method != "POST" and _stateless(headers):
                    # The stateless era has no GET stream and no session to DELETE.
                    await _respond(send, 405, b"", extra=[(b"allow", b"POST")])
                elif method == "POST":
                    await self._post(headers, receive, send)
                elif method == "GET":
                    await self._get(headers, receive, send)
                elif method == "DELETE":
                    await self._delete(headers, send)
                else:
                    await _respond(send, 405, b"", extra=[(b"allow", b"GET, POST, DELETE")])
            elif self._legacy is not None and self._legacy.handles(path):
                await self._legacy(scope, receive, send, path)
            else:
                await _respond(send, 404, b"not found", b"text/plain")
        except HttpError as exc:
            await _respond(send, exc.status, error_frame(exc.code, exc.message), extra=exc.headers)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    if self.lifespan is not None:
                        await self.lifespan.__aenter__()  # the server's own (@server.lifespan)
                except Exception as exc:
                    log.exception("mcpgen: the server's lifespan failed to start")
                    await send({"type": "lifespan.startup.failed", "message": f"{type(exc).__name__}: {exc}"})
                    return
                if self.options.tune_gc:
                    from mcpgen.runtime.server.collector import tune_for_serving

                    tune_for_serving()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.close()
                if self.lifespan is not None:
                    await self.lifespan.__aexit__(None, None, None)
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def close(self) -> None:
        """End every session (cancelling their handlers) and the tasks running here."""
        for session_id in list(self.sessions):
            await self._end(session_id)
        if self._reaper is not None:
            self._reaper.cancel()
        await self.server.stop_tasks()

    # ------------------------------------------------------------ checks

    def _check_host_and_origin(self, headers: dict[str, str]) -> None:
        """DNS-rebinding protection: a page on another origin must not reach a local
        server through a name that resolves to 127.0.0.1."""
        seen = (headers.get("host", ""), headers.get("origin"))
        if seen in self._admitted:
            return  # these Host and Origin values passed before (clients repeat theirs)
        allowed = self.options.allowed_hosts
        if "*" in allowed:
            return
        host = _host_name(seen[0])
        if host not in allowed:
            # Without this line a server bound beyond localhost answers every remote client
            # 403 and its operator never learns which setting to change. %r keeps a peer's
            # control characters out of the log; the cut keeps one line short.
            log.warning(
                "403 for Host %r: not in allowed_hosts %s (an option of Server.run and http_app)",
                host[:100],
                list(allowed),
            )
            raise HttpError(403, "Forbidden: Host not allowed")
        origin = headers.get("origin")
        if origin is not None:
            origins = self.options.allowed_origins
            ok = origin in origins if origins is not None else _origin_host(origin) in allowed
            if not ok:
                setting = "allowed_origins" if origins is not None else "allowed_hosts (allowed_origins is unset)"
                log.warning("403 for Origin %r: not in %s (options of Server.run and http_app)", origin[:100], setting)
                raise HttpError(403, "Forbidden: Origin not allowed")
        if len(self._admitted) < 256:  # bounded: a peer inventing values only skips the shortcut
            self._admitted.add(seen)

    @staticmethod
    def _check_version(headers: dict[str, str]) -> str | None:
        version = headers.get("mcp-protocol-version")
        if version is not None and era_of(version) is None:
            raise HttpError(400, f"Bad Request: unsupported MCP-Protocol-Version {version!r}")
        return version

    # ------------------------------------------------------------ POST

    async def _post(self, headers: dict[str, str], receive: Receive, send: Send) -> None:
        media = (headers.get("content-type", ""), headers.get("accept", "*/*"))
        if media not in self._media_ok:
            if media[0].split(";")[0].strip().lower() != "application/json":
                raise HttpError(415, "Unsupported Media Type: POST a JSON-RPC message as application/json")
            accept = media[1]
            if not _accepts(accept, "application/json") and not _accepts(accept, "text/event-stream"):
                raise HttpError(406, "Not Acceptable: accept application/json and text/event-stream")
            if len(self._media_ok) < 256:  # clients repeat the same two values on every POST
                self._media_ok.add(media)
        modern = _stateless(headers)
        version = None if modern else self._check_version(headers)
        body = await _read_body(receive, self.options.max_body)
        try:
            env = decode_envelope(body)
        except FrameError as exc:
            await _respond(send, 400, error_frame(exc.code, exc.message, exc.id))
            return
        except FrameDropped as exc:
            await _refuse_unreadable(send, exc)
            return
        if self.guard is not None and (refusal := self.guard.denied(env)) is not None:
            await refusal.send(send)  # 403 insufficient_scope: the tool's (resource's, prompt's) own scopes
            return
        if modern:
            await http_exchange.post(self.server, env, headers, receive, send, self.slots)
            return
        is_request = env.method is not UNSET and env.id is not UNSET
        if self.options.stateless:
            await self._post_stateless(receive, send, env, is_request, version)
            return
        session_id = headers.get("mcp-session-id")
        if session_id is None:
            if env.method != "initialize":
                raise HttpError(400, "Bad Request: Mcp-Session-Id header is required")
            live = self._open_session()
            await self._register(live)
        else:
            found = self.sessions.get(session_id)
            if found is None:
                raise HttpError(404, "Not Found: unknown or ended session", code=-32001)
            live = found
        if live.extra.setdefault("owner", current_owner()) != current_owner():
            # A protected session answers only whoever opened it: someone else's token
            # with its id finds nothing (the id alone is no credential).
            raise HttpError(404, "Not Found: unknown or ended session", code=-32001)
        live.transport.last_active = time.monotonic()
        if version is not None:
            live.protocol_version = version
        if not is_request:
            live.session.on_envelope(env)
            await _respond(send, 202, b"")
            return
        extra = [(b"mcp-session-id", live.transport.session_id.encode())]
        if env.id in live.transport.streams:
            # The id of a request still in flight: refused on this POST, where the refusal
            # can reach, and the first keeps its stream (and gets its answer).
            taken = error_frame(INVALID_REQUEST, f"Invalid Request: id {env.id!r} is already in use", env.id)
            await _respond(send, 400, taken, extra=extra)
            return
        stream = live.transport.new_stream()
        live.transport.streams[env.id] = stream
        live.session.on_envelope(env)
        await self._answer(live, stream, receive, send, extra)

    async def _answer(
        self, live: _Live, stream: _Stream, receive: Receive, send: Send, extra: list[tuple[bytes, bytes]]
    ) -> None:
        """Reply with JSON if the first frame is the response, else stream events."""
        first = await stream.queue.get()
        if first[1] is True:
            await live.transport.retire(stream, stored=False)
            await _respond(send, 200, first[0], extra=extra)
            return
        if first[1] is None and stream.done:  # cancelled before anything was sent: nothing to say
            await live.transport.retire(stream, stored=False)
            await _respond(send, 202, b"", extra=extra)
            return
        # A handler about to close the connection needs the priming event to resume.
        prime = _primes(live.session) or first[1] is None
        await self._stream(live, stream, receive, send, extra, prime=prime, first=first)

    async def _stream(
        self,
        live: _Live,
        stream: _Stream,
        receive: Receive,
        send: Send,
        extra: list[tuple[bytes, bytes]],
        *,
        prime: bool,
        replay: Iterable[tuple[str, bytes]] = (),
        first: tuple[bytes, bool | None] | None = None,
    ) -> None:
        """Serve ``stream`` as SSE on this connection until its final frame or a
        disconnect (after which the frames wait in the store for a resuming GET)."""
        events = live.transport.events
        await send({"type": "http.response.start", "status": 200, "headers": _sse_headers(extra)})
        disconnected = asyncio.ensure_future(_wait_disconnect(receive))
        leave = stream.leave = asyncio.get_running_loop().create_future()
        stream.left.clear()
        stream.attached = True
        # Events ready at the same moment go out in one body message (one write): often
        # the priming event, a notification and the response of a request all at once.
        ready: list[bytes] = []
        try:
            if prime and (event_id := await _keep(events, stream.id, b"")) is not None:
                ready.append(sse.event(b"", event_id, self.options.retry_ms))
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
                        await _body(send, b"".join(ready))
                        ready.clear()
                    getter = asyncio.ensure_future(stream.queue.get())
                    done, _ = await asyncio.wait(
                        {getter, disconnected, leave},
                        timeout=self.options.keepalive,
                        return_when=asyncio.FIRST_COMPLETED,
                    )
                    if disconnected in done or leave in done:
                        getter.cancel()
                        if getter.done() and not getter.cancelled():
                            # Taken off the queue as the client left: into the store with it.
                            frame, final = getter.result()
                            if final is not None:
                                await _keep(events, stream.id, frame)
                                if final:
                                    await _end_stream(events, stream.id)
                        if leave.done() and not disconnected.done():
                            await send({"type": "http.response.body", "body": b"", "more_body": False})
                        return
                    if getter not in done:
                        getter.cancel()
                        await _body(send, sse.KEEPALIVE)
                        continue
                    frame, final = getter.result()
                if final is None:
                    break  # the handler asked to end this connection (polling); the stream lives on
                ready.append(sse.event(frame, await _keep(events, stream.id, frame)))
                if final:
                    await _end_stream(events, stream.id)
                    break
            await send({"type": "http.response.body", "body": b"".join(ready), "more_body": False})
        finally:
            stream.attached = False
            disconnected.cancel()
            if stream.leave is leave:
                stream.leave = None
            stream.left.set()
            await self._park(live, stream)

    async def _park(self, live: _Live, stream: _Stream) -> None:
        """A connection left before its stream ended: keep storing what comes, so a GET
        with Last-Event-ID can pick it up."""
        if stream.done and stream.queue.empty():
            if stream is not live.transport.standalone:
                await live.transport.retire(stream, stored=True)
            return
        if stream is live.transport.standalone:
            return  # stays the session's standalone stream for the next GET
        if isinstance(live.transport.events, SharedEventStore):
            # Another worker may serve the resume: what comes goes to the shared store.
            drains: set[asyncio.Task[None]] = live.extra.setdefault("drains", set())
            drain = asyncio.ensure_future(self._drain(live, stream, live.transport.events))
            drains.add(drain)
            drain.add_done_callback(drains.discard)
            return
        parked: dict[str, _Stream] = live.extra.setdefault("parked", {})
        parked[stream.id] = stream
        while len(parked) > self.options.keep_finished_streams:  # nobody came back for the oldest
            oldest = next(iter(parked))
            await live.transport.retire(parked.pop(oldest), stored=True)

    async def _drain(self, live: _Live, stream: _Stream, events: SharedEventStore) -> None:
        """Store a detached stream's frames as they come, then its end (shared store)."""
        try:
            while True:
                frame, final = await stream.queue.get()
                if final is None:
                    if stream.done:
                        break  # the request was cancelled: no response will come
                    continue  # a request to end the connection: there is none
                await events.store(stream.id, frame)
                if final:
                    break
            await events.end(stream.id)
        except StoreUnavailable as exc:
            log.warning("mcpgen: events of stream %s lost: %s", stream.id, exc.message)
        finally:
            await live.transport.retire(stream, stored=True)

    async def _post_stateless(
        self, receive: Receive, send: Send, env: Envelope, is_request: bool, version: str | None
    ) -> None:
        """Serve one message with a throwaway session: no handshake state, JSON only. A
        request takes one of the app's slots (``max_concurrency`` running, four times as
        many waiting, the rest refused -32000), and a client that goes away ends its
        session, which cancels the handler (or takes it out of the line)."""
        disconnected = asyncio.ensure_future(_wait_disconnect(receive))
        try:
            await self._serve_throwaway(disconnected, send, env, is_request, version)
        finally:
            disconnected.cancel()

    async def _serve_throwaway(
        self, disconnected: asyncio.Future[None], send: Send, env: Envelope, is_request: bool, version: str | None
    ) -> None:
        transport = HttpSessionTransport(self, "stateless")
        session = ServerSession(transport, self.server, **self.server.session_options)
        session.slots = self.slots  # the requests of every such session share the app's bound
        if env.method != "initialize":
            session.state = "ready"
            session.answers_now = True
            session.protocol_version = version or HTTP_DEFAULT
            session.own_caps = Declared(self.server.capabilities())
        task = asyncio.ensure_future(session.run())
        try:
            if not is_request:
                session.on_envelope(env)
                await _respond(send, 202, b"")
                return
            stream = transport.new_stream()
            transport.streams[env.id] = stream
            session.on_envelope(env)
            while True:
                item = await http_exchange.next_frame(stream.queue, disconnected)
                if item is None:
                    return  # the client went away: closing the session cancels the handler
                frame, final = item
                if final is True:
                    await _respond(send, 200, frame)
                    return
        finally:
            await transport.close()
            await asyncio.wait([task], timeout=5)

    # ------------------------------------------------------------ GET and DELETE

    async def _get(self, headers: dict[str, str], receive: Receive, send: Send) -> None:
        if self.options.stateless:
            await _respond(send, 405, b"", extra=[(b"allow", b"POST")])
            return
        if not _accepts(headers.get("accept", ""), "text/event-stream"):
            raise HttpError(406, "Not Acceptable: GET needs Accept: text/event-stream")
        self._check_version(headers)
        last = headers.get("last-event-id")
        session_id = headers.get("mcp-session-id")
        elsewhere = session_id is not None and session_id not in self.sessions and self.registry is not None
        if last is not None and session_id is not None and elsewhere:
            await self._resume_elsewhere(session_id, last, receive, send)
            return
        live = self._session(headers)
        extra = [(b"mcp-session-id", live.transport.session_id.encode())]
        if last is not None:
            await self._resume(live, last, receive, send, extra)
            return
        current = live.transport.standalone
        if current is not None and current.attached:
            raise HttpError(409, "Conflict: this session already has a GET stream")
        stream = current or live.transport.new_stream()
        live.transport.standalone = stream
        await self._stream(live, stream, receive, send, extra, prime=_primes(live.session))

    async def _resume(
        self, live: _Live, last: str, receive: Receive, send: Send, extra: list[tuple[bytes, bytes]]
    ) -> None:
        store = live.transport.events
        found = await _replay(store, last, live.transport.session_id)
        stream_id, events = found
        standalone = live.transport.standalone
        if standalone is not None and standalone.id == stream_id and standalone.attached:
            # Its old connection still reads it: take the stream over (that one stores what
            # it took and ends), then replay from the store what came after ``last``.
            await _take_over(standalone)
            stream_id, events = await _replay(store, last, live.transport.session_id)
        if isinstance(store, SharedEventStore) and (standalone is None or stream_id != standalone.id):
            # A request's stream: its frames go to the shared store once detached (_park).
            await self._serve_shared(store, live.transport.session_id, last, events, receive, send, follow=True)
            return
        if stream_id in live.transport.abandoned:
            raise HttpError(404, "Not Found: that request was cancelled; its stream has ended")
        parked: dict[str, _Stream] = live.extra.get("parked", {})
        stream = parked.pop(stream_id, None)
        if stream is None:
            standalone = live.transport.standalone
            stream = standalone if standalone is not None and standalone.id == stream_id else _Stream(stream_id)
            if stream is not standalone:
                stream.done = True  # finished already: the replay is all there is
        await self._stream(live, stream, receive, send, extra, prime=False, replay=events)

    async def _resume_elsewhere(self, session_id: str, last: str, receive: Receive, send: Send) -> None:
        """Resume a stream of a session another worker serves, from the shared store: its
        request streams are followed to their end; its standalone stream is replayed (the
        messages after it wait on the session's worker for the next GET there)."""
        assert self.registry is not None
        try:
            found = await self.registry.lookup(session_id)
        except StoreUnavailable as exc:
            raise HttpError(503, f"Service Unavailable: {exc.message}", code=exc.code) from None
        if found is None or found[1] != _owner_text():
            # Unknown, or someone else's (on a protected server a session answers only its
            # opener, on this worker as on the one that holds it): nothing to resume.
            raise HttpError(404, "Not Found: unknown or ended session", code=-32001)
        standalone = found[0]
        events = self.options.event_store()
        if not isinstance(events, SharedEventStore):
            raise HttpError(404, "Not Found: unknown or ended session", code=-32001)
        stream_id, replay = await _replay(events, last, session_id)
        await self._serve_shared(events, session_id, last, replay, receive, send, follow=stream_id != standalone)

    async def _serve_shared(
        self,
        events: SharedEventStore,
        session_id: str,
        last: str,
        replay: list[tuple[str, bytes]],
        receive: Receive,
        send: Send,
        *,
        follow: bool,
    ) -> None:
        """SSE from the shared store: ``replay`` (the events after ``last``), then
        (``follow``) those stored later, until the stream's end or the client leaves."""
        extra = [(b"mcp-session-id", session_id.encode())]
        await send({"type": "http.response.start", "status": 200, "headers": _sse_headers(extra)})
        disconnected = asyncio.ensure_future(_wait_disconnect(receive))
        batches = events.follow(replay[-1][0] if replay else last) if follow else None
        pending: asyncio.Future[list[tuple[str, bytes]] | None] | None = None
        try:
            batch: list[tuple[str, bytes]] | None = replay
            while batch is not None:
                body = b"".join(sse.event(frame, event_id) for event_id, frame in batch if frame)
                if body:
                    await _body(send, body)
                if batches is None:
                    break
                if pending is None:
                    pending = asyncio.ensure_future(_next(batches))
                waiting: set[asyncio.Future[Any]] = {pending, disconnected}
                done, _ = await asyncio.wait(
                    waiting, timeout=self.options.keepalive, return_when=asyncio.FIRST_COMPLETED
                )
                if disconnected in done:
                    return
                if pending not in done:
                    await _body(send, sse.KEEPALIVE)
                    batch = []
                    continue
                batch, pending = pending.result(), None
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except StoreUnavailable as exc:
            log.warning("mcpgen: a resumed SSE stream was cut short: %s", exc.message)
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

    async def _delete(self, headers: dict[str, str], send: Send) -> None:
        if self.options.stateless:
            await _respond(send, 405, b"", extra=[(b"allow", b"POST")])
            return
        live = self._session(headers)
        await self._end(live.transport.session_id)
        await _respond(send, 200, b"")

    # ------------------------------------------------------------ sessions

    def _session(self, headers: dict[str, str]) -> _Live:
        session_id = headers.get("mcp-session-id")
        if session_id is None:
            raise HttpError(400, "Bad Request: Mcp-Session-Id header is required")
        live = self.sessions.get(session_id)
        if live is None:
            raise HttpError(404, "Not Found: unknown or ended session", code=-32001)
        if live.extra.setdefault("owner", current_owner()) != current_owner():
            # A protected session answers only whoever opened it: someone else's token
            # with its id finds nothing (the id alone is no credential).
            raise HttpError(404, "Not Found: unknown or ended session", code=-32001)
        live.transport.last_active = time.monotonic()
        return live

    async def _register(self, live: _Live) -> None:
        """Tell the other workers that this session exists (shared store); a store that
        is down refuses the session rather than leave it unknown to the others."""
        if self.registry is None:
            return
        standalone = live.transport.standalone
        try:
            await self.registry.add(
                live.transport.session_id,
                standalone.id if standalone else "",
                self.options.session_idle_timeout,
                _owner_text(),
            )
        except StoreUnavailable as exc:
            await self._end(live.transport.session_id)
            raise HttpError(503, f"Service Unavailable: {exc.message}", code=exc.code) from None

    def open_sessions(self) -> int:
        """Sessions open now: the handshake era's and the legacy HTTP+SSE ones."""
        return len(self.sessions) + (len(self._legacy.sessions) if self._legacy is not None else 0)

    def make_room(self) -> None:
        """Room for one more session, or 503 with Retry-After: sessions idle past their
        timeout are ended first; the idlest other one only with ``evict_when_full``."""
        if self.open_sessions() < self.options.max_sessions:
            return
        self._reap()
        if self.open_sessions() >= self.options.max_sessions and self.options.evict_when_full:
            self._reap(force=True)
        if self.open_sessions() >= self.options.max_sessions:
            log.warning("mcpgen: refusing a new session: %d open (max_sessions)", self.open_sessions())
            retry = str(self.options.retry_after).encode()
            raise HttpError(
                503,
                "Service Unavailable: too many sessions; retry later",
                code=SERVER_BUSY,
                headers=[(b"retry-after", retry)],
            )

    def _open_session(self) -> _Live:
        self.make_room()
        session_id = secrets.token_urlsafe(24)  # 192 random bits, visible ASCII
        transport = HttpSessionTransport(self, session_id)
        session = ServerSession(transport, self.server, **self.server.session_options)
        self.server.sessions.add(session)
        task = asyncio.ensure_future(session.run())
        task.add_done_callback(lambda _: self.server.sessions.discard(session))
        live = _Live(transport, session, task)
        self.sessions[session_id] = live
        return live

    async def _end(self, session_id: str) -> None:
        live = self.sessions.pop(session_id, None)
        if live is not None:
            await self._close_session(session_id, live)

    async def _close_session(self, session_id: str, live: _Live) -> None:
        for drain in list(live.extra.get("drains", ())):
            drain.cancel()
        if self.registry is not None:
            await self.registry.remove(session_id)
        await live.transport.close()
        await asyncio.wait([live.task], timeout=5)

    def _start_reaper(self) -> None:
        if self._reaper is None and not self.options.stateless:
            self._reaper = asyncio.ensure_future(self._reap_forever())

    async def _reap_forever(self) -> None:
        interval = max(1.0, min(60.0, self.options.session_idle_timeout / 4))
        while True:
            await asyncio.sleep(interval)
            self._reap()
            if self.registry is not None and self.sessions:
                await self.registry.touch(list(self.sessions), self.options.session_idle_timeout)

    def _reap(self, force: bool = False) -> None:
        """End sessions idle longer than the timeout (or, when full, the idlest one)."""
        now = time.monotonic()
        idle = [(live.transport.last_active, sid) for sid, live in self.sessions.items() if not live.transport.busy]
        expired = [sid for last, sid in idle if now - last > self.options.session_idle_timeout]
        if force and not expired and idle:
            expired = [min(idle)[1]]
        for sid in expired:
            live = self.sessions.pop(sid, None)  # at once: the slot is free for the caller
            if live is not None:
                # Closed here, not through _end, which would no longer find it (the session's
                # task and transport were left running).
                closing = asyncio.ensure_future(self._close_session(sid, live))
                self._closing.add(closing)
                closing.add_done_callback(self._closing.discard)


_MAX_DETACHED = 10_000  # messages kept for a stream no connection is reading


async def close_current_stream() -> None:
    """Close the HTTP connection of the request being served, keeping its SSE stream:
    the client reconnects (GET with Last-Event-ID) after the retry delay and receives
    the rest. Lets long requests poll instead of holding a connection open."""
    from mcpgen.runtime.jsonrpc.context import current_request

    request = current_request.get()
    if request is None:
        return
    transport = request.session.transport
    if isinstance(transport, HttpSessionTransport):
        stream = transport.streams.get(request.request_id)
        if stream is not None:
            stream.queue.put_nowait((b"", None))


async def _take_over(stream: _Stream) -> None:
    """Ask the connection reading ``stream`` to leave it, and wait until it has."""
    if stream.leave is not None and not stream.leave.done():
        stream.leave.set_result(None)
    try:
        async with asyncio.timeout(5):
            await stream.left.wait()
    except TimeoutError:
        raise HttpError(409, "Conflict: the stream's other connection did not let go") from None


def _owner_text() -> str:
    """The principal of the request being served, as the session registry keeps it ("" on
    an unprotected server)."""
    owner = current_owner()
    return "\n".join(owner) if owner is not None else ""


async def _replay(events: EventStore, last: str, session_id: str) -> tuple[str, list[tuple[str, bytes]]]:
    """The stream of ``last`` and its events after it; 404 unless it is this session's."""
    try:
        found = await events.replay_after(last)
    except StoreUnavailable as exc:
        raise HttpError(503, f"Service Unavailable: {exc.message}", code=exc.code) from None
    if found is None or not _of_session(found[0], session_id):
        raise HttpError(404, "Not Found: unknown Last-Event-ID")
    return found[0], list(found[1])


async def _next(batches: AsyncIterator[list[tuple[str, bytes]]]) -> list[tuple[str, bytes]] | None:
    """The next batch, or None after the last."""
    return await anext(batches, None)


async def _keep(events: EventStore, stream_id: str, frame: bytes) -> str | None:
    """Store an event; its id, or None when a shared store is down: the event then goes
    out without an id (the client gets it, but cannot resume after it)."""
    try:
        return await events.store(stream_id, frame)
    except StoreUnavailable as exc:
        _store_down(exc)
        return None


async def _end_stream(events: EventStore, stream_id: str) -> None:
    """Mark a stream's end in a shared store, for a reader following it on another worker."""
    if isinstance(events, SharedEventStore):
        try:
            await events.end(stream_id)
        except StoreUnavailable as exc:
            _store_down(exc)


_store_warned = [0.0]  # when the last "store down" warning was logged


def _store_down(exc: StoreUnavailable) -> None:
    """Log a shared store's outage, at most once every 10 s (each event would say it)."""
    now = time.monotonic()
    if now - _store_warned[0] >= 10.0:
        _store_warned[0] = now
        log.warning("mcpgen: SSE events sent without ids (not resumable): %s", exc.message)


def _of_session(stream_id: str, session_id: str) -> bool:
    """Whether a stream is one of this session's (stream ids start with the session id's
    first 8 characters): a Last-Event-ID of another session is unknown here."""
    return stream_id.startswith(session_id[:8] + "-")


def _stateless(headers: dict[str, str]) -> bool:
    """Whether a request is one of the stateless era: it names a protocol version that is
    not of the handshake era (an unknown one too: the stateless checks answer it -32022).
    Without the header it is a handshake-era request, as before 2025-06-18."""
    return request_era(header=headers.get("mcp-protocol-version")) == "stateless"


def _primes(session: ServerSession) -> bool:
    """Whether this session's streams open with a priming event (an id before any message)."""
    return primes_streams(session.protocol_version)


# ---------------------------------------------------------------- HTTP helpers


def _route(scope: Scope) -> str:
    path: str = scope.get("path", "/")
    root: str = scope.get("root_path", "")
    if root and path.startswith(root):
        path = path[len(root) :] or "/"
    return path


_HEADER_NAMES: dict[bytes, str] = {}  # raw name -> lower-cased text (clients repeat the same few)


def _headers(scope: Scope) -> dict[str, str]:
    # Every request pays for this: each name is decoded and lower-cased once per process
    # (bounded, so a peer inventing names only costs the decode), values as they come.
    names = _HEADER_NAMES
    raw_headers = scope.get("headers", ())
    try:  # every name seen before (the common case): one comprehension
        return {names[raw]: value.decode("latin-1") for raw, value in raw_headers}
    except KeyError:
        pass
    found: dict[str, str] = {}
    for raw, value in raw_headers:
        name = names.get(raw)
        if name is None:
            name = raw.decode("latin-1").lower()
            if len(names) < 256:
                names[bytes(raw)] = name
        found[name] = value.decode("latin-1")
    return found


def _host_name(host: str) -> str:
    host = host.strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1]
    return host.rsplit(":", 1)[0] if ":" in host else host


def _origin_host(origin: str) -> str:
    scheme, _, rest = origin.partition("://")
    if scheme not in ("http", "https"):
        return ""
    return _host_name(rest.split("/", 1)[0])
