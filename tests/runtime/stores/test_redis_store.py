"""The Redis-backed stores (mcpgen.runtime.stores.redis_store) against a real redis-server.

The event store and the task store each pass the same contract tests as their in-memory
counterparts (parametrized over both). Then two apps in this process, each under its own
uvicorn on its own port, play two workers sharing one Redis: a legacy-era SSE stream cut
on one resumes on the other, a task started on one is polled, answered and cancelled on
the other. Last, Redis stopped mid-test: -32603 naming the store, the server carries on,
and so does the running task. (Four real uvicorn workers: tests/runtime/stores/test_scale_redis.py, slow suite.)
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import httpx
import pytest

from mcpgen import BearerAuth, Context, Server
from mcpgen.runtime.stores.event_store import EventStore, MemoryEventStore, SharedEventStore
from mcpgen.runtime.stores.redis_store import RedisStore
from mcpgen.runtime.stores.task_store import MemoryTaskStore, TaskStore
from tests.conftest import ROOT
from tests.redis_server import RedisServer, redis_server
from tests.servers.redis_peer import make_app
from tests.tokens import Tokens
from tests.wire_http import SseReader, call, legacy_headers, open_session, progress_of, rpc, serving

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    with redis_server() as server:
        yield server


@pytest.fixture
def fresh_redis() -> Iterator[RedisServer]:
    """A redis-server of this test's own (to stop mid-test)."""
    with redis_server() as server:
        yield server


def _prefix() -> str:
    return f"t{secrets.token_hex(4)}"


# ---------------------------------------------------------------- the event store contract

MakeEvents = Callable[[], EventStore]


@pytest.fixture(params=["memory", "redis"])
async def make_events(request: pytest.FixtureRequest, redis: RedisServer) -> AsyncIterator[MakeEvents]:
    """Makes the event store of one session (each call: another session)."""
    if request.param == "memory":
        yield lambda: MemoryEventStore(per_stream=3)
        return
    store = RedisStore(redis.url, prefix=_prefix(), per_stream=3)
    yield store.event_store
    await store.aclose()


async def test_events_replay_after_an_id_in_order(make_events: MakeEvents) -> None:
    events = make_events()
    first = await events.store("s1-1", b"")
    ids = [await events.store("s1-1", frame) for frame in (b"a", b"b")]
    assert len({first, *ids}) == 3
    assert await events.replay_after(first) == ("s1-1", [(ids[0], b"a"), (ids[1], b"b")])
    assert await events.replay_after(ids[1]) == ("s1-1", [])


async def test_events_of_two_streams_stay_apart(make_events: MakeEvents) -> None:
    events = make_events()
    one = await events.store("s1-1", b"one")
    two = await events.store("s1-2", b"two")
    later = await events.store("s1-1", b"later")
    assert await events.replay_after(one) == ("s1-1", [(later, b"later")])
    assert await events.replay_after(two) == ("s1-2", [])


@pytest.mark.parametrize("event_id", ["", "x", "s9-9/0", "nope/1", "s1-1/x", "/", "a" * 300])
async def test_events_unknown_ids_replay_nothing(make_events: MakeEvents, event_id: str) -> None:
    events = make_events()
    await events.store("s1-1", b"a")
    assert await events.replay_after(event_id) is None


async def test_events_forgotten_stream_replays_nothing(make_events: MakeEvents) -> None:
    events = make_events()
    first = await events.store("s1-1", b"a")
    await events.store("s1-1", b"b")
    await events.forget("s1-1")
    assert await events.replay_after(first) is None
    await events.forget("s1-1")  # twice: no error


async def test_events_too_old_to_replay_in_full_replay_nothing(make_events: MakeEvents) -> None:
    events = make_events()  # keeps 3 events per stream
    ids = [await events.store("s1-1", bytes([65 + i])) for i in range(5)]
    assert await events.replay_after(ids[0]) is None  # ids[1] is gone: the replay would have a hole
    assert await events.replay_after(ids[1]) == ("s1-1", [(ids[2], b"C"), (ids[3], b"D"), (ids[4], b"E")])


# ---------------------------------------------------------------- shared events: Redis only


async def test_event_ids_are_unguessable_and_bound_to_their_stream(redis: RedisServer) -> None:
    store = RedisStore(redis.url, prefix=_prefix())
    one, other = store.event_store(), store.event_store()
    assert isinstance(one, SharedEventStore)
    a = await one.store("s1-1", b"a")
    await one.store("s1-1", b"b")
    b = await other.store("s1-1", b"x")  # the same stream id in another store (session)
    assert a.rpartition("/")[0] != b.rpartition("/")[0]
    forged = a.replace(a.split(".")[1].split("/")[0], "A" * 16)
    assert await other.replay_after(forged) is None
    # Any worker's store replays a known id.
    assert await other.replay_after(a) == ("s1-1", [(a.rpartition("/")[0] + "/2", b"b")])
    await store.aclose()


async def test_follow_reads_what_another_worker_writes_until_its_end(redis: RedisServer) -> None:
    prefix = _prefix()
    writer_store, reader_store = RedisStore(redis.url, prefix=prefix), RedisStore(redis.url, prefix=prefix, block=0.2)
    writer, reader = writer_store.event_store(), reader_store.event_store()
    first = await writer.store("s1-1", b"")
    await writer.store("s1-1", b"stored before")

    async def write_later() -> None:
        for frame in (b"one", b"two", b"three"):
            await asyncio.sleep(0.1)
            await writer.store("s1-1", frame)
        await writer.end("s1-1")

    task = asyncio.ensure_future(write_later())
    seen = [frame async for batch in reader.follow(first) for _, frame in batch]
    await task
    assert seen == [b"stored before", b"one", b"two", b"three"]

    # A followed stream that is forgotten (its session ended) ends the follow too.
    start = await writer.store("s1-2", b"")
    follow = reader.follow(start)

    async def forget_later() -> None:
        await asyncio.sleep(0.1)
        await writer.forget("s1-2")

    task = asyncio.ensure_future(forget_later())
    assert [batch async for batch in follow] == []
    await task
    await writer_store.aclose()
    await reader_store.aclose()


async def test_session_registry(redis: RedisServer) -> None:
    store = RedisStore(redis.url, prefix=_prefix())
    registry = store.sessions
    await registry.add("sid", "sid-1", 0.3)
    assert await registry.lookup("sid") == ("sid-1", "", "")
    assert await registry.lookup("other") is None
    await registry.touch(["sid"], 10)
    await asyncio.sleep(0.4)
    assert await registry.lookup("sid") == ("sid-1", "", "")  # touched: lives on
    owner = "https://issuer.example\nsub:alice"  # a principal holds a newline
    await registry.add("owned", "", 10, owner, "w1")
    assert await registry.lookup("owned") == ("", owner, "w1")
    await registry.remove("sid")
    assert await registry.lookup("sid") is None
    await registry.add("short", "short-1", 0.1)
    await asyncio.sleep(0.3)
    assert await registry.lookup("short") is None  # expired
    await store.aclose()


# ---------------------------------------------------------------- the task store contract

Stores = tuple[TaskStore, TaskStore]  # (this worker's, another worker's view of the same store)


@pytest.fixture(params=["memory", "redis"])
async def task_stores(request: pytest.FixtureRequest, redis: RedisServer) -> AsyncIterator[Stores]:
    if request.param == "memory":
        store = MemoryTaskStore()
        yield store, store
        await store.aclose()
        return
    prefix = _prefix()
    one, two = RedisStore(redis.url, prefix=prefix), RedisStore(redis.url, prefix=prefix)
    assert isinstance(one.task_store(), TaskStore)
    yield one.task_store(), two.task_store()
    await one.aclose()
    await two.aclose()


async def test_tasks_create_only_once_and_read_anywhere(task_stores: Stores) -> None:
    here, there = task_stores
    assert await here.create("t1", b"one", 10_000)
    assert not await there.create("t1", b"other", 10_000)
    assert await there.get("t1") == b"one"
    assert await there.get("t2") is None


async def test_tasks_replace_compares_and_swaps(task_stores: Stores) -> None:
    here, there = task_stores
    await here.create("t1", b"one", 10_000)
    assert await there.replace("t1", b"one", b"two", 10_000)
    assert not await here.replace("t1", b"one", b"three", 10_000)  # changed meanwhile
    assert await here.get("t1") == b"two"
    assert not await here.replace("missing", b"one", b"two", 10_000)
    assert await here.get("missing") is None


async def test_tasks_expire(task_stores: Stores) -> None:
    here, there = task_stores
    await here.create("short", b"one", 100)
    await here.create("kept", b"one", 100)
    assert await here.replace("kept", b"one", b"two", None)  # no expiry any more
    await asyncio.sleep(0.3)
    assert await there.get("short") is None
    assert await there.get("kept") == b"two"
    assert await here.create("short", b"again", 10_000)  # the id is free again


async def test_tasks_watch_wakes_on_a_change_from_another_worker(task_stores: Stores) -> None:
    here, there = task_stores
    await here.create("t1", b"one", 10_000)
    assert await here.watch("t1", b"zero", 5) == b"one"  # differs already: at once
    started = time.monotonic()
    assert await here.watch("t1", b"one", 0.2) == b"one"  # no change: ``seen`` after the timeout
    assert time.monotonic() - started >= 0.15

    async def change_later() -> None:
        await asyncio.sleep(0.1)
        assert await there.replace("t1", b"one", b"two", 10_000)

    task = asyncio.ensure_future(change_later())
    started = time.monotonic()
    assert await here.watch("t1", b"one", 5) == b"two"
    assert time.monotonic() - started < 2
    await task

    async def delete_later() -> None:
        await asyncio.sleep(0.1)
        await there.delete("t1")

    task = asyncio.ensure_future(delete_later())
    assert await here.watch("t1", b"two", 5) is None
    await task
    await there.delete("t1")  # absent: no error


async def test_tasks_watch_misses_no_change_made_just_before_it(task_stores: Stores) -> None:
    """A change between the caller's read and its watch is seen at once."""
    here, there = task_stores
    await here.create("t1", b"one", 10_000)
    seen = await here.get("t1")
    assert seen is not None
    assert await there.replace("t1", seen, b"two", 10_000)
    started = time.monotonic()
    assert await here.watch("t1", seen, 5) == b"two"
    assert time.monotonic() - started < 1


# ---------------------------------------------------------------- two workers in this process


async def _resume(
    client: httpx.AsyncClient, url: str, session: str, last: str, seen: list[int], ids: list[str]
) -> dict[str, Any]:
    """GET with Last-Event-ID; collect progress until the response; return it."""
    headers = legacy_headers(session, **{"last-event-id": last})
    headers["accept"] = "text/event-stream"
    async with client.stream("GET", url, headers=headers) as response:
        assert response.status_code == 200, await response.aread()
        reader = SseReader(response)
        while (event := await reader.next()) is not None:
            if event.id is not None:
                ids.append(event.id)
            step = progress_of(event)
            if step is not None:
                seen.append(step)
            elif event.data is not None and "result" in event.data:
                return event.data
    raise AssertionError(f"the resumed stream ended without the response (progress {seen})")


async def test_a_legacy_stream_cut_on_one_worker_resumes_on_another(redis: RedisServer) -> None:
    prefix, n = _prefix(), 30
    _, app_a, store_a = make_app(redis.url, prefix)
    _, app_b, store_b = make_app(redis.url, prefix)
    async with serving(app_a) as url_a, serving(app_b) as url_b, httpx.AsyncClient(timeout=10) as client:
        session = await open_session(client, url_a)
        request = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "steps", "arguments": {"n": n, "pause": 0.02}, "_meta": {"progressToken": "p"}},
        }
        seen: list[int] = []
        ids: list[str] = []
        last = None
        async with client.stream("POST", url_a, content=json.dumps(request), headers=legacy_headers(session)) as r:
            assert r.headers["content-type"].startswith("text/event-stream")
            reader = SseReader(r)
            while len(seen) < 5:
                event = await reader.next()
                assert event is not None
                last = event.id or last
                if event.id is not None:
                    ids.append(event.id)
                step = progress_of(event)
                if step is not None:
                    seen.append(step)
        # Dropped mid-response (the tool goes on on A); resumed on B, which has no such session.
        assert last is not None and seen == [1, 2, 3, 4, 5]
        assert session not in app_b.sessions
        answer = await _resume(client, url_b, session, last, seen, ids)
        assert answer["id"] == 7 and answer["result"]["structuredContent"]["n"] == n, answer
        assert seen == list(range(1, n + 1))  # nothing lost, nothing twice
        assert len(ids) == len(set(ids))

        # An id of another session, or a made-up one, is refused on either worker.
        other = await open_session(client, url_a)
        for url in (url_a, url_b):
            headers = legacy_headers(other, **{"last-event-id": last, "accept": "text/event-stream"})
            assert (await client.get(url, headers=headers)).status_code == 404
            forged = last.rpartition("/")[0][:-3] + "abc/1"
            headers = legacy_headers(session, **{"last-event-id": forged, "accept": "text/event-stream"})
            assert (await client.get(url, headers=headers)).status_code == 404
        # An unknown session is unknown on B too.
        headers = legacy_headers("no-such-session", **{"last-event-id": last, "accept": "text/event-stream"})
        assert (await client.get(url_b, headers=headers)).status_code == 404
    await store_a.aclose()
    await store_b.aclose()


def _protected_worker(url: str, prefix: str) -> tuple[Any, RedisStore]:
    server = Server(
        "protected-redis", auth=BearerAuth("https://issuer.example", "http://127.0.0.1/mcp", verifier=Tokens())
    )

    @server.tool()
    async def steps(n: int, ctx: Context) -> int:
        for i in range(1, n + 1):
            await ctx.report_progress(i, n)
        return n

    store = RedisStore(url, prefix=prefix)
    return server.http_app(store=store), store


async def test_a_stream_resumed_on_another_worker_answers_only_its_owner(redis: RedisServer) -> None:
    """Resuming with Last-Event-ID on a worker that does not hold the session checks, as the
    holding worker does, that the caller owns it: another user's session id and event id
    find nothing there (404), the owner gets the events."""
    prefix = _prefix()
    app_a, store_a = _protected_worker(redis.url, prefix)
    app_b, store_b = _protected_worker(redis.url, prefix)
    alice, bob = {"authorization": "Bearer alice"}, {"authorization": "Bearer bob"}
    hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
    async with serving(app_a) as url_a, serving(app_b) as url_b, httpx.AsyncClient(timeout=10) as client:
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}
        reply = await client.post(url_a, content=json.dumps(init), headers=legacy_headers(**alice))
        session = reply.headers["mcp-session-id"]
        params = {"name": "steps", "arguments": {"n": 3}, "_meta": {"progressToken": "p"}}
        request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
        ids: list[str] = []
        async with client.stream(
            "POST", url_a, content=json.dumps(request), headers=legacy_headers(session, **alice)
        ) as r:
            reader = SseReader(r)
            while (event := await reader.next()) is not None:
                if event.id is not None:
                    ids.append(event.id)
        first = ids[0]
        resume = {"last-event-id": first, "accept": "text/event-stream"}
        stolen = await client.get(url_b, headers=legacy_headers(session, **resume, **bob))
        assert stolen.status_code == 404, stolen.text
        assert "progress" not in stolen.text
        mine = await client.get(url_b, headers=legacy_headers(session, **resume, **alice))
        assert mine.status_code == 200 and "notifications/progress" in mine.text
    await store_a.aclose()
    await store_b.aclose()


async def _until(check: Callable[[], Awaitable[bool]], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def test_a_task_started_on_one_worker_is_answered_and_cancelled_on_another(redis: RedisServer) -> None:
    prefix = _prefix()
    server_a, app_a, store_a = make_app(redis.url, prefix)
    server_b, app_b, store_b = make_app(redis.url, prefix)
    async with serving(app_a) as url_a, serving(app_b) as url_b, httpx.AsyncClient(timeout=10) as client:
        created = await call(client, url_a, "confirm", {"name": "x"})
        assert created["resultType"] == "task", created
        task_id = created["taskId"]

        async def status_on_b() -> dict[str, Any]:
            status, answer = await rpc(client, url_b, "tasks/get", {"taskId": task_id})
            assert status == 200, answer
            result: dict[str, Any] = answer["result"]
            return result

        async def waiting() -> bool:
            return bool((await status_on_b())["status"] == "input_required")

        await _until(waiting)
        asked = (await status_on_b())["inputRequests"]["go"]
        assert asked["method"] == "elicitation/create", asked
        assert (server_a.tasks.running, server_b.tasks.running) == (1, 0)  # it runs on A
        update = {"taskId": task_id, "inputResponses": {"go": {"action": "accept", "content": {"word": "yes"}}}}
        status, answer = await rpc(client, url_b, "tasks/update", update)
        assert status == 200 and answer["result"]["resultType"] == "complete", answer

        async def completed() -> bool:
            return bool((await status_on_b())["status"] == "completed")

        await _until(completed)
        assert (await status_on_b())["result"]["structuredContent"]["word"] == "yes"

        # A sleeper started on A, cancelled through B: A's tool is cancelled.
        created = await call(client, url_a, "sleeper", {"seconds": 30})
        sleeper = created["taskId"]
        status, answer = await rpc(client, url_b, "tasks/cancel", {"taskId": sleeper})
        assert status == 200 and "result" in answer, answer

        async def cancelled_on_a() -> bool:
            stats = (await call(client, url_a, "stats", {}))["structuredContent"]
            return bool(stats["cancelled"] == 1 and stats["running"] == 0)

        await _until(cancelled_on_a)
        status, answer = await rpc(client, url_b, "tasks/get", {"taskId": sleeper})
        assert answer["result"]["status"] == "cancelled", answer
    await store_a.aclose()
    await store_b.aclose()


# ---------------------------------------------------------------- Redis stopped mid-test


def _tool_tasks() -> list[asyncio.Task[Any]]:
    """Tasks of this loop running a tool (a task's tool call goes through Features.dispatch)."""
    return [t for t in asyncio.all_tasks() if "Features.dispatch" in repr(t.get_coro())]


async def test_redis_stopped_mid_test_answers_errors_naming_the_store(fresh_redis: RedisServer) -> None:
    server, app, store = make_app(fresh_redis.url, _prefix())
    async with serving(app) as url, httpx.AsyncClient(timeout=10) as client:
        session = await open_session(client, url)
        created = await call(client, url, "sleeper", {"seconds": 30})
        task_id = created["taskId"]
        status, answer = await rpc(client, url, "tasks/get", {"taskId": task_id})
        assert answer["result"]["status"] == "working", answer
        assert len(_tool_tasks()) == 1

        fresh_redis.stop()
        named = f"Redis store at {fresh_redis.url} unavailable"
        for method, params in (
            ("tasks/get", {"taskId": task_id}),
            ("tasks/cancel", {"taskId": task_id}),
            ("tasks/update", {"taskId": task_id, "inputResponses": {}}),
            ("tools/call", {"name": "sleeper", "arguments": {"seconds": 1}}),
        ):
            started = time.monotonic()
            status, answer = await rpc(client, url, method, params)
            assert answer["error"]["code"] == -32603, (method, answer)
            assert named in answer["error"]["message"], (method, answer)
            assert time.monotonic() - started < 5, method

        # A new legacy session cannot be shared: refused, with the store named.
        hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}
        reply = await client.post(url, content=json.dumps(init), headers=legacy_headers())
        assert reply.status_code == 503 and reply.json()["error"]["code"] == -32603, reply.text
        assert named in reply.json()["error"]["message"]
        assert len(app.sessions) == 1  # the refused one is not kept

        # A stream (progress before the answer) still delivers, its events without ids.
        params = {"name": "steps", "arguments": {"n": 3, "pause": 0}, "_meta": {"progressToken": "p"}}
        request = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}
        got: list[Any] = []
        async with client.stream("POST", url, content=json.dumps(request), headers=legacy_headers(session)) as r:
            assert r.headers["content-type"].startswith("text/event-stream")
            reader = SseReader(r)
            while (event := await reader.next()) is not None:
                got.append((event.id, progress_of(event), (event.data or {}).get("id")))
        assert got == [(None, 1, None), (None, 2, None), (None, 3, None), (None, None, 2)], got

        # The server carries on: the existing session and plain calls still work.
        assert (await call(client, url, "whoami", {}))["structuredContent"]["pid"] > 0
        request = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}}
        reply = await client.post(url, content=json.dumps(request), headers=legacy_headers(session))
        assert reply.status_code == 200 and "result" in reply.json(), reply.text

        # The store's outage stops no running work (issue 37.5): the task runs on, its
        # outcome waiting for the store; the server's own stop ends it.
        assert server.tasks.running == 1 and len(_tool_tasks()) == 1
        await server.stop_tasks()

        async def none_running() -> bool:
            return server.tasks.running == 0 and not _tool_tasks()

        await _until(none_running, 10)
    await store.aclose()


async def test_a_frozen_redis_fails_requests_quickly_naming_the_store(fresh_redis: RedisServer) -> None:
    """A Redis that hangs without refusing (SIGSTOP: connections stay open, nothing
    answers): each request that needs it fails within the store's command timeout, naming
    the store, instead of waiting on the socket for tens of seconds; once Redis answers
    again, so does the server."""
    server, app, store = make_app(fresh_redis.url, _prefix())
    named = f"Redis store at {fresh_redis.url} unavailable"
    hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}
    async with serving(app) as url, httpx.AsyncClient(timeout=60) as client:
        session = await open_session(client, url)
        created = await call(client, url, "sleeper", {"seconds": 30})
        os.kill(fresh_redis.process.pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            reply = await client.post(url, content=json.dumps(init), headers=legacy_headers())
            assert reply.status_code == 503, reply.text
            assert named in reply.json()["error"]["message"] and "no answer within" in reply.json()["error"]["message"]
            status, answer = await rpc(client, url, "tasks/get", {"taskId": created["taskId"]})
            assert answer["error"]["code"] == -32603 and named in answer["error"]["message"], answer
            assert time.monotonic() - started < 2 * store.command_timeout + 4  # two requests, each bounded
        finally:
            os.kill(fresh_redis.process.pid, signal.SIGCONT)
        # Redis answers again: so does the server, on the session it already had and a new one.
        assert (await call(client, url, "whoami", {}))["structuredContent"]["pid"] > 0
        reply = await client.post(url, content=json.dumps(init), headers=legacy_headers())
        assert reply.status_code == 200, reply.text
        assert session
    await server.stop_tasks()
    await store.aclose()


async def test_redis_is_imported_only_when_the_store_is_first_used() -> None:
    """An app built with a RedisStore has not imported redis yet (nor has the runtime)."""
    code = (
        "import sys; from tests.servers.redis_peer import make_app; make_app('redis://127.0.0.1:1/0'); "
        "print('redis' in sys.modules)"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "False"


def test_without_redis_server_the_tests_skip_with_one_reason_or_fail_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests import redis_server as helper

    monkeypatch.setattr(helper, "redis_binary", lambda: None)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="needs redis-server"):
        helper.require_redis()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true: needs redis-server"):
        helper.require_redis()


async def test_a_session_reaped_for_idleness_ends_and_leaves_the_registry(redis: RedisServer) -> None:
    """Its handler task ends, its transport closes, and other workers no longer know it."""
    server, app, store = make_app(redis.url, _prefix(), session_idle_timeout=0.3)
    async with serving(app) as url, httpx.AsyncClient(timeout=10) as client:
        session = await open_session(client, url)
        live = app.sessions[session]
        assert await store.sessions.lookup(session) is not None
        await asyncio.sleep(0.4)
        app.table.reap()
        assert session not in app.sessions

        async def closed() -> bool:
            return live.task.done() and live.transport.closed and await store.sessions.lookup(session) is None

        await _until(closed)
        assert not server.sessions
    await store.aclose()
