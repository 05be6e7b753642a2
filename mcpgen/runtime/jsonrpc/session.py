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
from collections.abc import Awaitable, Callable, Coroutine
from contextvars import ContextVar
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import msgspec
from msgspec import UNSET, UnsetType

from mcpgen.runtime.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    SERVER_BUSY,
    CapabilityError,
    ConnectionClosed,
    McpError,
    RequestTimeout,
)
from mcpgen.runtime.jsonrpc import eager
from mcpgen.runtime.jsonrpc.capabilities import Declared, split
from mcpgen.runtime.jsonrpc.framing import (
    Envelope,
    ErrorObject,
    FrameDropped,
    FrameError,
    FrameTooLarge,
    OutNotification,
    OutRequest,
    OutResult,
    RequestId,
    decode_envelope,
    encode,
    error_frame,
    valid_id,
)
from mcpgen.runtime.jsonrpc.transport import ImmediateTransport, Transport, plain_send

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
NOT_NOW: Any = object()
"""Returned by an immediate handler that cannot answer this request without waiting. It
may instead return a :func:`functools.partial` giving the coroutine that finishes the
request (its params read on the spot): the request's task awaits that."""


class RequestContext(msgspec.Struct):
    """What a handler may want to know about the request it is serving (a Struct rather
    than a dataclass: one is made per request, and a dataclass costs ~0.5 ms at import)."""

    # The Session serving it; for a stateless-era request, the StatelessPeer standing in
    # for one (mcpgen.runtime.server.stateless): what Context talks to either way.
    session: Any
    request_id: RequestId
    method: str
    meta: dict[str, Any] | UnsetType
    progress_token: str | int | None = None
    last_progress: float | None = None


current_request: ContextVar[RequestContext | None] = ContextVar("mcpgen_request", default=None)


@functools.cache
def _runtime_class(spec: MethodSpec) -> Any:
    """What isinstance can check a handler's return value against (``dict`` for
    ``dict[str, Any]`` results)."""
    result_type = spec.result_type
    return getattr(result_type, "__origin__", result_type) if result_type is not None else None


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
        self._inflight: dict[RequestId, asyncio.Task[None]] = {}
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
        # When the peer closes its side, handlers still running get this long to answer.
        self.drain_timeout = drain_timeout
        self._closing = False
        self._refusals: dict[tuple[str, int], object] = {}
        if hasattr(transport, "on_request_error"):  # transports that send requests in the background
            transport.on_request_error = self._fail_pending
        if hasattr(transport, "deliver"):  # transports that may hand a frame over as they read it
            transport.deliver = self._deliver
        # Requests beyond max_concurrency wait here, in order, up to max_queued of them;
        # past that they are refused. Reading never stops, so responses to our own
        # requests (which running handlers may be waiting for) always get through.
        self.max_queued = 4 * max_concurrency
        self._queued: dict[RequestId, tuple[MethodSpec, Any]] = {}
        self._starting_queued = False  # _start_queued is running (an eager task may end inside it)
        self._closed = asyncio.Event()
        self._notification_listeners: list[Callable[[str, Any], Awaitable[None] | None]] = []
        self._immediate: dict[str, object] = {}  # method -> synchronous handler or None
        # Whether requests may be answered on the spot (sides hold it off until their
        # handshake is answered, so that no answer overtakes the handshake's).
        self.answers_now = True
        # Set when the transport can take a frame without waiting (see _answer_now).
        self._immediate_transport = transport if isinstance(transport, ImmediateTransport) else None
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
        method: str = env.method
        if rid in self._inflight or rid in self._queued:
            self._reply_error(rid, INVALID_REQUEST, f"Invalid Request: id {rid!r} is already in use")
            return
        spec = self.incoming.get(method)
        if spec is None or spec.kind != "request":
            self._reply_error(rid, METHOD_NOT_FOUND, f"Method not found: {method}")
            return
        refusal = self.refuse(spec)
        if refusal is not None:
            self._reply_error(rid, *refusal)
            return
        try:
            params = self._decode_params(spec, env)
        except McpError as exc:
            self._reply_error(rid, exc.code, exc.message)
            return
        if len(self._inflight) >= self.max_concurrency and method not in self.unqueued:
            if len(self._queued) >= self.max_queued:
                log.warning(
                    "mcpgen: refusing %s: %d requests running, %d waiting",
                    method,
                    len(self._inflight),
                    len(self._queued),
                )
                self._reply_error(rid, SERVER_BUSY, "Server busy: too many requests in flight; retry later")
                return
            self._queued[rid] = (spec, params)
            return
        if not self._answer_now(rid, spec, params):
            self._start(rid, spec, params)

    def _answer_now(self, rid: RequestId, spec: MethodSpec, params: Any) -> bool:
        """Serve a request on the spot when its handler can finish without waiting (a
        synchronous tool): no task to create, schedule and tear down, which is most
        of the cost of a small request. False when it must run in a task instead."""
        if not self.answers_now:
            return False
        handler = self._immediate.get(spec.method, _UNKNOWN)
        if handler is _UNKNOWN:
            handler = self._immediate[spec.method] = self.immediate_handler(spec)
        if handler is None or self._immediate_transport is None:
            return False
        reset = current_request.set(self._request_context(rid, spec, params))
        try:
            result = handler(params)  # type: ignore[operator]
            if result is NOT_NOW or result.__class__ is partial:
                # Its task starts here, while the request context made above is set: the
                # task copies it, so it is made and set once per request, not twice. A
                # partial is the rest of the handler's work (its arguments read): the task
                # awaits what it returns instead of going through call_handler.
                running = None if result is NOT_NOW else result
                self._launch(rid, self._serve(rid, spec, params, running))
                return True
            frame = self._result_frame(rid, spec, result)
        except asyncio.CancelledError:
            # Raised by the handler itself: no response, as for a cancelled request. The
            # receive loop goes on unless it is being cancelled itself.
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise
            return True
        except Exception as exc:
            frame = self._failure_frame(rid, spec, exc)
        finally:
            current_request.reset(reset)
        self._send_soon(frame, related=rid, final=True)
        return True

    def immediate_handler(self, spec: MethodSpec) -> Callable[[Any], Any] | None:
        """A synchronous handler for ``spec``'s requests, or None. It may still return
        :data:`NOT_NOW` for a request it cannot answer at once (an async tool), which then
        runs in a task as usual. Sides with their own handling of a method return None."""
        if self.handler_timeout is not None:
            return None  # keep one code path for timed handlers
        if type(self).call_handler is not type(self).stock_call_handler:
            return None  # a subclass's call_handler must see every request
        return self.find_immediate(spec)

    def find_immediate(self, spec: MethodSpec) -> Callable[[Any], Any] | None:
        """The handlers' synchronous handler for ``spec``, if any; sides that answer a
        method themselves say so here."""
        find = getattr(self.handlers, "immediate_handler", None)
        return find(spec.handler) if find is not None else None

    def _result_frame(self, rid: RequestId, spec: MethodSpec, result: Any) -> bytes:
        expected = _runtime_class(spec)
        if expected is not None and not isinstance(result, expected):
            log.error(
                "mcpgen: %s handler returned %s, not %s",
                spec.method,
                type(result).__name__,
                getattr(expected, "__name__", expected),
            )
            return error_frame(INTERNAL_ERROR, "Internal error", rid)
        return encode(OutResult(id=rid, result=result))

    def _failure_frame(self, rid: RequestId, spec: MethodSpec, exc: Exception) -> bytes:
        """The error answering a request whose handler raised ``exc`` (a task's or one
        answered on the spot alike); internals stay in the log."""
        if isinstance(exc, McpError):
            return error_frame(exc.code, exc.message, rid, exc.data)
        if isinstance(exc, NotImplementedError):
            return error_frame(METHOD_NOT_FOUND, f"Method not found: {spec.method}", rid)
        log.error("mcpgen: handler for %s failed", spec.method, exc_info=exc)
        return error_frame(INTERNAL_ERROR, "Internal error", rid)

    def _start(self, rid: RequestId, spec: MethodSpec, params: Any) -> None:
        # The request context is set around create_task, which copies it into the task's
        # context: the handler (and Context.current()) sees it, the receive loop does not.
        reset = current_request.set(self._request_context(rid, spec, params))
        try:
            self._launch(rid, self._serve(rid, spec, params))
        finally:
            current_request.reset(reset)

    def _launch(self, rid: RequestId, serving: Coroutine[Any, Any, None]) -> None:
        """Start a request's task (``_serve``). An eager task has run its first step by
        now: it put itself in ``_inflight`` and, if it is done, took itself out again."""
        loop = asyncio.get_running_loop()
        if eager.eager(loop):
            eager.start_eagerly(loop, serving)
        else:
            self._inflight[rid] = loop.create_task(serving)

    def _start_queued(self) -> None:
        if self._starting_queued:
            return  # an eager task ended inside the loop below, which goes on
        self._starting_queued = True
        try:
            while self._queued and len(self._inflight) < self.max_concurrency and self.is_open:
                rid = next(iter(self._queued))
                spec, params = self._queued.pop(rid)
                self._start(rid, spec, params)
        finally:
            self._starting_queued = False

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

    def _request_context(self, rid: RequestId, spec: MethodSpec, params: Any) -> RequestContext:
        meta = getattr(params, "meta", UNSET)
        token = meta.get("progressToken") if isinstance(meta, dict) else None  # checked when decoded
        return RequestContext(self, rid, spec.method, meta, token)

    async def _serve(
        self, rid: RequestId, spec: MethodSpec, params: Any, running: Callable[[], Awaitable[Any]] | None = None
    ) -> None:
        """Run the request's handler and send its answer, in the request's own task (whose
        context, copied when it was created, holds the request's ``current_request``).
        ``running``: the rest of the handler's work, as its immediate handler left it,
        awaited in place of ``call_handler`` (never with a handler_timeout: see
        immediate_handler). A partial, not a coroutine: a task cancelled before it starts
        leaves no coroutine unawaited."""
        frame: bytes | None = None
        # A lazy task was put in _inflight when it was made; an eager one is running now.
        self._inflight[rid] = asyncio.current_task()  # type: ignore[assignment]
        try:
            if running is not None:
                result = await running()
            elif self.handler_timeout is None:
                result = await self.call_handler(spec, params)
            else:
                async with asyncio.timeout(self.handler_timeout):
                    result = await self.call_handler(spec, params)
            frame = self._result_frame(rid, spec, result)
        except asyncio.CancelledError:
            frame = None  # cancelled by the peer (or we are closing): no response
            abandon = getattr(self.transport, "abandon", None)
            if abandon is not None:  # e.g. HTTP: end the POST that waits for it
                abandon(rid)
        except TimeoutError:
            log.error("mcpgen: %s handler timed out after %s s", spec.method, self.handler_timeout)
            frame = error_frame(INTERNAL_ERROR, f"Internal error: no result within {self.handler_timeout:g} s", rid)
        except Exception as exc:
            frame = self._failure_frame(rid, spec, exc)
        finally:
            self._inflight.pop(rid, None)
            self._start_queued()
        if frame is not None and self.is_open:
            try:
                # send() is send_now() then, when told to, drain(): called here without
                # the coroutine between (see plain_send, and _dispatch for a spy's send).
                if self._send_now is None or "send" in self._transport_attributes:
                    await self.transport.send(frame, related=rid, final=True)
                elif not self._send_now(frame, related=rid, final=True):
                    await self.transport.drain()  # type: ignore[attr-defined]
            except ConnectionError:
                pass

    async def call_handler(self, spec: MethodSpec, params: Any) -> Any:
        handler = getattr(self.handlers, spec.handler, None)
        if handler is None:  # handlers that do not serve this method (no generated stub below)
            raise NotImplementedError(spec.method)
        return await handler(params)

    # The call_handler that immediate handlers stand in for: a class of this library that
    # overrides call_handler names its own here, so only a user's subclass loses them.
    stock_call_handler = call_handler

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
        self._spawn(self._notify_handler(spec, params))

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
        self._queued.pop(rid, None)
        task = self._inflight.get(rid)
        if task is not None:
            task.cancel()
            task.add_done_callback(functools.partial(self._cancelled_task_done, rid))

    def _cancelled_task_done(self, rid: RequestId, task: asyncio.Task[Any]) -> None:
        """A cancelled request's task has ended. One cancelled before its first step ran
        none of ``_serve`` (a cancellation read in the same batch as its request): free
        its slot and end what waits for its answer here, as ``_serve`` would have."""
        if self._inflight.get(rid) is not task:
            return  # _serve ran and cleaned up
        del self._inflight[rid]
        abandon = getattr(self.transport, "abandon", None)
        if abandon is not None:
            abandon(rid)
        self._start_queued()

    def _on_progress(self, params: Any) -> None:
        callback = self.progress_handlers.get(params.progress_token)
        if callback is None:
            return
        total = params.total if params.total is not UNSET else None
        message = params.message if params.message is not UNSET else None
        outcome = callback(params.progress, total, message)
        if outcome is not None:
            self._spawn(outcome)

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
            self._spawn(self._send(frame, related=related, final=final))
            return
        try:
            if not transport.send_now(frame, related=related, final=final):
                self._spawn(transport.drain())
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
        drain = getattr(self.transport, "drain", None)
        if drain is not None:
            await drain()

    def _abandon(self, rid: RequestId, method: str) -> None:
        """We stop waiting for ``rid`` (timed out or cancelled): tell the peer, unless it
        answered already or the method is never cancelled."""
        if rid in self._pending and method not in self.uncancellable and self.is_open:
            self._spawn(self.send_notification("notifications/cancelled", {"requestId": rid}))
        forget = getattr(self.transport, "forget", None)
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

    def _spawn(self, coro: Awaitable[Any]) -> None:
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
        if grace > 0 and (self._inflight or self._queued):
            deadline = asyncio.get_running_loop().time() + grace
            while self._inflight and (remaining := deadline - asyncio.get_running_loop().time()) > 0:
                await asyncio.wait(list(self._inflight.values()), timeout=remaining)
        self._open = False
        self._queued.clear()
        for task in list(self._inflight.values()):
            task.cancel()
        pending = [*self._inflight.values(), *self._background]
        if pending:
            await asyncio.wait(pending, timeout=5)
        self._closed.set()

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
