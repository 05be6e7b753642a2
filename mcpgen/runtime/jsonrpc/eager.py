"""Request tasks that take their first step at once, where the interpreter can.

Most handlers (an ``async def`` tool that awaits nothing slow) finish in their task's first
step. Python 3.12+ can run that step inside ``Task()`` itself (``eager_start``): the task is
the current task, its context is its own copy, ``asyncio.timeout`` and cancellation work as
in any task, but a handler that finishes there is never scheduled, so it costs no turn of
the event loop. Python 3.11 has no eager tasks: there the task starts on the next turn, as
``create_task`` always did.

A loop with a task factory of its own (a tracer's, say) keeps it: its tasks start lazily.
Callers must not assume either: when :func:`start` returns, the task may be done already,
or may have run any part of its coroutine (including its ``finally`` blocks); :func:`eager`
says which.
"""

from __future__ import annotations

import asyncio
import contextvars
import sys
from collections.abc import Coroutine
from typing import Any, Final, TypeVar

T = TypeVar("T")

_EAGER_TASKS: Final = sys.version_info >= (3, 12)  # Task(eager_start=...) is new in 3.12


def eager(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether :func:`start` runs a task's first step before it returns, on ``loop``."""
    return _EAGER_TASKS and loop.get_task_factory() is None


def start(coro: Coroutine[Any, Any, T], *, context: contextvars.Context | None = None) -> asyncio.Task[T]:
    """A task for ``coro`` on the running loop, its first step already taken where it can be."""
    loop = asyncio.get_running_loop()
    if eager(loop):
        return start_eagerly(loop, coro, context=context)
    return loop.create_task(coro, context=context)


def start_eagerly(
    loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, T], *, context: contextvars.Context | None = None
) -> asyncio.Task[T]:
    """:func:`start` where :func:`eager` said so already (the hot path asks once)."""
    # mypy checks against the oldest supported Python, whose Task has no eager_start.
    return asyncio.Task(coro, loop=loop, context=context, eager_start=True)  # type: ignore[call-arg,unused-ignore]
