"""A small server for the stateless-era scale-out test, importable as an ASGI app so that
uvicorn can run it in several worker processes (``--workers N`` needs an import string).

Every worker reads the state key from ``$MCPGEN_STATE_KEY`` (the Server's default), so a
``requestState`` sealed by one worker opens on any other. The tools report the pid of the
worker that ran them, which lets the test see how calls and MRTR retries spread:

- ``whoami(n)``: ``{"pid", "n"}``, answered at once;
- ``ask(n)``: asks the client for a name (key ``answer``); the question's message names the
  pid of the worker that asked, and the final result names the pid that completed it;
- ``runs()``: how many times ``ask`` has been entered in this worker (a worker that refuses
  a foreign state must not have run the tool at all).

Run: MCPGEN_STATE_KEY=... uvicorn tests.servers.scale_stateless:app --workers 4
"""

from __future__ import annotations

import os
from typing import Any

from mcpgen import Context, Server

server = Server("scale-stateless")
NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
_entered = 0  # ask's handler runs, in this worker (one event loop: no lock needed)


@server.tool()
async def whoami(n: int) -> dict[str, int]:
    """The worker's pid and the call's number, answered at once."""
    return {"pid": os.getpid(), "n": n}


@server.tool()
async def ask(n: int, ctx: Context) -> dict[str, Any]:
    """Ask for a name; the result carries it with the pid of the worker that completed."""
    global _entered
    _entered += 1
    answer = await ctx.elicit(f"pid={os.getpid()} n={n}: your name?", NAME_FORM, key="answer")
    return {"pid": os.getpid(), "n": n, "action": answer.action, "name": (answer.content or {}).get("name")}


@server.tool()
async def runs() -> int:
    """How many times ``ask`` was entered in this worker."""
    return _entered


app = server.http_app()
