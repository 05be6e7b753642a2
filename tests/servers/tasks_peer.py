"""An mcpgen server with tasks-extension tools, for the client's task tests
(tests/runtime/client/test_client_tasks.py): each tool is small and its timing is set by its arguments,
so a test can catch a task working, waiting for input, or stopped.

Run: python tests/servers/tasks_peer.py [--http PORT]
"""

from __future__ import annotations

import asyncio
import sys

import msgspec

from mcpgen import Context, Server
from mcpgen.generated import TextContent, ToolExecution
from mcpgen.runtime.errors import McpError
from mcpgen.runtime.server.server import ToolError

TASKS = "io.modelcontextprotocol/tasks"
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


class Name(msgspec.Struct):
    name: str


@server.tool(task="required", task_start="explicit")
async def welcome(ctx: Context) -> str:
    """Asks the user's name inside the request (an InputRequiredResult round, key
    ``user_name``), then goes on as a task, which finishes a moment later."""
    answer = await ctx.elicit("Your name?", Name, key="user_name")
    name = answer.content.get("name") if answer.action == "accept" and answer.content else "stranger"
    await ctx.continue_as_task()
    await asyncio.sleep(0.1)
    return f"Welcome, {name}!"


@server.tool()
def plain_add(a: int, b: int) -> int:
    """Not a task tool: always answered at once."""
    return a + b


@server.tool()
def refusing_job() -> str:
    """A server that wants tasks for this tool but will not run it as one (it does not
    offer the extension): every call is refused with -32021 naming the extension."""
    raise McpError(-32021, "refusing_job runs only as a task", {"requiredCapabilities": {"extensions": {TASKS: {}}}})


@server.tool()
def v1_task_only() -> str:
    """Listed as a 2025-11-25 server lists a tool that must be called as a (core, v1)
    task; mcpgen's server never lists that, so the listing is rewritten below."""
    return "ran plainly"


# What a 2025-11-25 server with core tasks lists for a task-only tool (the field exists in
# that revision's Tool; mcpgen's @server.tool has no option for it).
_entry = server.catalog.tools["v1_task_only"]
_entry.definition = msgspec.structs.replace(_entry.definition, execution=ToolExecution(task_support="required"))


if __name__ == "__main__":
    if "--http" in sys.argv:
        server.run("http", port=int(sys.argv[sys.argv.index("--http") + 1]))
    else:
        server.run()
