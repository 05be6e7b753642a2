"""Tasks, client side: the ``io.modelcontextprotocol/tasks`` extension (SEP-2663).

A stateless-era client that declares the extension in a request's capabilities lets the
server answer that ``tools/call`` with a task instead of the result (``resultType:
"task"``); the server alone decides, so the same call may also come back complete. The
client then polls ``tasks/get`` until the task is terminal (``completed`` inlines the
tool's result, ``failed`` a JSON-RPC error, ``cancelled``), answers the questions of a task
parked in ``input_required`` with ``tasks/update`` (through the handlers that answer an
InputRequiredResult: the Client's elicitation, sampling and roots), and may ask for
``tasks/cancel``. Each of these requests declares the extension too (a request without
it is refused with -32021), and over HTTP names the task in ``Mcp-Name``.

:class:`TaskHandle` is what ``Client.start_task`` returns; ``Client.call_tool(...,
task=True)`` drives one to its end and returns the result as a plain call would.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import UNSET

from mcpgen.protocol import v2025_11_25 as handshake
from mcpgen.protocol.v2025_11_25 import CallToolResult
from mcpgen.runtime.client.stateless import (
    InvalidResult,
    StatelessCallToolResult,
    answer_inputs,
    head_decoder,
)
from mcpgen.runtime.errors import INTERNAL_ERROR, MISSING_CAPABILITY, McpError, RequestTimeout
from mcpgen.runtime.jsonrpc.session import ProgressCallback
from mcpgen.runtime.shared.meta import META_CAPABILITIES, TASKS_EXTENSION

if TYPE_CHECKING:
    from mcpgen.runtime.client.session import ClientSession

log = logging.getLogger("mcpgen")

STATUSES = frozenset({"working", "input_required", "completed", "failed", "cancelled"})
TERMINAL = frozenset({"completed", "failed", "cancelled"})
# Polling honours the server's pollIntervalMs within these bounds: a server asking for 0
# would have the client spin on tasks/get, one asking for minutes would leave a finished
# task unnoticed that long. Without a hint the client polls twice a second.
MIN_POLL = 0.05
MAX_POLL = 5.0
DEFAULT_POLL = 0.5
# The _meta that declares the extension on one request (merged into the client's own
# capabilities by the stateless envelope).
TASKS_META: dict[str, Any] = {META_CAPABILITIES: {"extensions": {TASKS_EXTENSION: {}}}}

StatusCallback = Callable[["TaskStatus"], Awaitable[None] | None]
Finish = Callable[[CallToolResult], CallToolResult]


class TasksUnavailable(McpError):
    """Tasks were asked for on a connection that cannot have them (the handshake era: the
    extension exists only from 2026-07-28 on)."""

    def __init__(self, message: str) -> None:
        super().__init__(INTERNAL_ERROR, message)


class TaskRequired(McpError):
    """The tool runs only as a task, and this call could not be one. Carries the server's
    -32021 error (code and data) when the server said so."""


class TaskFailed(McpError):
    """The task ended ``failed``: its JSON-RPC error (code, message, data) is this one's."""

    def __init__(self, status: TaskStatus, code: int, message: str, data: Any = UNSET) -> None:
        super().__init__(code, message, data)
        self.status = status


class TaskCancelled(Exception):
    """The task ended ``cancelled`` (asked for by this client or decided by the server)."""

    def __init__(self, status: TaskStatus) -> None:
        why = f": {status.status_message}" if status.status_message else ""
        super().__init__(f"task {status.task_id} was cancelled{why}")
        self.status = status


class TaskTimeout(RequestTimeout):
    """``wait`` gave up before the task ended. The task itself goes on: the handle can
    still be polled, waited on again or cancelled."""

    def __init__(self, handle: TaskHandle, seconds: float) -> None:
        last = handle.last
        super().__init__(f"task {last.task_id} still {last.status} after {seconds:g} s")
        self.handle = handle


class _Wire(msgspec.Struct):
    """A task as the server sends it (CreateTaskResult, tasks/get), read leniently:
    members are checked by :func:`read_status`, unknown ones skipped."""

    result_type: Any = msgspec.field(default=UNSET, name="resultType")
    task_id: Any = msgspec.field(default=UNSET, name="taskId")
    status: Any = UNSET
    status_message: Any = msgspec.field(default=UNSET, name="statusMessage")
    created_at: Any = msgspec.field(default=UNSET, name="createdAt")
    last_updated_at: Any = msgspec.field(default=UNSET, name="lastUpdatedAt")
    ttl_ms: Any = msgspec.field(default=UNSET, name="ttlMs")
    poll_interval_ms: Any = msgspec.field(default=UNSET, name="pollIntervalMs")
    # The SEP's draft text spells it out; conformance (alpha.12) checks pollIntervalMs.
    poll_interval_long: Any = msgspec.field(default=UNSET, name="pollIntervalMilliseconds")
    input_requests: Any = msgspec.field(default=UNSET, name="inputRequests")
    result: Any = UNSET
    error: Any = UNSET
    request_state: Any = msgspec.field(default=UNSET, name="requestState")


_wire = msgspec.json.Decoder(_Wire)


@dataclass(frozen=True)
class TaskStatus:
    """One observation of a task. ``result`` is set when it completed (a tool that
    reported an error completes too, with ``result.is_error``); ``error`` when it failed;
    ``input_requests`` (key -> ``{"method", "params"}``) while it waits for input."""

    task_id: str
    status: str
    status_message: str | None = None
    created_at: str | None = None
    last_updated_at: str | None = None
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None
    input_requests: dict[str, Any] = field(default_factory=dict)
    result: CallToolResult | None = None
    error: dict[str, Any] | None = None

    @property
    def done(self) -> bool:
        return self.status in TERMINAL


def _positive_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def read_status(raw: bytes | msgspec.Raw, method: str, *, seed: bool = False) -> tuple[TaskStatus, str | None]:
    """A task object (``method`` names where it came from, for errors) and the
    ``requestState`` to echo next (None when it carried none). ``seed``: a
    CreateTaskResult, whose result, error and inputRequests the SEP says not to use (they
    are not part of it; ``tasks/get`` tells them)."""
    try:
        wire = _wire.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise InvalidResult(f"{method}: not a task: {exc}") from None
    if not isinstance(wire.task_id, str) or not wire.task_id:
        raise InvalidResult(f"{method}: the task has no taskId")
    if wire.status not in STATUSES:
        raise InvalidResult(f"{method}: task {wire.task_id} has an unknown status {wire.status!r}")
    result: CallToolResult | None = None
    error: dict[str, Any] | None = None
    requests: dict[str, Any] = {}
    if seed:
        pass
    elif wire.status == "completed":
        if not isinstance(wire.result, dict):
            raise InvalidResult(f"{method}: task {wire.task_id} completed without a result")
        try:
            result = handshake.convert(wire.result, StatelessCallToolResult)
        except msgspec.ValidationError as exc:
            raise InvalidResult(f"{method}: task {wire.task_id} completed with an invalid result: {exc}") from None
    elif wire.status == "failed":
        error = wire.error if isinstance(wire.error, dict) else {}
    elif wire.status == "input_required" and isinstance(wire.input_requests, dict):
        requests = wire.input_requests
    interval = _positive_int(wire.poll_interval_ms)
    status = TaskStatus(
        task_id=wire.task_id,
        status=wire.status,
        status_message=wire.status_message if isinstance(wire.status_message, str) else None,
        created_at=wire.created_at if isinstance(wire.created_at, str) else None,
        last_updated_at=wire.last_updated_at if isinstance(wire.last_updated_at, str) else None,
        ttl_ms=_positive_int(wire.ttl_ms),
        poll_interval_ms=interval if interval is not None else _positive_int(wire.poll_interval_long),
        input_requests=requests,
        result=result,
        error=error,
    )
    return status, wire.request_state if isinstance(wire.request_state, str) else None


def names_tasks(exc: McpError) -> bool:
    """Whether an error is the server's "this tool runs only as a task" (-32021 whose
    ``requiredCapabilities`` name the extension)."""
    if exc.code != MISSING_CAPABILITY or not isinstance(exc.data, dict):
        return False
    required = exc.data.get("requiredCapabilities")
    extensions = required.get("extensions") if isinstance(required, dict) else None
    return isinstance(extensions, dict) and TASKS_EXTENSION in extensions


def poll_delay(status: TaskStatus) -> float:
    """Seconds to wait before the next ``tasks/get``: the server's hint, bounded."""
    if status.poll_interval_ms is None:
        return DEFAULT_POLL
    return min(max(status.poll_interval_ms / 1000, MIN_POLL), MAX_POLL)


async def open_task(
    session: ClientSession,
    tool: str,
    raw: msgspec.Raw,
    *,
    finish: Finish,
    on_status: StatusCallback | None = None,
    request_timeout: float | None = None,
    release: Callable[[], None] | None = None,
) -> TaskHandle:
    """The handle of a ``tools/call`` answered with ``raw``: a task, or (the server chose
    to answer at once) the result itself, in a handle that is already done."""
    if head_decoder.decode(raw).result_type != "task":
        return answered_at_once(session, tool, raw, StatelessCallToolResult, finish, request_timeout, release)
    seed, state = read_status(raw, "tools/call", seed=True)
    handle = TaskHandle(
        session, tool, seed, state, finish=finish, on_status=on_status, request_timeout=request_timeout, release=release
    )
    await handle.observe(seed)
    if seed.status != "working":  # its details (result, error, questions) come from tasks/get
        await handle.status()
    return handle


def answered_at_once(
    session: ClientSession,
    tool: str,
    raw: msgspec.Raw,
    kind: type[CallToolResult],
    finish: Finish,
    request_timeout: float | None,
    release: Callable[[], None] | None,
) -> TaskHandle:
    """A handle already done: the server answered the task-augmented call with the result
    itself (``raw``, decoded as ``kind``), as it may."""
    try:
        result = msgspec.json.decode(raw, type=kind)
    except msgspec.ValidationError as exc:
        raise McpError(INTERNAL_ERROR, f"Invalid result from peer: {exc}") from None
    if release is not None:
        release()
    done = TaskStatus(task_id="", status="completed", result=finish(result))
    return TaskHandle(session, tool, done, request_timeout=request_timeout)


def watch_progress(session: ClientSession, on_progress: ProgressCallback) -> tuple[str, Callable[[], None]]:
    """A progress token for a task's call, and the function that stops watching it. A
    task outlives the request that started it, so its progress is not tied to that
    request's id (as a plain call's is) but to a token of its own, routed by the
    session's progress table for as long as the task runs."""
    token = f"task-{secrets.token_hex(8)}"
    table = session.progress_handlers  # the engine's dispatch of notifications/progress by token
    table[token] = on_progress

    def release() -> None:
        table.pop(token, None)

    return token, release


class TaskHandle:
    """A tool call the server runs as a task (or, when ``task_id`` is None, one it chose
    to answer at once: the result is already there).

    ``status()`` asks once; ``wait()`` polls until the end, answering the task's
    questions on the way; ``cancel()`` asks the server to stop it. ``on_status`` (given to
    ``start_task``) sees every observation whose status, message or questions changed, and
    ``on_progress`` the server's progress notifications for the call, while it runs.
    """

    def __init__(
        self,
        session: ClientSession,
        tool: str,
        first: TaskStatus,
        request_state: str | None = None,
        *,
        finish: Finish | None = None,
        on_status: StatusCallback | None = None,
        request_timeout: float | None = None,
        release: Callable[[], None] | None = None,
    ) -> None:
        self.session = session
        self.tool = tool
        self.last = first
        self._state = request_state
        self._finish = finish
        self._on_status = on_status
        self._timeout = request_timeout
        self._release = release
        self._answered: set[str] = set()  # input keys answered (a key is never reused)
        self._seen: tuple[str, str | None, tuple[str, ...]] | None = None

    @property
    def task_id(self) -> str | None:
        """The server's task id (None when the server answered without a task)."""
        return self.last.task_id or None

    @property
    def done(self) -> bool:
        return self.last.done

    def __repr__(self) -> str:
        return f"<TaskHandle {self.tool} {self.task_id or '(no task)'} {self.last.status}>"

    # ------------------------------------------------------------ requests

    async def _request(self, method: str, extra: dict[str, Any] | None = None) -> msgspec.Raw:
        params: dict[str, Any] = {"taskId": self.last.task_id, **(extra or {}), "_meta": TASKS_META}
        if self._state is not None:
            params["requestState"] = self._state  # the SEP: echo the latest one, if any
        raw: msgspec.Raw = await self.session.send_request(method, params, msgspec.Raw, timeout=self._timeout)
        return raw

    async def status(self) -> TaskStatus:
        """Ask the server for the task's state (``tasks/get``)."""
        if self.task_id is None:
            return self.last
        raw = await self._request("tasks/get")
        status, state = read_status(raw, "tasks/get")
        if status.task_id != self.last.task_id:
            raise InvalidResult(f"tasks/get: asked for task {self.last.task_id}, got {status.task_id}")
        self._state = state
        await self.observe(status)
        return status

    async def update(self, responses: dict[str, Any]) -> None:
        """Send answers to the task's input requests (``tasks/update``), keyed as asked."""
        if self.task_id is None:
            raise McpError(INTERNAL_ERROR, "this call made no task: there is nothing to update")
        await self._request("tasks/update", {"inputResponses": responses})
        self._answered.update(responses)

    async def answer(self) -> bool:
        """Answer the questions of the last observation not answered yet, through the
        client's handlers (as for an InputRequiredResult); False when there were none."""
        pending = {k: v for k, v in self.last.input_requests.items() if k not in self._answered}
        if self.last.status != "input_required" or not pending:
            return False
        # The session's own answering of an InputRequiredResult's questions: the same
        # handlers, the same errors (MissingInputHandler when one is not there).
        await self.update(await answer_inputs(pending, self.session.ask))
        return True

    async def cancel(self) -> None:
        """Ask the server to cancel the task (``tasks/cancel``). Cooperative: the server
        acknowledges, and the task usually (not always) ends ``cancelled``; ``wait`` or
        ``status`` says how it ended. Nothing to do when it has ended already."""
        if self.task_id is None or self.done:
            return
        await self._request("tasks/cancel")

    async def wait(self, timeout: float | None = None) -> CallToolResult:
        """Poll until the task ends, answering its questions on the way, and return the
        tool's result (a tool error is a result with ``is_error``). Raises
        :class:`TaskFailed` or :class:`TaskCancelled` as it ended, or
        :class:`TaskTimeout` after ``timeout`` seconds (the task goes on)."""
        if timeout is None:
            return await self._run()
        try:
            return await asyncio.wait_for(self._run(), timeout)
        except TimeoutError:
            if self.done:  # ended between the last poll and the deadline
                return self._outcome()
            raise TaskTimeout(self, timeout) from None

    async def _run(self) -> CallToolResult:
        while not self.done:
            if await self.answer():
                await self.status()  # answered: look again at once
                continue
            await asyncio.sleep(poll_delay(self.last))
            await self.status()
        return self._outcome()

    def _outcome(self) -> CallToolResult:
        last = self.last
        if last.status == "completed":
            assert last.result is not None
            return self._finish(last.result) if self._finish is not None else last.result
        if last.status == "cancelled":
            raise TaskCancelled(last)
        error = last.error or {}
        code = error.get("code")
        message = error.get("message")
        raise TaskFailed(
            last,
            code if isinstance(code, int) and not isinstance(code, bool) else INTERNAL_ERROR,
            message if isinstance(message, str) and message else f"task {last.task_id} failed",
            error.get("data", UNSET),
        )

    async def observe(self, status: TaskStatus) -> None:
        self.last = status
        if status.done:
            self._ended()
        seen = (status.status, status.status_message, tuple(status.input_requests))
        if seen != self._seen and self._on_status is not None:
            self._seen = seen
            try:
                outcome = self._on_status(status)
                if outcome is not None:
                    await outcome
            except Exception:
                log.exception("mcpgen: a task status callback failed")

    def _ended(self) -> None:
        if self._release is not None:
            release, self._release = self._release, None
            release()

    async def __aenter__(self) -> TaskHandle:
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Leaving an ``async with`` block before the task ended cancels it."""
        if not self.done and self.session.is_open:
            with contextlib.suppress(McpError, ConnectionError, TimeoutError):
                await self.cancel()
        self._ended()


__all__ = [
    "TaskCancelled",
    "TaskFailed",
    "TaskHandle",
    "TaskRequired",
    "TaskStatus",
    "TaskTimeout",
    "TasksUnavailable",
]
