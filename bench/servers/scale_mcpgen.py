"""mcpgen's server for ``bench/scale.py``: ``echo_async``, ``blob`` and, with ``--tools N``,
N numbered tools (see ``scale_tools.py``), over stdio or Streamable HTTP (uvicorn, 1
worker, the handshake era's sessions on, both eras served).

Run: python bench/servers/scale_mcpgen.py stdio [--tools N]
     python bench/servers/scale_mcpgen.py http PORT [--tools N] [--json-response]
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable

from scale_tools import blob_text, options, tool_description, tool_name

from mcpgen import Server


def numbered(number: int) -> Callable[[str, int], Awaitable[str]]:
    """Tool ``number``: a function of its own, as a generated server has one per operation."""

    async def look_up(query: str, limit: int = 10) -> str:
        return f"{number}:{query}:{limit}"

    return look_up


def build(tools: int) -> Server:
    server = Server("mcpgen-scale")

    @server.tool()
    async def echo_async(text: str) -> str:
        """Echo the text back."""
        return text

    @server.tool()
    async def blob(megabytes: int) -> str:
        """A text of that many MiB."""
        return blob_text(megabytes)

    for number in range(tools):
        server.tool(tool_name(number), description=tool_description(number))(numbered(number))
    return server


def main() -> None:
    found = options(sys.argv)
    server = build(found.tools)
    if found.transport == "stdio":
        server.run()
    else:
        # Every session of the sessions curve comes from the benchmark's one address: one
        # caller, whom the default would hold to a quarter of max_sessions (2,500).
        server.run(
            "http",
            host="127.0.0.1",
            port=found.port,
            json_response=found.json_response,
            sessionless=False,
            max_sessions_per_caller=10_000,
        )


if __name__ == "__main__":
    main()
