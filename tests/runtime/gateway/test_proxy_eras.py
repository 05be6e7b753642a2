"""A proxy in each cell of the era matrix, in process: a client of either era in front, a
backend pinned to either era behind (``Server(versions=...)``). Every feature relays, and
the backend's questions (elicitation, sampling, roots, several at once, two rounds) reach
the front client and its answers reach the backend, whatever the two speak."""

from __future__ import annotations

from typing import Any

import pytest

from mcpgen import Client, Proxy
from mcpgen.generated import PromptReference, TextContent, TextResourceContents
from mcpgen.runtime.errors import McpError
from tests.runtime.gateway.backends import HANDSHAKE, MODERN, backend, client_options

pytestmark = pytest.mark.anyio

FRONTS = ["handshake", "stateless"]
BACKENDS: dict[str, list[str] | None] = {
    "handshake backend": [HANDSHAKE],
    "stateless backend": [MODERN],
    "dual-era backend": None,  # spoken to in the era of each client
}


def text(result: Any) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


@pytest.fixture(params=FRONTS)
def front(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=list(BACKENDS))
def proxy(request: pytest.FixtureRequest) -> Proxy:
    return Proxy(backend(BACKENDS[request.param]))


async def test_every_feature_relays(front: str, proxy: Proxy) -> None:
    async with Client(proxy, era=front, **client_options()) as client:
        assert client.spoken_era == front
        assert client.initialize_result is not None
        assert client.initialize_result.server_info.name == "backend"  # the backend's identity
        assert client.initialize_result.instructions == "A backend for the gateway's tests."
        names = {tool.name for tool in await client.list_tools()}
        assert {"echo", "add", "ask", "sample", "roots", "progress", "logs"} <= names
        assert text(await client.call_tool("echo", {"text": "héllo"})) == "héllo"
        added = await client.call_tool("add", {"a": 2, "b": 3})
        assert added.structured_content == {"result": 5}
        failed = await client.call_tool("fails")
        assert failed.is_error is True and text(failed) == "it failed, as it should"
        bad = await client.call_tool("add", {"a": "two"})
        assert bad.is_error is True
        with pytest.raises(McpError) as unknown:
            await client.call_tool("no_such_tool")
        assert unknown.value.code == -32602 and "no_such_tool" in unknown.value.message

        assert [r.uri for r in await client.list_resources()] == ["data://greeting"]
        read = await client.read_resource("data://greeting")
        assert isinstance(read.contents[0], TextResourceContents) and read.contents[0].text == "hello, resource"
        assert [t.uri_template for t in await client.list_resource_templates()] == ["data://items/{item}"]
        assert (await client.read_resource("data://items/7")).contents[0].text == "item 7"  # type: ignore[union-attr]
        with pytest.raises(McpError):
            await client.read_resource("data://nothing")

        assert [p.name for p in await client.list_prompts()] == ["brief"]
        prompt = await client.get_prompt("brief", {"topic": "tea"})
        assert prompt.messages[0].content == TextContent(text="Brief me on tea")
        done = await client.complete(PromptReference(name="brief"), "topic", "t")
        assert done.completion.values == ["tea", "tides", "trains"]
        await client.ping()


async def test_the_backends_questions_reach_the_front_client(front: str, proxy: Proxy) -> None:
    async with Client(proxy, era=front, **client_options()) as client:
        assert text(await client.call_tool("ask")) == "Hello, Ada!"
        assert text(await client.call_tool("sample")) == "model said Paris"
        assert text(await client.call_tool("roots")) == "roots: file:///work"
        assert text(await client.call_tool("everything_at_once")) == "accept/fake-model/1"
        assert text(await client.call_tool("two_rounds")) == "Ada then Grace"


async def test_progress_and_logs_reach_the_client_of_the_call(front: str, proxy: Proxy) -> None:
    seen: list[tuple[float, float | None, str | None]] = []
    logs: list[Any] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        seen.append((value, total, message))

    async with Client(proxy, era=front, on_log=logs.append) as client:
        await client.set_logging_level("info")
        result = await client.call_tool("progress", on_progress=on_progress)
        assert text(result) == "progressed"
        assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
        assert text(await client.call_tool("logs")) == "logged"
        for _ in range(50):
            if len(logs) >= 2:
                break
            import asyncio

            await asyncio.sleep(0.02)
        assert [entry.data for entry in logs] == ["one", "two"]


async def test_a_client_that_cannot_answer_is_never_asked(front: str, proxy: Proxy) -> None:
    """A client declaring no elicitation: the backend sees none declared (on the connection
    or in the request). A stateless-era client is told as its era says (-32021, naming what
    is missing), whatever the backend speaks; a handshake-era client as the backend says it
    (a handshake-era backend: the tool failed)."""
    async with Client(proxy, era=front) as client:
        if front == "handshake" and "handshake" in proxy.link.versions:
            result = await client.call_tool("ask")
            assert result.is_error is True and "elicitation" in text(result)
            return
        with pytest.raises(McpError) as refused:
            await client.call_tool("ask")
        assert refused.value.code == -32021
        assert refused.value.data == {"requiredCapabilities": {"elicitation": {}}}
