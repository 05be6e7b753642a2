"""The Client's side of the tasks extension (SEP-2663) against a real mcpgen server with
task tools (tests/servers/tasks_peer.py), over stdio (a subprocess) and Streamable HTTP
(uvicorn on loopback): a task's lifecycle, its questions answered through the client's
handlers, cancellation, timeouts, task-only and task-capable tools, tool errors and
failures, the handshake era, and ``mcpgen call --task``."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest

from mcpgen import Client
from mcpgen.generated import CreateMessageResult, ElicitRequestParams, ElicitResult, TextContent
from mcpgen.runtime.client.tasks import (
    DEFAULT_POLL,
    MAX_POLL,
    MIN_POLL,
    TaskCancelled,
    TaskFailed,
    TaskRequired,
    TaskStatus,
    TasksUnavailable,
    TaskTimeout,
    poll_delay,
)
from tests.conftest import ROOT
from tests.http_server import free_port, running
from tests.wire import DEMO

pytestmark = pytest.mark.anyio
PEER = ROOT / "tests" / "servers" / "tasks_peer.py"
TASKS = "io.modelcontextprotocol/tasks"


@pytest.fixture(scope="module")
def peer_url() -> Iterator[str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with running([sys.executable, str(PEER), "--http", str(port)], url):
        yield url


@pytest.fixture(params=["stdio", "http"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class Answers:
    """The client's elicitation and sampling handlers, counting their calls."""

    def __init__(self, confirm: bool = True) -> None:
        self.confirm = confirm
        self.asked: list[str] = []

    async def elicit(self, params: ElicitRequestParams) -> ElicitResult:
        self.asked.append(params.message)
        return ElicitResult(action="accept", content={"confirm": self.confirm, "name": "Alice"})

    async def sample(self, params: Any) -> CreateMessageResult:
        self.asked.append("sampling")
        return CreateMessageResult(role="assistant", content=TextContent(text="bye"), model="m")


def make(kind: str, url: str, answers: Answers | None = None, **options: Any) -> Client:
    if answers is not None:
        options.update(elicitation=answers.elicit, sampling=answers.sample)
    if kind == "stdio":
        return Client.stdio(sys.executable, str(PEER), **options)
    return Client.http(url, **options)


class Sent:
    """The requests a client sends (method, params), read off its transport."""

    def __init__(self, client: Client) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []
        transport: Any = client.session.transport
        original = transport.send

        async def send(frame: bytes, **kw: Any) -> None:
            data = msgspec.json.decode(frame)
            if "id" in data and "method" in data:
                self.requests.append((data["method"], data.get("params") or {}))
            await original(frame, **kw)

        transport.send = send

    def of(self, method: str) -> list[dict[str, Any]]:
        return [params for sent, params in self.requests if sent == method]


def text(result: Any) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


# ---------------------------------------------------------------- lifecycle


async def test_a_task_runs_to_its_result_with_status_and_progress(kind: str, peer_url: str) -> None:
    progress: list[tuple[float, float | None, str | None]] = []
    seen: list[TaskStatus] = []
    async with make(kind, peer_url) as client:
        sent = Sent(client)
        handle = await client.start_task(
            "add_slowly",
            {"a": 2, "b": 40, "steps": 3, "pause": 0.05},
            on_progress=lambda *p: progress.append(p),
            on_status=seen.append,
        )
        assert handle.task_id and not handle.done
        assert handle.last.status == "working"
        assert re.match(r"\d{4}-\d\d-\d\dT", handle.last.created_at or "")
        assert handle.last.poll_interval_ms is not None and handle.last.ttl_ms is not None
        now = await handle.status()
        assert now.task_id == handle.task_id and now.status in ("working", "completed")
        result = await handle.wait(timeout=20)
        assert result.structured_content == {"result": 42}
        assert handle.done and handle.last.status == "completed"
        assert [s.status for s in seen][0] == "working" and seen[-1].status == "completed"
        # Every request of the task declared the extension; tasks/get named the task.
        call = sent.of("tools/call")[0]
        assert TASKS in call["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"]
        for params in sent.of("tasks/get"):
            assert params["taskId"] == handle.task_id
            assert TASKS in params["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"]
    if kind == "stdio":  # progress reaches the client on the connection it shares with the task
        assert [p[0] for p in progress] == [1, 2, 3]
    assert seen[-1].status_message == "step 3 of 3"  # and as the task's status message, either way


async def test_a_task_can_be_resumed_by_its_id_from_another_client(peer_url: str) -> None:
    async with Client.http(peer_url) as first:
        handle = await first.start_task("add_slowly", {"a": 1, "b": 1, "steps": 1, "pause": 0.05})
        task_id = handle.task_id
    assert task_id is not None
    async with Client.http(peer_url) as second:
        again = await second.resume_task(task_id)
        assert (await again.wait(timeout=20)).structured_content == {"result": 2}


# ---------------------------------------------------------------- input


async def test_questions_are_answered_through_the_clients_handlers_once_each(kind: str, peer_url: str) -> None:
    answers = Answers()
    seen: list[TaskStatus] = []
    async with make(kind, peer_url, answers) as client:
        sent = Sent(client)
        handle = await client.start_task("delete_file", {"filename": "notes.txt"}, on_status=seen.append)
        result = await handle.wait(timeout=20)
    assert text(result) == "deleted notes.txt (bye)"
    assert answers.asked == ["Delete notes.txt?", "sampling"]  # each question answered once
    asked = [key for status in seen for key in status.input_requests]
    assert asked == ["confirm", "farewell"]
    updates = sent.of("tasks/update")
    assert [list(u["inputResponses"]) for u in updates] == [["confirm"], ["farewell"]]
    assert updates[0]["inputResponses"]["confirm"] == {
        "action": "accept",
        "content": {"confirm": True, "name": "Alice"},
    }


async def test_a_question_answered_is_not_answered_again_before_the_server_shows_it(peer_url: str) -> None:
    # tasks/update is acknowledged before tasks/get need reflect it (the SEP allows
    # eventual consistency): an observation still listing an answered key asks nothing.
    answers = Answers()
    async with Client.http(peer_url, elicitation=answers.elicit) as client:
        sent = Sent(client)
        handle = await client.start_task("delete_file", {"filename": "b"})
        while (await handle.status()).status != "input_required":
            await asyncio.sleep(0.05)
        stale = handle.last
        assert await handle.answer() is True
        handle.last = stale  # as if the next poll had not caught up yet
        assert await handle.answer() is False
        assert len(answers.asked) == 1 and len(sent.of("tasks/update")) == 1
        await handle.cancel()


async def test_a_question_without_a_handler_is_a_clear_error(peer_url: str) -> None:
    # No elicitation handler: the client does not declare elicitation, so the server's
    # question fails inside the task, which ends failed with the capability error.
    async with Client.http(peer_url) as client:
        handle = await client.start_task("delete_file", {"filename": "a"})
        with pytest.raises(TaskFailed) as failed:
            await handle.wait(timeout=20)
    assert failed.value.code == -32021
    assert failed.value.status.status == "failed"


async def test_a_task_that_asks_first_in_the_request_then_becomes_a_task(kind: str, peer_url: str) -> None:
    # The InputRequiredResult round is answered (and retried) before the task exists.
    answers = Answers()
    async with make(kind, peer_url, answers) as client:
        handle = await client.start_task("welcome")
        assert handle.task_id
        assert text(await handle.wait(timeout=20)) == "Welcome, Alice!"
    assert answers.asked == ["Your name?"]


# ---------------------------------------------------------------- cancel and timeout


async def test_cancel_stops_the_task_at_the_server(kind: str, peer_url: str) -> None:
    stderr: list[str] = []
    options = {"on_stderr": stderr.append} if kind == "stdio" else {}
    async with make(kind, peer_url, **options) as client:
        handle = await client.start_task("long_job", {"seconds": 60})
        await handle.cancel()
        with pytest.raises(TaskCancelled) as cancelled:
            await handle.wait(timeout=20)
        assert cancelled.value.status.status == "cancelled"
        await handle.cancel()  # nothing to do once it ended
        again = await client.resume_task(handle.task_id or "")
        assert again.last.status == "cancelled"
        await again.cancel()
        if kind == "stdio":
            deadline = time.monotonic() + 10
            while "long_job cancelled" not in stderr and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            assert "long_job cancelled" in stderr


async def test_a_wait_that_times_out_leaves_the_task_running(peer_url: str) -> None:
    async with Client.http(peer_url) as client:
        handle = await client.start_task("long_job", {"seconds": 60})
        started = time.monotonic()
        with pytest.raises(TaskTimeout) as timed_out:
            await handle.wait(timeout=0.3)
        assert time.monotonic() - started < 10
        assert timed_out.value.handle is handle
        assert isinstance(timed_out.value, TimeoutError)
        assert (await handle.status()).status == "working"
        await handle.cancel()
        assert (await handle.status()).status == "cancelled"


async def test_call_tool_as_a_task_cancels_what_it_stops_waiting_for() -> None:
    stderr: list[str] = []
    async with Client.stdio(sys.executable, str(PEER), on_stderr=stderr.append) as client:
        sent = Sent(client)
        with pytest.raises(TaskTimeout):
            await client.call_tool("long_job", {"seconds": 60}, task=True, timeout=0.3)
        assert len(sent.of("tasks/cancel")) == 1
        deadline = time.monotonic() + 10
        while "long_job cancelled" not in stderr and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert "long_job cancelled" in stderr  # while the server still runs


async def test_leaving_a_handle_block_early_cancels_the_task(peer_url: str) -> None:
    async with Client.http(peer_url) as client:
        async with await client.start_task("long_job", {"seconds": 60}) as handle:
            pass
        assert (await client.resume_task(handle.task_id or "")).last.status == "cancelled"


# ---------------------------------------------------------------- what runs as a task


async def test_task_only_and_task_capable_tools(kind: str, peer_url: str) -> None:
    async with make(kind, peer_url) as client:
        # Without the extension: a task-only tool is a clear error, a task-capable one runs plainly.
        with pytest.raises(TaskRequired) as required:
            await client.call_tool("long_job", {"seconds": 1})
        assert required.value.code == -32021 and "task=True" in required.value.message
        assert required.value.data["requiredCapabilities"]["extensions"] == {TASKS: {}}
        plain = await client.call_tool("add_slowly", {"a": 1, "b": 2, "steps": 1, "pause": 0})
        assert plain.structured_content == {"result": 3}
        # With it: a tool that is no task tool is answered at once, in a handle already done.
        handle = await client.start_task("plain_add", {"a": 5, "b": 6})
        assert handle.task_id is None and handle.done
        assert (await handle.wait()).structured_content == {"result": 11}
        assert (await handle.status()).status == "completed"
        await handle.cancel()
        # call_tool(task=True) returns what the task returned.
        result = await client.call_tool("add_slowly", {"a": 3, "b": 4, "steps": 1, "pause": 0}, task=True)
        assert result.structured_content == {"result": 7}


async def test_a_server_without_the_extension_answers_plainly() -> None:
    async with Client.stdio(sys.executable, str(DEMO)) as client:
        assert client.spoken_era == "stateless"
        assert TASKS not in client.session.peer_caps.tree.get("extensions", {})
        assert (await client.call_tool("add", {"a": 1, "b": 2}, task=True)).structured_content == {"result": 3}
        handle = await client.start_task("add", {"a": 2, "b": 2})
        assert handle.task_id is None and handle.done
        assert (await handle.wait()).structured_content == {"result": 4}


async def test_a_server_that_refuses_the_extension_for_a_task_only_tool(peer_url: str) -> None:
    async with Client.http(peer_url) as client:
        with pytest.raises(TaskRequired) as refused:
            await client.start_task("refusing_job")
        assert "refused this client's tasks extension" in refused.value.message
        with pytest.raises(TaskRequired):
            await client.call_tool("refusing_job", task=True)


async def test_a_handshake_server_without_tasks() -> None:
    """A 2025-11-25 server that offers no tasks for tools/call (mcpgen's own, in the
    handshake era): start_task says so, and a task=True call runs plainly; a task-only tool
    is the server's to answer, never refused with an error the client made up."""
    async with Client.stdio(sys.executable, str(PEER), era="handshake") as client:
        assert not client.tasks_offered
        with pytest.raises(TasksUnavailable) as unavailable:
            await client.start_task("add_slowly", {"a": 1, "b": 2})
        assert "offers no tasks for tools/call (protocol 2025-11-25)" in unavailable.value.message
        with pytest.raises(TasksUnavailable):
            await client.resume_task("anything")
        result = await client.call_tool("add_slowly", {"a": 1, "b": 2, "steps": 1, "pause": 0}, task=True)
        assert result.structured_content == {"result": 3}
        await client.list_tools()
        # Listed as task-only, yet this server offers no tasks: the call goes to the server,
        # which decides (this one runs it); server-everything's refusal is in test_interop.
        ran = await client.call_tool("v1_task_only", task=True)
        assert ran.content == [TextContent(text="ran plainly")]


# ---------------------------------------------------------------- how tasks end


async def test_a_tool_error_completes_and_a_protocol_error_fails(kind: str, peer_url: str) -> None:
    async with make(kind, peer_url) as client:
        result = await client.call_tool("broken_job", task=True)
        assert result.is_error is True and text(result) == "the job could not run: disk full"
        handle = await client.start_task("protocol_fault")
        with pytest.raises(TaskFailed) as failed:
            await handle.wait(timeout=20)
    assert failed.value.code == -32050
    assert failed.value.message == "the backend refused the job"
    assert failed.value.data == {"backend": "db1"}
    assert failed.value.status.error == {
        "code": -32050,
        "message": "the backend refused the job",
        "data": {"backend": "db1"},
    }


def test_polling_follows_the_servers_interval_within_bounds() -> None:
    def at(ms: int | None) -> float:
        return poll_delay(TaskStatus(task_id="t", status="working", poll_interval_ms=ms))

    assert at(None) == DEFAULT_POLL
    assert at(200) == 0.2
    assert at(1) == MIN_POLL
    assert at(3_600_000) == MAX_POLL


# ---------------------------------------------------------------- mcpgen call --task


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mcpgen.cli", "call", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )


def test_cli_runs_a_tool_as_a_task_showing_status_and_progress() -> None:
    target = f"{sys.executable} {PEER}"
    done = cli(target, "tool", "add_slowly", "-a", "a=1", "-a", "b=2", "--task", "--json")
    assert done.returncode == 0, done.stderr
    assert msgspec.json.decode(done.stdout)["structuredContent"] == {"result": 3}
    assert re.search(r"task \S+: working", done.stderr)
    assert "progress 1/3 step 1 of 3" in done.stderr
    assert re.search(r"task \S+: completed", done.stderr)
    broken = cli(target, "tool", "broken_job", "--task")
    assert broken.returncode == 1 and "disk full" in broken.stdout
    failed = cli(target, "tool", "protocol_fault", "--task")
    assert failed.returncode == 2 and "failed with error -32050: the backend refused the job" in failed.stderr
    required = cli(target, "tool", "long_job")
    assert required.returncode == 2 and "runs only as a task: add --task" in required.stderr
    assert "--task goes with `tool NAME`" in cli(target, "read", "x://y", "--task").stderr


async def test_cli_ctrl_c_cancels_the_task(peer_url: str) -> None:
    # asyncio.run turns SIGINT into a cancellation only under Python's default handler,
    # which a child may not inherit (a shell's background job ignores SIGINT): set it.
    start = (
        "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "from mcpgen.cli.app import main; sys.argv = ['mcpgen'] + sys.argv[1:]; main()"
    )
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    command = [sys.executable, "-c", start, "call", peer_url, "tool", "long_job", "--task"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    assert process.stderr is not None
    try:
        first = await asyncio.wait_for(asyncio.to_thread(process.stderr.readline), 30)  # "task ID: working"
        found = re.match(r"task (\S+): working", first)
        assert found, first
        process.send_signal(signal.SIGINT)
        rest = await asyncio.wait_for(asyncio.to_thread(process.stderr.read), 30)
        assert await asyncio.to_thread(process.wait, 30) == 130
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert f"cancelling task {found.group(1)}" in rest
    assert f"task {found.group(1)}: cancelled" in rest
    async with Client.http(peer_url) as client:
        assert (await client.resume_task(found.group(1))).last.status == "cancelled"
