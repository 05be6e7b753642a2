"""The server side of a session: the initialize handshake and per-client state."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcpgen.generated import (
    EmptyResult,
    Implementation,
    InitializeRequestParams,
    InitializeResult,
    LoggingLevel,
    MethodSpec,
    ServerCalls,
)
from mcpgen.runtime.capabilities import Declared
from mcpgen.runtime.errors import INVALID_REQUEST
from mcpgen.runtime.session import Session
from mcpgen.runtime.versions import REVISIONS, negotiate

LOG_LEVELS: tuple[LoggingLevel, ...] = (
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency",
)  # fmt: skip
_SEVERITY = {level: i for i, level in enumerate(LOG_LEVELS)}


class ServerSession(Session, ServerCalls):
    """One client's connection to a server.

    Until ``initialize`` only ``ping`` is served. The handshake records the client's
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
        result = await super().call_handler(spec, params)
        if spec.method == "logging/setLevel":
            self.log_level = params.level
        return result

    _stock_call_handler = call_handler

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

    @property
    def revision(self) -> Any:
        return REVISIONS.get(self.protocol_version or "")


__all__ = ["ServerSession", "LOG_LEVELS", "EmptyResult"]
