"""The tasks extension (SEP-2663), server side: real HTTP (uvicorn in this process, httpx
over loopback, so the tests can look at the server's asyncio tasks and store) and stdio
(a real subprocess) for progress on the connection.

Wire facts checked here come from the extension's specification and the conformance
scenarios (``tasks-*``): flat CreateTaskResult with ``ttlMs`` / ``pollIntervalMs``, acks of
``{resultType: "complete"}`` with no task fields, -32602 for an unknown task, -32021 without
the extension, -32601 for the removed ``tasks/result`` and ``tasks/list``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import msgspec
import pytest
import uvicorn

from mcpgen import Server
from mcpgen.runtime.auth.info import AuthInfo, current_auth
from mcpgen.runtime.server.tasks import principal
from mcpgen.runtime.stores.task_store import MemoryTaskStore, TaskRecord, TaskStore, encode_record
from tests.http_server import free_port
from tests.paths import SERVERS
from tests.servers.tasks_server import build
from tests.wire import RawPeer

pytestmark = pytest.mark.anyio

EXT = "io.modelcontextprotocol/tasks"
MODERN = "2026-07-28"
WITH_TASKS = {"elicitation": {}, "sampling": {}, "extensions": {EXT: {}}}
WITHOUT_TASKS = {"elicitation": {}, "sampling": {}}
TASKS_SERVER = SERVERS / "tasks_server.py"
TASK_FIELDS = ("taskId", "status", "result", "error", "inputRequests")


class Reply:
    def __init__(self, status: int, messages: list[dict[str, Any]]) -> None:
        self.status = status
        self.messages = messages  # notifications first (SSE), the response last
        self.body = messages[-1]

    @property
    def result(self) -> dict[str, Any]:
        assert "result" in self.body, self.body
        result: dict[str, Any] = self.body["result"]
        return result

    @property
    def error(self) -> dict[str, Any]:
        assert "error" in self.body, self.body
        error: dict[str, Any] = self.body["error"]
        return error


class Peer:
    """A stateless-era client over raw HTTP (no mcpgen client in between)."""

    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http
        self.ids = 0

    async def call(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        caps: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> Reply:
        self.ids += 1
        params = dict(params or {})
        params["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": WITH_TASKS if caps is None else caps,
            "io.modelcontextprotocol/clientInfo": {"name": "tasks-test", "version": "0"},
            **(meta or {}),
        }
        sent = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": MODERN,
            "Mcp-Method": method,
        }
        name = params.get("taskId") if method.startswith("tasks/") else params.get("name")
        if isinstance(name, str):
            sent["Mcp-Name"] = name
        sent.update(headers or {})
        body = {"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params}
        response = await self.http.post("/mcp", json=body, headers={k: v for k, v in sent.items() if v})
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            messages = [json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")]
        else:
            messages = [response.json()]
        return Reply(response.status_code, messages)

    async def start(self, tool: str, arguments: dict[str, Any] | None = None, **options: Any) -> dict[str, Any]:
        reply = await self.call("tools/call", {"name": tool, "arguments": arguments or {}}, **options)
        result = reply.result
        assert result["resultType"] == "task", result
        return result

    async def get(self, task_id: str) -> dict[str, Any]:
        return (await self.call("tasks/get", {"taskId": task_id})).result

    async def until(self, task_id: str, *statuses: str, within: float = 5.0) -> dict[str, Any]:
        deadline = time.monotonic() + within
        while True:
            task = await self.get(task_id)
            if task["status"] in statuses:
                return task
            assert time.monotonic() < deadline, f"task stayed {task['status']}: {task}"
            await asyncio.sleep(0.02)


@contextlib.asynccontextmanager
async def serving(server: Server) -> AsyncIterator[Peer]:
    port = free_port()
    config = uvicorn.Config(server.http_app(), host="127.0.0.1", port=port, log_level="warning")
    front = uvicorn.Server(config)
    runner = asyncio.ensure_future(front.serve())
    while not front.started:
        assert not runner.done(), "uvicorn did not start"
        await asyncio.sleep(0.01)
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as http:
            yield Peer(http)
    finally:
        front.should_exit = True
        await runner


async def settled(server: Server) -> None:
    """Wait (briefly) until no task of the server is running."""
    for _ in range(200):
        if server.tasks.running == 0:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{server.tasks.running} tasks still running")


# ------------------------------------------------------------------ lifecycle


async def test_a_task_runs_in_the_background_and_inlines_its_result() -> None:
    server = build()
    async with serving(server) as peer:
        discovered = (await peer.call("server/discover")).result
        assert discovered["capabilities"]["extensions"] == {EXT: {}}
        assert "tasks" not in discovered["capabilities"]

        created = await peer.start("sleeper", {"seconds": 0.3})
        assert created["status"] == "working"
        assert not set(created) & {"task", "result", "error", "inputRequests", "requestState", "ttl", "pollInterval"}
        assert isinstance(created["ttlMs"], int) and created["ttlMs"] > 0
        assert isinstance(created["pollIntervalMs"], int) and created["pollIntervalMs"] > 0
        assert created["createdAt"].endswith("Z") and len(created["taskId"]) >= 32

        working = await peer.get(created["taskId"])  # durable at once
        assert working["resultType"] == "complete" and working["status"] == "working"
        assert "result" not in working

        done = await peer.until(created["taskId"], "completed")
        assert done["result"]["content"] == [{"type": "text", "text": "slept 0.3 s"}]
        assert "io.modelcontextprotocol/related-task" not in done["result"].get("_meta", {})
        assert "requestState" not in done
        await settled(server)


async def test_a_plain_def_tool_runs_as_a_task_too() -> None:
    server = build()
    async with serving(server) as peer:
        created = await peer.start("plain", {"x": 21})
        done = await peer.until(created["taskId"], "completed")
        assert done["result"]["structuredContent"] == {"result": 42}


async def test_tool_errors_complete_and_protocol_errors_fail() -> None:
    server = build()
    async with serving(server) as peer:
        tool_error = await peer.until((await peer.start("tool_error"))["taskId"], "completed", "failed")
        assert tool_error["status"] == "completed" and tool_error["result"]["isError"] is True
        failed = await peer.until((await peer.start("boom"))["taskId"], "completed", "failed")
        assert failed["status"] == "failed" and "result" not in failed
        assert failed["error"] == {"code": -32603, "message": "the job blew up", "data": {"why": "on purpose"}}


# ------------------------------------------------------------------ input


async def test_questions_park_the_task_and_partial_answers_keep_the_rest_open() -> None:
    server = build()
    async with serving(server) as peer:
        task_id = (await peer.start("two_questions"))["taskId"]
        waiting = await peer.until(task_id, "input_required")
        for _ in range(50):  # the two questions are asked one after the other
            if len(waiting.get("inputRequests", {})) == 2:
                break
            waiting = await peer.get(task_id)
        assert set(waiting["inputRequests"]) == {"name", "sure"}
        assert waiting["inputRequests"]["name"]["method"] == "elicitation/create"
        assert "requestState" not in waiting

        ack = await peer.call(
            "tasks/update",
            {
                "taskId": task_id,
                "inputResponses": {"name": {"action": "accept", "content": {"name": "Ada"}}, "nope": {}},
            },
        )
        assert ack.result["resultType"] == "complete"
        assert not set(ack.result) & set(TASK_FIELDS)
        after = await peer.get(task_id)
        assert after["status"] == "input_required" and list(after["inputRequests"]) == ["sure"]

        # A malformed answer is refused as a whole, and the question stays open.
        bad = await peer.call("tasks/update", {"taskId": task_id, "inputResponses": {"sure": {"action": 7}}})
        assert bad.status == 400 and bad.error["code"] == -32602
        assert list((await peer.get(task_id))["inputRequests"]) == ["sure"]

        await peer.call(
            "tasks/update",
            {"taskId": task_id, "inputResponses": {"sure": {"action": "accept", "content": {"ok": True}}}},
        )
        done = await peer.until(task_id, "completed")
        assert done["result"]["content"][0]["text"] == "Ada / True"
        assert "inputRequests" not in done
        await settled(server)


async def test_an_update_to_a_finished_task_is_acknowledged_and_changes_nothing() -> None:
    server = build()
    async with serving(server) as peer:
        task_id = (await peer.start("confirm"))["taskId"]
        await peer.until(task_id, "input_required")
        await peer.call(
            "tasks/update", {"taskId": task_id, "inputResponses": {"go": {"action": "accept", "content": {"ok": True}}}}
        )
        done = await peer.until(task_id, "completed")
        again = await peer.call("tasks/update", {"taskId": task_id, "inputResponses": {"go": {"action": "decline"}}})
        assert again.status == 200 and again.result["resultType"] == "complete"
        assert await peer.get(task_id) == done
        assert server.seen["finished"] == 1  # type: ignore[attr-defined]


async def test_mrtr_rounds_first_then_a_task() -> None:
    server = build()
    async with serving(server) as peer:
        first = (await peer.call("tools/call", {"name": "named_task", "arguments": {}})).result
        assert first["resultType"] == "input_required" and "taskId" not in first
        assert list(first["inputRequests"]) == ["user_name"]
        retry = {
            "name": "named_task",
            "arguments": {},
            "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Alice"}}},
            "requestState": first["requestState"],
        }
        created = (await peer.call("tools/call", retry)).result
        assert created["resultType"] == "task" and "requestState" not in created and "inputRequests" not in created
        done = await peer.until(created["taskId"], "completed")
        assert done["result"]["content"][0]["text"] == "task for Alice"


# ------------------------------------------------------------------ cancel


async def test_cancel_stops_the_tool_and_cancelling_twice_is_the_same_ack() -> None:
    server = build()
    async with serving(server) as peer:
        task_id = (await peer.start("blocker"))["taskId"]
        assert server.tasks.running == 1
        for _ in range(2):
            ack = await peer.call("tasks/cancel", {"taskId": task_id})
            assert ack.status == 200 and ack.result["resultType"] == "complete"
            assert not set(ack.result) & set(TASK_FIELDS)
        cancelled = await peer.until(task_id, "cancelled")
        assert "result" not in cancelled and "error" not in cancelled
        await settled(server)
        assert server.seen["cancelled"] == 1  # type: ignore[attr-defined]  # the tool itself was stopped


async def test_cancel_while_waiting_for_input() -> None:
    server = build()
    async with serving(server) as peer:
        task_id = (await peer.start("confirm"))["taskId"]
        await peer.until(task_id, "input_required")
        await peer.call("tasks/cancel", {"taskId": task_id})
        cancelled = await peer.until(task_id, "cancelled")
        assert "inputRequests" not in cancelled
        await settled(server)
        late = await peer.call(
            "tasks/update", {"taskId": task_id, "inputResponses": {"go": {"action": "accept", "content": {"ok": True}}}}
        )
        assert late.result["resultType"] == "complete"
        assert (await peer.get(task_id))["status"] == "cancelled"
        assert server.seen["finished"] == 0  # type: ignore[attr-defined]


# ------------------------------------------------------------------ bad input


async def test_unknown_and_malformed_task_ids_are_invalid_params() -> None:
    server = build()
    async with serving(server) as peer:
        for method in ("tasks/get", "tasks/cancel"):
            reply = await peer.call(method, {"taskId": "no-such-task"})
            assert reply.status == 400 and reply.error["code"] == -32602, reply.body
        reply = await peer.call("tasks/update", {"taskId": "no-such-task", "inputResponses": {}})
        assert reply.error["code"] == -32602
        # A number never equals its Mcp-Name header (a string): refused as a mismatch over
        # HTTP (over stdio, with no headers, it is -32602: see the stdio test).
        reply = await peer.call("tasks/get", {"taskId": 12}, headers={"Mcp-Name": "12"})
        assert reply.error["code"] == -32020
        task_id = (await peer.start("blocker"))["taskId"]
        for responses in (None, [], "x"):
            params: dict[str, Any] = {"taskId": task_id}
            if responses is not None:
                params["inputResponses"] = responses
            reply = await peer.call("tasks/update", params)
            assert reply.error["code"] == -32602, responses
        for removed in ("tasks/result", "tasks/list"):
            reply = await peer.call(removed, {"taskId": task_id})
            assert reply.status == 404 and reply.error["code"] == -32601
        await peer.call("tasks/cancel", {"taskId": task_id})
        await settled(server)


async def test_mcp_name_must_be_the_task_id() -> None:
    server = build()
    async with serving(server) as peer:
        task_id = (await peer.start("sleeper", {"seconds": 0.05}))["taskId"]
        wrong = await peer.call("tasks/get", {"taskId": task_id}, headers={"Mcp-Name": "another"})
        assert wrong.status == 400 and wrong.error["code"] == -32020
        missing = await peer.call("tasks/get", {"taskId": task_id}, headers={"Mcp-Name": ""})
        assert missing.status == 400 and missing.error["code"] == -32020
        method = await peer.call("tasks/get", {"taskId": task_id}, headers={"Mcp-Method": "tasks/cancel"})
        assert method.error["code"] == -32020
        await peer.until(task_id, "completed")


async def test_without_the_extension() -> None:
    server = build()
    async with serving(server) as peer:
        required = await peer.call("tools/call", {"name": "required_job", "arguments": {}}, caps=WITHOUT_TASKS)
        assert required.status == 400 and required.error["code"] == -32021
        assert required.error["data"] == {"requiredCapabilities": {"extensions": {EXT: {}}}}
        plain = (
            await peer.call("tools/call", {"name": "sleeper", "arguments": {"seconds": 0}}, caps=WITHOUT_TASKS)
        ).result
        assert plain["resultType"] == "complete" and "taskId" not in plain
        assert plain["content"] == [{"type": "text", "text": "slept 0 s"}]
        task_id = (await peer.start("sleeper", {"seconds": 0.05}))["taskId"]
        for method in ("tasks/get", "tasks/update", "tasks/cancel"):
            reply = await peer.call(method, {"taskId": task_id, "inputResponses": {}}, caps=WITHOUT_TASKS)
            assert reply.status == 400 and reply.error["code"] == -32021, method
        # The legacy task param neither errors nor turns an ordinary tool into a task.
        greet = (
            await peer.call("tools/call", {"name": "greet", "arguments": {"name": "x"}, "task": {"ttl": 100}})
        ).result
        assert greet["resultType"] == "complete" and greet["content"][0]["text"] == "Hello, x!"
        assert (await peer.start("required_job"))["status"] == "working"


async def test_a_server_without_task_tools_declares_nothing_and_knows_no_task_methods() -> None:
    server = Server("plain")

    @server.tool
    def echo(text: str) -> str:
        return text

    async with serving(server) as peer:
        caps = (await peer.call("server/discover")).result["capabilities"]
        assert EXT not in caps.get("extensions", {})
        reply = await peer.call("tasks/get", {"taskId": "x"})
        assert reply.error["code"] == -32601


async def test_a_task_is_invisible_to_another_principal() -> None:
    server = build()
    server.tasks.owner = lambda request: (request.client_info or {}).get("name")
    async with serving(server) as peer:
        task_id = (await peer.start("blocker"))["taskId"]
        other = {"io.modelcontextprotocol/clientInfo": {"name": "someone-else", "version": "0"}}
        for method in ("tasks/get", "tasks/cancel"):
            reply = await peer.call(method, {"taskId": task_id}, meta=other)
            assert reply.error["code"] == -32602, method
        assert (await peer.get(task_id))["status"] == "working"
        await peer.call("tasks/cancel", {"taskId": task_id})
        await settled(server)


def test_the_default_principal_is_the_verified_token_s_issuer_and_subject() -> None:
    request: Any = None
    assert principal(request) is None  # an unprotected server: no principal
    info = AuthInfo(issuer="https://as.example", subject="alice", client_id="app", scopes=frozenset())
    token = current_auth.set(info)
    try:
        assert principal(request) == "https://as.example\nsub:alice"
    finally:
        current_auth.reset(token)
    assert build().tasks.owner is principal


# ------------------------------------------------------------------ progress, leaks, expiry


async def test_progress_inside_a_task_over_http_shows_as_status_message() -> None:
    server = build()
    async with serving(server) as peer:
        reply = await peer.call(
            "tools/call", {"name": "sleeper", "arguments": {"seconds": 0.2, "steps": 2}}, meta={"progressToken": "p1"}
        )
        task_id = reply.result["taskId"]
        done = await peer.until(task_id, "completed")
        assert done["statusMessage"] == "step 2 of 2"


async def test_progress_inside_a_task_reaches_a_stdio_client() -> None:
    peer = await RawPeer.start(script=TASKS_SERVER)
    try:
        meta = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": WITH_TASKS,
            "progressToken": "tok",
        }
        reply = await peer.request(
            "tools/call", {"name": "sleeper", "arguments": {"seconds": 0.2, "steps": 2}, "_meta": meta}
        )
        assert reply["result"]["resultType"] == "task"
        progress = [await peer.recv() for _ in range(2)]
        assert [p["params"]["progress"] for p in progress] == [1, 2]
        assert {p["params"]["progressToken"] for p in progress} == {"tok"}
        meta.pop("progressToken")
        # The last progress goes out before the tool returns and its task is marked done:
        # a tasks/get sent on reading it may still find the task working, for a moment.
        for _ in range(100):
            task = await peer.request("tasks/get", {"taskId": reply["result"]["taskId"], "_meta": meta})
            if task["result"]["status"] != "working":
                break
            await asyncio.sleep(0.02)
        assert task["result"]["status"] == "completed"
        for bad in (12, None, ["x"]):
            refused = await peer.request("tasks/get", {"taskId": bad, "_meta": meta})
            assert refused["error"]["code"] == -32602, bad
        unknown = await peer.request("tasks/cancel", {"taskId": "nope", "_meta": meta})
        assert unknown["error"]["code"] == -32602
    finally:
        peer.process.kill()
        await peer.process.wait()


async def test_no_asyncio_task_outlives_its_task() -> None:
    server = build()
    async with serving(server) as peer:
        await peer.call("server/discover")  # the HTTP app's own housekeeping starts on a first request
        await asyncio.sleep(0.05)
        before = asyncio.all_tasks()
        ids = [
            (await peer.start("sleeper", {"seconds": 0.05}))["taskId"],
            (await peer.start("boom"))["taskId"],
            (await peer.start("blocker"))["taskId"],
            (await peer.start("confirm"))["taskId"],
        ]
        await peer.until(ids[3], "input_required")
        for task_id in ids[2:]:
            await peer.call("tasks/cancel", {"taskId": task_id})
        for task_id in ids:
            await peer.until(task_id, "completed", "failed", "cancelled")
        await settled(server)
        await asyncio.sleep(0.05)
        left = [task for task in asyncio.all_tasks() if task not in before]
        assert not left, [task.get_coro() for task in left]


async def test_finished_tasks_expire() -> None:
    store = MemoryTaskStore()
    server = build(task_store=store)
    server.tasks.ttl_ms = 300
    async with serving(server) as peer:
        task_id = (await peer.start("sleeper", {"seconds": 0}))["taskId"]
        assert (await peer.until(task_id, "completed"))["ttlMs"] == 300
        await asyncio.sleep(0.45)
        assert (await peer.call("tasks/get", {"taskId": task_id})).error["code"] == -32602
        await peer.start("sleeper", {"seconds": 0})  # a write sweeps what expired
        assert len(store) == 1


async def test_a_running_task_outlives_its_ttl_while_its_worker_keeps_it() -> None:
    server = build()
    server.tasks.ttl_ms = 150
    async with serving(server) as peer:
        task_id = (await peer.start("sleeper", {"seconds": 0.6, "steps": 1}))["taskId"]
        await asyncio.sleep(0.4)
        assert (await peer.get(task_id))["status"] == "working"
        await peer.until(task_id, "completed")


class KeptStore(MemoryTaskStore):
    """A store that outlives the manager closing it (so the test can read what it wrote)."""

    async def aclose(self) -> None:
        return None


async def test_closing_the_manager_fails_the_running_tasks() -> None:
    server = build(task_store=KeptStore())
    async with serving(server) as peer:
        task_id = (await peer.start("blocker"))["taskId"]
        await server.tasks.aclose()
        assert server.tasks.running == 0
        assert server.seen["cancelled"] == 1  # type: ignore[attr-defined]
        failed = await peer.get(task_id)
        assert failed["status"] == "failed" and failed["error"]["code"] == -32603


async def test_server_shutdown_fails_the_running_tasks() -> None:
    # uvicorn's lifespan shutdown closes the app, which stops the tasks it runs: none is
    # left running unrecorded (or leaked) when the server goes away.
    store = KeptStore()
    server = build(task_store=store)
    async with serving(server) as peer:
        task_id = (await peer.start("blocker"))["taskId"]
        await peer.until(task_id, "working")
    assert server.tasks.running == 0
    assert server.seen["cancelled"] == 1  # type: ignore[attr-defined]
    record = await store.get(task_id)
    assert record is not None and b'"failed"' in record


# ------------------------------------------------------------------ the store's contract


async def test_memory_store_contract() -> None:
    store: TaskStore = MemoryTaskStore()
    record = TaskRecord(task_id="t", status="working", created_at="a", last_updated_at="a", ttl_ms=None)
    first = encode_record(record)
    assert await store.create("t", first, None)
    assert not await store.create("t", b"other", None)  # NX
    assert await store.get("t") == first
    assert await store.watch("t", first, 0.05) == first  # timed out, unchanged

    second = encode_record(msgspec.structs.replace(record, revision=1))
    waiter = asyncio.ensure_future(store.watch("t", first, 5))
    await asyncio.sleep(0.01)
    assert not waiter.done()
    assert await store.replace("t", first, second, None)
    assert await asyncio.wait_for(waiter, 1) == second
    assert not await store.replace("t", first, b"stale", None)  # compare-and-swap
    assert await store.watch("t", first, 5) == second  # already differs: at once

    gone = asyncio.ensure_future(store.watch("t", second, 5))
    await asyncio.sleep(0.01)
    await store.delete("t")
    assert await asyncio.wait_for(gone, 1) is None
    assert await store.get("t") is None

    assert await store.create("short", first, 50)
    await asyncio.sleep(0.1)
    assert await store.get("short") is None
    assert not await store.replace("short", first, second, None)
    await store.aclose()
