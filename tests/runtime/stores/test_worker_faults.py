"""Handshake-era sessions across workers that share a real ``redis-server`` (issue 37,
points 1, 4, 6 and 7):

* 7: ``uvicorn --workers 2`` (no stickiness, as documented) and mcpgen's Client opening a
  new connection for every request, so that its requests land on both workers: every
  session works to its end, streamed calls, questions to the client and all;
* 1: the worker holding a session is killed (SIGKILL) during a streamed call: the stream,
  resumed on the other worker, ends with an error answering the call (not keep-alives);
* 4: Redis frozen (SIGSTOP, 3 s) while a request's stream is detached: resumed, the stream
  has every event once and the answer, whether the follower came before or after the freeze;
* 6: Redis restarted empty: the session's home registers it again, and the other worker
  serves it (not 404 for the rest of the session).

Every wait is bounded."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from mcpgen import Client
from mcpgen.generated import ElicitResult
from mcpgen.runtime.transports.http_client import HttpTransport
from tests.conftest import ROOT
from tests.http_server import free_port, wait_until_up
from tests.redis_server import RedisServer, redis_server
from tests.servers.redis_peer import make_app
from tests.wire_http import SseReader, legacy_headers, open_session, progress_of, serving
from tests.workers import uvicorn_workers

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # real workers, killed; Redis frozen, restarted: ~60 s
SESSIONS = 10
CALLS = 8  # per session, besides a streamed one and a question


@pytest.fixture
def redis() -> Iterator[RedisServer]:
    with redis_server() as server:
        yield server


def spread_client(url: str, pids: list[str]) -> Client:
    """mcpgen's Client over HTTP with a new connection for every request (none kept alive),
    noting which worker received each (the tagged app's ``x-worker-pid``)."""

    async def note(response: httpx.Response) -> None:
        found = response.headers.get("x-worker-pid")
        if found is not None:
            pids.append(found)

    async def connect() -> HttpTransport:
        http = httpx.AsyncClient(
            limits=httpx.Limits(max_keepalive_connections=0),
            timeout=httpx.Timeout(30, read=None),
            event_hooks={"response": [note]},
        )
        return HttpTransport(url, client=http)

    async def answer(params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"word": "sure"})

    return Client(connect=connect, era="handshake", elicitation=answer)


async def test_two_workers_without_stickiness_serve_every_session(redis: RedisServer, tmp_path: Path) -> None:
    env = {"MCPGEN_REDIS_URL": redis.url, "MCPGEN_REDIS_PREFIX": f"w{secrets.token_hex(3)}"}
    with uvicorn_workers("tests.servers.redis_peer:tagged_app", 2, env, tmp_path / "workers.log") as url:

        async def one_session(n: int) -> tuple[list[str], list[int]]:
            received: list[str] = []
            progress: list[int] = []
            async with spread_client(url, received) as client:
                for _ in range(CALLS):
                    result = await client.call_tool("whoami", {})
                    assert result.is_error is not True, result
                streamed = await client.call_tool(
                    "steps", {"n": 5, "pause": 0.01}, on_progress=lambda p, t, m: progress.append(int(p))
                )
                assert streamed.structured_content == {"n": 5, "pid": streamed.structured_content["pid"]}  # type: ignore[index]
                asked = await client.call_tool("ask", {})
                assert asked.structured_content["word"] == "sure", asked  # type: ignore[index]
            return received, progress

        with anyio.fail_after(120):
            outcomes = await asyncio.gather(*(one_session(n) for n in range(SESSIONS)))
    for _, progress in outcomes:
        assert progress == [1, 2, 3, 4, 5]
    every = [pid for received, _ in outcomes for pid in received]
    assert len(set(every)) == 2, f"the requests did not reach both workers: {set(every)}"
    spread = sum(1 for received, _ in outcomes if len(set(received)) == 2)
    assert spread >= SESSIONS // 2, f"only {spread} of {SESSIONS} sessions had requests on both workers"


@contextlib.contextmanager
def worker(redis_url: str, prefix: str, log: Path, lease: float) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    env = {**os.environ, "MCPGEN_REDIS_URL": redis_url, "MCPGEN_REDIS_PREFIX": prefix, "MCPGEN_REDIS_LEASE": str(lease)}
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


def streamed_call(rid: int, n: int, pause: float) -> str:
    params = {"name": "steps", "arguments": {"n": n, "pause": pause}, "_meta": {"progressToken": "p"}}
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})


async def read_some(client: httpx.AsyncClient, url: str, session: str, body: str, count: int) -> tuple[str, list[int]]:
    """POST a streamed call, read ``count`` progress events, drop the connection; the last
    event id and the progress seen."""
    seen: list[int] = []
    last = None
    async with client.stream("POST", url, content=body, headers=legacy_headers(session)) as response:
        reader = SseReader(response)
        while len(seen) < count:
            event = await reader.next()
            assert event is not None
            last = event.id or last
            if (step := progress_of(event)) is not None:
                seen.append(step)
    assert last is not None
    return last, seen


@contextlib.asynccontextmanager
async def resumed(client: httpx.AsyncClient, url: str, session: str, last: str) -> AsyncIterator[SseReader]:
    headers = legacy_headers(session, **{"last-event-id": last, "accept": "text/event-stream"})
    async with client.stream("GET", url, headers=headers) as response:
        assert response.status_code == 200, await response.aread()
        yield SseReader(response)


async def test_a_stream_whose_worker_died_ends_with_an_error_answering_its_call(
    redis: RedisServer, tmp_path: Path
) -> None:
    lease = 2.0
    prefix, log = f"d{secrets.token_hex(3)}", tmp_path / "workers.log"
    with worker(redis.url, prefix, log, lease) as (url_a, doomed), worker(redis.url, prefix, log, lease) as (url_b, _):
        async with httpx.AsyncClient(timeout=30) as client:
            session = await open_session(client, url_a)
            last, _ = await read_some(client, url_a, session, streamed_call(7, 600, 0.1), 3)
            doomed.send_signal(signal.SIGKILL)
            doomed.wait(5)
            started = time.monotonic()
            final = None
            with anyio.fail_after(lease * 3 + 15):
                async with resumed(client, url_b, session, last) as reader:
                    while (event := await reader.next()) is not None:
                        if event.data is not None and "id" in event.data:
                            final = event.data
            assert final is not None and final["id"] == 7, final
            assert final["error"]["code"] == -32603 and "stopped before answering" in final["error"]["message"]
            assert time.monotonic() - started < lease * 3 + 10


async def test_redis_frozen_while_a_stream_is_detached_loses_nothing(redis: RedisServer) -> None:
    prefix, n = f"z{secrets.token_hex(3)}", 80
    server_a, app_a, store_a = make_app(redis.url, prefix)
    server_b, app_b, store_b = make_app(redis.url, prefix)
    async with serving(app_a) as url_a, serving(app_b) as url_b, httpx.AsyncClient(timeout=60) as client:
        session = await open_session(client, url_a)
        last, seen = await read_some(client, url_a, session, streamed_call(9, n, 0.05), 5)  # ~4 s of progress
        early_seen: list[int] = list(seen)
        answers: list[Any] = []

        async def follow(url: str, since: str, into: list[int]) -> None:
            async with resumed(client, url, session, since) as reader:
                while (event := await reader.next()) is not None:
                    if (step := progress_of(event)) is not None:
                        into.append(step)
                    elif event.data is not None and "id" in event.data:
                        answers.append(event.data)

        with anyio.fail_after(60):
            early = asyncio.ensure_future(follow(url_b, last, early_seen))  # following before the freeze
            await asyncio.sleep(0.3)
            os.kill(redis.process.pid, signal.SIGSTOP)
            try:
                await asyncio.sleep(3)
            finally:
                os.kill(redis.process.pid, signal.SIGCONT)
            late_seen = list(seen)
            await follow(url_b, last, late_seen)  # resumed after it
            await early
        for got in (early_seen, late_seen):
            assert got == list(range(1, n + 1)), got  # every event, once
        assert len(answers) == 2 and all(a["id"] == 9 and a["result"]["structuredContent"]["n"] == n for a in answers)
    for server in (server_a, server_b):
        await server.stop_tasks()
    await store_a.aclose()
    await store_b.aclose()


async def test_redis_restarted_empty_has_live_sessions_registered_again(redis: RedisServer) -> None:
    prefix = f"e{secrets.token_hex(3)}"
    server_a, app_a, store_a = make_app(redis.url, prefix, lease=1.5)
    server_b, app_b, store_b = make_app(redis.url, prefix, lease=1.5)
    call = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}}
    )
    async with serving(app_a) as url_a, serving(app_b) as url_b, httpx.AsyncClient(timeout=30) as client:
        session = await open_session(client, url_a)
        assert (await client.post(url_b, content=call, headers=legacy_headers(session))).status_code == 200
        await anyio.to_thread.run_sync(lambda: redis.restart(keep_data=False, down=0.5))
        with anyio.fail_after(20):
            while True:  # the home notices at its next lease renewal (every 0.5 s) and registers it again
                reply = await client.post(url_b, content=call, headers=legacy_headers(session))
                if reply.status_code == 200:
                    break
                assert reply.status_code in (404, 503), reply.text
                await asyncio.sleep(0.2)
        assert "result" in reply.json()
        # And it stays served, through either worker.
        for url in (url_a, url_b, url_b):
            assert (await client.post(url, content=call, headers=legacy_headers(session))).status_code == 200
    for server in (server_a, server_b):
        await server.stop_tasks()
    await store_a.aclose()
    await store_b.aclose()
