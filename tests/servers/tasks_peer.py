"""An mcpgen server with tasks-extension tools, for the client's task tests
(tests/test_client_tasks.py): each tool is small and its timing is set by its arguments,
so a test can catch a task working, waiting for input, or stopped.

Run: python tests/servers/tasks_peer.py [--http PORT]
"""

from __future__ import annotations

import asyncio
import sys

import msgspec

from mcpgen import Context, Server
from mcpgen.generated import TextContent
from mcpgen.runtime.errors import McpError
from mcpgen.runtime.server import ToolError

server = Server("tasks-peer", "1.0.0", instructions="Tools that run as tasks.")


class Confirm(msgspec.Struct):
    confirm: bool


@server.tool(task="optional")
async def add_slowly(a: int, b: int, ctx: Context, steps: int = 3, pause: float = 0.1) -> int:
    """Adds a and b in ``steps`` steps of ``pause`` seconds, reporting progress."""
    for step in range(1, steps + 1):
        await asyncio.sleep(pause)
        await ctx.report_progress(step, steps, f"step {step} of {steps}")
    return a + b


@server.tool(task="required")
async def long_job(ctx: Context, seconds: float = 60.0) -> str:
    """Runs only as a task; sleeps (until cancelled); says on stderr when it was cancelled."""
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        print("long_job cancelled", file=sys.stderr, flush=True)
        raise
    return f"slept {seconds}"


@server.tool(task="optional")
async def delete_file(filename: str, ctx: Context) -> str:
    """Asks the user to confirm (one elicitation, key ``confirm``), then asks the model
    for a farewell (sampling, key ``farewell``)."""
    answer = await ctx.elicit(f"Delete {filename}?", Confirm, key="confirm")
    if answer.action != "accept" or not answer.content or not answer.content.get("confirm"):
        return f"kept {filename}"
    said = await ctx.sample(f"say goodbye to {filename}", max_tokens=20, key="farewell")
    words = said.content.text if isinstance(said.content, TextContent) else "?"
    return f"deleted {filename} ({words})"


@server.tool(task="required")
async def broken_job() -> str:
    """Runs only as a task and reports a tool error (the task completes, isError)."""
    await asyncio.sleep(0.05)
    raise ToolError("the job could not run: disk full")


@server.tool(task="optional")
async def protocol_fault() -> str:
    """Fails with a JSON-RPC error (the task fails)."""
    await asyncio.sleep(0.05)
    raise McpError(-32050, "the backend refused the job", {"backend": "db1"})


@server.tool()
def plain_add(a: int, b: int) -> int:
    """Not a task tool: always answered at once."""
    return a + b


if __name__ == "__main__":
    if "--http" in sys.argv:
        server.run("http", port=int(sys.argv[sys.argv.index("--http") + 1]))
    else:
        server.run()
