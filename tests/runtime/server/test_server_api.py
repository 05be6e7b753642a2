"""The decorator API's rules and conversions, in memory (Client(server))."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, TypedDict

import pytest

from mcpgen import Client, Server
from mcpgen.generated import (
    EmbeddedResource,
    ImageContent,
    Implementation,
    InitializeRequestParams,
    InitializeResult,
    ServerCapabilities,
    ServerHandlers,
    TextContent,
    ToolAnnotations,
)
from mcpgen.runtime.client.session import UnsupportedVersion
from mcpgen.runtime.errors import INTERNAL_ERROR, McpError
from mcpgen.runtime.jsonrpc.transport import memory_pair
from mcpgen.runtime.server.session import ServerSession

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("name", ["", "x" * 129, "has space", "comma,name", "slash/name", "ünïcode"])
def test_tool_names_follow_the_spec_rule(name: str) -> None:
    server = Server("s")
    with pytest.raises(ValueError):
        server.tool(name=name)(lambda: "x")


def test_valid_names_and_duplicates() -> None:
    server = Server("s")
    for name in ("getUser", "DATA_EXPORT_v2", "admin.tools.list", "a-b", "x" * 128):
        server.tool(name=name)(lambda: "x")
    with pytest.raises(ValueError, match="already registered"):
        server.tool(name="getUser")(lambda: "y")


class Point(TypedDict):
    x: int
    y: int


@dataclass
class Box:
    width: float
    height: float = 1.0


async def test_schemas_and_conversions() -> None:
    server = Server("s")

    @server.tool(title="Area", annotations=ToolAnnotations(read_only_hint=True))
    def area(box: Box, scale: int = 1) -> float:
        """Area of a box."""
        return box.width * box.height * scale

    @server.tool()
    def where(p: Point) -> Point:
        return p

    @server.tool()
    def raw() -> dict[str, Any]:
        return {"k": [1, 2]}

    @server.tool()
    def untyped():  # type: ignore[no-untyped-def]
        return {"free": True}

    @server.tool()
    def picture() -> bytes:
        return b"\x89PNG\r\n\x1a\n" + b"\x00" * 8

    @server.tool()
    def blob() -> bytes:
        return b"\x00\x01"

    @server.tool()
    def several() -> list[TextContent | ImageContent]:
        return [TextContent(text="a"), TextContent(text="b")]

    @server.tool()
    def nothing() -> None:
        return None

    @server.tool()
    def lies() -> int:
        return "not a number"  # type: ignore[return-value]

    async with Client(server) as client:
        tools = {t.name: t for t in await client.list_tools()}
        assert tools["area"].title == "Area" and tools["area"].annotations.read_only_hint is True  # type: ignore[union-attr]
        assert tools["area"].description == "Area of a box."
        box_schema = tools["area"].input_schema
        assert box_schema["required"] == ["box"] and "$defs" in box_schema
        assert tools["area"].output_schema["properties"]["result"]["type"] == "number"  # type: ignore[index]
        assert (await client.call_tool("area", {"box": {"width": 2, "height": 3}, "scale": 2})).structured_content == {
            "result": 12
        }
        assert (await client.call_tool("where", {"p": {"x": 1, "y": 2}})).structured_content == {"x": 1, "y": 2}
        assert (await client.call_tool("raw")).structured_content == {"k": [1, 2]}
        free = await client.call_tool("untyped")
        assert free.structured_content == {"free": True} and free.content == [TextContent(text='{"free":true}')]
        image = (await client.call_tool("picture")).content[0]
        assert isinstance(image, ImageContent) and image.mime_type == "image/png"
        assert isinstance((await client.call_tool("blob")).content[0], EmbeddedResource)
        assert len((await client.call_tool("several")).content) == 2
        assert (await client.call_tool("nothing")).content == []
        lie = await client.call_tool("lies")
        assert lie.is_error is True and "invalid output" in lie.content[0].text  # type: ignore[union-attr]
        bad = await client.call_tool("area", {"box": {"width": "wide"}})
        assert bad.is_error is True and "box" in bad.content[0].text  # type: ignore[union-attr]


async def test_client_refuses_an_unsupported_version() -> None:
    class OddServer(ServerHandlers):
        async def initialize(self, params: InitializeRequestParams) -> InitializeResult:
            return InitializeResult(
                protocol_version="1999-01-01",
                capabilities=ServerCapabilities(),
                server_info=Implementation(name="odd", version="0"),
            )

    class OddSession(ServerSession):
        async def _initialize(self, params: InitializeRequestParams) -> InitializeResult:
            return await self.handlers.initialize(params)  # type: ignore[no-any-return]

    async def connect() -> Any:
        ours, theirs = memory_pair()
        asyncio.ensure_future(OddSession(theirs, OddServer()).run())
        return ours

    with pytest.raises(UnsupportedVersion, match="1999-01-01"):
        async with Client(connect=connect):
            pass


async def test_a_resource_that_returns_none_is_an_error_naming_it(caplog: pytest.LogCaptureFixture) -> None:
    server = Server("s")

    @server.resource("mem://config")
    def config() -> str:
        return None  # type: ignore[return-value]  # the mistake under test

    @server.resource_template("mem://users/{name}")
    def user(name: str) -> bytes:
        return name  # type: ignore[return-value]

    @server.resource("mem://untyped")
    def untyped():  # type: ignore[no-untyped-def]
        return None

    async with Client(server) as client:
        with pytest.raises(McpError) as none:
            await client.read_resource("mem://config")
        assert none.value.code == INTERNAL_ERROR
        assert "mem://config" in none.value.message and "config" in none.value.message
        assert "returned NoneType, but it is annotated -> str" in none.value.message
        with pytest.raises(McpError) as wrong:
            await client.read_resource("mem://users/ada")
        assert (
            "mem://users/ada" in wrong.value.message
            and "returned str, but it is annotated -> bytes" in wrong.value.message
        )
        with pytest.raises(McpError) as bare:
            await client.read_resource("mem://untyped")
        assert "returned NoneType" in bare.value.message and "annotated" not in bare.value.message
    logged = [r.getMessage() for r in caplog.records if r.name == "mcpgen"]
    assert any("mem://config" in line and "-> str" in line for line in logged), logged
