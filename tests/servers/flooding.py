"""A server whose tool floods its caller with progress, for the tests of a client that stops
reading its event stream (tests/runtime/server/test_unread_streams.py).

``flood(count, size)`` reports progress ``count`` times with a ``size``-character message,
then answers; ``done()`` says how many floods finished. Run:
python tests/servers/flooding.py PORT [STALL_SECONDS]"""

from __future__ import annotations

import sys

from mcpgen import Context, Server

server = Server("flooding")
FINISHED = {"floods": 0}


@server.tool()
async def flood(count: int, size: int, ctx: Context) -> str:
    text = "p" * size
    for n in range(count):
        await ctx.report_progress(n, count, text)
    FINISHED["floods"] += 1
    return "flooded"


@server.tool()
def done() -> int:
    return FINISHED["floods"]


if __name__ == "__main__":
    stall = float(sys.argv[2]) if len(sys.argv) > 2 else 60.0
    server.run("http", port=int(sys.argv[1]), stall_timeout=stall)
