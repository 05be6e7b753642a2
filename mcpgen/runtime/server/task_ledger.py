"""The task records one process keeps (tasks it created, running or finished, results
included, until they expire), counted in number and bytes, in all and per caller (its
principal, else its address): what bounds what tasks can make a server hold. Past a bound
a new task is refused (-32000) and a result too big to keep fails its task; nothing kept
is ever dropped to make room."""

from __future__ import annotations

import time

from mcpgen.runtime.errors import SERVER_BUSY, McpError

MAX_KEPT = 10_000
"""Task records (running and finished, results included) this process keeps at once."""
MAX_KEPT_BYTES = 256 * 1024 * 1024
"""Bytes those records may take together."""
MAX_KEPT_PER_CALLER = 1_000
"""Task records one caller (its principal, else its address) may have kept at once."""
MAX_KEPT_BYTES_PER_CALLER = 64 * 1024 * 1024
"""Bytes one caller's records may take together."""


class _Kept:
    """A record this process created, as counted until it expires: whose, how big."""

    __slots__ = ("caller", "size", "deadline")

    def __init__(self, caller: str | None, size: int, deadline: float) -> None:
        self.caller, self.size, self.deadline = caller, size, deadline


class Ledger:
    """The records kept by one :class:`~mcpgen.runtime.server.tasks.TaskManager`; its
    bounds are attributes (set them to change them)."""

    def __init__(self) -> None:
        self.max_kept = MAX_KEPT
        self.max_kept_bytes = MAX_KEPT_BYTES
        self.max_kept_per_caller = MAX_KEPT_PER_CALLER
        self.max_kept_bytes_per_caller = MAX_KEPT_BYTES_PER_CALLER
        self._records: dict[str, _Kept] = {}
        self._bytes = 0
        self._by_caller: dict[str, list[int]] = {}  # caller -> [records, bytes]
        self._next_sweep = 0.0

    @property
    def kept(self) -> tuple[int, int]:
        """Records this process created that have not expired yet, and their bytes."""
        self.sweep(force=True)
        return len(self._records), self._bytes

    def room_for_a_record(self, caller: str | None) -> None:
        """-32000 unless one more record fits, for the server and for the caller."""
        self.sweep()
        if len(self._records) >= self.max_kept or self._bytes >= self.max_kept_bytes:
            self.sweep(force=True)
            if len(self._records) >= self.max_kept or self._bytes >= self.max_kept_bytes:
                raise McpError(SERVER_BUSY, "Server busy: too many task records kept; retry once some expire")
        if caller is not None:
            count, size = self._by_caller.get(caller, (0, 0))
            if count >= self.max_kept_per_caller or size >= self.max_kept_bytes_per_caller:
                self.sweep(force=True)
                count, size = self._by_caller.get(caller, (0, 0))
                if count >= self.max_kept_per_caller or size >= self.max_kept_bytes_per_caller:
                    raise McpError(
                        SERVER_BUSY,
                        f"Server busy: this caller has {count} task records kept ({size} bytes); "
                        "retry once some expire",
                    )

    def room_for(self, task_id: str, size: int) -> bool:
        """Whether the record of ``task_id`` may grow to ``size`` bytes (its result)."""
        entry = self._records.get(task_id)
        if entry is None:
            return True
        more = size - entry.size
        if self._bytes + more > self.max_kept_bytes:
            return False
        if entry.caller is not None:
            held = self._by_caller.get(entry.caller, [0, 0])[1]
            if held + more > self.max_kept_bytes_per_caller:
                return False
        return True

    def note(self, task_id: str, size: int, ttl_ms: int | None, caller: str | None = None, new: bool = False) -> None:
        """Count a record written (``new``: created by this process) at ``size`` bytes."""
        deadline = float("inf") if ttl_ms is None else time.monotonic() + ttl_ms / 1000
        entry = self._records.get(task_id)
        if entry is None:
            if not new:
                return  # another process's record: counted there
            entry = self._records[task_id] = _Kept(caller, 0, deadline)
            if caller is not None:
                self._by_caller.setdefault(caller, [0, 0])[0] += 1
        more = size - entry.size
        entry.size, entry.deadline = size, deadline
        self._bytes += more
        if entry.caller is not None:
            self._by_caller[entry.caller][1] += more

    def sweep(self, force: bool = False) -> None:
        """Forget the records that have expired (at most once a second unless ``force``)."""
        now = time.monotonic()
        if not force and now < self._next_sweep:
            return
        self._next_sweep = now + 1.0
        for task_id in [t for t, entry in self._records.items() if entry.deadline <= now]:
            entry = self._records.pop(task_id)
            self._bytes -= entry.size
            if entry.caller is not None:
                held = self._by_caller[entry.caller]
                held[0] -= 1
                held[1] -= entry.size
                if held[0] <= 0:
                    del self._by_caller[entry.caller]
