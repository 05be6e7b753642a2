"""Where the tasks extension (SEP-2663) keeps its task records: the :class:`TaskStore`
protocol, the record format, and the in-process default :class:`MemoryTaskStore`.

A task outlives the request that started it, and on a server with several workers the
request that reads (``tasks/get``), answers (``tasks/update``) or cancels
(``tasks/cancel``) a task may reach another worker than the one running it. So the
store is the single source of truth, and it is shaped for a shared backend (Redis):

- a record is opaque ``bytes`` to the store (:func:`encode_record` /
  :func:`decode_record`, msgspec JSON); the store never looks inside;
- every operation is ``async``;
- writes are compare-and-swap (:meth:`TaskStore.replace`), because two workers may change
  one record at once (the runner settling it, another answering its questions);
- :meth:`TaskStore.watch` is the wait-for-change primitive: the worker running a task
  parks on it until a record changes, which is how it learns of input responses or a
  cancel that arrived through another worker;
- finished records expire (``ttl_ms`` on each write), so no record is kept for ever.

Contract (what an implementation must guarantee, and what :mod:`mcpgen.runtime.server.tasks`
relies on):

``create(task_id, record, ttl_ms)``
    Store ``record`` under ``task_id`` only if no record is there (``SET NX``); True if
    stored. When it returns True the record is readable by every worker (the
    "durable create" rule: a ``tasks/get`` sent right after the CreateTaskResult must
    find it).
``get(task_id)``
    The record's current bytes, or None when there is none or it has expired.
``replace(task_id, old, new, ttl_ms)``
    Atomically: if the stored bytes equal ``old`` exactly, store ``new`` and return True;
    otherwise (changed meanwhile, expired, deleted) change nothing and return False.
    A successful replace wakes every :meth:`watch` of that task, in every worker.
``watch(task_id, seen, timeout)``
    Return the record's current bytes as soon as they differ from ``seen`` (at once if
    they already do); ``seen`` itself when ``timeout`` seconds pass with no change; None
    when the record is gone. Must not lose a change that happens between the caller's
    last read and the call (compare after subscribing, not before).
``delete(task_id)``
    Remove the record (no error if absent); wakes watchers, who then see None.
``aclose()``
    Release connections; the store is not used afterwards.

``ttl_ms`` everywhere: the record expires that many milliseconds after this write; None
means no expiry. The tasks manager gives running tasks a generous bound too, so a record
whose worker died still goes away.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Protocol, runtime_checkable

import msgspec

TERMINAL = frozenset({"completed", "failed", "cancelled"})
"""Statuses a task never leaves."""


class TaskRecord(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One task as stored (the store sees only its encoded bytes).

    ``input_requests`` are the questions still open (key -> ``{method, params}``, as
    ``tasks/get`` shows them); ``input_responses`` the answers ``tasks/update`` delivered
    that the runner has not taken yet. ``result`` is the tool's CallToolResult as JSON data
    (inlined by ``tasks/get`` when ``completed``); ``error`` the JSON-RPC error object of a
    ``failed`` task. ``owner`` is the principal that created the task (None where the
    server knows none); ``revision`` grows on every write so no two writes encode alike;
    ``worker`` is the worker running it, on a store shared by several (see :class:`Leases`).
    """

    task_id: str
    status: str
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None
    status_message: str | None = None
    tool: str = ""
    owner: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    input_requests: dict[str, Any] = {}
    input_responses: dict[str, Any] = {}
    cancel_requested: bool = False
    revision: int = 0
    worker: str | None = None  # the worker running it, where the store knows workers (a lease each)

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(TaskRecord)


def encode_record(record: TaskRecord) -> bytes:
    return _encoder.encode(record)


def decode_record(data: bytes) -> TaskRecord:
    return _decoder.decode(data)


@runtime_checkable
class TaskStore(Protocol):
    """The storage a :class:`~mcpgen.runtime.server.tasks.TaskManager` needs (contract in the
    module docstring)."""

    async def create(self, task_id: str, record: bytes, ttl_ms: int | None) -> bool: ...

    async def get(self, task_id: str) -> bytes | None: ...

    async def replace(self, task_id: str, old: bytes, new: bytes, ttl_ms: int | None) -> bool: ...

    async def watch(self, task_id: str, seen: bytes, timeout: float) -> bytes | None: ...

    async def delete(self, task_id: str) -> None: ...

    async def aclose(self) -> None: ...


@runtime_checkable
class Leases(Protocol):
    """A task store shared by several workers that also knows which of them are alive
    (each renews a lease while it lives): a task whose worker's lease lapsed has lost its
    runner, and is failed by whichever worker reads it next."""

    @property
    def worker(self) -> str:
        """This worker's id (recorded on the tasks it runs)."""
        ...

    def keep_alive(self) -> None:
        """Renew this worker's lease from now on."""
        ...

    async def alive(self, worker: str) -> bool:
        """Whether ``worker``'s lease is current."""
        ...


class MemoryTaskStore:
    """The default store: records in a dict of this process (one worker).

    Expiry is checked on every read and swept on writes at most once a second, so an
    expired record is never returned and does not stay in memory long after. Watchers
    wait on one :class:`asyncio.Event` per task, replaced on every change.
    """

    _SWEEP_EVERY = 1.0

    def __init__(self) -> None:
        self._records: dict[str, tuple[bytes, float | None]] = {}
        self._changed: dict[str, asyncio.Event] = {}
        self._next_sweep = 0.0

    def __len__(self) -> int:
        """Records held (expired ones included until swept)."""
        return len(self._records)

    async def create(self, task_id: str, record: bytes, ttl_ms: int | None) -> bool:
        self._sweep()
        if self._live(task_id) is not None:
            return False
        self._records[task_id] = (record, _deadline(ttl_ms))
        return True

    async def get(self, task_id: str) -> bytes | None:
        return self._live(task_id)

    async def replace(self, task_id: str, old: bytes, new: bytes, ttl_ms: int | None) -> bool:
        self._sweep()
        if self._live(task_id) != old:
            return False
        self._records[task_id] = (new, _deadline(ttl_ms))
        self._wake(task_id)
        return True

    async def watch(self, task_id: str, seen: bytes, timeout: float) -> bytes | None:
        current = self._live(task_id)
        if current != seen:
            return current
        event = self._changed.get(task_id)
        if event is None:
            event = self._changed[task_id] = asyncio.Event()
        try:
            async with asyncio.timeout(timeout):
                await event.wait()
        except TimeoutError:
            pass
        finally:
            # No watcher left on a task: forget its event (the dict stays small).
            if self._changed.get(task_id) is event and not _has_waiters(event):
                del self._changed[task_id]
        return self._live(task_id)

    async def delete(self, task_id: str) -> None:
        self._records.pop(task_id, None)
        self._wake(task_id)

    async def aclose(self) -> None:
        for task_id in list(self._changed):
            self._wake(task_id)
        self._records.clear()

    # ------------------------------------------------------------ internals

    def _live(self, task_id: str) -> bytes | None:
        entry = self._records.get(task_id)
        if entry is None:
            return None
        data, deadline = entry
        if deadline is not None and time.monotonic() >= deadline:
            del self._records[task_id]
            self._wake(task_id)
            return None
        return data

    def _wake(self, task_id: str) -> None:
        event = self._changed.pop(task_id, None)
        if event is not None:
            event.set()

    def _sweep(self) -> None:
        now = time.monotonic()
        if now < self._next_sweep:
            return
        self._next_sweep = now + self._SWEEP_EVERY
        expired = [key for key, (_, deadline) in self._records.items() if deadline is not None and now >= deadline]
        for key in expired:
            del self._records[key]
            self._wake(key)


def _deadline(ttl_ms: int | None) -> float | None:
    return None if ttl_ms is None else time.monotonic() + ttl_ms / 1000


def _has_waiters(event: asyncio.Event) -> bool:
    # asyncio.Event keeps its waiters in a private deque; reading it only decides whether
    # the event can be dropped from the dict (a wrong guess costs one Event, not a wakeup).
    waiters = getattr(event, "_waiters", None)
    return bool(waiters)
