"""The middleware API: what a middleware is, what it sees, and the chain that runs them.

A middleware wraps a request: it gets the :class:`Call` (method, typed params, who asks,
which era and session, the request id) and ``call_next``, the rest of the chain ending in
the handler (server) or the wire (client). It may look, change ``call.params``, answer
itself (return a result, or raise :class:`~mcpgen.runtime.errors.McpError`) or let it
through. Notifications pass through a separate, observing hook. The first middleware of
the list is the outermost.

A middleware is a :class:`Middleware` (override ``on_request`` and/or ``on_notification``)
or a bare ``async def hook(call, call_next)``, which wraps requests only. Every request and
notification of either era goes through the chain, on both sides (``initialize``, ``ping``,
``server/discover``, ``subscriptions/listen`` and ``tasks/*`` included).

A middleware that never needs to wait is written without ``async``: ``def hook(call,
call_next)`` (or a :class:`Middleware` whose ``on_request`` is a plain ``def``). Its
``call_next(call)`` returns the result when the handler answers on the spot, else an
awaitable to return as it is (or a value of its own to answer with, or it raises). A chain
of such middleware keeps the fastest path: a tool declared ``blocking=False`` is still
answered as its request is read, without a task. One ``async`` middleware runs every
request it wraps in a task.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from functools import partial
from typing import Any, Literal

import msgspec

from mcpgen.runtime.auth.info import AuthInfo, current_auth
from mcpgen.runtime.jsonrpc.context import RequestContext, current_request
from mcpgen.runtime.jsonrpc.kernel import NOT_NOW
from mcpgen.runtime.shared.caller import SESSIONLESS_ID
from mcpgen.runtime.versions import Era, era_of, negotiate

log = logging.getLogger("mcpgen")
sending: ContextVar[Call | None] = ContextVar("mcpgen_sending", default=None)
"""The client call being sent by this task (set by the client's innermost step)."""

Side = Literal["server", "client"]
CallNext = Callable[["Call"], Awaitable[Any]]
"""The rest of the chain: pass it the call (changed or not) and await the result."""
RequestHook = Callable[["Call", CallNext], Any]
"""A middleware in function form: ``async def hook(call, call_next) -> result``, or a plain
``def`` that never waits (see the module's docstring)."""
Handler = Callable[[Any], Awaitable[Any]]
_UNKNOWN: Any = object()


class Call:
    """One request as a middleware sees it.

    ``params`` is the typed params struct on the server (a struct or a dict on the client,
    as the caller gave it): replace it to change what the handler or the server gets.
    ``request`` is the server's request context (None on the client). ``state`` is a dict
    the middleware of one call may share things through."""

    __slots__ = ("side", "method", "params", "request", "_version", "_session_id", "_state", "sent_id")

    def __init__(
        self,
        side: Side,
        method: str,
        params: Any,
        *,
        request: RequestContext | None = None,
        protocol_version: str | None = _UNKNOWN,
        session_id: str | None = _UNKNOWN,
    ) -> None:
        self.side = side
        self.method = method
        self.params = params
        self.request = request
        # Read off the request's session when first asked (most middleware never asks).
        self._version = protocol_version
        self._session_id = session_id
        self._state: dict[str, Any] | None = None
        # The client's id for the request, known once it is sent (after the chain's way in).
        self.sent_id: str | int | None = None

    @property
    def protocol_version(self) -> str | None:
        """The protocol version the request was made under."""
        if self._version is _UNKNOWN:
            self._version = _server_version(self.request.session if self.request is not None else None)
            if self._version is None and self.method == "initialize":
                # The handshake under way: the version it will settle on.
                asked = getattr(self.params, "protocol_version", None)
                self._version = negotiate(asked) if isinstance(asked, str) else None
        return self._version

    @protocol_version.setter
    def protocol_version(self, value: str | None) -> None:
        self._version = value

    @property
    def session_id(self) -> str | None:
        """The Streamable HTTP session id, in the handshake era over HTTP (else None)."""
        if self._session_id is _UNKNOWN:
            self._session_id = session_id_of(self.request.session if self.request is not None else None)
        return self._session_id

    @session_id.setter
    def session_id(self, value: str | None) -> None:
        self._session_id = value

    @property
    def state(self) -> dict[str, Any]:
        """A dict the middleware of one call may share things through."""
        if self._state is None:
            self._state = {}
        return self._state

    @property
    def request_id(self) -> str | int | None:
        """The JSON-RPC id of the request. A client numbers a request when it writes it: there
        it is None until ``call_next`` has sent it (then the id of the last round)."""
        return self.request.request_id if self.request is not None else self.sent_id

    @property
    def era(self) -> Era | None:
        """The era of the request's protocol version: "handshake" or "stateless"."""
        return era_of(self.protocol_version)

    @property
    def principal(self) -> AuthInfo | None:
        """Who the request acts for on a server protected with ``Server(auth=...)`` (the
        verified token's subject, client, scopes); None unprotected, over stdio, and on the
        client."""
        return current_auth.get() if self.side == "server" else None

    @property
    def task_id(self) -> str | None:
        """The id of the task this tool call runs as, once it is one (stateless era's tasks:
        the call then runs for the task's whole life); None otherwise."""
        if self.request is None:
            return None
        found = getattr(self.request.session, "task_id", None)
        return found if isinstance(found, str) else None

    @property
    def meta(self) -> dict[str, Any]:
        """The request's ``_meta`` (empty when it has none)."""
        if self.request is not None and isinstance(self.request.meta, dict):
            return self.request.meta
        params = self.params
        found = params.get("_meta") if isinstance(params, dict) else getattr(params, "meta", None)
        return found if isinstance(found, dict) else {}

    def add_meta(self, entries: dict[str, Any]) -> None:
        """Add ``entries`` to the outgoing request's ``_meta`` (client side: trace context,
        say); the params are copied, never changed in place."""
        merged = {**self.meta, **entries}
        params = self.params
        if params is None or isinstance(params, dict):
            self.params = {**(params or {}), "_meta": merged}
        elif isinstance(params, msgspec.Struct) and hasattr(params, "meta"):
            self.params = msgspec.structs.replace(params, meta=merged)
        else:
            raise TypeError(f"cannot add _meta to params of type {type(params).__name__}")

    @property
    def target(self) -> str | None:
        """The tool or prompt named by the request (``params.name``), if any."""
        params = self.params
        name = params.get("name") if isinstance(params, dict) else getattr(params, "name", None)
        return name if isinstance(name, str) else None

    @property
    def resource_uri(self) -> str | None:
        """The resource URI the request names (resources/read, subscribe), if any."""
        params = self.params
        uri = params.get("uri") if isinstance(params, dict) else getattr(params, "uri", None)
        return uri if isinstance(uri, str) else None


class Notification(msgspec.Struct):
    """A notification as its hook sees it: every one a side receives, and those a client
    sends (``direction`` says which)."""

    side: Side
    method: str
    params: Any
    protocol_version: str | None = None
    session_id: str | None = None
    direction: Literal["received", "sent"] = "received"


class SessionEnd(msgspec.Struct):
    """A handshake-era session that has ended, as :meth:`Middleware.on_session_end` sees it."""

    side: Side
    protocol_version: str | None
    session_id: str | None
    seconds: float
    error: str | None = None  # the exception's type name, when the session ended with one


class Middleware:
    """Subclass and override what you need; the defaults pass everything through."""

    async def on_request(self, call: Call, call_next: CallNext) -> Any:
        return await call_next(call)

    async def on_notification(self, note: Notification) -> None:
        """Called for every notification (after it was handled on the server, before it is
        sent on the client); what it raises is logged, never sent."""

    async def on_session_end(self, end: SessionEnd) -> None:
        """Called when a handshake-era session (a connection after ``initialize``) ends;
        what it raises is logged."""


class _Hook(Middleware):
    """A bare ``async def hook(call, call_next)`` as a middleware."""

    def __init__(self, hook: RequestHook) -> None:
        self.hook = hook

    async def on_request(self, call: Call, call_next: CallNext) -> Any:
        return await self.hook(call, call_next)

    def __repr__(self) -> str:
        return f"<middleware {getattr(self.hook, '__qualname__', self.hook)!r}>"


class _SyncHook(_Hook):
    """A bare ``def hook(call, call_next)``: it never waits (see the module's docstring)."""

    def on_request(self, call: Call, call_next: CallNext) -> Any:
        return self.hook(call, call_next)


def as_middleware(item: Middleware | RequestHook) -> Middleware:
    if isinstance(item, Middleware):
        return item
    if callable(item):
        waits = inspect.iscoroutinefunction(item) or inspect.iscoroutinefunction(getattr(item, "__call__", None))  # noqa: B004
        return _Hook(item) if waits else _SyncHook(item)
    raise TypeError(f"not a middleware: {item!r}")


def waits(item: Middleware) -> bool:
    """Whether ``item``'s ``on_request`` is a coroutine function (else it never waits)."""
    return inspect.iscoroutinefunction(item.on_request)


def _wraps(item: Middleware) -> bool:
    """Whether ``item`` wraps requests at all (a Middleware that only watches
    notifications or sessions keeps the default, which passes every request through)."""
    return type(item).on_request is not Middleware.on_request


class Chain:
    """An ordered list of middleware, outermost first, and the runs through it."""

    def __init__(self, middleware: Sequence[Middleware | RequestHook] = ()) -> None:
        self.middleware: list[Middleware] = [as_middleware(m) for m in middleware]
        self.notes = self._watchers()
        self.sessions = self._session_watchers()

    def add(self, item: Middleware | RequestHook) -> Middleware:
        found = as_middleware(item)
        self.middleware.append(found)
        self.notes = self._watchers()
        self.sessions = self._session_watchers()
        return found

    def _watchers(self) -> list[Middleware]:
        # Only those overriding on_notification: a notification costs nothing otherwise.
        return [m for m in self.middleware if type(m).on_notification is not Middleware.on_notification]

    def _session_watchers(self) -> list[Middleware]:
        return [m for m in self.middleware if type(m).on_session_end is not Middleware.on_session_end]

    def __len__(self) -> int:
        return len(self.middleware)

    async def run(self, call: Call, last: CallNext) -> Any:
        """Run ``call`` through every middleware, then ``last`` (a client's request on its
        way out)."""
        step, _ = _compose([m for m in self.middleware if _wraps(m)], last, False)
        out = step(call)
        return (await out) if inspect.isawaitable(out) else out

    def compose(
        self, side: Side, method: str, run: Handler, now: Callable[[Any], Any] | None = None
    ) -> tuple[Handler, Callable[[Any], Any] | None]:
        """A route's handler (``run``, awaited in the request's task) and what answers on the
        spot (``now``, see :class:`~mcpgen.runtime.jsonrpc.kernel.Route`) with every
        middleware around them, for the requests of ``method`` that ``side`` serves. They
        are called with the request's context set (``current_request``), which each
        :class:`Call` reads. With middleware that waits, nothing is answered on the spot."""
        items = [m for m in self.middleware if _wraps(m)]
        if not items:
            return run, now

        if any(waits(m) for m in items):

            async def last_awaited(call: Call) -> Any:
                return await run(call.params)

            outer, _ = _compose(items, last_awaited, False)

            async def run_waiting(params: Any) -> Any:
                out = outer(Call(side, method, params, request=current_request.get()))
                return (await out) if inspect.isawaitable(out) else out

            return run_waiting, None

        def last(call: Call) -> Any:
            if now is not None:
                out = now(call.params)
                if out is NOT_NOW:
                    return run(call.params)
                if out.__class__ is partial:
                    return out()  # the rest of the handler's work: a coroutine to await
                return out
            return run(call.params)

        step, _ = _compose(items, last, True)

        def run_now(params: Any) -> Any:
            return step(Call(side, method, params, request=current_request.get()))

        async def run_later(params: Any) -> Any:
            out = step(Call(side, method, params, request=current_request.get()))
            return (await out) if inspect.isawaitable(out) else out

        return run_later, run_now

    async def notify(self, note: Notification) -> None:
        for item in self.notes:
            try:
                await item.on_notification(note)
            except Exception:
                log.exception("mcpgen: middleware %r failed on %s", item, note.method)

    async def session_ended(self, end: SessionEnd) -> None:
        for item in self.sessions:
            try:
                await item.on_session_end(end)
            except Exception:
                log.exception("mcpgen: middleware %r failed at the end of a session", item)

    async def timed(
        self, side: Side, session: Any, run: Callable[[], Awaitable[None]], counts: Callable[[], bool]
    ) -> None:
        """Run ``session``'s receive loop (``run``), then tell the middleware how long the
        session lasted and what ended it, when ``counts()`` says it was a handshake-era
        session (the stateless era has no session to time)."""
        started, error = time.monotonic(), None
        try:
            await run()
        except BaseException as exc:
            error = type(exc).__name__
            raise
        finally:
            if counts():
                seconds = time.monotonic() - started
                end = SessionEnd(side, session.protocol_version, session_id_of(session), seconds, error)
                await self.session_ended(end)


def _bind(item: Middleware, step: Callable[[Call], Any]) -> Callable[[Call], Any]:
    # A bare hook is called as it is (not through its wrapper's on_request: one call less).
    on_request = item.hook if isinstance(item, _Hook) else item.on_request

    def bound(call: Call) -> Any:
        return on_request(call, step)

    return bound


def _awaitable(step: Callable[[Call], Any]) -> CallNext:
    """``step`` (which may answer with a plain value) as an ``async`` middleware's
    ``call_next``, which it awaits."""

    async def stepped(call: Call) -> Any:
        out = step(call)
        return (await out) if inspect.isawaitable(out) else out

    return stepped


def _compose(items: list[Middleware], last: Callable[[Call], Any], plain: bool) -> tuple[Callable[[Call], Any], bool]:
    """``items`` around ``last``, innermost last; ``plain``: ``last`` may answer with a plain
    value (not an awaitable). Returns the outermost step and whether it may."""
    step = last
    for item in reversed(items):
        if waits(item):
            step = _bind(item, _awaitable(step) if plain else step)
            plain = False
        else:
            step = _bind(item, step)
            plain = True
    return step, plain


def session_id_of(session: Any) -> str | None:
    """The Streamable HTTP session id of a handshake-era session, if it has one (stdio and
    stateless requests have none, nor have a sessionless HTTP server's one-request sessions,
    named :data:`~mcpgen.runtime.shared.caller.SESSIONLESS_ID`)."""
    found = getattr(getattr(session, "transport", None), "session_id", None)
    return found if isinstance(found, str) and found != SESSIONLESS_ID else None


def _server_version(session: Any) -> str | None:
    version = getattr(session, "protocol_version", None)  # a handshake-era session
    if version is None:  # a stateless request's peer: the version the request named
        version = getattr(getattr(session, "request", None), "version", None)
    return version if isinstance(version, str) else None


def client_call(session: Any, method: str, params: Any) -> Call:
    """A client's outgoing request as a middleware sees it."""
    return Call(
        "client",
        method,
        params,
        protocol_version=getattr(session, "protocol_version", None),
        session_id=session_id_of(session),
    )


__all__ = [
    "Call",
    "CallNext",
    "Chain",
    "Middleware",
    "Notification",
    "RequestHook",
    "SessionEnd",
    "Side",
    "client_call",
    "session_id_of",
]
