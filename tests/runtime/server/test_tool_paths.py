"""The default tool paths (an ``async def`` tool, a plain ``def`` in the thread pool) are
started as the request is read: the arguments are decoded on the spot and the request's
task awaits the tool itself. Whatever the shortcut, a tool keeps what a task of its own
gives it, in both eras: ``Context.current()``, cancellation by the client, the server's
``handler_timeout``, progress, ``asyncio.timeout`` bound to its own task. Over HTTP in the
stateless era, a tool that finishes in its first step is answered as plain JSON without a
task watching the connection, and a slow one is still cancelled when its client leaves.
(Speed is measured by bench/, never asserted here.)"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any

import httpx
import pytest
import uvicorn

from mcpgen import Client, Context, Server
from mcpgen.generated import CallToolResult, TextContent
from mcpgen.runtime.errors import RequestTimeout
from mcpgen.runtime.jsonrpc import eager
from mcpgen.runtime.jsonrpc.session import current_request
from mcpgen.runtime.jsonrpc.transport import memory_pair
from mcpgen.runtime.server.session import ServerSession
from tests.era import CAPABILITIES, MODERN
from tests.http_server import free_port

pytestmark = pytest.mark.anyio
ERAS = ("handshake", "stateless")


def text(result: CallToolResult) -> str:
    assert result.is_error is not True, result
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


class Seen:
    """What the tools below saw, for the tests to check."""

    def __init__(self) -> None:
        self.tasks: list[asyncio.Task[Any] | None] = []
        self.threads: list[threading.Thread] = []
        self.cancelled: asyncio.Event | None = None
        self.started: asyncio.Event | None = None

    def arm(self) -> None:
        self.cancelled, self.started = asyncio.Event(), asyncio.Event()


def make_server(seen: Seen, **options: Any) -> Server:
    server = Server("paths", **options)

    @server.tool()
    async def who(text: str) -> str:
        """The request id Context.current() finds, from an async def without a Context."""
        seen.tasks.append(asyncio.current_task())
        request = current_request.get()
        assert request is not None
        assert Context.current().request_id == request.request_id
        return f"{text}:{Context.current().request_id}"

    @server.tool()
    async def who_with_context(text: str, ctx: Context) -> str:
        seen.tasks.append(asyncio.current_task())
        assert Context.current().request_id == ctx.request_id
        return f"{text}:{ctx.request_id}"

    @server.tool()
    def pooled(text: str) -> str:
        """A plain def: in a worker thread, where Context.current() still finds the request."""
        seen.threads.append(threading.current_thread())
        return f"{text}:{Context.current().request_id}"

    @server.tool()
    async def hangs(text: str) -> str:
        assert seen.started is not None and seen.cancelled is not None
        seen.started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            seen.cancelled.set()
            raise
        return text

    @server.tool()
    async def counts(steps: int, ctx: Context) -> str:
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps)
        return "counted"

    @server.tool()
    async def own_timeout(text: str) -> str:
        """asyncio.timeout, entered before the tool first waits, must cancel this task only."""
        try:
            async with asyncio.timeout(0.05):
                await asyncio.sleep(5)
        except TimeoutError:
            return f"{text}: timed out alone"
        return "not timed out"

    return server


@pytest.mark.parametrize("era", ERAS)
async def test_context_and_a_task_of_its_own_for_every_call(era: str) -> None:
    seen = Seen()
    async with Client(make_server(seen), era=era) as client:
        for i in range(3):
            assert text(await client.call_tool("who", {"text": f"a{i}"})).startswith(f"a{i}:")
            assert text(await client.call_tool("who_with_context", {"text": f"c{i}"})).startswith(f"c{i}:")
            assert text(await client.call_tool("pooled", {"text": f"p{i}"})).startswith(f"p{i}:")
        # Arguments are still checked first, on the spot: an error result, no task.
        refused = await client.call_tool("who", {"text": 5})
        assert refused.is_error is True
    # Six calls, six tasks, none shared.
    assert len(seen.tasks) == 6 and None not in seen.tasks and len(set(map(id, seen.tasks))) == 6
    assert all(t is not threading.main_thread() for t in seen.threads)


@pytest.mark.parametrize("era", ERAS)
async def test_a_client_that_gives_up_cancels_the_tool(era: str) -> None:
    seen = Seen()
    seen.arm()
    assert seen.cancelled is not None and seen.started is not None
    async with Client(make_server(seen), era=era) as client:
        with pytest.raises(RequestTimeout):
            await client.call_tool("hangs", {"text": "x"}, timeout=0.2)
        await asyncio.wait_for(seen.cancelled.wait(), 5)
        # The session goes on serving.
        assert text(await client.call_tool("who", {"text": "after"})).startswith("after:")


@pytest.mark.parametrize("era", ERAS)
async def test_the_handler_timeout_bounds_an_async_tool(era: str) -> None:
    seen = Seen()
    seen.arm()
    assert seen.cancelled is not None
    async with Client(make_server(seen, handler_timeout=0.2), era=era) as client:
        with pytest.raises(Exception, match="no result within"):
            await client.call_tool("hangs", {"text": "x"}, timeout=10)
        await asyncio.wait_for(seen.cancelled.wait(), 5)
        assert text(await client.call_tool("who", {"text": "after"})).startswith("after:")


@pytest.mark.parametrize("era", ERAS)
async def test_progress_from_an_async_tool(era: str) -> None:
    reports: list[tuple[float, float | None]] = []

    def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reports.append((progress, total))

    async with Client(make_server(Seen()), era=era) as client:
        result = await client.call_tool("counts", {"steps": 3}, on_progress=on_progress)
        assert text(result) == "counted"
        for _ in range(50):  # notifications may trail the result by a turn of the loop
            if len(reports) == 3:
                break
            await asyncio.sleep(0.01)
    assert reports == [(1, 3), (2, 3), (3, 3)]


@pytest.mark.parametrize("era", ERAS)
async def test_asyncio_timeout_in_a_tool_cancels_that_tool_only(era: str) -> None:
    async with Client(make_server(Seen()), era=era) as client:
        results = await asyncio.gather(*(client.call_tool("own_timeout", {"text": f"t{i}"}) for i in range(5)))
        assert [text(r) for r in results] == [f"t{i}: timed out alone" for i in range(5)]
        assert text(await client.call_tool("who", {"text": "after"})).startswith("after:")


def lazy_tasks(loop: asyncio.AbstractEventLoop, coro: Any, **options: Any) -> asyncio.Task[Any]:
    """A task factory: with one set, a loop's tasks start on its next turn, never eagerly."""
    return asyncio.Task(coro, loop=loop, **options)


@pytest.mark.parametrize("tasks", ["lazy", "the loop's own"])
async def test_a_request_cancelled_in_the_batch_that_brought_it_frees_its_id_and_slot(tasks: str) -> None:
    """The request and its cancellation read in one batch. A lazy task (Python 3.11, or a
    loop with a task factory) is cancelled before its first step, so none of the code that
    would free its slot runs there; an eager one (3.12+) has started the tool, which the
    cancellation then interrupts. Either way the slot is freed and the id may be used again."""
    loop = asyncio.get_running_loop()
    factory = loop.get_task_factory()
    if tasks == "lazy":
        loop.set_task_factory(lazy_tasks)
    seen = Seen()
    seen.arm()
    ours, theirs = memory_pair()
    session = ServerSession(ours, make_server(seen).features)
    serving = loop.create_task(session.run())
    try:
        await theirs.send(
            b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
            b'"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
        )
        assert b'"result"' in ((await asyncio.wait_for(theirs.receive(), 5)) or b"")
        session.on_frame(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        call = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"hangs","arguments":{"text":"x"}}}'
        session.on_frame(call)
        session.on_frame(b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}')
        for _ in range(100):
            if not session._inflight:  # noqa: SLF001
                break
            await asyncio.sleep(0.01)
        assert not session._inflight  # noqa: SLF001
        assert seen.started is not None and seen.cancelled is not None
        assert seen.started.is_set() is eager.eager(loop)
        assert seen.cancelled.is_set() is seen.started.is_set()
        # Id 7 is free again: a new request with it is served, not refused as in use.
        session.on_frame(
            b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"who","arguments":{"text":"again"}}}'
        )
        answer = await asyncio.wait_for(theirs.receive(), 5)
        assert answer is not None and b'"again:7"' in answer, answer
    finally:
        loop.set_task_factory(factory)
        await theirs.close()
        await asyncio.wait_for(serving, 5)


# ---------------------------------------------------------------- HTTP, stateless era


@contextlib.asynccontextmanager
async def serving_http(server: Server) -> Any:
    port = free_port()
    config = uvicorn.Config(server.http_app(), host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    web = uvicorn.Server(config)
    task = asyncio.get_running_loop().create_task(web.serve())
    try:
        for _ in range(500):
            if web.started:
                break
            await asyncio.sleep(0.01)
        assert web.started
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        web.should_exit = True
        await asyncio.wait_for(task, 10)


def stateless_call(
    rid: int, name: str, arguments: dict[str, Any], **meta: Any
) -> tuple[dict[str, Any], dict[str, str]]:
    body = {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {
            "name": name,
            "arguments": arguments,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": CAPABILITIES,
                **meta,
            },
        },
    }
    headers = {
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": name,
        "Accept": "application/json, text/event-stream",
    }
    return body, headers


async def test_http_async_tools_answer_with_json_stream_progress_and_stop_when_the_client_leaves() -> None:
    seen = Seen()
    seen.arm()
    assert seen.cancelled is not None and seen.started is not None
    async with serving_http(make_server(seen)) as url, httpx.AsyncClient(timeout=10) as http:
        body, headers = stateless_call(1, "who", {"text": "hi"})
        quick = await http.post(url, json=body, headers=headers)
        assert quick.status_code == 200 and quick.headers["content-type"].startswith("application/json")
        assert quick.json()["result"]["content"][0]["text"] == "hi:1"
        body, headers = stateless_call(2, "own_timeout", {"text": "t"})
        waited = await http.post(url, json=body, headers=headers)
        assert waited.json()["result"]["content"][0]["text"] == "t: timed out alone"
        body, headers = stateless_call(3, "counts", {"steps": 2}, progressToken="p")
        streamed = await http.post(url, json=body, headers=headers)
        assert streamed.headers["content-type"].startswith("text/event-stream")
        assert streamed.text.count('"notifications/progress"') == 2 and '"counted"' in streamed.text
        body, headers = stateless_call(4, "hangs", {"text": "x"})
        with pytest.raises(httpx.ReadTimeout):
            await http.post(url, json=body, headers=headers, timeout=httpx.Timeout(10, read=0.3))
        await asyncio.wait_for(seen.started.wait(), 5)
        await asyncio.wait_for(seen.cancelled.wait(), 5)  # the client left: the tool is cancelled
        body, headers = stateless_call(5, "pooled", {"text": "p"})
        pooled = await http.post(url, json=body, headers=headers)
        assert pooled.json()["result"]["content"][0]["text"] == "p:5"


# ---------------------------------------------------------------- the thread pool


@pytest.mark.parametrize("era", ERAS)
async def test_many_pooled_calls_at_once_each_get_their_own_answer(era: str) -> None:
    """Results come back from the workers in batches: none is lost or crossed, even with
    far more calls in flight than workers."""
    seen = Seen()
    async with Client(make_server(seen, max_threads=3), era=era) as client:
        results = await asyncio.gather(*(client.call_tool("pooled", {"text": f"p{i}"}) for i in range(200)))
    assert [text(r).split(":")[0] for r in results] == [f"p{i}" for i in range(200)]
    assert len({t.name for t in seen.threads}) <= 3


def test_one_server_serves_pooled_calls_on_one_event_loop_after_another() -> None:
    server = make_server(Seen())

    async def twice() -> list[str]:
        async with Client(server) as client:
            return [text(await client.call_tool("pooled", {"text": str(i)})) for i in range(2)]

    for _ in range(2):  # a new event loop each time: results go to the loop that waits
        assert [t.split(":")[0] for t in asyncio.run(twice())] == ["0", "1"]


@pytest.mark.parametrize("era", ERAS)
async def test_a_long_line_of_waiting_requests_starts_without_recursion(era: str) -> None:
    """Every slot held, then a long line of quick calls: as the slots free, the line starts.
    An eager task (3.12+) ends inside the loop that starts the line, and asks it to start
    the next: that must not nest one start inside the other (1,500 deep would overflow the
    stack and lose answers), nor may a lazy one lose its turn."""
    slots = 300
    gate = asyncio.Event()
    server = Server("line", max_concurrency=slots)  # 4 x 300 may wait

    @server.tool()
    async def hold(tag: str) -> str:
        await gate.wait()
        return tag

    @server.tool()
    async def quick(tag: str) -> str:
        return tag

    async with Client(server, era=era) as client:
        holding = [asyncio.ensure_future(client.call_tool("hold", {"tag": f"h{i}"})) for i in range(slots)]
        await asyncio.sleep(0.2)  # all running, waiting at the gate
        line = [asyncio.ensure_future(client.call_tool("quick", {"tag": f"q{i}"})) for i in range(1_100)]
        await asyncio.sleep(0.2)  # read and queued behind the held slots
        gate.set()
        results = await asyncio.wait_for(asyncio.gather(*holding, *line), 30)
    assert [text(r) for r in results] == [f"h{i}" for i in range(slots)] + [f"q{i}" for i in range(1_100)]
