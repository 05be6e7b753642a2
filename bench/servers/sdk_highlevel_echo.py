"""Official MCP SDK high-level server (``mcp.server.mcpserver.MCPServer``, formerly
FastMCP) with one tool, ``echo(text: str) -> str``, served over stdio, for
``bench/stdio.py``; ``echo_threaded`` is the same (the SDK runs every synchronous tool in a
worker thread), for ``--threaded``.

Run: python bench/servers/sdk_highlevel_echo.py
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer("sdk-highlevel-echo")


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@server.tool()
async def echo_async(text: str) -> str:
    """Echo the text back (an ``async def``)."""
    return text


@server.tool()
def echo_threaded(text: str) -> str:
    """Echo the text back."""
    return text


if __name__ == "__main__":
    server.run()
