"""Middleware sees every request and notification of both eras, on both sides: the methods
a connection or the stateless front answers itself (``initialize``, ``ping``,
``server/discover``, ``subscriptions/listen``, ``tasks/*``) as much as the handlers', and on
the client the server's requests (the handshake era's) and questions (the stateless era's)
as well as what it sends. A middleware that never waits keeps the on-the-spot answer."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcpgen import Call, CallNext, Client, Context, Middleware, Server
from mcpgen.generated import ElicitResult
from mcpgen.runtime.middleware.chain import Notification

pytestmark = pytest.mark.anyio

ERAS = ("handshake", "stateless")


class Recorder(Middleware):
    """Waits (an ``async`` on_request): every request it wraps runs in a task."""

    def __init__(self) -> None:
        self.methods: list[str] = []
        self.notes: list[tuple[str, str]] = []

    async def on_request(self, call: Call, call_next: CallNext) -> Any:
        self.methods.append(call.method)
        return await call_next(call)

    async def on_notification(self, note: Notification) -> None:
        self.notes.append((note.direction, note.method))


class Quick(Middleware):
    """Never waits: a plain ``def`` on_request."""

    def __init__(self) -> None:
        self.methods: list[str] = []

    def on_request(self, call: Call, call_next: CallNext) -> Any:  # type: ignore[override]
        self.methods.append(call.method)
        return call_next(call)


def make_server(*middleware: Any) -> tuple[Server, dict[str, list[Any]]]:
    server = Server("every", middleware=list(middleware))
    tasks: dict[str, list[Any]] = {"now": []}

    @server.tool(blocking=False)
    def now(text: str) -> str:
        tasks["now"].append(asyncio.current_task())
        return text

    @server.tool()
    async def asks(ctx: Context) -> str:
        answer = await ctx.elicit("Name?", {"type": "object", "properties": {"name": {"type": "string"}}})
        await ctx.log("info", "asked")
        return f"hello {answer.content['name'] if answer.content else '?'}"  # type: ignore[index]

    @server.tool(task="optional")
    async def slow() -> str:
        await asyncio.sleep(0.05)
        return "done"

    return server, tasks


async def elicit(params: Any) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "Ada"})


@pytest.mark.parametrize("era", ERAS)
async def test_server_middleware_sees_every_method(era: str) -> None:
    recorder = Recorder()
    server, _ = make_server(recorder)
    async with Client(server, era=era, elicitation=elicit) as client:
        await client.ping()
        assert (await client.call_tool("now", {"text": "x"})).content[0].text == "x"  # type: ignore[union-attr]
        assert (await client.call_tool("asks")).content[0].text == "hello Ada"  # type: ignore[union-attr]
        if era == "stateless":
            result = await client.call_tool("slow", task=True)
            assert result.content[0].text == "done"  # type: ignore[union-attr]
            async with client.listen(tools=True):
                pass
    seen = set(recorder.methods)
    assert "tools/call" in seen
    if era == "handshake":
        assert recorder.methods[0] == "initialize" and "ping" in seen
        assert ("received", "notifications/initialized") in recorder.notes
    else:
        assert recorder.methods[0] == "server/discover"
        assert {"tasks/get", "subscriptions/listen"} <= seen
    # The elicitation round is part of the call (one in the handshake era, two requests
    # in the stateless era, where the answer comes back in a retry).
    assert recorder.methods.count("tools/call") == (2 if era == "handshake" else 4)


@pytest.mark.parametrize("era", ERAS)
async def test_client_middleware_sees_both_ways(era: str) -> None:
    server, _ = make_server()
    recorder = Recorder()
    logs: list[Any] = []
    async with Client(server, era=era, elicitation=elicit, middleware=[recorder], on_log=logs.append) as client:
        await client.set_logging_level("info") if era == "handshake" else None
        assert (await client.call_tool("asks")).content[0].text == "hello Ada"  # type: ignore[union-attr]
        for _ in range(50):
            if logs:
                break
            await asyncio.sleep(0.01)
    # Its own requests, and the server's question, answered through the middleware too.
    assert "tools/call" in recorder.methods and "elicitation/create" in recorder.methods
    if era == "handshake":
        assert ("sent", "notifications/initialized") in recorder.notes
    assert ("received", "notifications/message") in recorder.notes


@pytest.mark.parametrize("era", ERAS)
async def test_a_middleware_that_never_waits_keeps_the_spot(era: str) -> None:
    quick = Quick()
    server, tasks = make_server(quick)
    async with Client(server, era=era) as client:
        for i in range(3):
            await client.call_tool("now", {"text": str(i)})
    # Answered as each request was read: the same task (the connection's), no task each.
    assert len(set(map(id, tasks["now"]))) == 1
    assert quick.methods.count("tools/call") == 3


@pytest.mark.parametrize("era", ERAS)
async def test_a_middleware_that_waits_takes_the_spot_away(era: str) -> None:
    server, tasks = make_server(Recorder())
    async with Client(server, era=era) as client:
        for i in range(3):
            await client.call_tool("now", {"text": str(i)})
    assert len(set(map(id, tasks["now"]))) == 3


async def test_a_quick_middleware_may_answer_itself_or_refuse() -> None:
    def gate(call: Call, call_next: CallNext) -> Any:
        if call.target == "now" and call.params.arguments == {"text": "stop"}:
            from mcpgen import McpError

            raise McpError(-32001, "stopped")
        return call_next(call)

    server, _ = make_server()
    server.middleware(gate)
    async with Client(server) as client:
        assert (await client.call_tool("now", {"text": "go"})).content[0].text == "go"  # type: ignore[union-attr]
        from mcpgen import McpError

        with pytest.raises(McpError) as stopped:
            await client.call_tool("now", {"text": "stop"})
    assert stopped.value.code == -32001
