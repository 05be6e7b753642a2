"""The server side of a session: the initialize handshake and per-client state."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from msgspec import UNSET

from mcpgen.generated import (
    EmptyResult,
    Implementation,
    InitializeRequestParams,
    InitializeResult,
    LoggingLevel,
    MethodSpec,
    ServerCalls,
)
from mcpgen.runtime.errors import INVALID_REQUEST, SERVER_BUSY, UNSUPPORTED_VERSION
from mcpgen.runtime.jsonrpc import eager
from mcpgen.runtime.jsonrpc.capabilities import Declared
from mcpgen.runtime.jsonrpc.framing import Envelope, RequestId, error_frame
from mcpgen.runtime.jsonrpc.session import log
from mcpgen.runtime.server.era import request_era
from mcpgen.runtime.shared.handshake import HandshakeSession
from mcpgen.runtime.versions import STATELESS, Era, negotiate

_VERSION_KEY = b"modelcontextprotocol"  # a cheap look before parsing (a slash may be escaped)

LOG_LEVELS: tuple[LoggingLevel, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)
_SEVERITY = {level: i for i, level in enumerate(LOG_LEVELS)}


class ServerSession(HandshakeSession, ServerCalls):
    """One client's connection to a server.

    The first request picks the era of the connection, once: one whose ``_meta`` names a
    protocol version (and is not ``initialize``) makes it a stateless-era connection,
    where every request is served on its own by the server's stateless front; anything
    else opens the handshake era. In the handshake era, until ``initialize`` only ``ping``
    is served. The handshake records the client's
    capabilities and picks the protocol version (the client's when supported, else our
    latest); typed calls to the client (``create_message``, ``elicit``, ``list_roots``)
    are checked against the client's declared capabilities.
    """

    role = "server"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.client_info: Implementation | None = None
        self.log_level: LoggingLevel = "debug"
        self.subscriptions: set[str] = set()
        self.answers_now = False  # until initialize is answered
        self.era: Era | None = None  # chosen by the first request
        # Stateless-era requests beyond max_concurrency, waiting for a slot (in order).
        self._waiting: dict[RequestId, Envelope] = {}
        self._starting_waiting = False  # _start_waiting is running (an eager task may end inside it)
        # The handlers' own path to a handler, where they have one (a Server does); other
        # handlers (a generated ServerHandlers subclass) are looked up by the engine.
        self.dispatch: Callable[[MethodSpec, Any], Awaitable[Any]] | None = getattr(self.handlers, "dispatch", None)
        extra = getattr(self.handlers, "extension_methods", None)
        if extra:  # requests the server's extensions add (skills/list, ...)
            self.incoming = {**self.incoming, **extra}
        if getattr(self.handlers, "extensions", None):  # learn the client's extensions too
            from mcpgen.runtime.shared.extensions import ExtendedInitializeRequestParams

            spec = self.incoming["initialize"]
            self.incoming = {**self.incoming, "initialize": spec._replace(params_type=ExtendedInitializeRequestParams)}
        chain = getattr(self.handlers, "middleware_chain", None)
        if chain is not None and chain.notes:  # middleware watching the notifications received
            self.add_notification_listener(self._noted)
        if chain is not None and chain.sessions:
            # Timed only where a middleware wants it: the class's run, whose frame every
            # resumption of the receive loop passes through, stays bare.
            self.run = self._run_timed  # type: ignore[method-assign]

    async def _noted(self, method: str, params: Any) -> None:
        from mcpgen.runtime.middleware.chain import Notification, session_id_of

        note = Notification("server", method, params, self.protocol_version, session_id_of(self))
        await self.handlers.middleware_chain.notify(note)

    async def _run_timed(self) -> None:
        """:meth:`run`, then the middleware hear how long the session lasted: a
        handshake-era session, one that was initialized and is not a sessionless HTTP
        server's one-request session."""
        await self.handlers.middleware_chain.timed(
            "server",
            self,
            super().run,
            lambda: self.era != "stateless" and self.state != "new" and self.transport_session != "stateless",
        )

    @property
    def transport_session(self) -> str | None:
        found = getattr(self.transport, "session_id", None)
        return found if isinstance(found, str) else None

    # ------------------------------------------------------------ era

    def on_envelope(self, env: Envelope) -> None:
        if self.era is None and env.method is not UNSET and env.id is not UNSET:
            self.era = self._era_of_first(env)
        if self.era == "stateless":
            self._on_stateless(env)
        else:
            super().on_envelope(env)

    def _era_of_first(self, env: Envelope) -> Era:
        # The rule is server.era's; what is here only spares parsing frames that cannot
        # name a version (initialize, no params, no stateless front, no key in the bytes).
        if env.method == "initialize" or env.params is UNSET or getattr(self.handlers, "stateless", None) is None:
            return "handshake"
        if _VERSION_KEY not in bytes(env.params):
            return "handshake"
        try:
            meta = msgspec.json.decode(env.params).get("_meta")
        except (msgspec.DecodeError, AttributeError, RecursionError):
            return "handshake"
        return request_era(meta=meta)

    def _on_stateless(self, env: Envelope) -> None:
        if env.method is UNSET:
            return  # a client sends no responses in the stateless era
        if env.id is UNSET:
            if env.method == "notifications/cancelled":
                super().on_envelope(env)  # cancels the request's task
            return
        rid = env.id
        if rid in self._inflight or rid in self._waiting:
            self._reply_error(rid, INVALID_REQUEST, f"Invalid Request: id {rid!r} is already in use")
        elif env.method == "initialize":
            # A stateless connection stays stateless: say which versions it speaks.
            self._send_soon(
                error_frame(
                    UNSUPPORTED_VERSION,
                    "Unsupported protocol version: this connection speaks the stateless era",
                    rid,
                    {"supported": list(STATELESS), "requested": _requested(env)},
                ),
                related=rid,
                final=True,
            )
        elif len(self._inflight) >= self.max_concurrency:
            # Wait in line, as the handshake era's requests do; refused only past the line.
            if len(self._waiting) >= self.max_queued:
                self._reply_error(rid, SERVER_BUSY, "Server busy: too many requests in flight; retry later")
            else:
                self._waiting[rid] = env
        else:
            self._start_stateless(env)

    def _on_cancelled(self, params: Any) -> None:
        if params.request_id is not UNSET:
            self._waiting.pop(params.request_id, None)  # never started: nothing to answer
        super()._on_cancelled(params)

    def _start_waiting(self) -> None:
        if self._starting_waiting:
            return  # an eager task ended inside the loop below, which goes on
        self._starting_waiting = True
        try:
            while self._waiting and len(self._inflight) < self.max_concurrency and self.is_open:
                rid = next(iter(self._waiting))
                self._start_stateless(self._waiting.pop(rid))
        finally:
            self._starting_waiting = False

    def _start_stateless(self, env: Envelope) -> None:
        """Answer on the spot what needs no waiting (as the handshake era does: no task to
        create, schedule and tear down), else serve the request in a task of its own."""
        rid = env.id

        async def sink(frame: bytes) -> None:
            await self.transport.send(frame, related=rid)

        if self._immediate_transport is None:
            pending = self.handlers.stateless.handle(env, sink=sink)
        else:
            try:
                answer = self.handlers.stateless.handle_now(env, sink=sink)
            except asyncio.CancelledError:
                # Raised by a handler itself: no response, as for a cancelled request. The
                # receive loop goes on unless it is being cancelled itself.
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    raise
                return
            if isinstance(answer, tuple):
                self._send_soon(answer[0], related=rid, final=True)
                return
            pending = answer
        task = eager.start(self._serve_stateless(rid, pending))
        if task.done():  # it ended in its first step (an eager task): it never held a slot
            self._stateless_done(rid, task, pending)
            return
        self._inflight[rid] = task
        task.add_done_callback(lambda _: self._stateless_done(rid, task, pending))

    def _stateless_done(self, rid: RequestId, task: asyncio.Task[None], pending: Awaitable[Any]) -> None:
        """Free the request's slot, also when it was cancelled before its task started
        (then ``_serve_stateless`` ran none of its code, and ``pending``, never awaited, is
        closed unrun), and start a request waiting for one."""
        if self._inflight.get(rid) is task:
            del self._inflight[rid]
        close = getattr(pending, "close", None)
        if close is not None:
            close()  # a no-op for a coroutine that ran to its end
        self._start_waiting()

    async def _serve_stateless(self, rid: RequestId, pending: Awaitable[tuple[bytes, int | None]]) -> None:
        frame: bytes | None = None
        try:
            frame, _ = await pending
        except asyncio.CancelledError:
            frame = None  # cancelled by the client: no response
        finally:
            self._inflight.pop(rid, None)
        if frame is not None and self.is_open:
            try:
                # send() is send_now() then, when told to, drain(): called here without
                # the coroutine between (as Session._serve does).
                if self._send_now is None or "send" in self._transport_attributes:
                    await self.transport.send(frame, related=rid, final=True)
                elif not self._send_now(frame, related=rid, final=True):
                    await self.transport.drain()  # type: ignore[attr-defined]
            except ConnectionError:
                log.debug("mcpgen: dropped a response for a closed connection")

    def refuse(self, spec: MethodSpec) -> tuple[int, str] | None:
        if spec.method == "initialize":
            if self.state != "new":
                return INVALID_REQUEST, "Invalid Request: the session is already initialized"
            # From here on the handshake is under way: a request sent right behind
            # initialize (before its response) is not refused as "before initialize",
            # and sees the capabilities when the handlers declare them up front.
            self.state = "initializing"
            known = getattr(self.handlers, "capabilities", None)
            if callable(known):
                self.own_caps = Declared(known())
            return None
        if self.state == "new" and spec.method != "ping":
            return INVALID_REQUEST, f"Invalid Request: {spec.method} before initialize"
        return super().refuse(spec)

    def immediate_handler(self, spec: MethodSpec) -> Callable[[Any], Any] | None:
        if spec.method in ("initialize", "logging/setLevel"):
            return None  # the handshake and the log level go through call_handler below
        return super().immediate_handler(spec)

    async def call_handler(self, spec: MethodSpec, params: Any) -> Any:
        if spec.method == "initialize":
            result = await self._initialize(params)
            # Its answer is sent right after this returns, before any other frame is read.
            self.answers_now = True
            return result
        if self.dispatch is None or spec.method == "ping":
            result = await super().call_handler(spec, params)
        else:  # a Server's one path to its handlers (Server.dispatch)
            result = await self.dispatch(spec, params)
        if spec.method == "logging/setLevel":
            self.log_level = params.level
        return result

    stock_call_handler = call_handler

    async def _initialize(self, params: InitializeRequestParams) -> InitializeResult:
        self.protocol_version = negotiate(params.protocol_version)
        self.peer_caps = Declared(params.capabilities)
        self.client_info = params.client_info
        try:
            result: InitializeResult = await self.handlers.initialize(params)
        except BaseException:
            self.state = "new"  # the handshake failed: it may be tried again
            raise
        result.protocol_version = self.protocol_version
        self.own_caps = Declared(result.capabilities)
        return result

    def on_notification(self, spec: MethodSpec, params: Any) -> None:
        if spec.method == "notifications/initialized" and self.state == "initializing":
            self.state = "ready"

    def logs(self, level: LoggingLevel) -> bool:
        """Whether a log message at ``level`` passes the client's chosen level."""
        return _SEVERITY[level] >= _SEVERITY[self.log_level]


def _requested(env: Envelope) -> str:
    try:
        version = msgspec.json.decode(env.params).get("protocolVersion") if env.params is not UNSET else None
    except (msgspec.DecodeError, AttributeError, RecursionError):
        version = None
    return version if isinstance(version, str) else ""


__all__ = ["ServerSession", "LOG_LEVELS", "EmptyResult"]
