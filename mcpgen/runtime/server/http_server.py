"""The Streamable HTTP transport, server side: an ASGI app with one MCP endpoint.

POST carries one JSON-RPC message. A request is answered with ``application/json`` when
its handler sends nothing else first, and with ``text/event-stream`` when it sends
progress, logs or requests to the client before its result (they travel on that stream).
A notification or response gets 202. GET opens the session's standalone stream for
server-initiated messages; DELETE ends the session. Streams are resumable: every SSE
event has an id, kept in an event store, and a GET with ``Last-Event-ID`` replays what
followed it (:mod:`.http_streams`).

Sessions (``Mcp-Session-Id``, :mod:`.http_sessions`) are created by ``initialize``;
stateless mode has none and serves each POST on its own, for many workers behind a load
balancer. The stateless era's POSTs are :mod:`.http_exchange`'s.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

import msgspec
from msgspec import UNSET

from mcpgen.runtime.errors import HEADER_MISMATCH, INVALID_REQUEST
from mcpgen.runtime.jsonrpc.capabilities import Declared
from mcpgen.runtime.jsonrpc.framing import Envelope, FrameDropped, FrameError, decode_envelope, error_frame
from mcpgen.runtime.jsonrpc.kernel import Slots
from mcpgen.runtime.server import http_exchange
from mcpgen.runtime.server.era import request_era
from mcpgen.runtime.server.http_forward import Forwarder
from mcpgen.runtime.server.http_options import LOCAL_HOSTS, HttpOptions
from mcpgen.runtime.server.http_sessions import HttpSessionTransport, Live, SessionTable, owner_text
from mcpgen.runtime.server.http_streams import Stream, replay, serve_shared, serve_stream, take_over
from mcpgen.runtime.server.session import ServerSession
from mcpgen.runtime.shared.caller import SESSIONLESS_ID, current_address, forwarded_address
from mcpgen.runtime.stores.event_store import MemoryEventStore, SharedEventStore
from mcpgen.runtime.stores.shared_store import SessionRegistry, StoreUnavailable
from mcpgen.runtime.transports.asgi import HttpError, Receive, Scope, Send
from mcpgen.runtime.transports.asgi import accepts as _accepts
from mcpgen.runtime.transports.asgi import read_body as _read_body
from mcpgen.runtime.transports.asgi import refuse_unreadable as _refuse_unreadable
from mcpgen.runtime.transports.asgi import respond as _respond
from mcpgen.runtime.transports.asgi import wait_disconnect as _wait_disconnect
from mcpgen.runtime.versions import HTTP_DEFAULT, era_of, primes_streams

if TYPE_CHECKING:
    from mcpgen.runtime.server.host import Host
    from mcpgen.runtime.server.legacy_sse import LegacySseEndpoints
    from mcpgen.runtime.server.lifespan import LifespanRunner

log = logging.getLogger("mcpgen")

__all__ = ["LOCAL_HOSTS", "HttpOptions", "HttpSessionTransport", "McpHttpApp", "close_current_stream"]


class McpHttpApp:
    """ASGI application serving one server over Streamable HTTP."""

    def __init__(self, server: Host, options: HttpOptions, lifespan: LifespanRunner | None = None) -> None:
        self.server = server
        self.options = options
        self.lifespan = lifespan
        self._legacy: LegacySseEndpoints | None = None
        self.guard = server.auth  # OAuth (mcpgen.runtime.auth.bearer), or None
        self.registry: SessionRegistry | None = None
        if options.store is not None:
            self.registry = options.store.sessions
            if self.guard is not None:  # DPoP replays and nonces hold across the workers
                self.guard.use_store(options.store)
            if options.event_store is MemoryEventStore:
                options.event_store = options.store.event_store
            from mcpgen.runtime.stores.task_store import MemoryTaskStore

            tasks = server.tasks
            if isinstance(tasks.store, MemoryTaskStore) and not len(tasks.store):  # Server(task_store=...) wins
                tasks.store = options.store.task_store()
        server.listeners.configure(
            max_open=options.max_listens,
            max_per_caller=options.max_listens_per_caller,
            max_uris=options.max_listen_uris,
            lifetime=options.listen_lifetime,
        )
        self.table = SessionTable(server, options, self.registry, self._legacy_sessions)
        # Several workers: a session's requests reaching another worker go to its home.
        shared = options.store is not None and not options.sessionless
        self.forwarder = Forwarder(options, options.store, self.table) if shared and options.store else None
        self._forwarded = options.forwarded_header.lower().encode("latin-1") if options.forwarded_header else None
        self.sessions = self.table.sessions  # session id -> the live session (this process)
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
                room=self.table,
            )

    def _legacy_sessions(self) -> int:
        return len(self._legacy.sessions) if self._legacy is not None else 0

    # ------------------------------------------------------------ ASGI entry

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._serve(scope, receive, send)
            return
        # Who is calling, as far as the network says: what the limits per caller and
        # RateLimit count an unauthenticated caller by.
        reset = current_address.set(self._address(scope))
        try:
            if self.guard is not None:
                # A protected server: the OAuth layer serves the metadata and the refusals,
                # and passes on what it admits with the verified token as current_auth.
                await self.guard(scope, receive, send, self._serve)
            else:
                await self._serve(scope, receive, send)
        finally:
            current_address.reset(reset)

    def _address(self, scope: Scope) -> str | None:
        """The client's address: the trusted proxy's header when one is configured, else
        the connection's (None over a Unix socket)."""
        header = self._forwarded
        if header is not None:
            found = [value for name, value in scope.get("headers", ()) if name.lower() == header]
            return forwarded_address(found[-1].decode("latin-1")) if found else None
        client = scope.get("client")
        return str(client[0]) if client else None

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        self.table.start_reaper()
        if self.forwarder is not None:
            self.forwarder.start()
        path = _route(scope)
        try:
            headers = _headers(scope)
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
        if self.forwarder is not None:
            await self.forwarder.close()
        await self.table.close()
        await self.server.stop_tasks()

    def open_sessions(self) -> int:
        """Sessions open now: the handshake era's and the legacy HTTP+SSE ones."""
        return self.table.count()

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
            options = self.options
            await http_exchange.post(
                self.server,
                env,
                headers,
                receive,
                send,
                self.slots,
                budget=options.max_stream_buffer,
                stall=options.stall_timeout,
            )
            return
        is_request = env.method is not UNSET and env.id is not UNSET
        if self.options.sessionless:
            await self._post_stateless(receive, send, env, is_request, version)
            return
        session_id = headers.get("mcp-session-id")
        if session_id is None:
            if env.method != "initialize":
                raise HttpError(400, "Bad Request: Mcp-Session-Id header is required")
            live = self.table.owned(self.table.open())
            await self.table.register(live)
        elif session_id not in self.sessions and self.forwarder is not None:
            # Another worker holds it: the request is served there.
            record = await self.forwarder.lookup(session_id, owner_text())
            if not is_request:
                await self.forwarder.tell(record, "message", session_id, owner_text(), body)
                await _respond(send, 202, b"")
                return
            prime = primes_streams(version or HTTP_DEFAULT)
            await self.forwarder.request(record, session_id, owner_text(), env, body, prime, receive, send)
            return
        else:
            live = self.table.find(session_id)
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
        shared = live.transport.shared
        if shared is not None:  # its first event names the request (see WriterGone)
            shared.adopt(stream.id, shared.name_of(stream.id), msgspec.json.encode(env.id))
        live.session.on_envelope(env)
        await self._answer(live, stream, receive, send, extra)

    async def _answer(
        self, live: Live, stream: Stream, receive: Receive, send: Send, extra: list[tuple[bytes, bytes]]
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
        await serve_stream(self.options, live, stream, receive, send, extra, prime=prime, first=first)

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
        transport = HttpSessionTransport(self.options, SESSIONLESS_ID)
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
        if self.options.sessionless:
            await _respond(send, 405, b"", extra=[(b"allow", b"POST")])
            return
        if not _accepts(headers.get("accept", ""), "text/event-stream"):
            raise HttpError(406, "Not Acceptable: GET needs Accept: text/event-stream")
        self._check_version(headers)
        last = headers.get("last-event-id")
        session_id = headers.get("mcp-session-id")
        if self.forwarder is not None:
            await self._get_shared(session_id, last, receive, send)
            return
        live = self.table.find(session_id)
        extra = [(b"mcp-session-id", live.transport.session_id.encode())]
        if last is not None:
            await self._resume(live, last, receive, send, extra)
            return
        current = live.transport.standalone
        if current is not None and current.attached:
            raise HttpError(409, "Conflict: this session already has a GET stream")
        stream = current or live.transport.new_stream()
        live.transport.standalone = stream
        await serve_stream(self.options, live, stream, receive, send, extra, prime=_primes(live.session))

    async def _resume(
        self, live: Live, last: str, receive: Receive, send: Send, extra: list[tuple[bytes, bytes]]
    ) -> None:
        store = live.transport.events
        session_id = live.transport.session_id
        stream_id, events = await replay(store, last, session_id)
        standalone = live.transport.standalone
        if standalone is not None and standalone.id == stream_id and standalone.attached:
            # Its old connection still reads it: take the stream over (that one stores what
            # it took and ends), then replay from the store what came after ``last``.
            await take_over(standalone)
            stream_id, events = await replay(store, last, session_id)
        if isinstance(store, SharedEventStore) and (standalone is None or stream_id != standalone.id):
            # A request's stream: its frames go to the shared store once detached (park).
            await serve_shared(self.options, store, session_id, last, events, receive, send, follow=True)
            return
        if stream_id in live.transport.abandoned:
            raise HttpError(404, "Not Found: that request was cancelled; its stream has ended")
        parked: dict[str, Stream] = live.extra.get("parked", {})
        stream = parked.pop(stream_id, None)
        if stream is None:
            standalone = live.transport.standalone
            stream = standalone if standalone is not None and standalone.id == stream_id else Stream(stream_id)
            if stream is not standalone:
                stream.done = True  # finished already: the replay is all there is
        await serve_stream(self.options, live, stream, receive, send, extra, prime=False, replay=events)

    async def _get_shared(self, session_id: str | None, last: str | None, receive: Receive, send: Send) -> None:
        """A GET with a shared store, on any worker: the session's standalone stream, or
        the stream a Last-Event-ID names, followed from the store (the home writes them there)."""
        assert self.forwarder is not None and self.registry is not None
        if session_id is None:
            raise HttpError(400, "Bad Request: Mcp-Session-Id header is required")
        live = self.sessions.get(session_id)
        registry = self.registry
        if live is not None:
            self.table.owned(live)
            events = live.transport.events
            name, home = live.transport.standalone_name(), self.forwarder.store.worker

            async def lives() -> bool:
                return session_id in self.sessions

        else:
            record = await self.forwarder.lookup(session_id, owner_text())
            events = self.options.event_store()
            name, home = record.standalone, record.worker

            async def lives() -> bool:
                try:
                    return await registry.lookup(session_id) is not None
                except StoreUnavailable:
                    return True  # cannot tell now: asked again at the next keep-alive

        if not isinstance(events, SharedEventStore) or not name:
            raise HttpError(404, "Not Found: unknown or ended session", code=-32001)
        replayed: list[tuple[str, bytes]] = []
        if last is None:  # the standalone stream, from its start
            stream_id, start = name.rpartition(".")[0], f"{name}/0"
        else:
            stream_id, replayed = await replay(events, last, session_id)
            start = last
        if live is not None and stream_id in live.transport.abandoned:
            raise HttpError(404, "Not Found: that request was cancelled; its stream has ended")
        standalone = stream_id == name.rpartition(".")[0]
        if live is not None:
            live.transport.readers += 1  # a session with a GET stream open is not idle
        try:
            await serve_shared(
                self.options, events, session_id, start, replayed, receive, send,
                follow=True, writer=home if standalone else None, missing_ok=standalone,
                lives=lives if standalone else None,
            )  # fmt: skip
        finally:
            if live is not None:
                live.transport.readers -= 1

    async def _delete(self, headers: dict[str, str], send: Send) -> None:
        if self.options.sessionless:
            await _respond(send, 405, b"", extra=[(b"allow", b"POST")])
            return
        session_id = headers.get("mcp-session-id")
        if session_id is not None and session_id not in self.sessions and self.forwarder is not None:
            record = await self.forwarder.lookup(session_id, owner_text())
            await self.forwarder.tell(record, "end", session_id, owner_text())
            await _respond(send, 200, b"")
            return
        live = self.table.find(session_id)
        await self.table.end(live.transport.session_id)
        await _respond(send, 200, b"")


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
        found = {names[raw]: value.decode("latin-1") for raw, value in raw_headers}
        if len(found) == len(raw_headers):
            return found  # no name repeated
    except KeyError:
        pass
    found = {}
    for raw, value in raw_headers:
        name = names.get(raw)
        if name is None:
            name = raw.decode("latin-1").lower()
            if len(names) < 256:
                names[bytes(raw)] = name
        text = value.decode("latin-1")
        if name in found:
            if name.startswith("mcp-"):
                # Which value would count? A proxy routing on the first and this server
                # checking the last would each see a different request: refused.
                raise HttpError(400, f"Header mismatch: {name} is repeated", code=HEADER_MISMATCH)
            text = f"{found[name]},{text}"  # one field's values, combined as RFC 9110 says
        found[name] = text
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
