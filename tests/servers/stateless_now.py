"""A server for tests/runtime/server/test_stateless_now.py: tools answered on the spot (declared
``blocking=False``) beside tools that need a task (async, the thread pool), to check that
the stateless era answers the first kind without a task and both kinds alike.

Run: python tests/servers/stateless_now.py [PORT]   (no PORT: stdio; else HTTP on 127.0.0.1)
"""

from __future__ import annotations

import asyncio
import sys

from mcpgen import Context, Server

server = Server("stateless-now")


@server.tool(blocking=False)
def quick(text: str) -> str:
    """Answered on the spot."""
    return text


@server.tool(blocking=False)
def quick_fails(text: str) -> str:
    """Fails on the spot: an isError result."""
    raise ValueError(f"no {text}")


@server.tool()
def pooled(text: str) -> str:
    """A plain def left to the thread pool."""
    return text


@server.tool()
async def waits(text: str, ctx: Context) -> str:
    """Reports progress, waits a little, then answers."""
    await ctx.report_progress(1, 2)
    await asyncio.sleep(0.05)
    return text


@server.tool()
async def asks(ctx: Context) -> str:
    """Asks the client a question (an InputRequiredResult, then the retry's answer)."""
    answer = await ctx.elicit("Your name?", {"type": "object", "properties": {"name": {"type": "string"}}}, key="name")
    return f"hello {answer.content['name'] if answer.content else '?'}"


if __name__ == "__main__":
    if len(sys.argv) > 1:
        server.run("http", port=int(sys.argv[1]))
    else:
        server.run()
