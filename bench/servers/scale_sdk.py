"""The official Python SDK's server for ``bench/scale.py``: its high-level ``MCPServer``
(formerly FastMCP) with ``echo_async``, ``blob`` and, with ``--tools N``, N numbered tools
(see ``scale_tools.py``), over stdio or Streamable HTTP (its own ``run("streamable-http")``:
uvicorn, 1 worker, sessions on, both eras served; log level WARNING).

The tools answer with text content only (``structured_output=False``): left to itself the
SDK also copies a ``str`` result into ``structuredContent``, which would send every large
result twice.

Run: python bench/servers/scale_sdk.py stdio [--tools N]
     python bench/servers/scale_sdk.py http PORT [--tools N] [--json-response]
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable

from mcp.server.mcpserver import MCPServer
from scale_tools import blob_text, options, tool_description, tool_name


def numbered(number: int) -> Callable[[str, int], Awaitable[str]]:
    """Tool ``number``: a function of its own, as a generated server has one per operation."""

    async def look_up(query: str, limit: int = 10) -> str:
        return f"{number}:{query}:{limit}"

    return look_up


async def echo_async(text: str) -> str:
    """Echo the text back."""
    return text


async def blob(megabytes: int) -> str:
    """A text of that many MiB."""
    return blob_text(megabytes)


def build(tools: int) -> MCPServer:
    server = MCPServer("sdk-scale", log_level="WARNING")
    server.add_tool(echo_async, structured_output=False)
    server.add_tool(blob, structured_output=False)
    for number in range(tools):
        server.add_tool(
            numbered(number), name=tool_name(number), description=tool_description(number), structured_output=False
        )
    return server


def main() -> None:
    found = options(sys.argv)
    server = build(found.tools)
    if found.transport == "stdio":
        server.run()
    else:
        server.run(
            "streamable-http",
            host="127.0.0.1",
            port=found.port,
            json_response=found.json_response,
            stateless_http=False,
        )


if __name__ == "__main__":
    main()
