"""Tools typed with pydantic (as FastMCP and the official SDK's code is): BaseModel
parameters and returns, Field() defaults and constraints, checked by pydantic itself; and a
server that never imported pydantic never loads it."""

from __future__ import annotations

import subprocess
import sys
from typing import Annotated

import pytest
from pydantic import BaseModel, Field

from mcpgen import Client, Server
from mcpgen.generated import TextContent


class Point(BaseModel):
    x: int = Field(ge=0, description="east of the origin")
    y: int


class Area(BaseModel):
    size: float
    corner: Point


server = Server("shapes")


@server.tool()
def area(corner: Point, scale: int = Field(2, ge=1, le=10), tag: Annotated[str, Field(max_length=5)] = "a") -> Area:
    """The area of the rectangle from the origin to ``corner``, scaled."""
    assert isinstance(corner, Point) and isinstance(scale, int) and isinstance(tag, str)
    return Area(size=corner.x * corner.y * scale, corner=corner)


@server.tool()
def points(n: int) -> list[Point]:
    return [Point(x=i, y=i) for i in range(n)]


@server.tool()
def broken() -> Point:
    return {"x": -1, "y": 0}  # type: ignore[return-value]  # the author's mistake, reported as such


def text(result: object) -> str:
    return "".join(b.text for b in result.content if isinstance(b, TextContent))  # type: ignore[attr-defined]


@pytest.mark.anyio
async def test_models_fields_and_returns() -> None:
    async with Client(server) as client:
        tools = {tool.name: tool for tool in await client.list_tools()}
        schema = tools["area"].input_schema
        assert schema["required"] == ["corner"]
        assert schema["properties"]["corner"]["properties"]["x"] == {
            "description": "east of the origin",
            "minimum": 0,
            "title": "X",
            "type": "integer",
        }
        assert schema["properties"]["scale"] == {"default": 2, "maximum": 10, "minimum": 1, "type": "integer"}
        assert schema["properties"]["tag"]["maxLength"] == 5
        output = tools["area"].output_schema
        assert output["required"] == ["size", "corner"] and "Point" in output["$defs"]

        done = await client.call_tool("area", {"corner": {"x": 2, "y": 3}})
        assert not done.is_error and done.structured_content == {"size": 12.0, "corner": {"x": 2, "y": 3}}

        refused = await client.call_tool("area", {"corner": {"x": -2, "y": 3}})
        assert refused.is_error and "greater than or equal to 0 - at `corner.x`" in text(refused)
        refused = await client.call_tool("area", {"corner": {"x": 2, "y": 3}, "scale": 11})
        assert refused.is_error and "`scale`" in text(refused)
        refused = await client.call_tool("area", {"corner": {"x": 2, "y": 3}, "tag": "too long"})
        assert refused.is_error and "`tag`" in text(refused)

        listed = await client.call_tool("points", {"n": 2})
        assert listed.structured_content == {"result": [{"x": 0, "y": 0}, {"x": 1, "y": 1}]}

        wrong = await client.call_tool("broken", {})
        assert wrong.is_error and "returned invalid output" in text(wrong) and "`result.x`" in text(wrong)


def test_a_server_without_pydantic_never_loads_it() -> None:
    code = (
        "import sys\n"
        "from mcpgen import Server\n"
        "s = Server('p')\n"
        "@s.tool()\n"
        "def add(a: int, b: int = 2) -> int:\n"
        "    return a + b\n"
        "assert 'pydantic' not in sys.modules, 'the runtime imported pydantic'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
