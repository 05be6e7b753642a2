"""Official MCP SDK low-level server (``mcp.server.lowlevel.Server``) with one tool,
``echo(text: str) -> str``, served over stdio, for ``bench/stdio.py``; it answers
``echo_async`` and ``echo_threaded`` (``--tool``) the same way, from its async handler.

Run: python bench/servers/sdk_lowlevel_echo.py
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

ECHO = types.Tool(
    name="echo",
    description="Echo the text back.",
    input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
)


async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[ECHO])


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name not in ("echo", "echo_async", "echo_threaded"):
        return types.CallToolResult(content=[types.TextContent(text=f"Unknown tool: {params.name}")], is_error=True)
    text = (params.arguments or {}).get("text")
    if not isinstance(text, str):
        return types.CallToolResult(content=[types.TextContent(text="text must be a string")], is_error=True)
    return types.CallToolResult(content=[types.TextContent(text=text)])


server: Server[Any] = Server("sdk-lowlevel-echo", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
