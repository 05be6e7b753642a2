"""Tasks-extension tools for tests/runtime/server/test_tasks_server.py: imported to serve in-process under
uvicorn (so a test can look at the server's asyncio tasks and store), or run over stdio as
``python tests/servers/tasks_server.py``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mcpgen import Context, Server
from mcpgen.runtime.errors import INTERNAL_ERROR, McpError
from mcpgen.runtime.server.server import ToolError

NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
YES_FORM = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def build(**options: Any) -> Server:
    """A fresh server (each test its own: tasks, store and counters are per server)."""
    server = Server("tasks-server", "1.0.0", **options)
    seen: dict[str, int] = {"cancelled": 0, "finished": 0}
    server.seen = seen  # type: ignore[attr-defined]  # what the tools saw, for the tests

    @server.tool
    def greet(name: str) -> str:
        return f"Hello, {name}!"

    @server.tool(task="optional")
    async def sleeper(seconds: float, ctx: Context, steps: int = 2) -> str:
        for step in range(1, steps + 1):
            await asyncio.sleep(seconds / steps)
            await ctx.report_progress(step, steps, f"step {step} of {steps}")
        return f"slept {seconds:g} s"

    @server.tool(task="optional")
    async def blocker() -> str:
        try:
            await asyncio.Event().wait()  # until cancelled
        except asyncio.CancelledError:
            seen["cancelled"] += 1
            raise
        return "never"

    @server.tool(task="optional")
    def plain(x: int) -> int:
        return x * 2

    @server.tool(task="required")
    async def required_job() -> str:
        return "ran as a task"

    @server.tool(task="optional")
    async def boom() -> str:
        raise McpError(INTERNAL_ERROR, "the job blew up", {"why": "on purpose"})

    @server.tool(task="optional")
    async def tool_error() -> str:
        raise ToolError("bad input for the job")

    @server.tool(task="optional")
    async def confirm(ctx: Context) -> str:
        answer = await ctx.elicit("Go ahead?", YES_FORM, key="go")
        seen["finished"] += 1
        return f"go: {(answer.content or {}).get('ok')}"

    @server.tool(task="optional")
    async def two_questions(ctx: Context) -> str:
        name, yes = await asyncio.gather(
            ctx.elicit("Name?", NAME_FORM, key="name"),
            ctx.elicit("Sure?", YES_FORM, key="sure"),
        )
        return f"{(name.content or {}).get('name')} / {(yes.content or {}).get('ok')}"

    @server.tool(task="required", task_start="explicit")
    async def named_task(ctx: Context) -> str:
        answer = await ctx.elicit("Name?", NAME_FORM, key="user_name")
        await ctx.continue_as_task()
        await asyncio.sleep(0.05)
        return f"task for {(answer.content or {}).get('name')}"

    return server


if __name__ == "__main__":
    asyncio.run(build().serve_stdio())
