"""Tasks when their worker dies or their store stalls or restarts (issue 37, points 2, 3 and
5), with a real ``redis-server`` frozen (SIGSTOP), restarted with its data, and worker
processes killed with SIGKILL:

* a task whose worker died fails, saying why, as soon as its worker's lease lapses: any
  worker's ``tasks/get`` reports it;
* Redis frozen while a task reports progress: the tool runs on, and its record says how it
  ended once Redis answers again;
* Redis restarted with its data: no running task stops, those that never touch Redis nor
  those that do, and each record says how it ended.

Every wait is bounded."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from tests.conftest import ROOT
from tests.http_server import free_port, wait_until_up
from tests.redis_server import RedisServer, redis_server
from tests.servers.redis_peer import make_app
from tests.wire_http import call, meta, rpc, serving

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # workers killed, Redis frozen and restarted: ~40 s
LEASE = 2.0  # seconds: how long a dead worker's tasks stay "working"


@pytest.fixture
def redis() -> Iterator[RedisServer]:
    with redis_server() as server:
        yield server


@contextlib.contextmanager
def worker(redis_url: str, prefix: str, log: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """One uvicorn process serving tests/servers/redis_peer.py's app on a port of its own."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    env = {
        **os.environ,
        "MCPGEN_REDIS_URL": redis_url,
        "MCPGEN_REDIS_PREFIX": prefix,
        "MCPGEN_REDIS_LEASE": str(LEASE),
    }
    command = [sys.executable, "-m", "uvicorn", "tests.servers.redis_peer:app", "--port", str(port)]
    with log.open("ab") as errors:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=errors)
    try:
        wait_until_up(url, process)
        yield url, process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()


async def start_reporting(client: httpx.AsyncClient, url: str, ticks: int) -> str:
    """Start ``ticker`` as a task whose progress is reported (a progressToken): each report
    is written to the task's record, in Redis."""
    params = {"name": "ticker", "arguments": {"ticks": ticks, "pause": 0.1}, "_meta": {**meta(), "progressToken": "t"}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "ticker",
    }
    reply = await client.post(url, json=body, headers=headers)
    assert reply.status_code == 200, reply.text
    lines = [line[5:] for line in reply.text.splitlines() if line.startswith("data:")] or [reply.text]
    answer = next(found for line in lines if "result" in (found := json.loads(line)))
    task_id: str = answer["result"]["taskId"]
    return task_id


async def status_of(client: httpx.AsyncClient, url: str, task_id: str) -> dict[str, Any]:
    status, answer = await rpc(client, url, "tasks/get", {"taskId": task_id})
    assert status == 200 and "result" in answer, answer
    found: dict[str, Any] = answer["result"]
    return found


async def until_status(
    client: httpx.AsyncClient, url: str, task_id: str, wanted: str, within: float
) -> tuple[dict[str, Any], float]:
    started = time.monotonic()
    while True:
        try:
            found = await status_of(client, url, task_id)
        except AssertionError:
            found = {"status": "unreadable"}  # Redis away: asked again
        if found["status"] == wanted:
            return found, time.monotonic() - started
        assert time.monotonic() - started < within, f"task {task_id} stayed {found['status']}: {found}"
        await anyio.sleep(0.1)


async def test_a_task_whose_worker_dies_fails_saying_why_once_its_lease_lapses(
    redis: RedisServer, tmp_path: Path
) -> None:
    prefix = f"f{secrets.token_hex(3)}"
    log = tmp_path / "workers.log"
    with worker(redis.url, prefix, log) as (first, doomed), worker(redis.url, prefix, log) as (second, _):
        async with httpx.AsyncClient(timeout=10) as client:
            created = await call(client, first, "sleeper", {"seconds": 300})
            task_id = created["taskId"]
            assert (await status_of(client, second, task_id))["status"] == "working"  # read through the other
            doomed.send_signal(signal.SIGKILL)  # no cleanup of any kind
            doomed.wait(5)
            failed, took = await until_status(client, second, task_id, "failed", within=LEASE * 3 + 5)
            assert "stopped before it finished" in failed["error"]["message"]
            assert failed["error"]["code"] == -32603
            assert took < LEASE * 3 + 5
            # Read again, through the same worker: the failure is recorded, not recomputed.
            assert (await status_of(client, second, task_id))["status"] == "failed"


async def test_redis_frozen_while_a_task_reports_progress_stops_nothing(redis: RedisServer) -> None:
    server, app, store = make_app(redis.url, f"z{secrets.token_hex(3)}", lease=30.0)
    async with serving(app) as url, httpx.AsyncClient(timeout=60) as client:
        task_id = await start_reporting(client, url, 60)  # ~6 s of progress, each report recorded
        await anyio.sleep(0.5)
        os.kill(redis.process.pid, signal.SIGSTOP)  # 5 s without a word from Redis
        try:
            await anyio.sleep(5)
            assert server.tasks.running == 1  # the tool runs on
        finally:
            os.kill(redis.process.pid, signal.SIGCONT)
        done, _ = await until_status(client, url, task_id, "completed", within=30)
        assert done["result"]["structuredContent"]["ticks"] == 60
    await server.stop_tasks()
    await store.aclose()


async def test_redis_restarted_with_its_data_stops_no_running_task(redis: RedisServer) -> None:
    server, app, store = make_app(redis.url, f"r{secrets.token_hex(3)}", lease=30.0)
    async with serving(app) as url, httpx.AsyncClient(timeout=60) as client:
        quiet = (await call(client, url, "sleeper", {"seconds": 4}))["taskId"]  # never touches Redis
        busy = await start_reporting(client, url, 40)
        await anyio.sleep(0.5)
        down = await anyio.to_thread.run_sync(lambda: redis.restart(keep_data=True, down=1.0))
        assert down >= 1.0
        assert server.tasks.running == 2  # neither stopped
        for task_id in (quiet, busy):
            await until_status(client, url, task_id, "completed", within=30)
    await server.stop_tasks()
    await store.aclose()
