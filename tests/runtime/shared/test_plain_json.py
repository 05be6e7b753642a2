"""``mcpgen.plain_json`` (issue 35.12): results and structs as plain JSON data for
``json.dumps``, fields left out (``msgspec.UNSET``) omitted rather than refused."""

from __future__ import annotations

import json

import msgspec
import pytest

from mcpgen import Client, Server, plain_json
from mcpgen.generated import CallToolResult, TextContent, Tool


def test_structs_become_their_wire_form() -> None:
    result = CallToolResult(content=[TextContent(text="hi")], is_error=False)
    assert plain_json(result) == {"content": [{"type": "text", "text": "hi"}], "isError": False}
    tool = Tool(name="t", input_schema={"type": "object"})
    with pytest.raises(TypeError):
        json.dumps(tool.description)  # UNSET: what the helper is for
    assert json.dumps(plain_json(tool.description)) == "null"
    assert plain_json(tool) == {"name": "t", "inputSchema": {"type": "object"}}


def test_unset_left_out_of_objects_and_null_in_lists() -> None:
    data = {"a": msgspec.UNSET, "b": [1, msgspec.UNSET], "c": (Tool(name="t", input_schema={}),)}
    assert plain_json(data) == {"b": [1, None], "c": [{"name": "t", "inputSchema": {}}]}
    with pytest.raises(TypeError, match="not JSON data"):
        plain_json({"x": object()})


@pytest.mark.anyio
async def test_a_real_result_dumps() -> None:
    server = Server("plain")

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    async with Client(server) as client:
        result = await client.call_tool("add", {"a": 1, "b": 2})
        [tool] = await client.list_tools()
    assert json.loads(json.dumps(plain_json(result)))["structuredContent"] == {"result": 3}
    assert "description" not in plain_json(tool)  # left out by the server, left out here
