"""Request timeouts of the session engine: one timer per session sweeps the deadlines of
all its requests (mcpgen/runtime/jsonrpc/session.py); each request must still time out at its own
deadline, whatever the other requests' timeouts and however they end."""

from __future__ import annotations

import asyncio
import time

import pytest

from mcpgen import Client, Server
from mcpgen.generated import TextContent
from mcpgen.runtime.errors import RequestTimeout

pytestmark = pytest.mark.anyio


def slow_server() -> Server:
    server = Server("timeouts")

    @server.tool()
    async def wait(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return "done"

    return server


async def timed(call: asyncio.Future[object] | asyncio.Task[object], started: float) -> tuple[str, float]:
    """How the call ended, and when (seconds since ``started``)."""
    try:
        await call
        return "answered", time.monotonic() - started
    except RequestTimeout:
        return "timed out", time.monotonic() - started


async def test_each_request_times_out_at_its_own_deadline() -> None:
    async with Client(slow_server()) as client:
        loop = asyncio.get_running_loop()
        begun = loop.time()

        def call(seconds: float, timeout: float) -> tuple[asyncio.Task[object], float]:
            return asyncio.ensure_future(
                client.call_tool("wait", {"seconds": seconds}, timeout=timeout)
            ), time.monotonic()

        long = call(30, 1.2)  # the first deadline set: the session's one timer is set for it
        short = call(30, 0.3)  # sent later, due earlier: the timer must move up
        fast = call(0, 0.1)  # answered before its deadline, which comes first of all
        await asyncio.sleep(0.15)
        later = call(30, 0.5)  # due after the timer's next firing: found by the sweep
        results = dict(
            zip(
                ("long", "short", "fast", "later"),
                await asyncio.gather(timed(*long), timed(*short), timed(*fast), timed(*later)),
                strict=True,
            )
        )
        ended = loop.time() - begun
        assert results["fast"][0] == "answered"
        assert [results[k][0] for k in ("short", "later", "long")] == ["timed out"] * 3, results
        # Each at its deadline, never early; the short ones well before the long one (whose
        # deadline the timer was set for first). Upper bounds stay loose: a loaded machine.
        assert results["short"][1] >= 0.3 and results["later"][1] >= 0.5 and results["long"][1] >= 1.2, results
        ends = {k: start + results[k][1] for k, start in (("short", short[1]), ("later", later[1]), ("long", long[1]))}
        assert ends["short"] < ends["long"] - 0.3 and ends["later"] < ends["long"] - 0.2, ends
        assert ended < 10
        assert (await client.call_tool("wait", {"seconds": 0}, timeout=0.5)).content == [TextContent(text="done")]


async def test_many_requests_of_one_timeout_expire_together_and_the_rest_go_on() -> None:
    async with Client(slow_server()) as client:
        calls = [asyncio.ensure_future(client.call_tool("wait", {"seconds": 30}, timeout=0.3)) for _ in range(50)]
        answered = [asyncio.ensure_future(client.call_tool("wait", {"seconds": 0.5}, timeout=5)) for _ in range(5)]
        started = time.monotonic()
        outcomes = await asyncio.gather(*(timed(c, started) for c in calls))
        assert {kind for kind, _ in outcomes} == {"timed out"}
        assert all(0.3 <= elapsed < 10 for _, elapsed in outcomes), outcomes
        for call in answered:
            assert (await call).content == [TextContent(text="done")]
        # Nothing is due any more: the session's timer finds nothing and stops.
        await asyncio.sleep(0.1)
        session = client.session
        assert not session._deadlines


async def test_no_timeout_and_a_closed_session_leave_no_timer() -> None:
    async with Client(slow_server(), request_timeout=None) as client:
        session = client.session
        waiting = asyncio.ensure_future(client.call_tool("wait", {"seconds": 30}, timeout=None))
        await asyncio.sleep(0.1)
        assert not session._deadlines, "a request without a timeout has no deadline"
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        pending = asyncio.ensure_future(client.call_tool("wait", {"seconds": 30}, timeout=20))
        await asyncio.sleep(0.1)
        assert session._sweep is not None
    assert session._sweep is None and not session._deadlines
    with pytest.raises(ConnectionError):
        await pending
