"""What a backend tells without being asked, through a proxy, across the eras: resource
updates (a handshake-era client's ``resources/subscribe`` reaching a stateless-era backend
as ``subscriptions/listen``, a stateless-era client's listen reaching a handshake-era one
as ``resources/subscribe``), list changes, and log messages; the backend in process and
over Streamable HTTP."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mcpgen import Client, Context, Proxy, Server
from mcpgen.generated import TextContent
from tests.http_server import free_port, serving_in_thread
from tests.runtime.gateway.backends import HANDSHAKE, MODERN

pytestmark = pytest.mark.anyio
FRONTS = ["handshake", "stateless"]
BACKENDS = {"handshake backend": [HANDSHAKE], "stateless backend": [MODERN]}


def watched(versions: list[str]) -> Server:
    server = Server("watched", versions=versions)
    state = {"text": "v1"}

    @server.resource("data://watched", mime_type="text/plain")
    def read() -> str:
        return state["text"]

    @server.tool()
    async def touch(text: str) -> str:
        state["text"] = text
        await server.notify_resource_updated("data://watched")
        return "touched"

    @server.tool()
    def grow() -> str:
        server.tool(name="grown")(lambda: "grown")
        return "grew"

    @server.tool()
    async def chatter(ctx: Context) -> str:
        await ctx.info("chattering")
        return "chattered"

    return server


@contextlib.contextmanager
def reach(server: Server, transport: str) -> Iterator[Any]:
    """What a Proxy is given to reach ``server``: the server itself, or its HTTP URL."""
    if transport == "memory":
        yield server
        return
    port = free_port()
    with serving_in_thread(server.http_app(), port):
        yield f"http://127.0.0.1:{port}/mcp"


async def eventually(check: Callable[[], bool], what: str, seconds: float = 5.0) -> None:
    for _ in range(int(seconds / 0.02)):
        if check():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"never happened: {what}")


@pytest.mark.parametrize("transport", ["memory", "http"])
@pytest.mark.parametrize("backend", list(BACKENDS))
@pytest.mark.parametrize("front", FRONTS)
async def test_updates_list_changes_and_logs_cross_the_eras(front: str, backend: str, transport: str) -> None:
    seen: list[tuple[str, Any]] = []
    logs: list[Any] = []

    def note(method: str, params: Any) -> None:
        seen.append((method, params))

    with reach(watched(BACKENDS[backend]), transport) as target:
        proxy = Proxy(target)
        async with Client(proxy, era=front, on_notification=note, on_log=logs.append) as client:
            await client.subscribe("data://watched")
            assert (await client.call_tool("touch", {"text": "v2"})).content == [TextContent(text="touched")]
            await eventually(
                lambda: any(m == "notifications/resources/updated" and getattr(p, "uri", None) == "data://watched"
                            or (isinstance(p, dict) and p.get("uri") == "data://watched") for m, p in seen),
                "the resource update",
            )  # fmt: skip
            read = await client.read_resource("data://watched")
            assert read.contents[0].text == "v2"  # type: ignore[union-attr]

            await client.call_tool("grow")
            await eventually(lambda: any(m == "notifications/tools/list_changed" for m, _ in seen), "the list change")
            assert "grown" in {tool.name for tool in await client.list_tools()}

            await client.set_logging_level("info")
            await client.call_tool("chatter")
            await eventually(lambda: [entry.data for entry in logs] == ["chattering"], "the log message")

            await client.unsubscribe("data://watched")
        await proxy.close()
