"""Four uvicorn workers on one port sharing one Redis (RedisStore): state that survives a
worker (issue 14, point 3).

uvicorn's workers split connections, not requests, between them, so each "client" here
is an httpx client holding one kept-alive connection, and the test asks it which worker it
reached (the ``whoami`` tool) before using it: that is how a request is sent through a
chosen worker.

(a) Tasks: each task is started through one worker, polled, answered (``tasks/update``)
and polled again through the others, and runs to completion on the worker that started
it; sleepers started through one worker are cancelled through another, whose cancel the
running worker learns of through Redis.

(b) A legacy-era (2025-11-25) SSE response is dropped mid-stream, and the stream resumed
with ``Last-Event-ID`` on another worker: every progress event arrives exactly once, then
the response.

Figures (counts, times) are printed; run with ``-s`` to see them.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from tests.redis_server import redis_server
from tests.wire_http import SseReader, call, legacy_headers, open_session, progress_of, rpc, whoami
from tests.workers import uvicorn_workers

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

APP = "tests.servers.redis_peer:app"
WORKERS = 4
TASKS = 24  # confirm tasks (asked, answered, completed) and as many sleepers (cancelled)
STREAMS = 12  # legacy streams cut and resumed elsewhere
STEPS = 40  # progress events per stream
TIME_LIMIT = 120.0


@contextlib.contextmanager
def workers(redis_url: str, log: Path) -> Iterator[str]:
    env = {"MCPGEN_REDIS_URL": redis_url, "MCPGEN_REDIS_PREFIX": f"scale{secrets.token_hex(3)}"}
    with uvicorn_workers(APP, WORKERS, env, log) as url:
        yield url


class Pins:
    """Clients each holding one kept-alive connection to a known worker (pid). A client is
    asked again which worker it reaches before it is handed out: a connection closed (a
    dropped stream, the keep-alive timeout) reconnects wherever the kernel puts it."""

    def __init__(self, url: str, stack: contextlib.AsyncExitStack) -> None:
        self.url = url
        self.stack = stack
        self.opened = 0
        self.idle: dict[int, list[httpx.AsyncClient]] = {}

    async def to(self, want: set[int] | None) -> tuple[int, httpx.AsyncClient]:
        """A client whose connection reaches one of the ``want`` workers (None: any)."""
        for pid in sorted(want if want is not None else self.idle):
            for client in list(self.idle.get(pid, ())):
                self.idle[pid].remove(client)
                now = await whoami(client, self.url)
                self.idle.setdefault(now, []).append(client)
                if want is None or now in want:
                    return now, client
        for _ in range(200):
            limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
            client = httpx.AsyncClient(timeout=30, limits=limits)
            self.stack.push_async_callback(client.aclose)
            self.opened += 1
            pid = await whoami(client, self.url)
            self.idle.setdefault(pid, []).append(client)
            if want is None or pid in want:
                return pid, client
        raise AssertionError(f"no connection reached workers {want} in 200 tries")

    async def others(self, pid: int, pids: set[int]) -> list[tuple[int, httpx.AsyncClient]]:
        """One client on each other worker (distinct clients)."""
        found = []
        for other in sorted(pids - {pid}):
            got = await self.to({other})
            self.idle[got[0]].remove(got[1])  # not handed out twice in one call
            found.append(got)
        for got in found:
            self.idle[got[0]].append(got[1])
        return found


@contextlib.asynccontextmanager
async def pinned(url: str) -> AsyncIterator[tuple[Pins, set[int]]]:
    async with contextlib.AsyncExitStack() as stack:
        pins = Pins(url, stack)
        pids: set[int] = set()
        while len(pids) < WORKERS:  # new connections until every worker has one
            limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
            client = httpx.AsyncClient(timeout=30, limits=limits)
            stack.push_async_callback(client.aclose)
            pins.opened += 1
            pid = await whoami(client, url)
            pins.idle.setdefault(pid, []).append(client)
            pids.add(pid)
        yield pins, pids


async def _task_status(client: httpx.AsyncClient, url: str, task_id: str) -> dict[str, Any]:
    status, answer = await rpc(client, url, "tasks/get", {"taskId": task_id})
    assert status == 200 and "result" in answer, answer
    result: dict[str, Any] = answer["result"]
    return result


async def _poll(client: httpx.AsyncClient, url: str, task_id: str, want: str) -> dict[str, Any]:
    with anyio.fail_after(20):
        while (status := await _task_status(client, url, task_id))["status"] != want:
            assert status["status"] in ("working", "input_required"), status
            await anyio.sleep(0.01)
    return status


async def test_tasks_move_between_four_workers_sharing_redis(tmp_path: Path) -> None:
    with redis_server() as redis, workers(redis.url, tmp_path / "workers.log") as url:
        async with pinned(url) as (pins, pids):
            started = time.perf_counter()
            moved = polls = 0
            answered_in: list[float] = []
            with anyio.fail_after(TIME_LIMIT):
                for i in range(TASKS):
                    starter_pid, starter = await pins.to({sorted(pids)[i % WORKERS]})
                    created = await call(starter, url, "confirm", {"name": f"n{i}"}, rid=i)
                    assert created["resultType"] == "task" and created["status"] == "working", created
                    task_id = created["taskId"]
                    (poll_pid, poller), (answer_pid, answerer), (last_pid, checker) = await pins.others(
                        starter_pid, pids
                    )
                    asked = await _poll(poller, url, task_id, "input_required")
                    polls += 1
                    assert asked["inputRequests"]["go"]["params"]["message"].startswith(f"pid={starter_pid}:"), asked
                    reply = {"action": "accept", "content": {"word": f"w{i}"}}
                    update = {"taskId": task_id, "inputResponses": {"go": reply}}
                    sent = time.perf_counter()
                    status, answer = await rpc(answerer, url, "tasks/update", update)
                    assert status == 200 and answer["result"]["resultType"] == "complete", answer
                    done = await _poll(checker, url, task_id, "completed")
                    answered_in.append(time.perf_counter() - sent)
                    result = done["result"]["structuredContent"]
                    assert result == {"pid": starter_pid, "name": f"n{i}", "word": f"w{i}"}, done
                    assert len({starter_pid, poll_pid, answer_pid, last_pid}) == 4
                    moved += 1
                # Sleepers: started through one worker, cancelled through the next one.
                sleepers: dict[int, int] = {}
                for i in range(TASKS):
                    starter_pid, starter = await pins.to({sorted(pids)[i % WORKERS]})
                    created = await call(starter, url, "sleeper", {"seconds": 60}, rid=i)
                    (canceller_pid, canceller), *_ = await pins.others(starter_pid, pids)
                    status, answer = await rpc(canceller, url, "tasks/cancel", {"taskId": created["taskId"]})
                    assert status == 200 and "result" in answer, answer
                    assert (await _task_status(canceller, url, created["taskId"]))["status"] == "cancelled"
                    sleepers[starter_pid] = sleepers.get(starter_pid, 0) + 1
                # Every running worker learnt of its cancels: its sleepers stopped, no task runs.
                with anyio.fail_after(20):
                    for pid in sorted(pids):
                        _, client = await pins.to({pid})
                        while True:
                            stats = (await call(client, url, "stats", {}))["structuredContent"]
                            if stats["cancelled"] == sleepers.get(pid, 0) and stats["running"] == 0:
                                break
                            await anyio.sleep(0.02)
                        assert stats["entered"] == sleepers.get(pid, 0), stats
            elapsed = time.perf_counter() - started
            answered_in.sort()
            print(
                f"\n{WORKERS} workers, one Redis: {moved} tasks each started on one worker, polled, answered and "
                f"polled to completion on three others; {TASKS} sleepers cancelled through another worker, all "
                f"stopped where they ran ({sorted(sleepers.values())} per worker); {elapsed:.1f} s in all, "
                f"{pins.opened} connections opened to pick workers; tasks/update to 'completed' seen elsewhere: "
                f"median {answered_in[len(answered_in) // 2] * 1000:.0f} ms, max {answered_in[-1] * 1000:.0f} ms"
            )


async def test_legacy_streams_cut_on_one_worker_resume_on_another(tmp_path: Path) -> None:
    with redis_server() as redis, workers(redis.url, tmp_path / "workers.log") as url:
        async with pinned(url) as (pins, pids):
            started = time.perf_counter()
            resumed_in: list[float] = []
            events_total = 0
            with anyio.fail_after(TIME_LIMIT):
                for i in range(STREAMS):
                    pid_a, client_a = await pins.to({sorted(pids)[i % WORKERS]})
                    session = await open_session(client_a, url)
                    cut = 1 + (i * 7) % (STEPS - 5)  # cut after this many progress events
                    arguments = {"n": STEPS, "pause": 0.01}
                    params = {"name": "steps", "arguments": arguments, "_meta": {"progressToken": f"p{i}"}}
                    request = {"jsonrpc": "2.0", "id": 100 + i, "method": "tools/call", "params": params}
                    seen: list[int] = []
                    ids: list[str] = []
                    headers = legacy_headers(session)
                    async with client_a.stream("POST", url, content=json.dumps(request), headers=headers) as reply:
                        assert reply.headers["content-type"].startswith("text/event-stream")
                        reader = SseReader(reply)
                        while len(seen) < cut:
                            event = await reader.next()
                            assert event is not None, seen
                            if event.id is not None:
                                ids.append(event.id)
                            step = progress_of(event)
                            if step is not None:
                                seen.append(step)
                    dropped = time.perf_counter()
                    # Resume on another worker (its connection checked just before).
                    pid_b, client_b = (await pins.others(pid_a, pids))[i % (WORKERS - 1)]
                    assert await whoami(client_b, url) == pid_b != pid_a
                    get = legacy_headers(session, **{"last-event-id": ids[-1], "accept": "text/event-stream"})
                    answer = None
                    async with client_b.stream("GET", url, headers=get) as reply:
                        assert reply.status_code == 200, await reply.aread()
                        reader = SseReader(reply)
                        while (event := await reader.next()) is not None:
                            if event.id is not None:
                                ids.append(event.id)
                            step = progress_of(event)
                            if step is not None:
                                seen.append(step)
                            elif event.data is not None and "result" in event.data:
                                answer = event.data
                    resumed_in.append(time.perf_counter() - dropped)
                    assert answer is not None and answer["id"] == 100 + i, (answer, seen)
                    assert answer["result"]["structuredContent"] == {"n": STEPS, "pid": pid_a}, answer
                    assert seen == list(range(1, STEPS + 1)), seen  # none lost, none twice
                    assert len(ids) == len(set(ids)), ids
                    events_total += len(seen) + 1
            elapsed = time.perf_counter() - started
            print(
                f"\n{WORKERS} workers, one Redis: {STREAMS} legacy SSE streams of {STEPS} progress events cut after "
                f"1..{STEPS - 5} events on one worker and resumed with Last-Event-ID on another; {events_total} "
                f"events delivered, none lost or repeated; {elapsed:.1f} s in all; drop to the end of the resumed "
                f"stream: median {sorted(resumed_in)[len(resumed_in) // 2]:.2f} s (the tool's own pace is "
                f"{STEPS * 0.01:.1f} s per stream)"
            )
