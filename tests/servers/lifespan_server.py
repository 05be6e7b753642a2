"""A server with a lifespan, for tests/runtime/server/test_lifespan.py: entering and leaving
it appends a line to the file $LIFESPAN_LOG ("enter PID", "exit PID"), and the ``state`` tool
answers with what it yielded.

Run: python tests/servers/lifespan_server.py [--http PORT | --uds PATH]   (stdio by default)
Or:  uvicorn --workers 2 tests.servers.lifespan_server:app   (each worker enters it once)
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncIterator
from typing import Any

from mcpgen import Context, Server

server = Server("lifespan")


def _note(line: str) -> None:
    with open(os.environ["LIFESPAN_LOG"], "a", encoding="utf-8") as log:
        log.write(f"{line} {os.getpid()}\n")


@server.lifespan
@contextlib.asynccontextmanager
async def resources(made_for: Server) -> AsyncIterator[dict[str, Any]]:
    assert made_for is server
    _note("enter")
    try:
        yield {"token": f"opened-by-{os.getpid()}"}
    finally:
        _note("exit")


@server.tool()
async def state(ctx: Context) -> str:
    """What the lifespan yielded."""
    return str(ctx.lifespan["token"])


@server.tool(blocking=False)
def state_now(ctx: Context) -> str:
    """The same, from a tool answered on the event loop."""
    return str(ctx.lifespan["token"])


app = server.http_app()

if __name__ == "__main__":
    if "--http" in sys.argv:
        server.run("http", port=int(sys.argv[sys.argv.index("--http") + 1]))
    elif "--uds" in sys.argv:
        server.run("http", uds=sys.argv[sys.argv.index("--uds") + 1])
    else:
        server.run()
