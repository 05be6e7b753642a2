"""Task records in Redis, for several workers (the
:class:`~mcpgen.runtime.stores.task_store.TaskStore` contract, with the workers' leases)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from mcpgen.runtime.stores.redis_base import Connection
from mcpgen.runtime.stores.shared_store import StoreUnavailable

log = logging.getLogger("mcpgen")


# Compare-and-swap: replace the record only if it still holds exactly what the caller
# read, and tell every worker's watchers in the same step (no change goes unannounced).
_REPLACE = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[3] == '' then redis.call('SET', KEYS[1], ARGV[2])
else redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) end
redis.call('PUBLISH', KEYS[2], ARGV[4])
return 1
"""


class RedisTaskStore:
    """Task records in Redis (the :class:`~mcpgen.runtime.stores.task_store.TaskStore` contract).

    ``<prefix>:task:<id>`` holds a record's bytes; :meth:`replace` is one Lua script
    (compare, set, publish). Every change is published on ``<prefix>:task-changes`` (the
    task id as message); each worker keeps ONE subscription to it, started by its first
    :meth:`watch`, and wakes its local watchers of that task. A watcher registers before
    it reads the record, and the subscription is confirmed before any read, so a change
    between the caller's read and its wait is never lost. If the subscription breaks
    (Redis went away), every watcher wakes and re-reads, which raises
    :class:`StoreUnavailable` while Redis is down; the next watch subscribes again.
    """

    def __init__(self, store: Connection) -> None:
        self.shared = store
        self.channel = store.key("task-changes")
        self._waiting: dict[str, set[asyncio.Event]] = {}
        self._listener: asyncio.Task[None] | None = None
        self._subscribed: asyncio.Future[None] | None = None
        self._script: Any = None

    def _key(self, task_id: str) -> str:
        return self.shared.key("task", task_id)

    # The workers' leases (TaskManager: a task whose worker's lease lapsed has failed).

    @property
    def worker(self) -> str:
        return self.shared.worker

    def keep_alive(self) -> None:
        self.shared.keep_alive()

    async def alive(self, worker: str) -> bool:
        return await self.shared.alive(worker)

    async def create(self, task_id: str, record: bytes, ttl_ms: int | None) -> bool:
        store = self.shared
        done = await store.call(store.client.set(self._key(task_id), record, nx=True, px=ttl_ms))
        return bool(done)

    async def get(self, task_id: str) -> bytes | None:
        store = self.shared
        data = await store.call(store.client.get(self._key(task_id)))
        return data if isinstance(data, bytes) else None

    async def replace(self, task_id: str, old: bytes, new: bytes, ttl_ms: int | None) -> bool:
        store = self.shared
        if self._script is None:
            self._script = store.client.register_script(_REPLACE)
        ttl = "" if ttl_ms is None else str(max(1, ttl_ms))
        done = await store.call(self._script(keys=[self._key(task_id), self.channel], args=[old, new, ttl, task_id]))
        return bool(done)

    async def delete(self, task_id: str) -> None:
        store = self.shared
        pipe = store.client.pipeline(transaction=False)
        pipe.delete(self._key(task_id))
        pipe.publish(self.channel, task_id)
        await store.call(pipe.execute())

    async def watch(self, task_id: str, seen: bytes, timeout: float) -> bytes | None:
        event = asyncio.Event()
        waiting = self._waiting.setdefault(task_id, set())
        waiting.add(event)
        try:
            await self._listen()
            current = await self.get(task_id)
            if current != seen:
                return current
            try:
                async with asyncio.timeout(timeout):
                    await event.wait()
            except TimeoutError:
                pass
            return await self.get(task_id)
        finally:
            waiting.discard(event)
            if not waiting and self._waiting.get(task_id) is waiting:
                del self._waiting[task_id]

    async def aclose(self) -> None:
        await self.stop_listening()

    # ------------------------------------------------------------ the subscription

    async def _listen(self) -> None:
        """Start this worker's subscription if it is not running, and wait until Redis
        confirmed it."""
        if self._listener is None or self._listener.done():
            self._subscribed = asyncio.get_running_loop().create_future()
            self._listener = asyncio.ensure_future(self._run_listener(self._subscribed))
        assert self._subscribed is not None
        await asyncio.shield(self._subscribed)

    async def _run_listener(self, subscribed: asyncio.Future[None]) -> None:
        store = self.shared
        pubsub = store.client.pubsub()
        try:
            await store.call(pubsub.subscribe(self.channel))
            # The confirmation: from here on, every change is delivered to us.
            while (
                await store.call(
                    pubsub.get_message(timeout=store.connect_timeout + 1.0), longer=store.connect_timeout + 1.0
                )
                is None
            ):
                pass
            subscribed.set_result(None)
            while True:
                message = await store.call(
                    pubsub.get_message(ignore_subscribe_messages=True, timeout=None), bounded=False
                )
                if message is None or message.get("type") != "message":
                    continue
                data = message.get("data")
                task_id = data.decode() if isinstance(data, bytes) else str(data)
                for event in self._waiting.get(task_id, ()):
                    event.set()
        except StoreUnavailable as exc:
            if not subscribed.done():
                subscribed.set_exception(exc)
            else:
                log.warning("mcpgen: the task-change subscription broke: %s", exc.message)
        finally:
            if not subscribed.done():
                subscribed.cancel()
            # Whoever waits re-reads the record (and learns that Redis is down).
            for events in self._waiting.values():
                for event in events:
                    event.set()
            with contextlib.suppress(Exception):  # the connection may be broken already
                await pubsub.aclose()  # type: ignore[no-untyped-call]

    async def stop_listening(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.cancel()
            await asyncio.gather(listener, return_exceptions=True)
