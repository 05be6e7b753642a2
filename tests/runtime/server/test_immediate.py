"""Requests whose handlers finish at once (ping, a tool declared ``blocking=False``) are
answered on the spot, without a task per request; everything else still runs in a task of
its own (a plain ``def`` tool in the thread pool). The answers must be the same either way."""

from __future__ import annotations

import asyncio
import os
import threading
from typing import Any

import msgspec
import pytest

from mcpgen import Client, Context, Server
from mcpgen.generated import CallToolRequestParams, CallToolResult, MethodSpec, TextContent
from mcpgen.runtime.errors import INTERNAL_ERROR, INVALID_PARAMS, McpError
from mcpgen.runtime.jsonrpc.kernel import Route
from mcpgen.runtime.jsonrpc.transport import Transport, memory_pair
from mcpgen.runtime.server.session import ServerSession
from mcpgen.runtime.transports.stdio import _HIGH_WATER, StreamTransport

pytestmark = pytest.mark.anyio


def text(result: CallToolResult) -> str:
    assert result.is_error is not True, result
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def _server(tasks: dict[str, list[Any]], **options: Any) -> Server:
    server = Server("s", **options)

    @server.tool(blocking=False)
    def sync_echo(text: str) -> str:
        tasks.setdefault("sync", []).append(asyncio.current_task())
        return text

    @server.tool()
    async def async_echo(text: str) -> str:
        tasks.setdefault("async", []).append(asyncio.current_task())
        return text

    @server.tool(blocking=False)
    def sync_with_context(ctx: Context) -> str:
        tasks.setdefault("context", []).append(asyncio.current_task())
        return str(ctx.request_id)

    @server.tool(blocking=False)
    def sync_crash() -> str:
        raise ValueError("secret detail")

    @server.tool(blocking=False)
    def sync_refuses() -> str:
        raise McpError(INVALID_PARAMS, "refused on purpose")

    @server.tool()
    def plain(text: str) -> str:  # may block: runs in the thread pool
        tasks.setdefault("plain", []).append(threading.current_thread())
        return text

    @server.tool()
    def plain_crash() -> str:
        raise ValueError("secret detail")

    return server


async def test_sync_tools_share_the_receive_loop_and_others_get_a_task_each() -> None:
    tasks: dict[str, list[Any]] = {}
    async with Client(_server(tasks)) as client:
        for i in range(3):
            assert text(await client.call_tool("sync_echo", {"text": f"s{i}"})) == f"s{i}"
            assert text(await client.call_tool("async_echo", {"text": f"a{i}"})) == f"a{i}"
            answer = await client.call_tool("sync_with_context")
            assert answer.is_error is not True and answer.content[0].text.isdigit()  # type: ignore[union-attr]
    # Served on the spot: every call ran in the same task, the session's receive loop.
    assert len(set(map(id, tasks["sync"]))) == 1
    # In a task each: three calls, three tasks, none of them the receive loop.
    for kind in ("async", "context"):
        assert len(set(map(id, tasks[kind]))) == 3 and tasks["sync"][0] not in tasks[kind]


async def test_a_plain_def_tool_runs_in_a_worker_thread_not_on_the_spot() -> None:
    tasks: dict[str, list[Any]] = {}
    async with Client(_server(tasks)) as client:
        for i in range(3):
            assert text(await client.call_tool("plain", {"text": f"p{i}"})) == f"p{i}"
        crash = await client.call_tool("plain_crash")
        assert crash.is_error is True and "secret detail" not in crash.content[0].text  # type: ignore[union-attr]
    assert all(t is not threading.main_thread() and t.name.startswith("mcpgen-handler") for t in tasks["plain"])


async def test_failures_are_answered_the_same_way_on_the_spot() -> None:
    async with Client(_server({})) as client:
        crash = await client.call_tool("sync_crash")
        assert crash.is_error is True and "secret detail" not in crash.content[0].text  # type: ignore[union-attr]
        with pytest.raises(McpError) as refused:
            await client.call_tool("sync_refuses")
        assert refused.value.code == INVALID_PARAMS and "refused on purpose" in refused.value.message
        bad = await client.call_tool("sync_echo", {"text": 5})
        assert bad.is_error is True and "text" in bad.content[0].text  # type: ignore[union-attr]
        with pytest.raises(McpError) as unknown:
            await client.call_tool("no_such_tool")
        assert unknown.value.code == INVALID_PARAMS
        await client.ping()
        # the session is still fine after all of the above
        assert text(await client.call_tool("sync_echo", {"text": "after"})) == "after"


async def test_an_overridden_call_tool_sees_every_call() -> None:
    class Wrapped(Server):
        async def call_tool(self, params: CallToolRequestParams) -> CallToolResult:
            if params.name == "odd":
                wrong: Any = {"not": "a result"}
                return wrong  # type: ignore[no-any-return]
            result = await super().call_tool(params)
            return CallToolResult(content=[TextContent(text="wrapped")] + result.content)

    server = Wrapped("w")

    @server.tool()
    def plain() -> str:
        return "plain"

    @server.tool()
    def odd() -> str:
        return "unreachable"

    async with Client(server) as client:
        assert [c.text for c in (await client.call_tool("plain")).content] == ["wrapped", "plain"]  # type: ignore[union-attr]
        with pytest.raises(McpError) as wrong:
            await client.call_tool("odd")
        assert wrong.value.code == INTERNAL_ERROR


async def test_a_session_subclass_that_overrides_make_route_sees_every_call() -> None:
    seen: list[str] = []

    class Audited(ServerSession):
        def make_route(self, spec: MethodSpec) -> Route:
            route = super().make_route(spec)

            async def run(params: Any) -> Any:
                seen.append(spec.method)
                return await route.run(params)

            return msgspec.structs.replace(route, run=run, now=None)  # nothing on the spot: run sees all

    server = _server({})

    async def connect() -> Transport:
        ours, theirs = memory_pair()
        asyncio.ensure_future(Audited(theirs, server.features).run())
        return ours

    async with Client(connect=connect, era="handshake") as client:  # the session engine's hook
        await client.ping()
        assert text(await client.call_tool("sync_echo", {"text": "x"})) == "x"
    assert seen == ["initialize", "ping", "tools/call"]


async def test_a_handler_timeout_bounds_tasks_and_leaves_the_spot_alone() -> None:
    # A synchronous tool cannot be interrupted in a task either: it is still answered on
    # the spot; what runs in a task is bounded.
    tasks: dict[str, list[Any]] = {}
    server = _server(tasks, handler_timeout=0.2)

    @server.tool()
    async def sleeps() -> str:
        await asyncio.sleep(5)
        return "late"

    async with Client(server, era="handshake") as client:
        for i in range(2):
            await client.call_tool("sync_echo", {"text": str(i)})
        with pytest.raises(McpError) as timed_out:
            await client.call_tool("sleeps")
    assert len(set(map(id, tasks["sync"]))) == 1
    assert timed_out.value.code == INTERNAL_ERROR and "no result within 0.2 s" in timed_out.value.message


async def test_send_now_reports_a_peer_that_is_not_reading() -> None:
    loop = asyncio.get_running_loop()
    read_fd, write_fd = os.pipe()
    try:
        transport, protocol = await loop.connect_write_pipe(
            lambda: asyncio.streams.FlowControlMixin(loop=loop), os.fdopen(write_fd, "wb", 0)
        )
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
        stdio = StreamTransport(asyncio.StreamReader(), writer)
        frame = b"x" * 4096
        verdicts = [stdio.send_now(frame) for _ in range(2 * _HIGH_WATER // len(frame))]
        assert verdicts[0] is True and verdicts[-1] is False  # nobody reads the pipe
        reading = asyncio.ensure_future(stdio.drain())
        await asyncio.sleep(0.05)
        assert not reading.done()  # backpressure: waits for the reader
        while not reading.done():  # the peer catches up
            await loop.run_in_executor(None, os.read, read_fd, 1 << 20)
            await asyncio.sleep(0)
        await stdio.close()
    finally:
        os.close(read_fd)


async def test_a_flood_answered_on_the_spot_does_not_starve_other_tasks() -> None:
    ours, theirs = memory_pair()
    session = ServerSession(theirs, Server("s").features)
    session.answers_now = True  # as after the handshake; ping needs none
    flood = 2_000
    for i in range(flood):
        await ours.send(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}' % i)
    seen_by_other_task: list[int] = []

    async def other_task() -> None:
        await asyncio.sleep(0)
        seen_by_other_task.append(ours._inbox.qsize())  # answers sent so far

    other = asyncio.ensure_future(other_task())
    running = asyncio.ensure_future(session.run())
    answers = [await ours.receive() for _ in range(flood)]
    await other
    assert all(a is not None and b'"result":{}' in a for a in answers)
    assert seen_by_other_task[0] < flood // 4  # it ran early, not after the whole flood
    await ours.close()
    await running
