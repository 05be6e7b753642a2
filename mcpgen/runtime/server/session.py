"""The server side of a connection: which era it speaks, the ``initialize`` handshake, and
per-client state.

A connection admits each request by its era's rules and hands it to the kernel
(:mod:`mcpgen.runtime.jsonrpc.kernel`), which serves both eras alike: the handshake era's
admission is the engine's (the method table, the ``initialize`` gate, capabilities), the
stateless era's is the stateless front's (:meth:`StatelessServer.admit`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from msgspec import UNSET

from mcpgen.protocol.v2025_11_25 import (
    EmptyResult,
    Implementation,
    InitializeRequestParams,
    InitializeResult,
    LoggingLevel,
    MethodSpec,
    ServerCalls,
)
from mcpgen.runtime.errors import INVALID_REQUEST, UNSUPPORTED_VERSION
from mcpgen.runtime.jsonrpc import kernel
from mcpgen.runtime.jsonrpc.capabilities import Declared
from mcpgen.runtime.jsonrpc.framing import Envelope, RequestId, error_frame
from mcpgen.runtime.server.era import request_era
from mcpgen.runtime.shared.handshake import PING, HandshakeSession
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
    where every request is admitted on its own by the server's stateless front; anything
    else opens the handshake era. In the handshake era, until ``initialize`` only ``ping``
    is served. The handshake records the client's capabilities and picks the protocol
    version (the client's when supported, else our latest); typed calls to the client
    (``create_message``, ``elicit``, ``list_roots``) are checked against the client's
    declared capabilities.
    """

    role = "server"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.client_info: Implementation | None = None
        self.log_level: LoggingLevel = "debug"
        self.subscriptions: set[str] = set()
        self.answers_now = False  # until initialize is answered
        self.era: Era | None = None  # chosen by the first request
        extra = getattr(self.handlers, "handshake_methods", None)
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

        version = self.protocol_version if self.era != "stateless" else None
        note = Notification("server", method, params, version, session_id_of(self))
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
    def lifespan_state(self) -> Any:
        """What the server's lifespan yielded (Context.lifespan)."""
        return getattr(self.handlers, "lifespan_state", None)

    @property
    def transport_session(self) -> str | None:
        found = getattr(self.transport, "session_id", None)
        return found if isinstance(found, str) else None

    # ------------------------------------------------------------ era

    def on_envelope(self, env: Envelope) -> None:
        if self.era is None and env.method is not UNSET and env.id is not UNSET:
            self.era = self._era_of_first(env)
            if self.era == "stateless":  # no handshake to wait for
                self.answers_now = self._immediate_transport is not None
        if self.era != "stateless":
            super().on_envelope(env)
        elif env.method is UNSET:
            return  # a client sends no responses in the stateless era
        elif env.id is not UNSET:
            self._on_stateless(env)
        elif env.method == "notifications/cancelled":
            super().on_envelope(env)  # cancels the request (the era defines no other notification)

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
        rid: RequestId = env.id
        if rid in self._inflight:
            self._reply_error(rid, INVALID_REQUEST, f"Invalid Request: id {rid!r} is already in use")
            return
        if env.method == "initialize":
            # A stateless connection stays stateless: say which versions it speaks.
            data = {"supported": list(STATELESS), "requested": _requested(env)}
            message = "Unsupported protocol version: this connection speaks the stateless era"
            self.answer_soon(rid, error_frame(UNSUPPORTED_VERSION, message, rid, data), UNSUPPORTED_VERSION)
            return

        async def sink(frame: bytes) -> None:  # the request's notifications (progress, logs)
            await self.transport.send(frame, related=rid)

        front = self.handlers.stateless
        try:
            request = front.admit(env, sink=sink, reply=self, slots=self.slots)
        except Exception as exc:
            frame, code = front.refusal(rid, env.method, exc)
            self.answer_soon(rid, frame, code)
            return
        kernel.serve(request)
        if request.state != kernel.SETTLED:  # running or in line (an answer on the spot is done)
            self._inflight[rid] = request

    # ------------------------------------------------------------ the handshake era

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

    def make_route(self, spec: MethodSpec) -> kernel.Route:
        handlers = self.handlers
        route: Callable[[MethodSpec], kernel.Route] | None = getattr(handlers, "route", None)
        wrap: Callable[[str, kernel.Route], kernel.Route] = getattr(handlers, "wrap", _unwrapped)
        if spec.method == "initialize":
            # The handshake's own steps around the server's handler; never on the spot.
            base = kernel.Route(self._initialize, expected=InitializeResult, timeout=self.handler_timeout)
            return wrap("initialize", base)
        if spec.method == "ping":
            return wrap("ping", PING)
        found = route(spec) if route is not None else super().make_route(spec)
        if spec.method == "logging/setLevel":
            return msgspec.structs.replace(found, run=self._level_setter(found.run), now=None)
        return found

    def _level_setter(self, run: Callable[[Any], Awaitable[Any]]) -> Callable[[Any], Awaitable[Any]]:
        async def set_level(params: Any) -> Any:
            result = await run(params)
            self.log_level = params.level  # once the handler (and the middleware) let it through
            return result

        return set_level

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
        # Its answer is sent right after this returns, before any other frame is read:
        # from then on answers may overtake nothing.
        self.answers_now = self._immediate_transport is not None
        return result

    def on_notification(self, spec: MethodSpec, params: Any) -> None:
        if spec.method == "notifications/initialized" and self.state == "initializing":
            self.state = "ready"

    def logs(self, level: LoggingLevel) -> bool:
        """Whether a log message at ``level`` passes the client's chosen level."""
        return _SEVERITY[level] >= _SEVERITY[self.log_level]


def _unwrapped(method: str, route: kernel.Route) -> kernel.Route:
    return route


def _requested(env: Envelope) -> str:
    try:
        version = msgspec.json.decode(env.params).get("protocolVersion") if env.params is not UNSET else None
    except (msgspec.DecodeError, AttributeError, RecursionError):
        version = None
    return version if isinstance(version, str) else ""


__all__ = ["ServerSession", "LOG_LEVELS", "EmptyResult"]
