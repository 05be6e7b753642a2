"""The tasks extension (SEP-2663, ``io.modelcontextprotocol/tasks``), server side.

A tool declared task-capable (``@server.tool(task="optional")``) or task-only
(``task="required"``) is an ordinary ``async def`` (or plain ``def``). When a stateless-era
``tools/call`` for it declares the extension in its ``_meta`` client capabilities, the
server answers at once with a CreateTaskResult (``resultType: "task"``) and runs the tool
in the background; the client then polls ``tasks/get``, answers questions with
``tasks/update`` and may ``tasks/cancel``. Without the declaration an optional tool runs
as an ordinary call, and a required one is refused with -32021.

Inside a task, ``ctx.elicit`` / ``ctx.sample`` / ``ctx.list_roots`` park the task in
``input_required`` (the question is listed by ``tasks/get``) until ``tasks/update``
delivers the answer; ``ctx.report_progress`` still sends progress on the request's stream
(stdio: the connection) and also shows as the task's ``statusMessage``. A tool declared
``task_start="explicit"`` runs inside its request first (its questions are MRTR rounds,
InputRequiredResult and retry) and becomes a task when it awaits
``ctx.continue_as_task()``.

Everything a task is lives in the :class:`~mcpgen.runtime.stores.task_store.TaskStore`: any
worker sharing the store can answer ``tasks/get`` / ``update`` / ``cancel``; the worker
running the task learns of answers and cancellations by watching its record. Here, in
this process, is only the asyncio task running each tool (dropped when it settles).

Principals: a task records who created it, :attr:`TaskManager.owner` of the request; by
default the verified access token's issuer and subject (else its client id, named as such:
:attr:`~mcpgen.runtime.auth.info.AuthInfo.owner`) on a server protected with
``Server(auth=...)``. A request of any other principal gets -32602, as if the task did not
exist. On an unprotected server (and over stdio) there is no principal: a task is then
readable by whoever holds its id (192 random bits). Set ``owner`` to a function of the
request to use another notion of principal.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from functools import partial
from typing import Any, Literal, TypeVar

import msgspec

from mcpgen.runtime.auth.info import current_owner
from mcpgen.runtime.errors import INTERNAL_ERROR, INVALID_PARAMS, MISSING_CAPABILITY, SERVER_BUSY, McpError
from mcpgen.runtime.jsonrpc.context import RequestContext, current_request
from mcpgen.runtime.jsonrpc.kernel import NOT_NOW, Ready
from mcpgen.runtime.server.input_required import answer_as_result, wire_params
from mcpgen.runtime.server.stateless import (
    FrontHost,
    StatelessPeer,
    StatelessRequest,
    StatelessServer,
    scope,
)
from mcpgen.runtime.server.task_ledger import Ledger
from mcpgen.runtime.shared.caller import caller_key
from mcpgen.runtime.shared.extension import Extension, ExtensionMethod
from mcpgen.runtime.shared.meta import TASKS_EXTENSION
from mcpgen.runtime.stores.shared_store import StoreUnavailable
from mcpgen.runtime.stores.task_store import (
    Leases,
    MemoryTaskStore,
    TaskRecord,
    TaskStore,
    decode_record,
    encode_record,
)

log = logging.getLogger("mcpgen")
T = TypeVar("T")

METHODS = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})
TaskSupport = Literal["optional", "required"]
TaskStart = Literal["call", "explicit"]

# method -> (the client capability it needs, the result type its answer must be)
_ASKS = {
    "elicitation/create": ("elicitation", "ElicitResult"),
    "sampling/createMessage": ("sampling", "CreateMessageResult"),
    "roots/list": ("roots", "ListRootsResult"),
}
_SHORT = {"elicitation/create": "elicitation", "sampling/createMessage": "sampling", "roots/list": "roots"}
_REQUIRED: dict[str, Any] = {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}
_TOOL_DONE: Any = object()
OUTCOME_PATIENCE = 600.0
"""Seconds a settled task's outcome is retried while its store is down, before it is given up."""
ORPHANED = (
    "The server process running this task stopped before it finished (its lease lapsed); "
    "its outcome is unknown: call the tool again"
)


class _Outage:
    """A store outage as one task's runner meets it: how long to wait before the next try
    (0.1 s, doubling to 5 s), and one warning per outage."""

    def __init__(self, task_id: str) -> None:
        self.task_id = task_id
        self.tries = 0

    def note(self, exc: StoreUnavailable) -> None:
        if self.tries == 0:
            log.warning("mcpgen: task %s goes on while its store is away: %s", self.task_id, exc.message)
        self.tries += 1

    def delay(self) -> float:
        return float(min(5.0, 0.1 * 2 ** min(self.tries, 6)))

    def over(self) -> None:
        if self.tries:
            log.warning("mcpgen: task %s reaches its store again", self.task_id)
        self.tries = 0


def declares_tasks(capabilities: Mapping[str, Any]) -> bool:
    """Whether a request's client capabilities declare the tasks extension."""
    extensions = capabilities.get("extensions")
    return isinstance(extensions, dict) and TASKS_EXTENSION in extensions


class _Unknown(McpError):
    def __init__(self, task_id: Any) -> None:
        super().__init__(INVALID_PARAMS, f"Invalid params: unknown task {task_id!r}")


class TaskManager:
    """Creates, runs and answers for the tasks of one :class:`~mcpgen.runtime.server.server.Server`.

    ``ttl_ms``: how long a task stays readable after its last change (sent as ``ttlMs``;
    None keeps it until the store is closed); ``poll_interval_ms``: the polling pace
    suggested to clients."""

    def __init__(
        self,
        server: FrontHost,
        store: TaskStore | None = None,
        *,
        ttl_ms: int | None = 3_600_000,
        poll_interval_ms: int = 500,
        max_running: int | None = None,
        max_per_principal: int | None = None,
    ) -> None:
        """``max_running``: tasks whose tool runs at once in this process (default: the
        server's ``max_concurrency``); ``max_per_principal``: of those, one principal's on a
        protected server (default: half of ``max_running``, at least 1). A task call beyond
        either is refused at once with -32000 ("server busy"), as a plain call beyond the
        session's bound is; nothing already running is touched."""
        self.server = server
        self.store: TaskStore = store if store is not None else MemoryTaskStore()
        self.ttl_ms = ttl_ms
        self.poll_interval_ms = poll_interval_ms
        self.owner: Callable[[StatelessRequest], str | None] = principal
        self.max_running = max_running if max_running is not None else server.session_options["max_concurrency"]
        self.max_per_principal = max_per_principal if max_per_principal is not None else max(1, self.max_running // 2)
        self._running: dict[str, asyncio.Task[None]] = {}
        self._starting = 0  # tools started by a request that has not handed them over yet
        self._by_owner: dict[str, int] = {}  # running tasks (and starts) per principal
        # The records this process created, counted until they expire (task_ledger).
        self.records = Ledger()

    @property
    def running(self) -> int:
        """Tasks of this process whose tool has not settled yet."""
        return len(self._running)

    # ------------------------------------------------------------ admission

    @staticmethod
    def check(request: StatelessRequest, raw: dict[str, Any]) -> None:
        """What a ``tasks/*`` request needs beyond the era's checks (its ``_meta``, version,
        Mcp-Method and Mcp-Name, made already): -32021, then -32602."""
        if not declares_tasks(request.capabilities):
            raise McpError(MISSING_CAPABILITY, f"{request.method} needs the {TASKS_EXTENSION} extension", _REQUIRED)
        if not isinstance(raw.get("taskId"), str):
            raise McpError(INVALID_PARAMS, "Invalid params: taskId must be a string")
        if request.method == "tasks/update" and not isinstance(raw.get("inputResponses"), dict):
            raise McpError(INVALID_PARAMS, "Invalid params: inputResponses must be an object")

    # ------------------------------------------------------------ tasks/get, update, cancel

    async def serve(self, front: StatelessServer, request: StatelessRequest, raw: dict[str, Any]) -> dict[str, Any]:
        task_id: str = raw["taskId"]
        owner = self.owner(request)
        if request.method == "tasks/get":
            record = await self._load(task_id, owner)
            return self._detailed(record)
        if request.method == "tasks/update":
            responses: dict[str, Any] = raw["inputResponses"]
            await self._load(task_id, owner)
            await self._revise(task_id, lambda record: _deliver(record, responses))
        else:  # tasks/cancel: idempotent; a terminal task keeps its status
            await self._load(task_id, owner)
            await self._revise(task_id, _cancel)
        return {}

    async def _load(self, task_id: str, owner: str | None) -> TaskRecord:
        data = await self.store.get(task_id)
        if data is None:
            raise _Unknown(task_id)
        record = decode_record(data)
        if record.owner is not None and record.owner != owner:
            raise _Unknown(task_id)  # not this principal's: as if it did not exist
        if not record.terminal and record.worker is not None and isinstance(self.store, Leases):
            # Its worker's lease lapsed: that process is gone, and the task with it.
            if record.worker != self.store.worker and not await self.store.alive(record.worker):
                log.warning("mcpgen: task %s lost its worker (lease lapsed); it has failed", task_id)
                record = await self._revise(task_id, _orphaned) or record
        return record

    def _detailed(self, record: TaskRecord) -> dict[str, Any]:
        """The DetailedTask ``tasks/get`` answers with (no requestState, no v1 _meta)."""
        out = self._task_fields(record)
        if record.status == "input_required" and record.input_requests:
            out["inputRequests"] = record.input_requests
        elif record.status == "completed" and record.result is not None:
            out["result"] = record.result
        elif record.status == "failed" and record.error is not None:
            out["error"] = record.error
        return out

    @staticmethod
    def _task_fields(record: TaskRecord) -> dict[str, Any]:
        out: dict[str, Any] = {
            "taskId": record.task_id,
            "status": record.status,
            "createdAt": record.created_at,
            "lastUpdatedAt": record.last_updated_at,
            "ttlMs": record.ttl_ms,
        }
        if record.poll_interval_ms is not None:
            out["pollIntervalMs"] = record.poll_interval_ms
        if record.status_message is not None:
            out["statusMessage"] = record.status_message
        return out

    # ------------------------------------------------------------ tools/call

    async def call_tool(self, front: StatelessServer, request: StatelessRequest, params: Any) -> Any:
        """The answer to a ``tools/call`` of a task-capable tool, or None when it is to run
        as an ordinary call (the client did not declare the extension)."""
        found = self.server.task_support(params.name)
        assert found is not None
        support, start = found
        if not declares_tasks(request.capabilities):
            if support == "required":
                raise McpError(
                    MISSING_CAPABILITY, f"Tool {params.name} runs only as a task: declare {TASKS_EXTENSION}", _REQUIRED
                )
            return None
        owner = self.owner(request)
        self._admit(owner)
        self._starting += 1
        self._hold(owner, +1)
        try:
            if start == "explicit":
                return await self._call_then_hand_off(front, request, params, owner)
            record = await self.create(params.name, owner)
            peer = TaskPeer(self, front, request, record.task_id)
            tool = self._start_tool(front, request, params, peer)
            self._supervise(record.task_id, tool, owner, record)
            return Ready("task", self._task_fields(record))
        finally:  # from here on its supervisor counts it, if it runs as a task
            self._starting -= 1
            self._hold(owner, -1)

    def _admit(self, owner: str | None) -> None:
        """Room for one more running task, or -32000: for the server, and for the caller."""
        if len(self._running) + self._starting >= self.max_running:
            raise McpError(SERVER_BUSY, f"Server busy: {self.max_running} tasks running; retry later")
        if owner is not None and self._by_owner.get(owner, 0) >= self.max_per_principal:
            raise McpError(
                SERVER_BUSY, f"Server busy: this caller has {self.max_per_principal} tasks running; retry later"
            )

    def _hold(self, owner: str | None, step: int) -> None:
        """Count a running task (or a start) for its principal, or stop counting it."""
        if owner is not None:
            left = self._by_owner.get(owner, 0) + step
            if left > 0:
                self._by_owner[owner] = left
            else:
                self._by_owner.pop(owner, None)

    async def _call_then_hand_off(
        self, front: StatelessServer, request: StatelessRequest, params: Any, owner: str | None
    ) -> Any:
        """Run the tool inside this request until it returns (an ordinary answer, or an
        InputRequiredResult) or awaits ``ctx.continue_as_task()`` (a CreateTaskResult;
        the tool runs on as that task)."""
        loop = asyncio.get_running_loop()
        peer = TaskPeer(self, front, request, None)
        peer.handed = loop.create_future()
        peer.owner = owner
        peer.tool = params.name
        tool = self._start_tool(front, request, params, peer)
        try:
            await asyncio.wait((tool, peer.handed), return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            if not peer.handed.done():
                tool.cancel()  # the request was cancelled or timed out before the hand-off
            raise
        if peer.handed.done():
            record: TaskRecord = peer.handed.result()
            self._supervise(record.task_id, tool, owner, record)
            return Ready("task", self._task_fields(record))
        return tool.result()  # raises what the tool raised

    def _start_tool(
        self, front: StatelessServer, request: StatelessRequest, params: Any, peer: TaskPeer
    ) -> asyncio.Task[Any]:
        base = front.context(request, params)
        context = RequestContext(peer, base.request_id, base.method, base.meta, base.progress_token)
        token = current_request.set(context)
        try:  # the new task copies the context variables, this request's context with them
            return asyncio.ensure_future(self.server.dispatch(front.handshake.CLIENT_TO_SERVER["tools/call"], params))
        finally:
            current_request.reset(token)

    async def create(self, tool: str, owner: str | None) -> TaskRecord:
        caller = caller_key(current_owner())
        self.records.room_for_a_record(caller)
        leases = self.store if isinstance(self.store, Leases) else None
        if leases is not None:
            leases.keep_alive()  # the lease the task's record names, renewed while this process runs
        now = _now()
        while True:
            record = TaskRecord(
                task_id=secrets.token_urlsafe(24),
                status="working",
                created_at=now,
                last_updated_at=now,
                ttl_ms=self.ttl_ms,
                poll_interval_ms=self.poll_interval_ms,
                tool=tool,
                owner=owner,
                worker=leases.worker if leases is not None else None,
            )
            data = encode_record(record)
            if await self.store.create(record.task_id, data, self.ttl_ms):
                self.records.note(record.task_id, len(data), self.ttl_ms, caller, new=True)
                return record

    # ------------------------------------------------------------ running

    def _supervise(self, task_id: str, tool: asyncio.Task[Any], owner: str | None, record: TaskRecord) -> None:
        runner = asyncio.ensure_future(self._watch_over(task_id, tool, encode_record(record)))
        self._running[task_id] = runner
        self._hold(owner, +1)  # for as long as it runs (the start's own count ends just after)

        def done(_: object) -> None:
            self._running.pop(task_id, None)
            self._hold(owner, -1)

        runner.add_done_callback(done)

    async def _watch_over(self, task_id: str, tool: asyncio.Task[Any], last: bytes) -> None:
        """Wait for the tool to settle, cancelling it when its record says it ended (a
        ``tasks/cancel`` through any worker, or its lease lapsed); then write its outcome.

        A store that fails (a shared store down, frozen or restarting) stops nothing: the
        tool runs on while the watch is retried, and its outcome is written once the store
        answers again. A record the store lost (restarted empty) is put back as this
        process last knew it (``last``)."""
        outage = _Outage(task_id)
        try:
            seen: bytes | None = last
            beat = self._heartbeat()
            while not tool.done():
                try:
                    current = await self._watch(task_id, seen or last, beat, tool)
                    if current is _TOOL_DONE:
                        break
                    if current is None:  # the store lost it while the tool runs: put it back
                        if not await self.store.create(task_id, last, self.ttl_ms):
                            continue  # there after all: read it again
                        current = last
                    elif decode_record(current).terminal:
                        tool.cancel()  # cancelled, or failed elsewhere (its lease lapsed)
                        break
                    elif current == seen:  # quiet for a while: touch the record so it does not expire
                        touched = await self._revise(task_id, lambda record: record)
                        current = await self.store.get(task_id) if touched is not None else None
                        if current is None:
                            continue
                    outage.over()
                except StoreUnavailable as exc:
                    outage.note(exc)
                    await asyncio.wait((tool,), timeout=outage.delay())
                    continue
                seen = last = current
            await asyncio.wait((tool,))
        except asyncio.CancelledError:
            # The server is shutting down: stop the tool and say so in the record.
            tool.cancel()
            await asyncio.wait((tool,))
            with contextlib.suppress(Exception):
                await self._settle(
                    task_id, None, McpError(INTERNAL_ERROR, "The server stopped before the task finished")
                )
            raise
        await self._record_outcome(task_id, tool, last, outage)

    async def _watch(self, task_id: str, seen: bytes, beat: float, tool: asyncio.Task[Any]) -> Any:
        """The record once it differs from ``seen`` (or ``seen`` after ``beat`` seconds,
        None when gone), or ``_TOOL_DONE`` if the tool settles first."""
        watcher = asyncio.ensure_future(self.store.watch(task_id, seen, beat))
        try:
            await asyncio.wait((tool, watcher), return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not watcher.done():
                watcher.cancel()
        if not watcher.done() or watcher.cancelled():
            return _TOOL_DONE
        return watcher.result()

    async def _record_outcome(self, task_id: str, tool: asyncio.Task[Any], last: bytes, outage: _Outage) -> None:
        """Write the settled tool's outcome, retrying while the store is down (for up to
        ``OUTCOME_PATIENCE`` seconds); a record the store lost is put back first."""
        deadline = asyncio.get_running_loop().time() + OUTCOME_PATIENCE
        while True:
            try:
                if await self.store.get(task_id) is None:
                    await self.store.create(task_id, last, self.ttl_ms)
                if tool.cancelled():
                    await self._revise(task_id, _cancel)
                else:
                    failure = tool.exception()
                    await self._settle(task_id, None if failure is not None else tool.result(), failure)
                outage.over()
                return
            except StoreUnavailable as exc:
                if asyncio.get_running_loop().time() > deadline:
                    log.error("mcpgen: the outcome of task %s was not recorded: %s", task_id, exc.message)
                    return
                outage.note(exc)
                await asyncio.sleep(outage.delay())
            except Exception as exc:
                log.warning("mcpgen: the outcome of task %s was not recorded: %s", task_id, exc)
                return

    async def _settle(self, task_id: str, result: Any, failure: BaseException | None) -> None:
        if failure is None:
            wire = msgspec.json.encode(result)
            if not self.records.room_for(task_id, len(wire) + 512):
                # Refused rather than evicting someone's kept results: the task fails, saying why.
                limit = min(self.records.max_kept_bytes, self.records.max_kept_bytes_per_caller)
                failure = McpError(
                    INTERNAL_ERROR,
                    f"The task's result ({len(wire)} bytes) is more than this server keeps for its caller "
                    f"({limit} bytes of task records); call the tool again without a task",
                )
        if failure is None:
            body = msgspec.json.decode(wire)  # its wire form, as data

            def complete(record: TaskRecord) -> TaskRecord | None:
                if record.terminal:
                    return None
                record.status, record.result, record.input_requests = "completed", body, {}
                return record

            await self._revise(task_id, complete)
            return
        if isinstance(failure, McpError):
            error: dict[str, Any] = {"code": failure.code, "message": failure.message}
            if failure.data is not msgspec.UNSET:
                error["data"] = msgspec.to_builtins(failure.data)
        else:
            log.error("mcpgen: task %s failed", task_id, exc_info=failure)
            error = {"code": INTERNAL_ERROR, "message": "Internal error"}

        def fail(record: TaskRecord) -> TaskRecord | None:
            if record.terminal:
                return None
            record.status, record.error, record.input_requests = "failed", error, {}
            return record

        await self._revise(task_id, fail)

    def _heartbeat(self) -> float:
        """How long a runner waits between touches of a quiet record (well inside its TTL)."""
        return 300.0 if self.ttl_ms is None else max(0.05, min(300.0, self.ttl_ms / 3000))

    async def _revise(self, task_id: str, change: Callable[[TaskRecord], TaskRecord | None]) -> TaskRecord | None:
        """Apply ``change`` to the stored record (compare-and-swap, retried when another
        worker wrote in between). ``change`` returns None to leave it as it is. Returns the
        record as stored, or None when there is none."""
        while True:
            old = await self.store.get(task_id)
            if old is None:
                return None
            record = decode_record(old)
            revision = record.revision
            new = change(record)
            if new is None:
                return decode_record(old)
            new.revision = revision + 1
            new.last_updated_at = _now()
            data = encode_record(new)
            if await self.store.replace(task_id, old, data, new.ttl_ms):
                self.records.note(task_id, len(data), new.ttl_ms)
                return new

    async def aclose(self) -> None:
        """Stop every task this process runs (each is recorded ``failed``), then the store."""
        runners = list(self._running.values())
        for runner in runners:
            runner.cancel()
        if runners:
            await asyncio.wait(runners)
        await self.store.aclose()

    # ------------------------------------------------------------ questions from a task

    async def ask(self, peer: TaskPeer, method: str, params: Any, key: str | None) -> Any:
        """Park the task in ``input_required`` with this question until ``tasks/update``
        delivers its answer (through any worker)."""
        task_id = peer.task_id
        assert task_id is not None
        capability, result_name = _ASKS[method]
        if capability not in peer.request.capabilities:
            raise McpError(
                MISSING_CAPABILITY,
                f"Missing required client capability for {method}",
                {"requiredCapabilities": {capability: {}}},
            )
        short = _SHORT[method]
        peer.asked[short] = count = peer.asked.get(short, 0) + 1
        key = key or f"{short}-{count}"
        question = {"method": method, "params": wire_params(params)}

        def open_question(record: TaskRecord) -> TaskRecord | None:
            if record.terminal:
                return None
            record.input_requests[key] = question
            record.status = "input_required"
            return record

        # Each step waits out a store outage (the answer cannot come meanwhile anyway).
        outage = _Outage(task_id)
        await _patiently(outage, lambda: self._revise(task_id, open_question))
        data = await _patiently(outage, lambda: self.store.get(task_id))
        while True:
            if data is None:  # lost by the store (restarted empty): its runner puts it back
                await asyncio.sleep(outage.delay())
                data = await _patiently(outage, lambda: self.store.get(task_id))
                continue
            record = decode_record(data)
            if record.terminal:
                raise asyncio.CancelledError  # cancelled while waiting: stop the tool
            if key in record.input_responses:
                break
            data = await _patiently(outage, partial(self.store.watch, task_id, data, self._heartbeat()))
        answer = record.input_responses[key]

        def take(record: TaskRecord) -> TaskRecord | None:
            if record.input_responses.pop(key, None) is None:
                return None
            return record

        await _patiently(outage, lambda: self._revise(task_id, take))
        return answer_as_result(result_name, answer, key)

    async def progress(self, peer: TaskPeer, params: Any) -> None:
        """A progress report of a running task, shown as its ``statusMessage``."""
        assert peer.task_id is not None
        message = params.get("message")
        if not isinstance(message, str):
            total = params.get("total")
            message = f"{params.get('progress')}" + (f"/{total}" if total is not None else "")

        def note(record: TaskRecord) -> TaskRecord | None:
            if record.terminal:
                return None
            record.status_message = message
            return record

        await self._revise(peer.task_id, note)


class Tasks(Extension):
    """The tasks extension (SEP-2663) through the extension contract: of the stateless era
    only; declared (by ``server/discover``) once a tool is task-capable; ``tasks/get``,
    ``tasks/update`` and ``tasks/cancel`` served through the kernel and the middleware as any
    request; and a ``tools/call`` of a task-capable tool taken by the :class:`TaskManager`
    before any middleware, so that the tool then runs through its route (middleware
    included) for the task's whole life."""

    identifier = TASKS_EXTENSION
    eras = frozenset({"stateless"})

    def __init__(self) -> None:
        super().__init__()
        self._features: Any = None

    def attach(self, server: Any) -> None:
        self._features = server.features

    def methods(self) -> list[ExtensionMethod]:
        return [
            ExtensionMethod(method, dict, self.serve, params_required=True, named="taskId")
            for method in sorted(METHODS)
        ]

    async def serve(self, params: dict[str, Any]) -> dict[str, Any]:
        request = scope()
        TaskManager.check(request, params)
        found: dict[str, Any] = await self._features.tasks.serve(self._features.stateless, request, params)
        return found

    def intercept(self, method: str, route: Any, era: str) -> Any:
        if method != "tools/call":
            return route
        features = self._features
        run, now = route.run, route.now

        async def call_tool(params: Any) -> Any:
            if features.task_support(params.name) is not None:
                found = await features.tasks.call_tool(features.stateless, scope(), params)
                if found is not None:
                    return found
            return await run(params)

        def call_tool_now(params: Any) -> Any:
            if features.task_support(params.name) is not None:
                return NOT_NOW  # the tasks extension's (see call_tool)
            return now(params)

        return msgspec.structs.replace(route, run=call_tool, now=call_tool_now if now is not None else None)


class TaskPeer(StatelessPeer):
    """What the tool's :class:`~mcpgen.runtime.server.context.Context` talks to in a task: the
    stateless peer of the request that started it, except that questions park the task
    (once it is one) and progress is recorded on it too."""

    def __init__(
        self, manager: TaskManager, front: StatelessServer, request: StatelessRequest, task_id: str | None
    ) -> None:
        super().__init__(front, request)
        self.manager = manager
        self.task_id = task_id
        self.asked: dict[str, int] = {}
        self.handed: asyncio.Future[TaskRecord] | None = None
        self.owner: str | None = None
        self.tool = ""
        self.unrecorded = 0  # progress reports the store could not take

    async def continue_as_task(self) -> None:
        """The tool's request answers with a CreateTaskResult now; the tool goes on as the
        task (a no-op once it is one, or for a tool not declared ``task_start="explicit"``)."""
        if self.task_id is not None or self.handed is None or self.handed.done():
            return
        record = await self.manager.create(self.tool, self.owner)
        self.task_id = record.task_id
        self.handed.set_result(record)

    async def send_notification(self, method: str, params: Any, **options: Any) -> None:
        await super().send_notification(method, params, **options)
        if method == "notifications/progress" and self.task_id is not None:
            try:
                await self.manager.progress(self, msgspec.to_builtins(params))
            except StoreUnavailable as exc:
                # The status message is a courtesy: a store away must not stop the tool.
                if not self.unrecorded:
                    log.warning("mcpgen: task %s: progress not recorded: %s", self.task_id, exc.message)
                self.unrecorded += 1

    async def create_message(self, *, key: str | None = None, **params: Any) -> Any:
        if self.task_id is None:
            return await super().create_message(key=key, **params)
        typed = self._server.handshake.CreateMessageRequestParams(**params)
        return await self.manager.ask(self, "sampling/createMessage", typed, key)

    async def elicit(self, params: Any, key: str | None = None) -> Any:
        if self.task_id is None:
            return await super().elicit(params, key)
        return await self.manager.ask(self, "elicitation/create", params, key)

    async def send_request(self, method: str, params: Any, result_type: Any, key: str | None = None, **_: Any) -> Any:
        if self.task_id is None or method != "roots/list":
            return await super().send_request(method, params, result_type, key)
        return await self.manager.ask(self, "roots/list", params, key)


def principal(request: StatelessRequest) -> str | None:
    """The request's principal: the verified token's owner (issuer and subject or client id), or None when the
    server checks no tokens (read from the request being served, not from ``request``)."""
    owner = current_owner()
    return None if owner is None else "\n".join(owner)


def _deliver(record: TaskRecord, responses: dict[str, Any]) -> TaskRecord | None:
    """``tasks/update``: move the answers to open questions over (each checked against its
    question's result type: a malformed one refuses the whole update with -32602); keys
    not open are ignored, as the extension asks."""
    if record.terminal:
        return None
    delivered = False
    for key, answer in responses.items():
        question = record.input_requests.get(key)
        if question is None:
            continue
        answer_as_result(_ASKS[question["method"]][1], answer, key)
        record.input_responses[key] = answer
        del record.input_requests[key]
        delivered = True
    if not delivered:
        return None
    if not record.input_requests and record.status == "input_required":
        record.status = "working"
    return record


async def _patiently(outage: _Outage, step: Callable[[], Awaitable[T]]) -> T:
    """``step()``, tried again while the store is away (a tool waiting for its answer)."""
    while True:
        try:
            found = await step()
        except StoreUnavailable as exc:
            outage.note(exc)
            await asyncio.sleep(outage.delay())
            continue
        outage.over()
        return found


def _orphaned(record: TaskRecord) -> TaskRecord | None:
    if record.terminal:
        return None
    record.status, record.error, record.input_requests = "failed", {"code": INTERNAL_ERROR, "message": ORPHANED}, {}
    record.status_message = "Failed: its server process stopped"
    return record


def _cancel(record: TaskRecord) -> TaskRecord | None:
    if record.terminal:
        return None
    record.status, record.cancel_requested, record.input_requests = "cancelled", True, {}
    record.status_message = "Cancelled"
    return record


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
