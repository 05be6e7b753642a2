"""``asgi.send_within``: a send a client holds up ends with TimeoutError after about its
limit (one timer for all sends, not one per send); a send that goes through is untouched,
and a cancellation from elsewhere is still a cancellation."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from mcpgen.runtime.transports.asgi import send_within

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_held_send_ends_with_timeout_after_its_limit() -> None:
    held = asyncio.Event()  # never set: a client that reads nothing

    async def send(message: Any) -> None:
        await held.wait()

    started = time.monotonic()
    with pytest.raises(TimeoutError):
        await send_within(send, {"type": "http.response.body"}, 0.2)
    assert 0.19 < time.monotonic() - started < 2.0


async def test_sends_that_go_through_are_untouched_and_the_task_is_not_cancelled_later() -> None:
    sent: list[Any] = []

    async def send(message: Any) -> None:
        await asyncio.sleep(0)
        sent.append(message)

    task = asyncio.current_task()
    assert task is not None
    before = task.cancelling()
    for n in range(100):
        await send_within(send, {"n": n}, 0.05)
    await asyncio.sleep(0.2)  # the watch ticks with nothing under way: nothing to cancel
    assert [m["n"] for m in sent] == list(range(100))
    assert task.cancelling() == before


async def test_a_cancellation_from_elsewhere_stays_a_cancellation() -> None:
    async def send(message: Any) -> None:
        await asyncio.sleep(60)

    task = asyncio.ensure_future(send_within(send, {}, 30))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_only_the_held_send_times_out() -> None:
    release = asyncio.Event()

    async def held(message: Any) -> None:
        await asyncio.sleep(60)

    async def quick(message: Any) -> None:
        await release.wait()

    stuck = asyncio.ensure_future(send_within(held, {}, 0.2))
    fine = asyncio.ensure_future(send_within(quick, {}, 0.2))
    await asyncio.sleep(0.1)
    release.set()
    await fine  # went through before the limit
    with pytest.raises(TimeoutError):
        await stuck
