"""A stdio server for the shutdown fault tests (tests/runtime/server/test_stdio_shutdown.py):
``work(seconds)`` sleeps then answers; run with ``--grace SECONDS``, how long calls in flight
get once stdin closes or a signal comes.

Run: python tests/servers/stopping.py [--grace SECONDS]"""

from __future__ import annotations

import asyncio
import sys

from mcpgen import Server, Stdio

server = Server("stopping")


@server.tool()
async def work(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return f"worked {seconds:g} s"


if __name__ == "__main__":
    grace = float(sys.argv[sys.argv.index("--grace") + 1]) if "--grace" in sys.argv else 10.0
    server.run(Stdio(grace=grace))
