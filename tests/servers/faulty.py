"""A server whose handlers misbehave, for fault-isolation tests.

Tools: ``echo`` and ``slow`` (as in the demo), ``crash`` (raises), ``wrong_type``
(declared ``-> int``, returns a string), ``stream_slow`` (logs first, so its HTTP
response is an SSE stream, then sleeps), and ``lowlevel_wrong``, answered by an
overridden low-level ``call_tool`` handler with a value that is not a CallToolResult.

Run: python tests/servers/faulty.py [--http PORT]  (stdio by default)
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from mcpgen import Context, Server
from mcpgen.generated import CallToolRequestParams, CallToolResult


class FaultyServer(Server):
    async def call_tool(self, params: CallToolRequestParams) -> CallToolResult:
        if params.name == "lowlevel_wrong":
            wrong: Any = {"not": "a CallToolResult"}
            return wrong  # type: ignore[no-any-return]  # on purpose: the session must answer -32603
        return await super().call_tool(params)


server = FaultyServer("faulty", "0.0.1")


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@server.tool()
async def slow(seconds: float, ctx: Context) -> str:
    """Sleeps; records whether it was cancelled."""
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        print(f"slow cancelled {ctx.request_id}", file=sys.stderr, flush=True)
        raise
    return f"slept {seconds}"


@server.tool()
def crash() -> str:
    """Raises an unexpected exception."""
    raise RuntimeError("boom, on purpose")


@server.tool()
def wrong_type() -> int:
    """Declared to return an int; returns a string."""
    bad: Any = "not an int"
    return bad  # type: ignore[no-any-return]


@server.tool()
def lowlevel_wrong() -> str:
    """Never reached: FaultyServer.call_tool answers it."""
    return "unreachable"


@server.tool()
async def stream_slow(seconds: float, ctx: Context) -> str:
    """Logs first (over HTTP the response becomes an SSE stream), then sleeps."""
    await ctx.info("started", logger="faulty")
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        print(f"stream_slow cancelled {ctx.request_id}", file=sys.stderr, flush=True)
        raise
    return f"streamed after {seconds}"


if __name__ == "__main__":
    if "--http" in sys.argv:
        server.run("http", port=int(sys.argv[sys.argv.index("--http") + 1]), retry_ms=200)
    else:
        server.run()
