"""Several backends behind one server (what ``mcpgen gateway`` does with several): proxies
mounted under namespaces, one speaking only the handshake era and one only the stateless
era, in front of clients of both eras: names, questions, prompts, completions, filters,
and the stateless era's header checks of a namespaced tool, over HTTP."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from mcpgen import Client, McpError, Proxy, Server, ToolFilter
from mcpgen.generated import PromptReference, TextContent
from tests.http_server import free_port, serving_in_thread
from tests.runtime.gateway.backends import HANDSHAKE, MODERN, backend, client_options

pytestmark = pytest.mark.anyio


def front() -> Server:
    server = Server("front")
    server.mount(Proxy(backend([HANDSHAKE], "old")), namespace="old")
    server.mount(Proxy(backend([MODERN], "new"), tools=ToolFilter(deny=["add"])), namespace="new")
    return server


def text(result: Any) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


@pytest.mark.parametrize("era", ["handshake", "stateless"])
async def test_two_backends_of_two_eras_under_namespaces(era: str) -> None:
    async with Client(front(), era=era, **client_options()) as client:
        names = {tool.name for tool in await client.list_tools()}
        assert {"old_echo", "old_add", "old_ask", "new_echo", "new_ask"} <= names
        assert "new_add" not in names  # filtered out
        with pytest.raises(McpError):
            await client.call_tool("new_add", {"a": 1, "b": 2})
        assert text(await client.call_tool("old_echo", {"text": "x"})) == "x"
        assert (await client.call_tool("old_add", {"a": 1, "b": 2})).structured_content == {"result": 3}
        for ns in ("old", "new"):
            assert text(await client.call_tool(f"{ns}_ask")) == "Hello, Ada!"
            assert text(await client.call_tool(f"{ns}_two_rounds")) == "Ada then Grace"
        uris = [r.uri for r in await client.list_resources()]
        assert uris == ["data://old/greeting", "data://new/greeting"]
        assert (await client.read_resource("data://new/items/9")).contents[0].text == "item 9"  # type: ignore[union-attr]
        assert [p.name for p in await client.list_prompts()] == ["old_brief", "new_brief"]
        done = await client.complete(PromptReference(name="new_brief"), "topic", "tr")
        assert done.completion.values == ["trains"]


async def test_a_namespaced_tools_headers_are_checked_by_the_front() -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with serving_in_thread(front().http_app(), port):
        async with Client.http(url, era="stateless") as client:
            await client.list_tools()  # the client learns the x-mcp-header annotations
            assert text(await client.call_tool("new_region", {"region": "eu-west"})) == "region=eu-west"
            assert text(await client.call_tool("old_region", {"region": "ap-south"})) == "region=ap-south"
        # A header that contradicts the arguments is refused by the front itself.
        meta = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
        params = {"name": "new_region", "arguments": {"region": "eu-west"}, "_meta": meta}
        headers = {
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": MODERN,
            "mcp-method": "tools/call",
            "mcp-name": "new_region",
            "mcp-param-region": "us-east",
        }
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
        reply = httpx.post(url, json=body, headers=headers)
        assert reply.status_code == 400 and reply.json()["error"]["code"] == -32020
