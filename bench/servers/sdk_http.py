"""Official MCP SDK high-level server (``mcp.server.mcpserver.MCPServer``, formerly
FastMCP) with three tools, ``echo(text: str) -> str``, ``echo_threaded`` (the same: the SDK
runs every synchronous tool in a worker thread) and ``echo_progress`` (the same after one
progress notification), served over Streamable HTTP with
uvicorn (1 worker, log level warning) on 127.0.0.1, for ``bench/http.py``.

Run: python bench/servers/sdk_http.py PORT [--json-response]

Without ``--json-response`` the SDK answers every request with an SSE stream.
Uses the SDK's own entry point, ``MCPServer.run("streamable-http", ...)``; the server's
log level is WARNING (as for uvicorn), so neither server logs per request.
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("sdk-echo-http", log_level="WARNING")


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


@server.tool()
async def echo_progress(text: str, ctx: Context) -> str:
    """Report progress once, then echo the text back."""
    await ctx.report_progress(1, 1)
    return text


def main() -> None:
    port = int(sys.argv[1])
    json_response = "--json-response" in sys.argv[2:]
    server.run("streamable-http", host="127.0.0.1", port=port, json_response=json_response, stateless_http=False)


if __name__ == "__main__":
    main()
