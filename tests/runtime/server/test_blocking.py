"""Plain ``def`` handlers run in the server's thread pool: one that blocks (``time.sleep``)
holds up neither other clients nor other requests of its own session; cancellation and
handler timeouts still answer at once (the thread runs on, and can see it was dropped);
``Context`` works from the thread; ``blocking=False`` keeps a handler on the event loop.

What is asserted is order (the second call finished while the first still slept, held by
a signal it cannot pass), never a duration."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from mcpgen import Client, Context, Server
from mcpgen.generated import (
    CallToolResult,
    CreateMessageRequestParams,
    CreateMessageResult,
    LoggingMessageNotificationParams,
    PromptReference,
    TextContent,
    TextResourceContents,
)
from mcpgen.runtime.errors import INTERNAL_ERROR, McpError
from tests.paths import ROOT, SERVERS

pytestmark = pytest.mark.anyio
SERVER = SERVERS / "blocking.py"
PATIENCE = 20.0  # seconds before a call that should have come back is declared stuck


def text(result: CallToolResult) -> str:
    assert result.is_error is not True, result
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + PATIENCE
    while not condition():
        assert time.monotonic() < deadline, "the condition never came true"
        await asyncio.sleep(0.01)


# ---------------------------------------------------------------- real transports


@pytest.fixture
async def http_url(tmp_path: Path) -> AsyncIterator[str]:
    """tests/servers/blocking.py over Streamable HTTP on port 0; the URL is what it
    printed on stderr."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(SERVER),
        str(tmp_path),
        "http",
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stderr is not None
    try:
        line = (await asyncio.wait_for(process.stderr.readline(), PATIENCE)).decode()
        found = re.fullmatch(r"mcpgen: serving blocking over Streamable HTTP at (http://127\.0\.0\.1:\d+/mcp)\n", line)
        assert found is not None, line
        yield found[1]
    finally:
        process.terminate()
        await process.wait()


async def test_a_sleeping_tool_does_not_stall_another_clients_call_over_http(http_url: str, tmp_path: Path) -> None:
    async with Client.http(http_url) as first, Client.http(http_url) as second:
        held = asyncio.ensure_future(first.call_tool("hold", {"tag": "a"}))
        await until((tmp_path / "a.started").exists)
        assert text(await asyncio.wait_for(second.call_tool("quick"), PATIENCE)) == "quick"
        assert not held.done()  # still sleeping: it cannot pass before a.release exists
        (tmp_path / "a.release").touch()
        assert text(await asyncio.wait_for(held, PATIENCE)) == "released a"


async def test_a_sleeping_tool_does_not_stall_its_own_session_over_stdio(tmp_path: Path) -> None:
    async with Client.stdio(sys.executable, str(SERVER), str(tmp_path)) as client:
        held = asyncio.ensure_future(client.call_tool("hold", {"tag": "b"}))
        await until((tmp_path / "b.started").exists)
        assert text(await asyncio.wait_for(client.call_tool("quick"), PATIENCE)) == "quick"
        await client.ping()
        assert not held.done()
        (tmp_path / "b.release").touch()
        assert text(await asyncio.wait_for(held, PATIENCE)) == "released b"


# ---------------------------------------------------------------- cancellation and timeouts


async def test_cancelling_a_call_reaches_the_thread_through_ctx_cancelled() -> None:
    server = Server("s")
    started, saw_cancel = threading.Event(), threading.Event()

    @server.tool
    def watch(ctx: Context) -> str:
        started.set()
        deadline = time.monotonic() + PATIENCE
        while not ctx.cancelled and time.monotonic() < deadline:
            time.sleep(0.005)
        if ctx.cancelled:
            saw_cancel.set()
        return "unheard"

    @server.tool(blocking=False)
    def pong() -> str:
        return "pong"

    async with Client(server) as client:
        call = asyncio.ensure_future(client.call_tool("watch"))
        await until(started.is_set)
        call.cancel()  # the client sends notifications/cancelled
        with pytest.raises(asyncio.CancelledError):
            await call
        await until(saw_cancel.is_set)
        assert text(await client.call_tool("pong")) == "pong"


async def test_a_handler_timeout_answers_at_once_while_the_thread_runs_on() -> None:
    server = Server("s", handler_timeout=0.2)
    gate, saw_abandon, finished = threading.Event(), threading.Event(), threading.Event()

    @server.tool
    def stuck(ctx: Context) -> str:
        gate.wait(PATIENCE)
        if ctx.cancelled:
            saw_abandon.set()
        finished.set()
        return "too late"

    @server.tool
    def fine() -> str:
        return "fine"

    async with Client(server) as client:
        with pytest.raises(McpError) as timed_out:
            await asyncio.wait_for(client.call_tool("stuck"), PATIENCE)
        assert timed_out.value.code == INTERNAL_ERROR and "no result within" in timed_out.value.message
        assert not finished.is_set()  # answered while the thread still waits at the gate
        assert text(await client.call_tool("fine")) == "fine"
        gate.set()
        await until(saw_abandon.is_set)


async def test_a_call_cancelled_while_waiting_for_a_worker_never_starts() -> None:
    server = Server("s", max_threads=1)
    ran: list[str] = []
    started, gate = threading.Event(), threading.Event()

    @server.tool
    def work(tag: str) -> str:
        ran.append(tag)
        started.set()
        gate.wait(PATIENCE)
        return tag

    async with Client(server) as client:
        first = asyncio.ensure_future(client.call_tool("work", {"tag": "first"}))
        await until(started.is_set)
        second = asyncio.ensure_future(client.call_tool("work", {"tag": "second"}))
        executor = server.features.threads._executor  # white box: the pool's queue of calls waiting for a worker
        assert executor is not None
        await until(lambda: executor._work_queue.qsize() == 1)
        second.cancel()
        with pytest.raises(asyncio.CancelledError):
            await second
        # The client stops waiting at once; let the server hear of it (the request's task
        # ends, white box) before a worker frees up.
        (session,) = server.sessions
        await until(lambda: len(session._inflight) == 1)
        gate.set()
        assert text(await asyncio.wait_for(first, PATIENCE)) == "first"
        assert text(await asyncio.wait_for(client.call_tool("work", {"tag": "third"}), PATIENCE)) == "third"
    assert ran == ["first", "third"]


# ---------------------------------------------------------------- Context from a thread


async def sampler(params: CreateMessageRequestParams) -> CreateMessageResult:
    question = params.messages[0].content
    assert isinstance(question, TextContent)
    return CreateMessageResult(role="assistant", content=TextContent(text=f"answer to {question.text}"), model="fake")


async def test_a_thread_run_tool_uses_its_context_through_ctx_wait() -> None:
    server = Server("s")

    @server.tool
    def chatty(ctx: Context) -> str:
        assert threading.current_thread() is not threading.main_thread()
        assert Context.current() is ctx  # also without the parameter
        ctx.wait(ctx.report_progress(1, 2))
        ctx.wait(ctx.info("from a worker thread"))
        answer = ctx.wait(ctx.sample("why?"))
        assert isinstance(answer.content, TextContent)
        ctx.wait(ctx.report_progress(2, 2))
        return f"{ctx.request_id}: {answer.content.text}"

    @server.tool(blocking=False)
    def on_the_loop(ctx: Context) -> str:
        ctx.wait(ctx.info("never sent"))  # RuntimeError: it would block the loop itself
        return "unreachable"

    progress: list[float] = []
    logs: list[Any] = []

    def on_log(params: LoggingMessageNotificationParams) -> None:
        logs.append(params.data)

    # The handshake era: the question is a request the handler waits on (the stateless era
    # would run chatty again from the start on the retry, reporting progress 1 twice).
    async with Client(server, sampling=sampler, on_log=on_log, era="handshake") as client:
        result = await client.call_tool("chatty", on_progress=lambda done, total, message: progress.append(done))
        assert text(result).endswith(": answer to why?")
        assert progress == [1, 2]
        await until(lambda: logs == ["from a worker thread"])
        refused = await client.call_tool("on_the_loop")
        assert refused.is_error is True and "RuntimeError" in refused.content[0].text  # type: ignore[union-attr]
    assert logs == ["from a worker thread"]


async def test_a_tool_registered_from_a_worker_thread_is_announced() -> None:
    server = Server("s")
    seen: asyncio.Queue[str] = asyncio.Queue()

    @server.tool
    def add_tool(name: str) -> str:
        server.tool(name=name)(lambda: name)
        return "added"

    async with Client(server, on_notification=lambda method, params: seen.put_nowait(method)) as client:
        assert text(await client.call_tool("add_tool", {"name": "late"})) == "added"
        assert await asyncio.wait_for(seen.get(), PATIENCE) == "notifications/tools/list_changed"
        assert "late" in {t.name for t in await client.list_tools()}


# ---------------------------------------------------------------- where each kind of handler runs


async def test_resources_prompts_and_completers_run_in_threads_unless_declared_non_blocking() -> None:
    server = Server("s")
    where: dict[str, threading.Thread] = {}

    def record(key: str) -> str:
        where[key] = threading.current_thread()
        return key

    @server.resource("mem://plain")
    def plain_resource() -> str:
        return record("resource")

    @server.resource("mem://quick", blocking=False)
    def quick_resource() -> str:
        return record("resource, blocking=False")

    @server.resource_template("mem://items/{item}")
    def item(item: str) -> str:
        return record("template")

    @server.prompt
    def greet(name: str) -> str:
        return record("prompt") + name

    @server.prompt(blocking=False)
    def quick_greet(name: str) -> str:
        return record("prompt, blocking=False") + name

    @server.completion(argument="name", prompt="greet")
    def names(value: str, arguments: dict[str, str]) -> list[str]:
        return [record("completer")]

    @server.completion(argument="name", prompt="quick_greet", blocking=False)
    def quick_names(value: str, arguments: dict[str, str]) -> list[str]:
        return [record("completer, blocking=False")]

    async with Client(server) as client:
        for uri in ("mem://plain", "mem://quick", "mem://items/7"):
            contents = (await client.read_resource(uri)).contents[0]
            assert isinstance(contents, TextResourceContents)
        for prompt in ("greet", "quick_greet"):
            await client.get_prompt(prompt, {"name": "x"})
            done = await client.complete(PromptReference(name=prompt), "name", "")
            assert done.completion.values and done.completion.values[0].startswith("completer")
    for key, thread in where.items():
        on_loop = key.endswith("blocking=False")
        assert (thread is threading.main_thread()) is on_loop, key
        assert on_loop or thread.name.startswith("mcpgen-handler"), key
    assert len(where) == 7


def test_async_handlers_cannot_be_declared_blocking() -> None:
    server = Server("s")

    async def coroutine_fn() -> str:
        return "x"

    with pytest.raises(TypeError, match="async def"):
        server.tool(blocking=True)(coroutine_fn)
    with pytest.raises(TypeError, match="async def"):
        server.prompt(blocking=True)(coroutine_fn)
    with pytest.raises(TypeError, match="async def"):
        server.resource("mem://x", blocking=True)(coroutine_fn)
    with pytest.raises(TypeError, match="async def"):
        server.completion(argument="a", prompt="p", blocking=True)(coroutine_fn)
    server.tool(blocking=False)(coroutine_fn)  # says nothing new about a coroutine: allowed
    with pytest.raises(ValueError, match="max_threads"):
        Server("s", max_threads=0)


# ---------------------------------------------------------------- the benchmarks' thread-pool modes


@pytest.mark.slow
@pytest.mark.parametrize(
    ("script", "args"),
    [
        ("stdio.py", ["--threaded", "--quick"]),
        ("http.py", ["--modes", "thread", "--servers", "mcpgen,SDK", "--scale", "20"]),
    ],
)
def test_the_thread_pool_benchmark_modes_run_and_every_call_comes_back_right(
    script: str, args: list[str], tmp_path: Path
) -> None:
    root = ROOT
    out = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, str(root / "bench" / script), "--json", str(out), *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    report = json.loads(out.read_text())
    if script == "stdio.py":
        assert report["settings"]["tool"] == "echo_threaded"
        for name, server in report["servers"].items():
            assert server["errors"] == [] and all(p["ok"] == p["calls"] > 0 for p in server["phases"]), name
    else:
        cells = {(c["server"], c["mode"], c["concurrency"]) for c in report["cells"] if c["errors"] == 0 and c["calls"]}
        assert cells == {(s, "thread", c) for s in ("mcpgen", "SDK") for c in (1, 32)}
