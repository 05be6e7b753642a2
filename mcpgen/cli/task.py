"""`mcpgen call TARGET tool NAME --task`: let the server run the tool as a task (the stateless
era's tasks extension, or the tasks of 2025-11-25), show the task's status and progress on
stderr while it runs, and return its result. Ctrl-C cancels the task at the server before the command exits."""

from __future__ import annotations

import asyncio
import contextlib

from rich.console import Console

from mcpgen.cli.sanitize import clean_line
from mcpgen.generated import CallToolResult
from mcpgen.runtime.client.client import Client
from mcpgen.runtime.client.tasks import TaskCancelled, TaskFailed, TaskHandle, TaskStatus
from mcpgen.runtime.errors import McpError
from mcpgen.runtime.jsonrpc.session import ProgressCallback

# How long a cancellation at the server may take once the user asked to stop.
CANCEL_WAIT = 5.0


class TaskError(Exception):
    """The task ended failed or cancelled (one line for the user)."""


def _note(err: Console, line: str) -> None:
    err.print(line, markup=False, highlight=False)


def describe(status: TaskStatus) -> str:
    """One line of a task's state: ``task ID: working: step 2 of 3`` (the server's text
    in it sanitized)."""
    line = f"task {status.task_id}: {status.status}"
    if status.status_message:
        line += f": {status.status_message}"
    if status.input_requests:
        line += f" (asks: {', '.join(status.input_requests)})"
    return clean_line(line)


async def _cancel(handle: TaskHandle) -> None:
    """Cancel the task and look once more, so the user sees how it ended."""

    async def cancel() -> None:
        await handle.cancel()
        await handle.status()

    with contextlib.suppress(McpError, ConnectionError, TimeoutError):
        await asyncio.wait_for(cancel(), CANCEL_WAIT)


async def run_task(
    client: Client, name: str, arguments: dict[str, object], err: Console, on_progress: ProgressCallback
) -> CallToolResult | None:
    """The tool's result, or None when the user stopped it with Ctrl-C (the task was
    cancelled). Raises :class:`TaskError` when the task failed or was cancelled."""
    if not client.tasks_offered:
        _note(
            err,
            f"the server offers no tasks for tools/call ({client.session.protocol_version}): calling the tool plainly",
        )
        return await client.call_tool(name, arguments, on_progress=on_progress)
    handle = await client.start_task(
        name, arguments, on_progress=on_progress, on_status=lambda status: _note(err, describe(status))
    )
    if handle.task_id is None:  # (a task id is the server's text too: sanitized where shown)
        _note(err, "the server answered at once, without a task")
    try:
        return await handle.wait()
    except TaskFailed as exc:
        raise TaskError(clean_line(f"task {handle.task_id} failed with error {exc.code}: {exc.message}")) from None
    except TaskCancelled as exc:
        raise TaskError(clean_line(exc)) from None
    except asyncio.CancelledError:
        # Ctrl-C (asyncio.run cancels the main task): stop the task too, then end
        # normally so the command can say so and exit 130.
        _note(err, clean_line(f"cancelling task {handle.task_id}"))
        current = asyncio.current_task()
        if current is not None:
            current.uncancel()  # handled here: later awaits (the cancel, closing) run normally
        await _cancel(handle)
        return None
    except BaseException:
        await _cancel(handle)  # nobody will collect its result
        raise


__all__ = ["TaskError", "describe", "run_task"]
