"""Tasks in the handshake era, client side: the experimental tasks of 2025-11-25 (SEP-1686).

That revision's ``tools/call`` takes a ``task`` member (``{"ttl": ms}``), and a server that
offers tasks for it (``capabilities.tasks.requests.tools.call``) answers with a
``CreateTaskResult`` (``{"task": {...}}``) instead of the result. The client then polls
``tasks/get`` (the task's fields at the top of the result: ``pollInterval``, ``ttl``) and
fetches the outcome with ``tasks/result``, which blocks until the task ends and returns
what the call itself would have: the tool's result, or its JSON-RPC error. A task that
needs input says ``input_required``; its questions (elicitation, sampling) reach the client
as ordinary server requests while ``tasks/result`` is pending, so the client's handlers
answer them as they answer any other: there is no ``tasks/update`` in this revision.

The stateless era's extension (``tasks.py``) differs in every one of these points, so the
handle here reuses only the shape (:class:`TaskHandle`: ``status``, ``wait``, ``cancel``).
Whether a connection has these tasks is a revision fact: the version's ``tasks/result``.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import UNSET

from mcpgen.protocol.v2025_11_25 import CallToolResult, InitializeResult
from mcpgen.runtime.client.stateless import InvalidResult
from mcpgen.runtime.client.tasks import (
    STATUSES,
    Finish,
    StatusCallback,
    TaskCancelled,
    TaskFailed,
    TaskHandle,
    TaskStatus,
    TaskTimeout,
    answered_at_once,
    poll_delay,
)
from mcpgen.runtime.errors import INTERNAL_ERROR, McpError
from mcpgen.runtime.versions import method_exists

if TYPE_CHECKING:
    from mcpgen.runtime.client.session import ClientSession


def offered(session: ClientSession, initialized: InitializeResult | None) -> bool:
    """Whether this handshake-era connection can run ``tools/call`` as a task: the version
    has tasks and the server said it runs tool calls as tasks."""
    version = session.protocol_version
    if initialized is None or version is None or not method_exists("c2s", "tasks/result", version):
        return False
    tasks = initialized.capabilities.tasks
    if tasks is UNSET or tasks.requests is UNSET:
        return False
    requests = tasks.requests
    tools = getattr(requests, "tools", UNSET)
    return tools is not UNSET and getattr(tools, "call", UNSET) is not UNSET


class _Task(msgspec.Struct):
    """A task as 2025-11-25 sends it (``CreateTaskResult.task``, ``tasks/get``), read
    leniently: members are checked by :func:`read_task`."""

    task_id: Any = msgspec.field(default=UNSET, name="taskId")
    status: Any = UNSET
    status_message: Any = msgspec.field(default=UNSET, name="statusMessage")
    created_at: Any = msgspec.field(default=UNSET, name="createdAt")
    last_updated_at: Any = msgspec.field(default=UNSET, name="lastUpdatedAt")
    ttl: Any = UNSET
    poll_interval: Any = msgspec.field(default=UNSET, name="pollInterval")


class _Created(msgspec.Struct):
    task: Any = UNSET


_task = msgspec.json.Decoder(_Task)
_created = msgspec.json.Decoder(_Created)


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def read_task(raw: bytes | msgspec.Raw, method: str) -> TaskStatus:
    try:
        wire = _task.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise InvalidResult(f"{method}: not a task: {exc}") from None
    return _status(wire, method)


def _status(wire: _Task, method: str) -> TaskStatus:
    if not isinstance(wire.task_id, str) or not wire.task_id:
        raise InvalidResult(f"{method}: the task has no taskId")
    if wire.status not in STATUSES:
        raise InvalidResult(f"{method}: task {wire.task_id} has an unknown status {wire.status!r}")
    return TaskStatus(
        task_id=wire.task_id,
        status=wire.status,
        status_message=wire.status_message if isinstance(wire.status_message, str) else None,
        created_at=wire.created_at if isinstance(wire.created_at, str) else None,
        last_updated_at=wire.last_updated_at if isinstance(wire.last_updated_at, str) else None,
        ttl_ms=_positive(wire.ttl),
        poll_interval_ms=_positive(wire.poll_interval),
    )


class HandshakeTaskHandle(TaskHandle):
    """A 2025-11-25 task: polled with ``tasks/get``, its outcome fetched with
    ``tasks/result`` (which is also where the task's questions get asked)."""

    async def _request(self, method: str, extra: dict[str, Any] | None = None) -> msgspec.Raw:
        return await self._call(method, self._timeout)

    async def _call(self, method: str, timeout: float | None) -> msgspec.Raw:
        params = {"taskId": self.last.task_id}
        raw: msgspec.Raw = await self.session.send_request(method, params, msgspec.Raw, timeout=timeout)
        return raw

    async def status(self) -> TaskStatus:
        if self.task_id is None:
            return self.last
        status = read_task(await self._request("tasks/get"), "tasks/get")
        if status.task_id != self.last.task_id:
            raise InvalidResult(f"tasks/get: asked for task {self.last.task_id}, got {status.task_id}")
        await self.observe(status)
        return status

    async def update(self, responses: dict[str, Any]) -> None:
        raise McpError(
            INTERNAL_ERROR,
            "a 2025-11-25 task takes its answers as server requests during tasks/result, not tasks/update",
        )

    async def answer(self) -> bool:
        return False  # its questions arrive as requests while tasks/result waits

    async def wait(self, timeout: float | None = None) -> CallToolResult:
        try:
            return await asyncio.wait_for(self._run(), timeout)
        except TimeoutError:
            raise TaskTimeout(self, timeout or 0.0) from None

    async def _run(self) -> CallToolResult:
        # Poll until the task ends or asks for input, then ask for its outcome: tasks/result
        # blocks until the end, and a task that needs input asks while it is pending.
        while self.last.status == "working":
            await asyncio.sleep(poll_delay(self.last))
            await self.status()
        if self.last.status == "cancelled":
            raise TaskCancelled(self.last)
        if self.last.result is None:
            await self._fetch()
        return self._outcome()

    async def _fetch(self) -> None:
        try:
            raw = await self._call("tasks/result", None)
        except McpError as exc:
            # The call's own error: the task failed with it.
            error: dict[str, Any] = {"code": exc.code, "message": exc.message}
            if exc.data is not UNSET:
                error["data"] = exc.data
            failed = dataclasses.replace(self.last, status="failed", error=error)
            await self.observe(failed)
            raise TaskFailed(failed, exc.code, exc.message, exc.data) from None
        try:
            result = msgspec.json.decode(raw, type=CallToolResult)
        except msgspec.ValidationError as exc:
            raise InvalidResult(f"tasks/result: task {self.last.task_id} ended with an invalid result: {exc}") from None
        ended = await self.status()  # how it ended (the last poll may predate the end)
        if ended.status == "failed" and not result.is_error:
            # A failed task whose stored outcome is a result that claims success: report
            # the failure the server stated, with its message.
            raise TaskFailed(ended, INTERNAL_ERROR, ended.status_message or f"task {ended.task_id} failed")
        await self.observe(dataclasses.replace(ended, status="completed", result=result))


async def open_handshake_task(
    session: ClientSession,
    tool: str,
    raw: msgspec.Raw,
    *,
    finish: Finish,
    on_status: StatusCallback | None = None,
    request_timeout: float | None = None,
    release: Callable[[], None] | None = None,
) -> TaskHandle:
    """The handle of a task-augmented ``tools/call`` answered with ``raw``: a task, or the
    result itself when the server ran the call at once (a handle already done)."""
    try:
        created = _created.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise InvalidResult(f"tools/call: not a result: {exc}") from None
    if not isinstance(created.task, dict):
        return answered_at_once(session, tool, raw, CallToolResult, finish, request_timeout, release)
    first = _status(msgspec.convert(created.task, _Task), "tools/call")
    handle = HandshakeTaskHandle(
        session, tool, first, finish=finish, on_status=on_status, request_timeout=request_timeout, release=release
    )
    await handle.observe(first)
    return handle


__all__ = ["HandshakeTaskHandle", "offered", "open_handshake_task", "read_task"]
