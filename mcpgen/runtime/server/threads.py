"""Synchronous handlers run in a bounded thread pool, off the event loop.

A plain ``def`` tool, resource, prompt or completer may block (``time.sleep``,
``requests``, a database driver). Called on the event loop, it would stall every
session the server has, so by default it runs here, and the event loop goes on serving
others while it works. A handler declared ``blocking=False`` skips the pool (see
:class:`~mcpgen.runtime.server.server.Server`).

Why a dedicated :class:`concurrent.futures.ThreadPoolExecutor` per server rather than
``anyio.to_thread`` or the loop's default executor: the runtime stands on asyncio alone
(anyio is no dependency of it); the bound belongs to the server, so its handlers neither
starve nor are starved by other users of a shared pool (the default executor also serves
``getaddrinfo``; anyio's limiter serves every ``to_thread`` call in the process); and a
call cancelled while it still waits for a worker never starts at all.

Python cannot stop a running thread. When the caller cancels a request
(``notifications/cancelled``) or its handler times out, the session answers (or drops)
it at once; the thread runs on until the function returns, and what it returns is
dropped (an exception it raises then goes to the log). The function can notice through
``ctx.cancelled``, and ``ctx.wait(...)`` refuses to start anything new for it. A call
that never returns keeps its worker for good, and the interpreter waits for it at exit.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from functools import partial
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from mcpgen.runtime.server.context import Context, handler_context

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

log = logging.getLogger("mcpgen")

DEFAULT_MAX_THREADS = 32
"""Workers per server: enough for many slow I/O calls to overlap, few enough that a flood
of blocking calls cannot spawn thousands of threads (each reserves its own stack)."""


class ThreadPool:
    """The worker threads of one server, started on first use."""

    def __init__(self, max_threads: int = DEFAULT_MAX_THREADS) -> None:
        if max_threads < 1:
            raise ValueError("max_threads must be at least 1")
        self.max_threads = max_threads
        self._executor: ThreadPoolExecutor | None = None
        # Per event loop serving this server: the results its workers hand back.
        self._deliveries: WeakKeyDictionary[asyncio.AbstractEventLoop, _Deliveries] = WeakKeyDictionary()

    async def run(self, fn: Callable[..., Any], kwargs: dict[str, Any], context: Context, label: str) -> Any:
        """``fn(**kwargs)`` in a worker thread, with this task's context variables (the
        request being served) and ``context`` as what ``Context.current()`` returns there."""
        if self._executor is None:
            # Imported here: concurrent.futures.thread (and queue) load with the first plain
            # def a server runs in its pool, not before every server's first answer.
            from concurrent.futures import ThreadPoolExecutor

            self._executor = ThreadPoolExecutor(self.max_threads, thread_name_prefix="mcpgen-handler")
        variables = contextvars.copy_context()
        variables.run(handler_context.set, context)
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()
        future = self._executor.submit(_call, variables, fn, kwargs)
        deliveries = self._deliveries.get(loop)
        if deliveries is None:
            deliveries = self._deliveries[loop] = _Deliveries(loop)
        future.add_done_callback(partial(deliveries.add, waiter))
        try:
            return await waiter
        except asyncio.CancelledError:
            # Cancelled before a worker took it: it never starts. Otherwise it runs on,
            # and only the function itself can cut it short.
            future.cancel()
            context.abandon()
            if not future.cancelled():
                future.add_done_callback(lambda done: _finished_late(done, label))
            raise

    def shutdown(self) -> None:
        """Drop the calls still waiting for a worker; running ones finish on their own."""
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None


def _call(variables: contextvars.Context, fn: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """In a worker thread: ``fn(**kwargs)`` with the request's context variables."""
    return variables.run(fn, **kwargs)


class _Deliveries:
    """Results of calls finished in worker threads, handed to one event loop in batches.

    ``asyncio.wrap_future`` wakes the event loop once per result (a write to its wake-up
    pipe, then a turn of the loop to read it); with many calls in flight most of those
    wake-ups are for results the loop would have picked up in the same turn. Here a worker
    only wakes the loop when no hand-over is already scheduled: the loop takes every result
    ready by then at once. A worker appends before it looks at ``scheduled``, and the loop
    clears ``scheduled`` before it takes what is ready, so no result is left behind."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.ready: deque[tuple[asyncio.Future[Any], Future[Any]]] = deque()
        self.scheduled = False

    def add(self, waiter: asyncio.Future[Any], done: Future[Any]) -> None:
        """A call has finished (in its worker thread, or here if it was cancelled)."""
        self.ready.append((waiter, done))
        if not self.scheduled:
            self.scheduled = True
            try:
                self.loop.call_soon_threadsafe(self.deliver)
            except RuntimeError:  # the loop is closed: nobody waits any more
                self.ready.clear()

    def deliver(self) -> None:
        self.scheduled = False
        ready = self.ready
        while ready:
            waiter, done = ready.popleft()
            if waiter.done():
                continue  # its caller stopped waiting
            if done.cancelled():
                waiter.cancel()
                continue
            exc = done.exception()
            if exc is None:
                waiter.set_result(done.result())
            else:
                waiter.set_exception(exc)


def _finished_late(future: Future[Any], label: str) -> None:
    exc = future.exception() if not future.cancelled() else None
    if exc is not None and not isinstance(exc, asyncio.CancelledError):
        log.warning("mcpgen: %s failed after its caller stopped waiting", label, exc_info=exc)
    else:
        log.debug("mcpgen: %s finished after its caller stopped waiting; its result was dropped", label)
