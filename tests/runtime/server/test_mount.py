"""``Server.mount``: another server's tools, resources, templates, prompts and completions
served under a namespace, in process and live, in both protocol eras, with the mounted
server's middleware and lifespan."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from mcpgen import Client, Context, Server
from mcpgen.generated import (
    ElicitRequestParams,
    ElicitResult,
    PromptReference,
    ResourceTemplateReference,
    TextContent,
    TextResourceContents,
)
from mcpgen.runtime.errors import McpError

pytestmark = pytest.mark.anyio
ERAS = ["handshake", "stateless"]


def weather() -> Server:
    child = Server("weather")

    @child.tool()
    async def forecast(city: str) -> str:
        return f"sunny in {city}"

    @child.tool()
    async def ask(ctx: Context) -> str:
        answer = await ctx.elicit("Which city?", {"type": "object", "properties": {"city": {"type": "string"}}})
        return f"asked: {(answer.content or {}).get('city')}"

    @child.tool()
    async def state(ctx: Context) -> str:
        return str(ctx.lifespan)

    @child.resource("data://cities")
    def cities() -> str:
        return "Oslo,Lima"

    @child.resource("file:///etc/motd")
    def motd() -> str:
        return "hello"

    @child.resource_template("data://city/{name}")
    def city(name: str) -> str:
        return f"city {name}"

    @child.prompt()
    def brief(city: str) -> str:
        return f"Brief me on {city}"

    @child.completion(prompt="brief", argument="city")
    def cities_starting(value: str, arguments: dict[str, str]) -> list[str]:
        return [c for c in ("Oslo", "Ottawa", "Lima") if c.startswith(value)]

    @child.completion(template="data://city/{name}", argument="name")
    def names(value: str, arguments: dict[str, str]) -> list[str]:
        return ["Lima"]

    return child


def parent_with_child() -> tuple[Server, Server]:
    parent = Server("parent")

    @parent.tool()
    async def hello() -> str:
        return "hello from the parent"

    child = weather()
    parent.mount(child, namespace="weather")
    return parent, child


async def form(params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"city": "Lima"})


@pytest.mark.parametrize("era", ERAS)
async def test_a_mounted_server_is_served_under_its_namespace(era: str) -> None:
    parent, _ = parent_with_child()
    async with Client(parent, era=era, elicitation=form) as client:
        names = [tool.name for tool in await client.list_tools()]
        assert names == ["hello", "weather_forecast", "weather_ask", "weather_state"]
        result = await client.call_tool("weather_forecast", {"city": "Oslo"})
        assert result.content == [TextContent(text="sunny in Oslo")]
        assert (await client.call_tool("hello")).content == [TextContent(text="hello from the parent")]
        # The mounted server's question reaches this client, in either era.
        asked = await client.call_tool("weather_ask")
        assert asked.content == [TextContent(text="asked: Lima")]

        uris = [r.uri for r in await client.list_resources()]
        assert uris == ["data://weather/cities", "file://weather//etc/motd"]
        read = await client.read_resource("data://weather/cities")
        assert isinstance(read.contents[0], TextResourceContents) and read.contents[0].text == "Oslo,Lima"
        assert read.contents[0].uri == "data://cities"  # the contents as the mounted server made them
        motd = await client.read_resource("file://weather//etc/motd")
        assert motd.contents[0].text == "hello"  # type: ignore[union-attr]
        templates = [t.uri_template for t in await client.list_resource_templates()]
        assert templates == ["data://weather/city/{name}"]
        assert (await client.read_resource("data://weather/city/Lima")).contents[0].text == "city Lima"  # type: ignore[union-attr]

        prompts = [p.name for p in await client.list_prompts()]
        assert prompts == ["weather_brief"]
        prompt = await client.get_prompt("weather_brief", {"city": "Oslo"})
        assert prompt.messages[0].content == TextContent(text="Brief me on Oslo")
        done = await client.complete(PromptReference(name="weather_brief"), "city", "O")
        assert done.completion.values == ["Oslo", "Ottawa"]
        named = await client.complete(ResourceTemplateReference(uri="data://weather/city/{name}"), "name", "")
        assert named.completion.values == ["Lima"]

        with pytest.raises(McpError):
            await client.call_tool("weather_nothing")
        with pytest.raises(McpError):
            await client.read_resource("data://other/cities")


@pytest.mark.parametrize("era", ERAS)
async def test_what_the_mounted_server_adds_later_shows_through(era: str) -> None:
    parent, child = parent_with_child()
    changes: list[str] = []

    def seen(method: str, params: Any) -> None:
        changes.append(method)

    async with Client(parent, era=era, on_notification=seen) as client:
        before = {tool.name for tool in await client.list_tools()}
        assert "weather_later" not in before

        @child.tool()
        def later() -> str:
            return "added later"

        for _ in range(100):
            if "notifications/tools/list_changed" in changes:
                break
            await asyncio.sleep(0.01)
        assert "notifications/tools/list_changed" in changes
        assert "weather_later" in {tool.name for tool in await client.list_tools()}
        assert (await client.call_tool("weather_later")).content == [TextContent(text="added later")]
        child.remove_tool("later")
        assert "weather_later" not in {tool.name for tool in await client.list_tools()}


async def test_the_mounted_servers_middleware_and_lifespan_run() -> None:
    parent, child = parent_with_child()
    seen: list[tuple[str, str | None]] = []

    @child.middleware
    async def watch(call: Any, call_next: Any) -> Any:
        seen.append(("child", call.target))
        return await call_next(call)

    @parent.middleware
    async def outer(call: Any, call_next: Any) -> Any:
        seen.append(("parent", call.target))
        return await call_next(call)

    events: list[str] = []

    @child.lifespan
    @contextlib.asynccontextmanager
    async def child_life(server: Server) -> AsyncIterator[dict[str, str]]:
        events.append("child up")
        yield {"db": "child's"}
        events.append("child down")

    async with Client(parent) as client:
        assert events == ["child up"]
        result = await client.call_tool("weather_state")
        assert result.content == [TextContent(text="{'db': \"child's\"}")]
        await client.call_tool("hello")
    assert events == ["child up", "child down"]
    assert ("parent", "weather_state") in seen and ("child", "state") in seen
    assert ("parent", "hello") in seen and ("child", "hello") not in seen
    assert seen.index(("parent", "weather_state")) < seen.index(("child", "state"))


async def test_resource_updates_of_the_mounted_server_reach_subscribers() -> None:
    parent, child = parent_with_child()
    updates: list[str] = []

    def seen(method: str, params: Any) -> None:
        if method == "notifications/resources/updated":
            updates.append(params.uri)

    async with Client(parent, on_notification=seen) as client:
        await client.subscribe("data://weather/cities")
        await child.notify_resource_updated("data://cities")
        for _ in range(100):
            if updates:
                break
            await asyncio.sleep(0.01)
        assert updates == ["data://weather/cities"]


async def test_a_transparent_mount_keeps_the_names_and_the_parent_comes_first() -> None:
    parent = Server("parent")

    @parent.tool()
    async def forecast(city: str) -> str:
        return "the parent's own"

    child = weather()
    parent.mount(child)
    async with Client(parent) as client:
        names = [tool.name for tool in await client.list_tools()]
        assert names == ["forecast", "ask", "state"]
        assert (await client.call_tool("forecast", {"city": "x"})).content == [TextContent(text="the parent's own")]
        assert (await client.call_tool("state")).content == [TextContent(text="None")]
        assert (await client.read_resource("data://cities")).contents[0].text == "Oslo,Lima"  # type: ignore[union-attr]
        assert [p.name for p in await client.list_prompts()] == ["brief"]


def test_mount_refuses_bad_namespaces_and_twice_the_same() -> None:
    parent = Server("parent")
    child = weather()
    with pytest.raises(ValueError, match="namespace"):
        parent.mount(child, namespace="with space")
    with pytest.raises(ValueError, match="itself"):
        parent.mount(parent)
    parent.mount(child, namespace="w")
    with pytest.raises(ValueError, match="already"):
        parent.mount(child, namespace="w2")
    with pytest.raises(ValueError, match="taken"):
        parent.mount(weather(), namespace="w")


async def test_lists_of_many_mounted_items_are_paged() -> None:
    parent = Server("parent", page_size=3)
    child = Server("child")
    for i in range(5):
        child.tool(name=f"t{i}")(lambda: "x")
    parent.mount(child, namespace="c")
    async with Client(parent) as client:
        page = await client.session.list_tools()
        assert [t.name for t in page.tools] == ["c_t0", "c_t1", "c_t2"]
        assert [t.name for t in await client.list_tools()] == [f"c_t{i}" for i in range(5)]
