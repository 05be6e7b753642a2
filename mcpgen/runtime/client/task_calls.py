"""What a :class:`~mcpgen.runtime.client.client.Client` does with tasks: start a tool call
as a task and hold its handle, take up a task by its id, run ``call_tool(..., task=True)``
to its end. The stateless era's tasks extension (SEP-2663) and the handshake era's tasks of
2025-11-25 (SEP-1686) behind one set of calls; the handles are
:mod:`~mcpgen.runtime.client.tasks`' and :mod:`~mcpgen.runtime.client.handshake_tasks`'.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from mcpgen.runtime.client.handshake_tasks import HandshakeTaskHandle, open_handshake_task
from mcpgen.runtime.client.handshake_tasks import offered as handshake_tasks_offered
from mcpgen.runtime.client.tasks import (
    TASKS_META,
    StatusCallback,
    TaskCancelled,
    TaskFailed,
    TaskHandle,
    TaskRequired,
    TaskStatus,
    TasksUnavailable,
    names_tasks,
    open_task,
    watch_progress,
)
from mcpgen.runtime.errors import McpError

if TYPE_CHECKING:
    from mcpgen.protocol.v2025_11_25 import CallToolResult, InitializeResult
    from mcpgen.runtime.client.session import ClientSession
    from mcpgen.runtime.jsonrpc.session import ProgressCallback

T = TypeVar("T")


class TaskCalls:
    """The task calls of :class:`~mcpgen.runtime.client.client.Client`, which inherits them."""

    if TYPE_CHECKING:  # what the Client provides
        request_timeout: float | None
        initialize_result: InitializeResult | None

        @property
        def session(self) -> ClientSession: ...

        async def call_tool(
            self,
            name: str,
            arguments: dict[str, Any] | None = None,
            *,
            on_progress: ProgressCallback | None = None,
            timeout: float | None = None,
            task: bool = False,
        ) -> CallToolResult: ...

        async def _send_call(
            self,
            name: str,
            params: Any,
            expected: type[T],
            timeout: float | None,
            on_progress: ProgressCallback | None,
        ) -> T: ...

        def _checked(self, name: str, result: CallToolResult) -> CallToolResult: ...

    async def start_task(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        on_progress: ProgressCallback | None = None,
        on_status: StatusCallback | None = None,
    ) -> TaskHandle:
        """Call tool ``name`` letting the server run it as a task and return the task's
        handle as soon as the server made it: ``await handle.wait(timeout=...)`` for the
        result, ``handle.status()``, ``handle.cancel()``. The stateless era's tasks
        extension (SEP-2663) and the handshake era's tasks of 2025-11-25 (SEP-1686) alike
        (:attr:`tasks_offered` says whether this connection has either). The server
        decides: a call it answers at once gives a handle that is already done. Questions
        the task asks are answered, while waiting, by the client's elicitation, sampling
        and roots handlers. ``on_progress`` gets the server's progress notifications for
        the call, ``on_status`` every status (or status message) the client sees."""
        session = self._tasks_session()
        handshake_era = session.modern is None
        meta: dict[str, Any] = {} if handshake_era else dict(TASKS_META)
        release = None
        if on_progress is not None:
            meta["progressToken"], release = watch_progress(session, on_progress)
        params: dict[str, Any] = {"name": name}
        if meta:
            params["_meta"] = meta
        if arguments is not None:
            params["arguments"] = arguments
        if handshake_era:
            params["task"] = {}  # the server's default time to live
        opener = open_handshake_task if handshake_era else open_task
        try:
            raw = await self._send_call(name, params, msgspec.Raw, None, None)
            return await opener(
                session,
                name,
                raw,
                finish=functools.partial(self._checked, name),
                on_status=on_status,
                request_timeout=self.request_timeout,
                release=release,
            )
        except BaseException as exc:
            if release is not None:
                release()
            if isinstance(exc, McpError) and names_tasks(exc):
                raise TaskRequired(
                    exc.code,
                    f"tool {name} runs only as a task, and the server refused this client's tasks extension",
                    exc.data,
                ) from None
            raise

    async def resume_task(self, task_id: str, *, on_status: StatusCallback | None = None) -> TaskHandle:
        """The handle of a task started earlier, by this client or another (its id is all
        it takes: e.g. one kept across a restart), after a first ``tasks/get``. Its result
        is not checked against an outputSchema (the tool is not known)."""
        first = TaskStatus(task_id=task_id, status="working")
        session = self._tasks_session()
        kind = TaskHandle if session.modern is not None else HandshakeTaskHandle
        handle = kind(session, "", first, on_status=on_status, request_timeout=self.request_timeout)
        await handle.status()
        return handle

    @property
    def tasks_offered(self) -> bool:
        """Whether tool calls can run as tasks on this connection: the stateless era (the
        server decides per call), or a handshake-era server of a revision with tasks
        (2025-11-25) that offers them for ``tools/call``."""
        session = self.session
        return session.modern is not None or handshake_tasks_offered(session, self.initialize_result)

    def _tasks_session(self) -> ClientSession:
        session = self.session
        if not self.tasks_offered:
            raise TasksUnavailable(
                f"this server offers no tasks for tools/call (protocol {session.protocol_version}): call the tool "
                "with call_tool(), or connect in the stateless era to a server that has the tasks extension"
            )
        return session

    async def _call_as_task(
        self, name: str, arguments: dict[str, Any] | None, on_progress: ProgressCallback | None, timeout: float | None
    ) -> CallToolResult:
        if not self.tasks_offered:
            # A plain call: if the tool runs only as a task, the server says so in its own words.
            return await self.call_tool(name, arguments, on_progress=on_progress, timeout=timeout)
        handle = await self.start_task(name, arguments, on_progress=on_progress)
        try:
            return await handle.wait(timeout)
        except (TaskFailed, TaskCancelled):
            raise
        except BaseException:
            # The caller stopped waiting (a timeout, a cancellation, a question it cannot
            # answer): nobody will collect the result, so ask the server to stop, as a
            # plain call's cancellation would.
            if not handle.done and self.session.is_open:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(handle.cancel(), 5)
            raise


__all__ = ["TaskCalls"]
