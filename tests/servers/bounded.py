"""A server for tests/runtime/server/test_stateless_bounded.py: at most two handlers at once
(``max_concurrency=2``), tools that hold until released, and on-the-spot tools that say
how many are holding (they take no slot, so they answer while the slots are full).

Run: python tests/servers/bounded.py PORT   (HTTP on 127.0.0.1)
"""

from __future__ import annotations

import asyncio
import sys

from mcpgen import Server

server = Server("bounded", max_concurrency=2)
holding = 0
peak = 0
released: asyncio.Event | None = None


def _released() -> asyncio.Event:
    global released
    if released is None:
        released = asyncio.Event()
    return released


@server.tool()
async def hold() -> str:
    """Counts itself in, waits for release, counts itself out."""
    global holding, peak
    holding += 1
    peak = max(peak, holding)
    try:
        await _released().wait()
    finally:
        holding -= 1
    return "held"


@server.tool(blocking=False)
def status() -> str:
    """How many hold now, and the most that ever held at once."""
    return f"{holding}/{peak}"


@server.tool(blocking=False)
def release() -> str:
    """Lets every holder finish."""
    _released().set()
    return "released"


if __name__ == "__main__":
    server.run("http", port=int(sys.argv[1]))
