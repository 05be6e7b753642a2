"""The friendly client against the demo server: over stdio (a real subprocess) and
in memory (``Client(server)``)."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from mcpgen import Client, McpError
from mcpgen.generated import (
    BlobResourceContents,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitResult,
    LoggingMessageNotificationParams,
    PromptReference,
    ResourceTemplateReference,
    Root,
    TextContent,
    TextResourceContents,
)
from mcpgen.runtime.errors import ConnectionClosed, RequestTimeout
from tests.wire import DEMO

pytestmark = pytest.mark.anyio


async def sampler(params: CreateMessageRequestParams) -> CreateMessageResult:
    question = params.messages[0].content
    assert isinstance(question, TextContent)
    return CreateMessageResult(role="assistant", content=TextContent(text=f"answer to {question.text}"), model="fake")


async def elicitor(params: ElicitRequestParams) -> ElicitResult:
    assert isinstance(params, ElicitRequestFormParams)
    assert set(params.requested_schema.properties) == {"name", "age"}
    return ElicitResult(action="accept", content={"name": "Ada", "age": 36})


def make_client(*args: str, **options: Any) -> Client:
    return Client.stdio(
        sys.executable,
        str(DEMO),
        *args,
        sampling=sampler,
        elicitation=elicitor,
        roots=[Root(uri="file:///work", name="work")],
        **options,
    )


@pytest.fixture
async def client() -> AsyncIterator[Client]:
    async with make_client() as client:
        yield client


async def test_handshake_and_server_info() -> None:
    async with make_client(era="handshake") as client:
        result = client.initialize_result
        assert result is not None and result.server_info.name == "demo"
        assert client.session.protocol_version == "2025-11-25"
        await client.ping()


async def test_tools_and_calls(client: Client) -> None:
    tools = {t.name: t for t in await client.list_tools()}
    assert {"add", "sum_all", "weather", "slow", "count"} <= set(tools)
    assert tools["add"].title == "Add two numbers"
    assert tools["add"].description == "Add a and b."
    assert tools["add"].input_schema["properties"]["a"] == {"type": "integer"}
    assert tools["add"].input_schema["required"] == ["a", "b"]
    assert tools["sum_all"].output_schema["properties"]["total"] == {"type": "integer"}
    result = await client.call_tool("add", {"a": 2, "b": 3})
    assert result.structured_content == {"result": 5}
    assert result.content == [TextContent(text='{"result":5}')]
    structured = await client.call_tool("sum_all", {"numbers": [1, 2, 3]})
    assert structured.structured_content == {"total": 6, "terms": [1, 2, 3]}
    forecast = await client.call_tool("weather", {"city": "Oslo"})
    assert forecast.structured_content == {"city": "Oslo", "celsius": 22.5}
    image = await client.call_tool("pixel")
    assert image.content[0].mime_type == "image/png"  # type: ignore[union-attr]
    invalid = await client.call_tool("weather", {"city": ""})
    assert invalid.is_error is True


async def test_pagination_walks_every_page() -> None:
    async with make_client("--page-size", "2") as client:
        page = await client.session.list_tools()
        assert len(page.tools) == 2 and isinstance(page.next_cursor, str)
        assert len(await client.list_tools()) > 10
        with pytest.raises(McpError) as info:
            await client.session.list_tools(cursor="not-a-cursor")
        assert info.value.code == -32602


async def test_progress_and_log_callbacks() -> None:
    logs: list[LoggingMessageNotificationParams] = []
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async with make_client(on_log=logs.append) as client:
        result = await client.call_tool("count", {"to": 3}, on_progress=on_progress)
        assert result.content[0].text == "counted to 3"  # type: ignore[union-attr]
        await asyncio.sleep(0.05)
    assert progress == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    assert [entry.data for entry in logs] == ["counted 1", "counted 2", "counted 3"]
    assert logs[0].logger == "counter"


async def test_sampling_elicitation_and_roots(client: Client) -> None:
    answer = await client.call_tool("ask_model", {"question": "life"})
    assert answer.content[0].text == "answer to life"  # type: ignore[union-attr]
    contact = await client.call_tool("ask_user")
    assert contact.content[0].text == 'accept: {"name":"Ada","age":36}'  # type: ignore[union-attr]
    roots = await client.call_tool("roots")  # list[str]: one text block each
    assert roots.content == [TextContent(text="file:///work")]


async def test_resources_templates_and_subscriptions() -> None:
    updates: list[str] = []

    def on_notification(method: str, params: Any) -> None:
        if method == "notifications/resources/updated":
            updates.append(params.uri)

    async with make_client(on_notification=on_notification) as client:
        resources = {r.uri: r for r in await client.list_resources()}
        assert resources["config://app"].mime_type == "application/json"
        templates = await client.list_resource_templates()
        assert templates[0].uri_template == "file:///{name}"
        config = await client.read_resource("config://app")
        assert config.contents == [
            TextResourceContents(uri="config://app", text='{"debug": false, "level": 3}', mime_type="application/json")
        ]
        logo = await client.read_resource("bin://logo")
        assert isinstance(logo.contents[0], BlobResourceContents)
        notes = await client.read_resource("file:///notes.txt")
        assert notes.contents[0].text == "remember the milk"  # type: ignore[union-attr]
        with pytest.raises(McpError) as info:
            await client.read_resource("file:///missing.txt")
        # Each era's code for a missing resource (2026-07-28 retired -32002 for -32602).
        assert info.value.code == (-32002 if client.spoken_era == "handshake" else -32602)
        await client.subscribe("file:///notes.txt")
        await client.call_tool("touch", {"name": "notes.txt"})
        await client.call_tool("touch", {"name": "todo.md"})
        await asyncio.sleep(0.1)
        assert updates == ["file:///notes.txt"]
        await client.unsubscribe("file:///notes.txt")


async def test_prompts_and_completion(client: Client) -> None:
    prompts = {p.name: p for p in await client.list_prompts()}
    assert [a.name for a in prompts["review"].arguments] == ["code", "language"]  # type: ignore[union-attr]
    assert prompts["review"].arguments[0].required is True  # type: ignore[index]
    review = await client.get_prompt("review", {"code": "x = 1"})
    assert review.messages[0].content == TextContent(text="Review this python code:\nx = 1")
    chat = await client.get_prompt("chat", {"topic": "owls"})
    assert [m.role for m in chat.messages] == ["user", "assistant"]
    with pytest.raises(McpError) as info:
        await client.get_prompt("review", {})
    assert info.value.code == -32602
    done = await client.complete(PromptReference(name="review"), "language", "p")
    assert done.completion.values == ["python", "perl", "php"]
    files = await client.complete(ResourceTemplateReference(uri="file:///{name}"), "name", "")
    assert files.completion.values == ["notes.txt", "todo.md"]


async def test_list_changed_notification() -> None:
    seen: list[str] = []
    async with make_client(on_notification=lambda method, params: seen.append(method)) as client:
        await client.call_tool("add_tool", {"name": "fresh"})
        await asyncio.sleep(0.1)
        assert "notifications/tools/list_changed" in seen
        assert "fresh" in {t.name for t in await client.list_tools()}


async def test_cancelling_a_call_cancels_the_handler(client: Client) -> None:
    task = asyncio.ensure_future(client.call_tool("slow", {"seconds": 10}))
    await asyncio.sleep(0.3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await client.ping()  # the session goes on


async def test_timeout_raises_and_cancels(client: Client) -> None:
    started = time.monotonic()
    with pytest.raises(RequestTimeout):
        await client.call_tool("slow", {"seconds": 10}, timeout=0.3)
    assert time.monotonic() - started < 2
    await client.ping()


async def test_killed_server_fails_pending_calls_fast() -> None:
    async with make_client() as client:
        task = asyncio.ensure_future(client.call_tool("slow", {"seconds": 30}))
        await asyncio.sleep(0.3)
        transport: Any = client.session.transport
        transport.process.kill()
        started = time.monotonic()
        with pytest.raises(ConnectionClosed):
            await task
        assert time.monotonic() - started < 1.0


async def test_closing_the_client_stops_the_server() -> None:
    client = make_client()
    await client.open()
    process = client.session.transport.process  # type: ignore[attr-defined]
    await client.close()
    assert process.returncode == 0


async def test_capability_not_declared_by_server_is_refused_locally() -> None:
    from mcpgen.generated import (
        ClientCapabilities,
        ClientHandlers,
        Implementation,
        InitializeRequestParams,
        InitializeResult,
        ServerCapabilities,
        ServerHandlers,
    )
    from mcpgen.runtime.client.session import ClientSession
    from mcpgen.runtime.jsonrpc.transport import memory_pair
    from mcpgen.runtime.server.session import ServerSession

    class Bare(ServerHandlers):
        async def initialize(self, params: InitializeRequestParams) -> InitializeResult:
            return InitializeResult(
                protocol_version=params.protocol_version,
                capabilities=ServerCapabilities(),
                server_info=Implementation(name="bare", version="0"),
            )

    a, b = memory_pair()
    server = ServerSession(b, Bare())
    session = ClientSession(a, ClientHandlers())
    tasks = [asyncio.ensure_future(server.run()), asyncio.ensure_future(session.run())]
    await session.start(ClientCapabilities(), Implementation(name="c", version="0"))
    with pytest.raises(McpError) as local:
        await session.list_tools()
    assert local.value.code == -32601
    # Bypassing the local check, the server refuses too.
    session.outgoing = {}
    with pytest.raises(McpError) as remote:
        await session.send_request("prompts/list", {}, dict)  # type: ignore[type-abstract]
    assert remote.value.code == -32601
    await session.close()
    await asyncio.wait(tasks, timeout=2)


async def test_in_memory_client() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("demo_server", DEMO)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["demo_server"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    async with Client(module.server, sampling=sampler) as client:
        assert (await client.call_tool("echo", {"text": "hi"})).content == [TextContent(text="hi")]
        assert (await client.call_tool("ask_model", {"question": "q"})).content[0].text == "answer to q"  # type: ignore[union-attr]


async def test_is_error_is_false_when_the_server_left_it_out() -> None:
    """The spec: an absent isError means false. A user reads a bool, not UNSET, from a
    plain call and from a task alike."""
    from mcpgen import Server

    server = Server("plain")

    @server.tool()
    def hello() -> str:
        return "hi"

    async with Client(server) as client:
        result = await client.call_tool("hello", {})
        assert result.is_error is False
        assert (await client.call_tool("hello", {}, task=True)).is_error is False
