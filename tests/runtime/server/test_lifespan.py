"""``@server.lifespan``: entered once before the first request and left after the last, over
stdio, over HTTP, and in each worker of several; what it yields is ``Context.lifespan`` in
both eras. Real processes: the server script writes each entry and exit to a file."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpgen import Client, Context, Server
from tests.http_server import free_port, wait_until_up
from tests.paths import ROOT, SERVERS

pytestmark = pytest.mark.anyio

SERVER = SERVERS / "lifespan_server.py"
ERAS = ("handshake", "stateless")


def lines(log: Path) -> list[list[str]]:
    return [line.split() for line in log.read_text().splitlines()] if log.exists() else []


def wait_for(check: Any, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.mark.parametrize("era", ERAS)
async def test_over_stdio_it_wraps_the_whole_session(era: str, tmp_path: Path) -> None:
    log = tmp_path / "lifespan.log"
    env = {**os.environ, "LIFESPAN_LOG": str(log)}
    async with Client.stdio(sys.executable, str(SERVER), era=era, env=env) as client:
        first = await client.call_tool("state")
        second = await client.call_tool("state_now")
        assert [lines(log)[0][0]] == ["enter"]
    pid = lines(log)[0][1]
    assert first.content[0].text == second.content[0].text == f"opened-by-{pid}"  # type: ignore[union-attr]
    wait_for(lambda: len(lines(log)) == 2)
    assert lines(log) == [["enter", pid], ["exit", pid]]


@contextlib.contextmanager
def started(command: list[str], url: str, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    env = {**os.environ, "LIFESPAN_LOG": str(log)}
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT, env=env)
    try:
        wait_until_up(url, process)
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.mark.parametrize("era", ERAS)
async def test_over_http_it_runs_from_startup_to_shutdown(era: str, tmp_path: Path) -> None:
    log = tmp_path / "lifespan.log"
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with started([sys.executable, str(SERVER), "--http", str(port)], url, log) as process:
        async with Client.http(url, era=era) as client:
            answer = await client.call_tool("state")
        assert lines(log) == [["enter", str(process.pid)]]
    assert answer.content[0].text == f"opened-by-{process.pid}"  # type: ignore[union-attr]
    assert lines(log) == [["enter", str(process.pid)], ["exit", str(process.pid)]]


@pytest.mark.slow
async def test_each_worker_of_several_enters_it_once(tmp_path: Path) -> None:
    log = tmp_path / "lifespan.log"
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    command = [sys.executable, "-m", "uvicorn", "--workers", "2", "--port", str(port), "--log-level", "warning"]
    with started([*command, "tests.servers.lifespan_server:app"], url, log):
        wait_for(lambda: len(lines(log)) == 2, timeout=30)
        tokens = set()
        for _ in range(20):  # new connections: both workers serve some
            async with Client.http(url, era="stateless") as client:
                tokens.add((await client.call_tool("state")).content[0].text)  # type: ignore[union-attr]
    entered = {pid for what, pid in lines(log) if what == "enter"}
    exited = {pid for what, pid in lines(log) if what == "exit"}
    assert len(entered) == 2 and exited == entered
    assert tokens <= {f"opened-by-{pid}" for pid in entered} and tokens


async def test_a_failing_lifespan_stops_the_server_before_it_serves() -> None:
    server = Server("broken")

    @server.lifespan
    @contextlib.asynccontextmanager
    async def broken(_: Server) -> AsyncIterator[None]:
        raise RuntimeError("no database")
        yield  # pragma: no cover

    app = server.http_app()
    sent: list[dict[str, Any]] = []
    messages = iter([{"type": "lifespan.startup"}])

    async def receive() -> dict[str, Any]:
        return next(messages)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app({"type": "lifespan"}, receive, send)
    assert sent[0]["type"] == "lifespan.startup.failed" and "no database" in sent[0]["message"]


async def test_in_process_connections_share_one_entry() -> None:
    events: list[str] = []
    server = Server("in-process")

    @server.lifespan
    @contextlib.asynccontextmanager
    async def pool(_: Server) -> AsyncIterator[str]:
        events.append("enter")
        yield "the pool"
        events.append("exit")

    @server.tool()
    async def peek(ctx: Context) -> str:
        return str(ctx.lifespan)

    async with Client(server) as first, Client(server, era="stateless") as second:
        assert (await first.call_tool("peek")).content[0].text == "the pool"  # type: ignore[union-attr]
        assert (await second.call_tool("peek")).content[0].text == "the pool"  # type: ignore[union-attr]
        assert events == ["enter"]
    assert events == ["enter", "exit"]


async def test_without_a_lifespan_context_lifespan_is_none() -> None:
    server = Server("plain")

    @server.tool()
    async def peek(ctx: Context) -> str:
        return repr(ctx.lifespan)

    async with Client(server) as client:
        assert (await client.call_tool("peek")).content[0].text == "None"  # type: ignore[union-attr]
