"""A stdio server stopped with calls in flight (issue 37.8), as a real subprocess: whether
its stdin closes or it gets SIGTERM, the calls in flight get the grace period to finish and
every one is answered; calls still running at its end are answered with an error each and
the process exits with status 1; a second signal cuts them at once. Nothing is dropped
without an answer."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.paths import SERVERS
from tests.wire import RawPeer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # 50 calls of 2 s each, several times: ~20 s
STOPPING = SERVERS / "stopping.py"
CALLS = 50
BASE = 1000  # the calls' ids (the peer numbers its own requests from 1)


_started: list[RawPeer] = []


@pytest.fixture(autouse=True)
def _no_server_left() -> Iterator[None]:
    """A failing test leaves no server running (it would hold its calls for 1,000 s)."""
    yield
    while _started:
        peer = _started.pop()
        if peer.process.returncode is None:
            peer.process.kill()


async def start(grace: float) -> RawPeer:
    peer = await RawPeer.start("--grace", str(grace), script=STOPPING)
    _started.append(peer)
    assert "result" in await peer.initialize()
    return peer


async def send_calls(peer: RawPeer, seconds: float, count: int = CALLS) -> None:
    for n in range(count):
        arguments = {"name": "work", "arguments": {"seconds": seconds}}
        await peer.send({"jsonrpc": "2.0", "id": BASE + n, "method": "tools/call", "params": arguments})
    assert (await peer.request("ping"))["result"] == {}  # read and running by now


async def answers(peer: RawPeer, count: int, within: float) -> dict[int, Any]:
    found: dict[int, Any] = {}
    deadline = time.monotonic() + within
    while len(found) < count:
        message = await peer.recv(max(0.1, deadline - time.monotonic()))
        if isinstance(message.get("id"), int) and message["id"] >= BASE:
            found[message["id"] - BASE] = message
    return found


async def exit_code(peer: RawPeer, within: float) -> int:
    return await asyncio.wait_for(peer.process.wait(), within)


@pytest.mark.parametrize("how", ["stdin closed", "SIGTERM"])
async def test_calls_in_flight_finish_within_the_grace_and_are_answered(how: str) -> None:
    peer = await start(grace=10)
    await send_calls(peer, 2.0)
    started = time.monotonic()
    if how == "SIGTERM":
        peer.process.send_signal(signal.SIGTERM)
    else:
        assert peer.process.stdin is not None
        peer.process.stdin.close()
    found = await answers(peer, CALLS, within=15)
    assert all(found[n]["result"]["content"][0]["text"] == "worked 2 s" for n in range(CALLS)), found
    assert await exit_code(peer, 10) == 0
    assert time.monotonic() - started < 8  # no waiting beyond the calls themselves


@pytest.mark.parametrize("how", ["stdin closed", "SIGTERM"])
async def test_calls_still_running_after_the_grace_are_answered_with_an_error_and_the_exit_says_so(how: str) -> None:
    peer = await start(grace=1)
    await send_calls(peer, 1000.0, count=10)
    quick = {
        "jsonrpc": "2.0",
        "id": BASE + 99,
        "method": "tools/call",
        "params": {"name": "work", "arguments": {"seconds": 0.2}},
    }
    await peer.send(quick)
    started = time.monotonic()
    if how == "SIGTERM":
        peer.process.send_signal(signal.SIGTERM)
    else:
        assert peer.process.stdin is not None
        peer.process.stdin.close()
    found = await answers(peer, 11, within=10)
    assert found[99]["result"]["content"][0]["text"] == "worked 0.2 s"  # finished within the grace
    for n in range(10):
        error = found[n]["error"]
        assert error["code"] == -32603 and "stopped before this request finished" in error["message"]
    assert await exit_code(peer, 10) == 1
    assert 0.9 < time.monotonic() - started < 6
    await asyncio.wait([peer._stderr_task], timeout=2)  # noqa: SLF001
    assert any("10 call(s) unfinished" in line for line in peer.stderr), peer.stderr


async def test_a_second_signal_cuts_at_once() -> None:
    peer = await start(grace=60)
    await send_calls(peer, 1000.0, count=5)
    started = time.monotonic()
    peer.process.send_signal(signal.SIGTERM)
    await asyncio.sleep(0.3)
    assert await peer.nothing_within(0.2)  # waiting for the calls
    peer.process.send_signal(signal.SIGTERM)
    found = await answers(peer, 5, within=5)
    assert all(found[n]["error"]["code"] == -32603 for n in range(5))
    assert await exit_code(peer, 5) == 1
    assert time.monotonic() - started < 4


async def test_a_client_that_vanished_does_not_hold_the_server_for_the_grace() -> None:
    peer = await start(grace=60)
    await send_calls(peer, 1000.0, count=5)
    started = time.monotonic()
    assert peer.process.stdin is not None
    peer.process.stdin.transport.abort()  # both pipes gone at once: nobody to answer
    peer.process._transport.get_pipe_transport(1).close()  # type: ignore[attr-defined]  # noqa: SLF001
    assert await exit_code(peer, 10) == 1  # calls were cut (with nobody left to tell)
    assert time.monotonic() - started < 5


def test_the_answers_are_jsonrpc(tmp_path: Any) -> None:
    """The error answer of a cut call is a well-formed JSON-RPC error (a real subprocess)."""
    import subprocess

    frames = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
         "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "work", "arguments": {"seconds": 100}}},
    ]  # fmt: skip
    data = "".join(json.dumps(frame) + "\n" for frame in frames).encode()
    done = subprocess.run(
        [sys.executable, str(STOPPING), "--grace", "0.5"], input=data, capture_output=True, timeout=30
    )
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert lines[-1] == {
        "jsonrpc": "2.0",
        "id": 1,
        "error": {"code": -32603, "message": "Internal error: the server stopped before this request finished"},
    }
    assert done.returncode == 1
