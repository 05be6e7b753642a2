"""The JSON-RPC session engine, independent of transport, of side and of protocol era.

One receive loop reads frames; each incoming request runs in its own task (a slow handler
never blocks the others); responses resolve the futures of our own requests. Params and
results are decoded straight from the raw frame into the generated type of the method.
The engine knows no method by name: the side gives it the method tables of the bindings
it speaks (which methods exist, their types and the capability that gates each) and says
which methods are special to it (``unqueued``, ``uncancellable``). The handshake era's
``initialize`` state and ``ping`` live in :mod:`mcpgen.runtime.shared.handshake`.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import math
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import msgspec
from msgspec import UNSET, UnsetType

from mcpgen.runtime.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    CapabilityError,
    ConnectionClosed,
    McpError,
    RequestTimeout,
)
from mcpgen.runtime.jsonrpc import kernel
from mcpgen.runtime.jsonrpc.capabilities import Declared, split
from mcpgen.runtime.jsonrpc.context import current_request
from mcpgen.runtime.jsonrpc.framing import (
    Envelope,
    ErrorObject,
    FrameDropped,
    FrameError,
    FrameTooLarge,
    OutNotification,
    OutRequest,
    RequestId,
    decode_envelope,
    encode,
    error_frame,
    valid_id,
)
from mcpgen.runtime.jsonrpc.transport import Transport, abilities, plain_send

if TYPE_CHECKING:
    # The row type of every revision's method table (the same fields in each bindings package).
    from mcpgen.protocol.v2025_11_25 import MethodSpec

log = logging.getLogger("mcpgen")
T = TypeVar("T")
Role = Literal["server", "client"]
ProgressCallback = Callable[[float, float | None, str | None], Awaitable[None] | None]
_EMPTY = b"{}"
_YIELD_EVERY = 64  # frames handled in a row before the receive loop lets other tasks run
_UNKNOWN = object()
_CLOCK_RESOLUTION = time.get_clock_info("monotonic").resolution  # as the event loop's timers use it


@functools.cache
def runtime_class(spec: MethodSpec) -> Any:
    """What isinstance can check a handler's return value against (``dict`` for
    ``dict[str, Any]`` results)."""
    result_type = spec.result_type
    found = getattr(result_type, "__origin__", result_type) if result_type is not None else None
    return found if isinstance(found, type) else None


async def _not_implemented(method: str, params: Any) -> Any:
    raise NotImplementedError(method)


class Session:
    """A connection to one peer.

    ``handlers`` has a coroutine per request and notification it serves, named as in the
    generated handler stub of this side (``ServerHandlers`` or
    ``ClientHandlers``); every request and notification the peer may send is looked up in
    the generated method table and routed to the handler's coroutine of that name.
    """

    role: Role
    # Given by the side, from the bindings of the era it speaks: the methods the peer may
    # send us and those we may send, and the codec's (cached) decoder for a type.
    incoming: dict[str, MethodSpec]
    outgoing: dict[str, MethodSpec]
    decoder: Callable[[Any], msgspec.json.Decoder[Any]]
    # Requests served even past max_concurrency, never queued (a side's liveness check).
    unqueued: frozenset[str] = frozenset()
    # Requests whose abandonment is not announced with notifications/cancelled.
    uncancellable: frozenset[str] = frozenset()

    def __init__(
        self,
        transport: Transport,
        handlers: Any,
        *,
        request_timeout: float | None = 60.0,
        handler_timeout: float | None = None,
        max_concurrency: int = 1024,
        drain_timeout: float = 1.0,
    ) -> None:
        self.transport = transport
        self.handlers = handlers
        self.request_timeout = request_timeout
        self.own_caps = Declared(None)
        self.peer_caps = Declared(None)
        self.protocol_version: str | None = None
        self._open = True
        self._ids = itertools.count(1)
        # Our requests awaiting a response: the future it resolves, and the decoder of its
        # result (None: the raw JSON of the result is wanted).
        self._pending: dict[RequestId, tuple[asyncio.Future[Any], msgspec.json.Decoder[Any] | None]] = {}
        # The peer's requests being served: running, answered on the spot, or waiting in
        # line for a slot (see kernel.Slots).
        self._inflight: dict[RequestId, kernel.Incoming] = {}
        self._background: set[asyncio.Task[Any]] = set()
        self.progress_handlers: dict[str | int, ProgressCallback] = {}
        # Our requests' deadlines, by timeout (a dict keeps insertion order, so within one
        # timeout the earliest deadline is first), and the one timer that expires them.
        self._deadlines: dict[float, dict[RequestId, tuple[float, asyncio.Future[Any], str]]] = {}
        self._sweep: asyncio.TimerHandle | None = None
        self._sweep_at = math.inf
        # Methods _check_outgoing allowed, and the capabilities (the objects) it saw.
        self._checked_outgoing: tuple[Declared, Declared, set[str]] = (self.own_caps, self.peer_caps, set())
        self.handler_timeout = handler_timeout
        self.max_concurrency = max_concurrency
        # At most max_concurrency of the peer's requests run at once, four times as many
        # wait in order, more are refused. Reading never stops, so responses to our own
        # requests (which running handlers may be waiting for) always get through.
        self.slots = kernel.Slots(max_concurrency)
        # When the peer closes its side, handlers still running get this long to answer.
        self.drain_timeout = drain_timeout
        self._closing = False
        self._refusals: dict[tuple[str, int], object] = {}
        self._routes: dict[str, kernel.Route] = {}  # method -> how its requests are served
        # What the transport offers beyond frames in and out, read once (transport.py).
        self.abilities = abilities(transport)
        if self.abilities.reports_send_failures:  # transports that send requests in the background
            transport.on_request_error = self._fail_pending  # type: ignore[attr-defined]
        if self.abilities.delivers:  # transports that may hand a frame over as they read it
            transport.deliver = self._deliver  # type: ignore[attr-defined]
        self._closed = asyncio.Event()
        self._notification_listeners: list[Callable[[str, Any], Awaitable[None] | None]] = []
        # Set when the transport can take a frame without waiting (see answer_soon).
        self._immediate_transport = self.abilities.immediate
        # Whether requests may be answered on the spot (sides hold it off until their
        # handshake is answered, so that no answer overtakes the handshake's); only where
        # the transport takes a frame without waiting.
        self.answers_now = self._immediate_transport is not None
        # Our requests go straight to send_now when the transport's send() is only that
        # (see plain_send); a subclass overriding send() to watch frames still sees each
        # one, and so does a send() set on the transport object later (a spy in a test).
        immediate = self._immediate_transport
        self._send_now = immediate.send_now if immediate is not None and plain_send(transport) else None
        self._transport_attributes: dict[str, Any] = getattr(transport, "__dict__", {})

    # ------------------------------------------------------------------ receive side

    async def run(self) -> None:
        """Serve until the peer closes the connection, then clean up."""
        try:
            for count in itertools.count(1):
                try:
                    frame = await self.transport.receive()
                except FrameTooLarge as exc:
                    self._send_soon(error_frame(INVALID_REQUEST, f"Invalid Request: {exc}"))
                    continue
                if frame is None:
                    break
                try:
                    self.on_frame(frame)
                except Exception:  # a bug of ours must not end the session
                    log.exception("mcpgen: failed to handle a frame")
                if count % _YIELD_EVERY == 0:
                    # receive() does not wait while frames are buffered, and answers given on
                    # the spot do not either: let the other tasks run during a flood.
                    await asyncio.sleep(0)
        finally:
            await self._shutdown(grace=self.drain_timeout)

    def _deliver(self, frame: bytes) -> None:
        """A frame a transport hands over outside :meth:`run` (from its own callbacks)."""
        try:
            self.on_frame(frame)
        except Exception:  # a bug of ours must not end the session
            log.exception("mcpgen: failed to handle a frame")

    def on_frame(self, frame: bytes) -> None:
        """Dispatch one frame. Synchronous: requests get their own task, responses resolve
        a future, so the loop never waits on a handler."""
        try:
            env = decode_envelope(frame)
        except FrameError as exc:
            self._send_soon(error_frame(exc.code, exc.message, exc.id), related=exc.id, final=True)
            return
        except FrameDropped as exc:
            log.warning("mcpgen: dropped %s", exc)
            return
        self.on_envelope(env)

    def on_envelope(self, env: Envelope) -> None:
        """Dispatch an already decoded frame (a transport that had to look inside it, such
        as HTTP routing by request id, hands it over without a second decode)."""
        if env.method is not UNSET:
            if env.id is UNSET:
                self._on_notification(env)
            else:
                self._on_request(env)
        else:
            self._on_response(env)

    def _on_request(self, env: Envelope) -> None:
        rid: RequestId = env.id
        if rid in self._inflight:
            self._reply_error(rid, INVALID_REQUEST, f"Invalid Request: id {rid!r} is already in use")
            return
        request = self.admit(env)
        if request is not None:
            kernel.serve(request)
            if request.state != kernel.SETTLED:  # running or in line (an answer on the spot is done)
                self._inflight[rid] = request

    def admit(self, env: Envelope) -> kernel.Incoming | None:
        """The request as the kernel serves it, or None when it is refused here (answered
        already): the method table, the side's rules (:meth:`refuse`), the params read into
        the method's type. Sides with another era's admission override this."""
        rid: RequestId = env.id
        method: str = env.method
        spec = self.incoming.get(method)
        if spec is None or spec.kind != "request":
            self._reply_error(rid, METHOD_NOT_FOUND, f"Method not found: {method}")
            return None
        refusal = self.refuse(spec)
        if refusal is not None:
            self._reply_error(rid, *refusal)
            return None
        try:
            params = self._decode_params(spec, env)
        except McpError as exc:
            self._reply_error(rid, exc.code, exc.message)
            return None
        route = self._routes.get(method)
        if route is None:
            route = self._routes[method] = self.make_route(spec)
        meta = getattr(params, "meta", UNSET)
        token = meta.get("progressToken") if isinstance(meta, dict) else None  # checked when decoded
        return kernel.Incoming(
            self, rid, method, meta, token, params=params, route=route, rules=kernel.PLAIN, reply=self, slots=self.slots
        )

    def make_route(self, spec: MethodSpec) -> kernel.Route:
        """How this session serves ``spec``'s requests (asked once per method): the
        handlers' coroutine of the name the method table gives, awaited in a task. Sides
        add what they answer themselves and what the handlers answer on the spot."""
        handler = getattr(self.handlers, spec.handler, None)
        run = handler if handler is not None else functools.partial(_not_implemented, spec.method)
        return kernel.Route(
            run,
            expected=runtime_class(spec),
            limited=spec.method not in self.unqueued,
            timeout=self.handler_timeout,
        )

    def _decode_params(self, spec: MethodSpec, env: Envelope) -> Any:
        raw = env.params if env.params is not UNSET else None
        if raw is None and spec.params_required:
            raise McpError(INVALID_PARAMS, f"Invalid params: {spec.method} needs params")
        try:
            params = self.decoder(spec.params_type).decode(raw if raw is not None else _EMPTY)
            meta = getattr(params, "meta", UNSET)
            if isinstance(meta, dict) and "progressToken" in meta and not valid_id(meta["progressToken"]):
                raise McpError(INVALID_PARAMS, "Invalid params: _meta.progressToken must be a string or an integer")
            return params
        except msgspec.ValidationError as exc:
            raise McpError(INVALID_PARAMS, f"Invalid params: {exc}") from None
        except RecursionError:
            raise McpError(INVALID_PARAMS, "Invalid params: nested too deeply") from None
        except UnicodeDecodeError:
            raise McpError(INVALID_PARAMS, "Invalid params: not valid UTF-8") from None

    def refuse(self, spec: MethodSpec) -> tuple[int, str] | None:
        """Why an incoming request may not be served now, or None. Sides add their rules."""
        if spec.capability is None:
            return None
        key = (spec.method, id(self.own_caps))  # declared capabilities change only at the handshake
        found = self._refusals.get(key, _UNKNOWN)
        if found is _UNKNOWN:
            side, path = split(spec.capability)
            found = None
            if side == self.role and not self.own_caps.has(path):
                found = METHOD_NOT_FOUND, f"Method not found: {spec.method} ({spec.capability} not declared)"
            self._refusals[key] = found
        return found  # type: ignore[return-value]

    # The kernel's Reply: where this connection's answers go.

    def answer_soon(self, rid: RequestId, frame: bytes, code: int | None) -> None:
        # _send_soon, written out: most answers are given on the spot.
        transport = self._immediate_transport
        if transport is None:
            self.spawn(self._send(frame, related=rid, final=True))
            return
        try:
            if not transport.send_now(frame, related=rid, final=True):
                self.spawn(transport.drain())
        except ConnectionError:
            log.debug("mcpgen: dropped a frame for a closed connection")

    def answer(self, rid: RequestId, frame: bytes, code: int | None) -> Awaitable[None] | None:
        if not self._open:
            return None
        # send() is send_now() then, when told to, drain(): called here without the
        # coroutine between (see plain_send, and _dispatch for a spy's send).
        if self._send_now is None or "send" in self._transport_attributes:
            return self._send(frame, related=rid, final=True)
        try:
            if self._send_now(frame, related=rid, final=True):
                return None
        except ConnectionError:
            return None
        return self._drain_quietly()

    def abandoned(self, rid: RequestId) -> None:
        abandon = self.abilities.abandon
        if abandon is not None:  # e.g. HTTP: end the POST that waits for it
            abandon(rid)

    def settled(self, request: kernel.Incoming) -> None:
        if self._inflight.get(request.request_id) is request:
            del self._inflight[request.request_id]

    async def _drain_quietly(self) -> None:
        try:
            if self.abilities.drain is not None:
                await self.abilities.drain()
        except ConnectionError:
            pass

    def _on_notification(self, env: Envelope) -> None:
        method: str = env.method
        spec = self.incoming.get(method)
        if spec is None or spec.kind != "notification":
            log.debug("mcpgen: ignoring unknown notification %s", method)
            return
        try:
            params = self._decode_params(spec, env)
        except McpError as exc:
            log.warning("mcpgen: dropping %s: %s", method, exc.message)
            return
        if method == "notifications/cancelled":
            self._on_cancelled(params)
        elif method == "notifications/progress":
            self._on_progress(params)
        else:
            self.on_notification(spec, params)
        self.spawn(self._notify_handler(spec, params))

    def on_notification(self, spec: MethodSpec, params: Any) -> None:
        """Hook for sides: react to a notification before its handler runs."""

    async def _notify_handler(self, spec: MethodSpec, params: Any) -> None:
        try:
            handler = getattr(self.handlers, spec.handler, None)
            if handler is not None:  # a notification nobody handles is ignored
                await handler(params)
            for listener in self._notification_listeners:
                outcome = listener(spec.method, params)
                if outcome is not None:
                    await outcome
        except Exception:
            log.exception("mcpgen: notification handler for %s failed", spec.method)

    def _on_cancelled(self, params: Any) -> None:
        # Unknown or finished ids are ignored: the response may already be on its way.
        rid = params.request_id
        if rid is UNSET:
            return
        request = self._inflight.get(rid)
        if request is not None:
            kernel.cancel(request)

    def _on_progress(self, params: Any) -> None:
        callback = self.progress_handlers.get(params.progress_token)
        if callback is None:
            return
        total = params.total if params.total is not UNSET else None
        message = params.message if params.message is not UNSET else None
        outcome = callback(params.progress, total, message)
        if outcome is not None:
            self.spawn(outcome)

    def _on_response(self, env: Envelope) -> None:
        if env.id is UNSET:
            log.warning("mcpgen: the peer reported an error without an id: %s", env.error)
            return
        entry = self._pending.pop(env.id, None)
        if entry is None:
            return  # late (cancelled or timed out) or unknown: dropped
        future, result_decoder = entry
        if future.done():
            return
        if env.error is not UNSET:
            future.set_exception(_peer_error(env.error))
            return
        if result_decoder is None:
            future.set_result(env.result)
            return
        try:
            future.set_result(result_decoder.decode(env.result))  # type: ignore[arg-type]
        except (msgspec.ValidationError, RecursionError, UnicodeDecodeError) as exc:
            future.set_exception(McpError(INVALID_PARAMS, f"Invalid result from peer: {exc}"))

    def _fail_pending(self, rid: RequestId, exc: BaseException) -> None:
        entry = self._pending.pop(rid, None)
        if entry is not None and not entry[0].done():
            entry[0].set_exception(exc)

    def _reply_error(self, rid: RequestId, code: int, message: str) -> None:
        self._send_soon(error_frame(code, message, rid), related=rid, final=True)

    def _send_soon(self, frame: bytes, *, related: RequestId | UnsetType = UNSET, final: bool = False) -> None:
        """Send from synchronous code: queued at once when the transport allows it (so the
        answers to what was read go out in the order it was read), else by a task."""
        transport = self._immediate_transport
        if transport is None:
            self.spawn(self._send(frame, related=related, final=final))
            return
        try:
            if not transport.send_now(frame, related=related, final=final):
                self.spawn(transport.drain())
        except ConnectionError:
            log.debug("mcpgen: dropped a frame for a closed connection")

    # ------------------------------------------------------------------ send side

    async def send_request(
        self,
        method: str,
        params: Any,
        result_type: type[T],
        *,
        timeout: float | None | UnsetType = UNSET,
        on_progress: ProgressCallback | None = None,
        related: RequestId | UnsetType = UNSET,
    ) -> T:
        """Send a request and wait for its result, decoded as ``result_type`` (``msgspec.Raw``:
        the result's JSON text as received).

        On timeout or when the awaiting task is cancelled, the peer is told with
        ``notifications/cancelled`` and a late response is dropped.
        """
        rid, future, limit, frame = self._issue(method, params, result_type, timeout, on_progress)
        # The steps below are also ClientSession.send_request's (stateless era), written out
        # there rather than awaited through one more coroutine: this is every call's path.
        try:
            sending = self._dispatch(method, frame, related)
            if sending is not None:
                await sending
            return await future
        except (asyncio.CancelledError, RequestTimeout):
            self._abandon(rid, method)
            raise
        finally:
            self._settle(rid, limit)

    def _issue(
        self,
        method: str,
        params: Any,
        result_type: type[T],
        timeout: float | None | UnsetType,
        on_progress: ProgressCallback | None,
    ) -> tuple[RequestId, asyncio.Future[T], float | None, bytes]:
        """Register a request about to be sent: its id, the future its response resolves,
        its deadline; returns them with its frame. The caller sends the frame, awaits the
        future, calls :meth:`_abandon` if it stops waiting and :meth:`_settle` in any case."""
        checked = self._checked_outgoing  # _check_outgoing's fast path, inline
        if checked[0] is not self.own_caps or checked[1] is not self.peer_caps or method not in checked[2]:
            self._check_outgoing(method)
        if not self._open:
            raise ConnectionClosed("the session is closed")
        rid = next(self._ids)
        if on_progress is not None:
            params = _with_progress_token(params, rid)
        frame = encode(OutRequest(id=rid, method=method, params=params))  # first: unencodable params leave no trace
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        # A raw result needs no decoding: the envelope's decode already cut it out and checked it.
        self._pending[rid] = (future, None if result_type is msgspec.Raw else self.decoder(result_type))
        if on_progress is not None:
            self.progress_handlers[rid] = on_progress
        limit = self.request_timeout if timeout is UNSET else timeout
        if limit is not None:
            self._watch(rid, future, method, limit, loop)
        return rid, future, limit, frame

    def _dispatch(self, method: str, frame: bytes, related: RequestId | UnsetType) -> Awaitable[None] | None:
        """Send one of our requests' frame: None when the transport took it at once (no
        coroutine made and awaited per request), else what to await (the transport's send,
        or the peer catching up). A connection error is raised as ConnectionClosed."""
        send_now = self._send_now
        if send_now is None or "send" in self._transport_attributes:
            return self._send_frame(method, frame, related)
        try:
            if send_now(frame):
                return None
        except ConnectionError as exc:  # e.g. the pipe to a server that just died
            raise _closed_while_sending(method, exc) from exc
        return self._send_frame(method, None, related)

    async def _send_frame(self, method: str, frame: bytes | None, related: RequestId | UnsetType) -> None:
        """Send ``frame`` through the transport (None: it is queued; wait until the peer
        has read enough of what we sent)."""
        if related is UNSET:
            ctx = current_request.get()
            related = ctx.request_id if ctx is not None and ctx.session is self else UNSET
        try:
            if frame is None:
                await self._drain()
            else:
                await self.transport.send(frame, related=related)
        except ConnectionClosed:
            raise
        except ConnectionError as exc:  # e.g. a broken pipe to a server that just died
            raise _closed_while_sending(method, exc) from exc

    async def _drain(self) -> None:
        drain = self.abilities.drain
        if drain is not None:
            await drain()

    def _abandon(self, rid: RequestId, method: str) -> None:
        """We stop waiting for ``rid`` (timed out or cancelled): tell the peer, unless it
        answered already or the method is never cancelled."""
        if rid in self._pending and method not in self.uncancellable and self.is_open:
            self.spawn(self.send_notification("notifications/cancelled", {"requestId": rid}))
        forget = self.abilities.forget
        if forget is not None:  # e.g. HTTP: stop reading the reply of this request
            forget(rid)

    def _settle(self, rid: RequestId, limit: float | None) -> None:
        """Forget a request that ended (answered, failed, timed out or abandoned)."""
        self._pending.pop(rid, None)
        if self.progress_handlers:
            self.progress_handlers.pop(rid, None)
        if limit is not None:
            group = self._deadlines.get(limit)
            if group is not None and group.pop(rid, None) is not None and not group:
                del self._deadlines[limit]

    def _watch(
        self, rid: RequestId, future: asyncio.Future[Any], method: str, limit: float, loop: asyncio.AbstractEventLoop
    ) -> None:
        """Fail ``future`` with RequestTimeout ``limit`` seconds from now. One timer per
        session, set for the earliest deadline, instead of a timer per request: creating,
        heap-ordering and cancelling one per request was a sixth of a small call's cost
        with many in flight. The timer is left to fire when requests end (it finds nothing
        due and sets itself for the next deadline, or stops)."""
        deadline = loop.time() + limit
        group = self._deadlines.get(limit)
        if group is None:
            group = self._deadlines[limit] = {}
        group[rid] = (deadline, future, method)
        if deadline < self._sweep_at:
            if self._sweep is not None:
                self._sweep.cancel()
            self._sweep = loop.call_at(deadline, self._expire_due, loop)
            self._sweep_at = deadline

    def _expire_due(self, loop: asyncio.AbstractEventLoop) -> None:
        """Expire every request whose deadline has come, as its own timer would have
        (the loop runs a timer due within its clock resolution); set the next sweep."""
        self._sweep, self._sweep_at = None, math.inf
        now = loop.time() + _CLOCK_RESOLUTION
        due: list[tuple[asyncio.Future[Any], str, float]] = []
        following = math.inf
        for limit, group in list(self._deadlines.items()):
            while group:
                rid = next(iter(group))
                deadline, future, method = group[rid]
                if deadline > now:
                    following = min(following, deadline)
                    break
                del group[rid]
                due.append((future, method, limit))
            if not group:
                del self._deadlines[limit]
        if following < math.inf:
            self._sweep = loop.call_at(following, self._expire_due, loop)
            self._sweep_at = following
        for future, method, limit in due:
            _expire(future, method, limit)

    async def send_notification(self, method: str, params: Any, *, related: RequestId | UnsetType = UNSET) -> None:
        self._check_outgoing(method)
        if related is UNSET:
            ctx = current_request.get()
            related = ctx.request_id if ctx is not None and ctx.session is self else UNSET
        await self._send(encode(OutNotification(method=method, params=params)), related=related)

    def _check_outgoing(self, method: str) -> None:
        checked = self._checked_outgoing
        if checked[0] is self.own_caps and checked[1] is self.peer_caps and method in checked[2]:
            return  # allowed by these very capabilities before (they change only at a handshake)
        spec = self.outgoing.get(method)
        if spec is None or spec.capability is None:
            return
        side, path = split(spec.capability)
        declared = self.own_caps if side == self.role else self.peer_caps
        if not self.capabilities_known():
            return
        if not declared.has(path):
            raise CapabilityError(f"{method} needs the {spec.capability} capability, which was not declared")
        if checked[0] is not self.own_caps or checked[1] is not self.peer_caps:
            checked = self._checked_outgoing = (self.own_caps, self.peer_caps, set())
        checked[2].add(method)

    def capabilities_known(self) -> bool:
        """Whether both sides' capabilities are known yet (sides with a handshake say no
        until it is done; before it, outgoing requests are not checked against them)."""
        return True

    async def _send(self, frame: bytes, *, related: RequestId | UnsetType = UNSET, final: bool = False) -> None:
        try:
            await self.transport.send(frame, related=related, final=final)
        except ConnectionError:
            log.debug("mcpgen: dropped a frame for a closed connection")

    def spawn(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def add_notification_listener(self, listener: Callable[[str, Any], Awaitable[None] | None]) -> None:
        """Call ``listener(method, params)`` for every notification received."""
        self._notification_listeners.append(listener)

    # ------------------------------------------------------------------ shutdown

    @property
    def is_open(self) -> bool:
        return self._open

    async def close(self) -> None:
        await self.transport.close()
        await self._shutdown()

    async def _shutdown(self, grace: float = 0.0) -> None:
        """End the session: our own requests fail at once (no answer can come any more);
        handlers still running get ``grace`` seconds to finish and answer, then are
        cancelled."""
        if not self._open or self._closing:
            await self._closed.wait()
            return
        self._closing = True
        if self._sweep is not None:
            self._sweep.cancel()
            self._sweep, self._sweep_at = None, math.inf
        self._deadlines.clear()
        for future, _ in self._pending.values():
            if not future.done():
                future.set_exception(ConnectionClosed("the connection closed before a response arrived"))
        self._pending.clear()
        if grace > 0 and self._inflight:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + grace
            # Those in line start as the running ones finish: wait for each round.
            while (running := self._running_tasks()) and (remaining := deadline - loop.time()) > 0:
                await asyncio.wait(running, timeout=remaining)
        self._open = False
        for request in list(self._inflight.values()):
            if request.state == kernel.QUEUED:
                kernel.cancel(request)  # out of the line (which may be shared): never started
        running = self._running_tasks()
        for task in running:
            task.cancel()
        pending = [*running, *self._background]
        if pending:
            await asyncio.wait(pending, timeout=5)
        self._closed.set()

    def _running_tasks(self) -> list[asyncio.Task[None]]:
        return [request.task for request in self._inflight.values() if request.task is not None]

    async def wait_closed(self) -> None:
        await self._closed.wait()


def _expire(future: asyncio.Future[Any], method: str, limit: float) -> None:
    if not future.done():
        future.set_exception(RequestTimeout(f"{method}: no response within {limit:g} s"))


def _closed_while_sending(method: str, exc: ConnectionError) -> ConnectionClosed:
    if isinstance(exc, ConnectionClosed):
        return exc
    return ConnectionClosed(f"the connection closed while sending {method}: {exc}")


def _peer_error(error: Any) -> McpError:
    try:
        obj = msgspec.convert(error, ErrorObject)
    except msgspec.ValidationError:
        return McpError(INTERNAL_ERROR, f"malformed error from peer: {error!r}")
    return McpError(obj.code, obj.message, obj.data)


def _with_progress_token(params: Any, token: int) -> Any:
    meta = params.get("_meta", UNSET) if isinstance(params, dict) else getattr(params, "meta", UNSET)
    new_meta = {**(meta if isinstance(meta, dict) else {}), "progressToken": token}
    if isinstance(params, dict):
        return {**params, "_meta": new_meta}
    return msgspec.structs.replace(params, meta=new_meta)
