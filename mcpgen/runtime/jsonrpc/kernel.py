"""The one request pipeline: how an admitted request is served, whatever its era, its side
and its transport.

A request reaches the kernel *admitted*: its era's rules checked it (the handshake era's
method table, ``initialize`` gate and capabilities; the stateless era's ``_meta``, headers
and version) and read its params. It arrives as an :class:`Incoming`, which carries what
serving it takes, each part given by whoever knows it:

* its :class:`Route`: the handler for its method, with the middleware composed around it,
  and what the handler may answer on the spot (the side builds routes once per method);
* its :class:`Rules`: how its era turns a result or a failure into the answer's frame (the
  handshake era writes the result as it is; the stateless era stamps it);
* its :class:`Reply`: where the answer goes (a connection's transport, or one HTTP POST);
* its :class:`Slots`: the bound it runs under (a connection's, or an HTTP app's for the
  requests that have no connection).

What the kernel does is written here once: take a slot or wait in line or refuse ("server
busy"); answer on the spot when the route can (no task to create, schedule and tear down,
which is most of the cost of a small request); else run the handler in a task of its own,
under the handler timeout; check the result's type; map what the handler raised to an
error; send the answer; free the slot. Cancelling a request (the peer's
``notifications/cancelled``, an HTTP client going away) is :func:`cancel`.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from functools import partial
from types import CoroutineType
from typing import Any, NoReturn, Protocol

import msgspec

from mcpgen.runtime.errors import INTERNAL_ERROR, METHOD_NOT_FOUND, SERVER_BUSY, McpError
from mcpgen.runtime.jsonrpc import eager
from mcpgen.runtime.jsonrpc.context import RequestContext, current_request
from mcpgen.runtime.jsonrpc.framing import OutResult, RequestId, encode, error_frame

log = logging.getLogger("mcpgen")

NOT_NOW: Any = object()
"""What a route's ``now`` returns for a request it cannot answer without waiting: the
request then runs its ``run`` in a task. ``now`` may instead return the rest of the work (a
:func:`functools.partial` making the coroutine, or the coroutine itself), which the task
awaits in place of ``run``."""

BUSY_MESSAGE = "Server busy: too many requests in flight; retry later"

# The states of an Incoming, in order.
NEW, QUEUED, RUNNING, SETTLED = 0, 1, 2, 3


class Route(msgspec.Struct, frozen=True):
    """How the requests of one method are served (built once per method by the side)."""

    # The handler, middleware included: takes the params, awaited in the request's task.
    run: Callable[[Any], Awaitable[Any]]
    # What answers on the spot, if anything: takes the params, returns the result, NOT_NOW,
    # or the rest of the work (see NOT_NOW). Called with the request's context set.
    now: Callable[[Any], Any] | None = None
    # What the result must be an instance of (a wrong type never reaches the wire).
    expected: type | None = None
    # Whether the request takes one of the slots (a liveness ping and a listen stream do not).
    limited: bool = True
    # Seconds the handler may take (the server's handler_timeout), or None.
    timeout: float | None = None


class Rules(Protocol):
    """How a protocol era turns a request's outcome into its answer."""

    def result(self, request: Incoming, result: Any) -> bytes:
        """The frame answering ``request`` with ``result`` (its type already checked)."""
        ...

    def failure(self, request: Incoming, exc: BaseException) -> tuple[bytes, int | None] | None:
        """The era's own answer to what the handler raised (and its error code; None for a
        result), or None for the kernel's: McpError -> its error, NotImplementedError ->
        -32601, anything else -> -32603 (logged)."""
        ...


class Reply(Protocol):
    """Where the answers to a connection's (or one HTTP POST's) requests go."""

    # Whether answers may be sent from synchronous code (else a request that could be
    # answered on the spot runs in a task too: its answer may need to wait).
    answers_now: bool

    def answer_soon(self, rid: RequestId, frame: bytes, code: int | None) -> None:
        """Send ``frame`` from synchronous code, without waiting (queued in order)."""
        ...

    def answer(self, rid: RequestId, frame: bytes, code: int | None) -> Awaitable[None] | None:
        """Send ``frame`` from the request's task: None when it was taken at once, else
        what to await (the transport's send, or the peer catching up)."""
        ...

    def abandoned(self, rid: RequestId) -> None:
        """The request was cancelled: no answer will come (an HTTP POST waiting for one ends)."""
        ...

    def settled(self, request: Incoming) -> None:
        """The request, which outlived :func:`serve` (its owner keeps such requests: running,
        or in line), has ended: forget it."""
        ...


class Incoming(RequestContext, kw_only=True, eq=False):
    """A request being served: what handlers see of it (:class:`RequestContext`) and what
    the kernel needs to serve it. One is made per request, by the era's admission."""

    params: Any = None
    route: Route
    rules: Rules
    reply: Reply
    slots: Slots | None = None
    state: int = NEW
    task: asyncio.Task[None] | None = None
    # The rest of the work, when ``now`` handed over a coroutine (closed if never awaited).
    later: Any = None


class Ready(msgspec.Struct, frozen=True):
    """A result its handler made in its era's final form (the stateless era's
    ``CreateTaskResult``, say): ``kind`` names it to the era's rules (its ``resultType``),
    ``body`` is its members. Not checked against the method's result type."""

    kind: str
    body: Any


class Later(msgspec.Struct):
    """The rest of an on-the-spot handler's work, for its task to run: ``fn(**kwargs)``
    awaited, then ``done(key, value)`` (or ``failed(key, exc)``) makes the result. What
    :data:`NOT_NOW`'s partial does, without a coroutine of the handler's between."""

    fn: Callable[..., Awaitable[Any]]
    kwargs: dict[str, Any]
    done: Callable[[Any, Any], Any]
    failed: Callable[[Any, Exception], Any]
    key: Any = None


class PlainRules:
    """The handshake era's (and a client's) answers: the result as it is."""

    def result(self, request: Incoming, result: Any) -> bytes:
        return encode(OutResult(id=request.request_id, result=result.body if isinstance(result, Ready) else result))

    def failure(self, request: Incoming, exc: BaseException) -> tuple[bytes, int | None] | None:
        return None


PLAIN = PlainRules()


class Slots:
    """At most ``running`` requests served at once; up to ``4 * running`` more wait their
    turn in order (no task each: a request in line is only an entry here); past that a
    request is refused with -32000. A connection has its own; an HTTP app has one for the
    requests that come without a connection."""

    def __init__(self, running: int) -> None:
        self.running = running
        self.free = running
        self.max_waiting = 4 * running
        self.line: dict[Incoming, None] = {}  # insertion-ordered
        self._handing = False  # leave() is starting requests (an eager task may end inside it)

    def enter(self, request: Incoming) -> bool:
        """Take a slot for ``request`` (True), or put it in line or refuse it (False)."""
        if self.free > 0 and not self.line:
            self.free -= 1
            return True
        if len(self.line) >= self.max_waiting:
            log.warning(
                "mcpgen: refusing %s: %d requests running, %d waiting",
                request.method,
                self.running - self.free,
                len(self.line),
            )
            _close_later(request)
            request.state = SETTLED  # refused inside serve(): its owner never kept it
            request.reply.answer_soon(request.request_id, busy_frame(request.request_id), SERVER_BUSY)
            return False
        request.state = QUEUED
        self.line[request] = None
        return False

    def leave(self) -> None:
        """Give a slot back: to the first request in line, else to the free ones."""
        self.free += 1
        if self._handing or not self.line:
            return  # the loop below (further up this very stack) goes on
        self._handing = True
        try:
            while self.line and self.free > 0:
                request = next(iter(self.line))
                del self.line[request]
                self.free -= 1
                resume(request)
        finally:
            self._handing = False

    def withdraw(self, request: Incoming) -> bool:
        """Take ``request`` out of the line (cancelled while waiting); False if not in it."""
        return self.line.pop(request, False) is None


class OneReply:
    """The reply of one request served on its own (an HTTP POST of the stateless era, or
    :meth:`StatelessServer.handle`): what its handler sends before the end (notifications,
    in order) and its answer, with one future to wait on for the next of them."""

    answers_now = True

    def __init__(self) -> None:
        self.items: deque[bytes] = deque()  # notifications not yet taken
        self.answer_frame: tuple[bytes, int | None] | None = None
        self.ended = False  # answered, or cancelled
        self._wake: asyncio.Future[None] | None = None

    def put(self, frame: bytes) -> None:
        """A notification of the request (its sink)."""
        self.items.append(frame)
        self.poke()

    def answer_soon(self, rid: RequestId, frame: bytes, code: int | None) -> None:
        self.answer_frame = (frame, code)
        self.ended = True
        self.poke()

    def answer(self, rid: RequestId, frame: bytes, code: int | None) -> Awaitable[None] | None:
        self.answer_soon(rid, frame, code)
        return None

    def abandoned(self, rid: RequestId) -> None:
        self.ended = True
        self.poke()

    def settled(self, request: Incoming) -> None:
        pass

    def poke(self, _: Any = None) -> None:
        wake = self._wake
        if wake is not None and not wake.done():
            wake.set_result(None)

    async def wait(self) -> None:
        """Until something is there to take (or ``poke`` is called)."""
        if self.items or self.ended:
            return
        self._wake = asyncio.get_running_loop().create_future()
        try:
            await self._wake
        finally:
            self._wake = None

    async def final(self) -> tuple[bytes, int | None] | None:
        """The answer (frame and error code), once there is one; None if cancelled."""
        while not self.ended:
            await self.wait()
        return self.answer_frame


def busy_frame(rid: RequestId) -> bytes:
    return error_frame(SERVER_BUSY, BUSY_MESSAGE, rid)


# ------------------------------------------------------------------ serving


def serve(request: Incoming) -> None:
    """Serve an admitted request: answer it on the spot where its route can (that takes no
    slot: nothing is held), else take a slot, or wait in line, or be refused, and run it
    in a task. Synchronous: nothing here waits. (The on-the-spot answer is written out here
    rather than called: it is most requests' whole path.)"""
    route = request.route
    # The request's context is set around the handler and around creating its task (which
    # copies it): the handler and Context.current() see it, the caller's code does not.
    reset = current_request.set(request)
    try:
        later: Any = None
        now = route.now
        if now is not None and request.reply.answers_now:
            code: int | None = None
            try:
                out = now(request.params)
                kind = out.__class__
                expected = route.expected
                if out is NOT_NOW:
                    pass  # its task runs the route's run
                elif kind is Later or kind is partial or kind is CoroutineType:
                    later = out
                elif expected is not None and isinstance(out, expected):  # the common case: a result
                    frame = request.rules.result(request, out)
                    later = _ANSWERED
                elif _AWAITABLE.get(kind, False) or (kind not in _AWAITABLE and _awaitable(kind, out)):
                    later = out  # an awaitable of another kind (a middleware's)
                else:
                    if expected is not None and not isinstance(out, Ready):
                        _wrong_type(request, out)
                    frame = request.rules.result(request, out)
                    later = _ANSWERED
            except asyncio.CancelledError:
                # Raised by the handler itself: no answer, as for a cancelled request. The
                # caller goes on unless it is being cancelled itself.
                settle(request)
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    raise
                return
            except Exception as exc:
                frame, code = failure(request, exc)
                later = _ANSWERED
            if later is _ANSWERED:
                request.reply.answer_soon(request.request_id, frame, code)
                request.state = SETTLED  # it held no slot, and its owner never kept it
                return
        slots = request.slots
        if slots is not None and route.limited:
            request.later = later
            if not slots.enter(request):
                return  # in line (Slots.leave starts it) or refused (answered)
        _launch(request, later)
    finally:
        current_request.reset(reset)


_ANSWERED: Any = object()
# Whether instances of a class (what an on-the-spot handler returned) are awaitable.
_AWAITABLE: dict[type, bool] = {}


def _awaitable(kind: type, out: Any) -> bool:
    """Whether ``out`` (of a class not seen before) is awaitable, remembered for its class."""
    found = _AWAITABLE[kind] = inspect.isawaitable(out)
    return found


def _wrong_type(request: Incoming, result: Any) -> NoReturn:
    expected = request.route.expected
    log.error(
        "mcpgen: %s handler returned %s, not %s",
        request.method,
        type(result).__name__,
        getattr(expected, "__name__", expected),
    )
    raise McpError(INTERNAL_ERROR, "Internal error")


def resume(request: Incoming) -> None:
    """Start a request whose turn in line has come (it holds the slot handed to it)."""
    reset = current_request.set(request)
    try:
        _launch(request, request.later)
    finally:
        current_request.reset(reset)


def _launch(request: Incoming, later: Any) -> None:
    request.state = RUNNING
    if later is not None and later.__class__ is CoroutineType:
        request.later = later  # closed unrun if the task never starts
    loop = asyncio.get_running_loop()
    serving = _serve(request, later)
    if eager.eager(loop):
        task = eager.start_eagerly(loop, serving)  # may have ended by now
    else:
        task = loop.create_task(serving)
    if request.state != SETTLED:
        request.task = task


async def _serve(request: Incoming, later: Any) -> None:
    """Run the request's handler and send its answer, in the request's own task (whose
    context holds the request's ``current_request``). The work is the route's ``run``, or
    what an on-the-spot handler left: a :class:`Later` (its function awaited right here,
    no coroutine of the handler's between), a partial, a coroutine or another awaitable."""
    route = request.route
    frame: bytes | None = None
    code: int | None = None
    limit = route.timeout
    timer = asyncio.timeout(limit) if limit is not None else None
    kind = later.__class__
    try:
        if later is None:
            work = route.run(request.params)
        elif kind is Later:
            work = later.fn(**later.kwargs)
        elif kind is partial:
            work = later()
        else:
            work = later
        try:
            if timer is None:
                result = await work
            else:
                async with timer:
                    result = await work
        except Exception as exc:
            if kind is not Later or (timer is not None and timer.expired()):
                raise
            result = later.failed(later.key, exc)  # the handler's own failure, as it answers it
        else:
            if kind is Later:
                result = later.done(later.key, result)
        frame = finish(request, result)
    except asyncio.CancelledError:
        frame = None  # cancelled by the peer (or the connection is closing): no answer
        request.reply.abandoned(request.request_id)
    except Exception as exc:
        if timer is not None and timer.expired() and isinstance(exc, TimeoutError):
            log.error("mcpgen: %s handler timed out after %s s", request.method, limit)
            frame = error_frame(INTERNAL_ERROR, f"Internal error: no result within {limit:g} s", request.request_id)
            code = INTERNAL_ERROR
        else:
            frame, code = failure(request, exc)
    finally:
        request.later = None
        settle(request)
        if frame is not None:
            sending = request.reply.answer(request.request_id, frame, code)
            if sending is not None:
                await sending


def finish(request: Incoming, result: Any) -> bytes:
    """The frame answering ``request`` with ``result``, once its type is checked."""
    expected = request.route.expected
    if expected is not None and not isinstance(result, expected) and not isinstance(result, Ready):
        _wrong_type(request, result)
    return request.rules.result(request, result)


def failure(request: Incoming, exc: BaseException) -> tuple[bytes, int | None]:
    """The answer to a request whose handler (or middleware) raised ``exc``; internals stay
    in the log."""
    own = request.rules.failure(request, exc)
    if own is not None:
        return own
    rid = request.request_id
    if isinstance(exc, McpError):
        return error_frame(exc.code, exc.message, rid, exc.data), exc.code
    if isinstance(exc, NotImplementedError):
        return error_frame(METHOD_NOT_FOUND, f"Method not found: {request.method}", rid), METHOD_NOT_FOUND
    log.error("mcpgen: handler for %s failed", request.method, exc_info=exc)
    return error_frame(INTERNAL_ERROR, "Internal error", rid), INTERNAL_ERROR


def settle(request: Incoming) -> None:
    """The request has ended: its slot (if it held one) goes to the next in line, its owner
    forgets it."""
    state = request.state
    if state == SETTLED:
        return
    request.state = SETTLED
    request.task = None
    if state != NEW:  # it outlived serve(): its owner keeps it until now
        request.reply.settled(request)
    held = state == RUNNING  # answered on the spot or in line: it held none
    slots = request.slots
    if held and slots is not None and request.route.limited:
        slots.leave()


def cancel(request: Incoming) -> None:
    """Cancel ``request``: out of the line if it waits, else its task is cancelled (and a
    task cancelled before its first step, which ran none of ``_serve``, is settled here)."""
    if request.state == QUEUED:
        if request.slots is not None:
            request.slots.withdraw(request)
        _close_later(request)
        request.state = SETTLED
        request.reply.settled(request)
        return
    task = request.task
    if task is not None and request.state == RUNNING:
        task.cancel()
        task.add_done_callback(partial(_cancelled, request))


def _cancelled(request: Incoming, task: asyncio.Task[None]) -> None:
    if request.state == SETTLED:
        return  # _serve ran and settled it
    _close_later(request)
    settle(request)
    request.reply.abandoned(request.request_id)


def _close_later(request: Incoming) -> None:
    """Close the rest of the work made on the spot, never awaited (no warning, nothing run)."""
    later = request.later
    request.later = None
    close = getattr(later, "close", None)
    if close is not None and later.__class__ is not partial:
        close()


__all__ = [
    "BUSY_MESSAGE",
    "NOT_NOW",
    "PLAIN",
    "Incoming",
    "Later",
    "OneReply",
    "Ready",
    "PlainRules",
    "Reply",
    "Route",
    "Rules",
    "Slots",
    "busy_frame",
    "cancel",
    "failure",
    "finish",
    "serve",
    "resume",
    "settle",
]
