"""Shared state in Redis, for a server running on several worker processes.

``RedisStore(url)`` is the one object a user passes (``server.run("http", store=...)``):
it hands out the event store of each handshake-era session
(:class:`~mcpgen.runtime.stores.redis_events.RedisEventStore`), the registry of those
sessions (:class:`RedisSessionRegistry`) and the task store
(:class:`~mcpgen.runtime.stores.redis_tasks.RedisTaskStore`), and it knows the workers:
each one's lease and inbox. One ``redis.asyncio`` client (a connection pool) serves them
all. The ``redis`` package is imported when the store first talks to Redis, never by the
rest of the runtime.

Keys, all under ``<prefix>:`` and all with a TTL:

- ``ev:<stream id>.<secret>``: the events of one SSE stream (:mod:`.redis_events`).
- ``session:<session id>``: a live session: whose it is, the worker holding it, and the
  name of its standalone stream.
- ``task:<task id>``: a task's record (:mod:`.redis_tasks`).
- ``worker:<worker id>``: a worker's lease, renewed while it lives (``lease`` seconds).
- ``inbox:<worker id>``: what other workers left for the sessions it holds.
- ``dpop:<sha256>``: a DPoP proof already used (its key's thumbprint and ``jti``, hashed),
  kept as long as such a proof is acceptable at all; ``secret:<name>``: random bytes every
  worker derives its DPoP nonces from (no TTL: made once, by whichever worker asks first).

Every failure to reach Redis is raised as
:class:`~mcpgen.runtime.stores.shared_store.StoreUnavailable` (-32603, naming the store), except
where cleaning up: a key left behind expires.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import msgspec

from mcpgen.runtime.extras import require
from mcpgen.runtime.stores.redis_base import ms
from mcpgen.runtime.stores.redis_events import RedisEventStore
from mcpgen.runtime.stores.redis_tasks import RedisTaskStore
from mcpgen.runtime.stores.shared_store import SessionRecord, StoreUnavailable

if TYPE_CHECKING:
    from redis.asyncio import Redis

log = logging.getLogger("mcpgen")

T = TypeVar("T")
INBOX_TTL = 60.0  # seconds a worker's inbox outlives its last message (a dead worker's goes)

__all__ = ["RedisEventStore", "RedisSessionRegistry", "RedisStore", "RedisTaskStore"]


def _shown(url: str) -> str:
    """The URL without its password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


class RedisStore:
    """Events, legacy sessions and tasks of a server, kept in Redis for all its workers.

    ``prefix`` namespaces the keys (one Redis may serve several servers); ``event_ttl``
    (seconds) is how long a stream's events stay after its last event; ``per_stream`` how
    many events of one stream are kept at most; ``block`` how long (seconds) one read of
    a followed stream waits before checking the stream still exists; ``command_timeout``
    bounds every command (a blocking read: ``block`` more), so a Redis that hangs without
    refusing fails the request quickly, naming the store, instead of holding it; ``lease``
    is how long a worker counts as alive after it last renewed its lease (it renews it
    every third of that): a task or a stream whose worker's lease lapsed has lost it.
    """

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        prefix: str = "mcpgen",
        event_ttl: float = 3600.0,
        per_stream: int = 1000,
        block: float = 2.0,
        connect_timeout: float = 2.0,
        command_timeout: float = 2.0,
        lease: float = 15.0,
    ) -> None:
        self.url = url
        self.prefix = prefix
        self.event_ttl = event_ttl
        self.per_stream = per_stream
        self.block = block
        self.connect_timeout = connect_timeout
        self.command_timeout = command_timeout
        self.name = f"Redis store at {_shown(url)}"
        self._client: Redis | None = None
        self._errors: tuple[type[BaseException], ...] = ()
        self.lease = lease
        self.sessions = RedisSessionRegistry(self)
        self.proofs = RedisProofLedger(self)
        self._tasks: RedisTaskStore | None = None
        self._worker: tuple[int, str] | None = None  # (pid, id): a forked copy gets its own
        self._beating: asyncio.Task[None] | None = None
        self._lapses: list[Callable[[], Awaitable[None]]] = []

    # ------------------------------------------------------------ the connection

    @property
    def client(self) -> Redis:
        """The client, made on first use (in the event loop that will use it)."""
        if self._client is None:
            require("redis.asyncio", "redis", "RedisStore")  # the install hint when redis is missing
            from redis.asyncio import Redis
            from redis.asyncio.retry import Retry
            from redis.backoff import NoBackoff
            from redis.exceptions import RedisError

            self._errors = (RedisError, OSError)
            self._client = Redis.from_url(
                self.url,
                socket_connect_timeout=self.connect_timeout,
                # Longer than a blocking read of a followed stream.
                socket_timeout=self.block + 10.0,
                # One retry, at once: a Redis that is down must fail the request quickly
                # (the client library's default retries with back-off for seconds).
                retry=Retry(NoBackoff(), 1),
            )
        return self._client

    async def call(self, awaitable: Awaitable[T], *, longer: float = 0.0, bounded: bool = True) -> T:
        """Await a Redis command within ``command_timeout`` (plus ``longer`` for a blocking
        read; ``bounded=False`` only for a subscriber's wait for the next message), turning
        a failure or a silence into :class:`StoreUnavailable`."""
        try:
            if not bounded:
                return await awaitable
            async with asyncio.timeout(self.command_timeout + longer):
                return await awaitable
        except TimeoutError:
            raise StoreUnavailable(self.name, f"no answer within {self.command_timeout + longer:g} s") from None
        except self._errors as exc:
            raise StoreUnavailable(self.name, f"{type(exc).__name__}: {exc}") from exc

    def key(self, *parts: str) -> str:
        return ":".join((self.prefix, *parts))

    async def aclose(self) -> None:
        beating, self._beating = self._beating, None
        if beating is not None:
            beating.cancel()
            await asyncio.gather(beating, return_exceptions=True)
        if self._tasks is not None:
            await self._tasks.stop_listening()
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

    # ------------------------------------------------------------ the workers

    @property
    def worker(self) -> str:
        """This worker's id: random, one per process (and per store object)."""
        pid = os.getpid()
        if self._worker is None or self._worker[0] != pid:
            self._worker = (pid, secrets.token_urlsafe(9))
        return self._worker[1]

    def keep_alive(self, on_lapse: Callable[[], Awaitable[None]] | None = None) -> None:
        if on_lapse is not None and on_lapse not in self._lapses:
            self._lapses.append(on_lapse)
        if self._beating is None or self._beating.done():
            self._beating = asyncio.ensure_future(self._beat_forever())

    async def beat(self) -> bool:
        """Renew this worker's lease; True when it had lapsed (Redis lost it)."""
        old = await self.call(self.client.set(self.key("worker", self.worker), b"1", px=ms(self.lease), get=True))
        return old is None

    async def alive(self, worker: str) -> bool:
        if worker == self.worker:
            return True
        return bool(await self.call(self.client.exists(self.key("worker", worker))))

    async def _beat_forever(self) -> None:
        first, warned = True, 0.0
        while True:
            try:
                lapsed = await self.beat()
            except StoreUnavailable as exc:
                if time.monotonic() - warned > 10:
                    warned = time.monotonic()
                    log.warning("mcpgen: this worker's lease could not be renewed: %s", exc.message)
                await asyncio.sleep(min(1.0, self.lease / 6))
                continue
            if lapsed and not first:
                # Redis lost what this worker had put there (restarted empty): put it back.
                log.warning("mcpgen: %s lost this worker's state (restarted empty?); registering it again", self.name)
                for callback in list(self._lapses):
                    try:
                        await callback()
                    except Exception:
                        log.exception("mcpgen: putting this worker's state back failed")
            first = False
            await asyncio.sleep(self.lease / 3)

    async def post(self, worker: str, message: bytes) -> None:
        key = self.key("inbox", worker)
        pipe = self.client.pipeline(transaction=False)
        pipe.rpush(key, message)
        pipe.pexpire(key, ms(INBOX_TTL))
        await self.call(pipe.execute())

    async def receive(self, timeout: float) -> bytes | None:
        key = self.key("inbox", self.worker)
        reply: Any = await self.call(self.client.blpop([key], timeout=timeout), longer=timeout)
        return bytes(reply[1]) if reply else None

    # ------------------------------------------------------------ what it hands out

    def event_store(self) -> RedisEventStore:
        """The event store of one session (``HttpOptions.event_store`` calls it per session)."""
        return RedisEventStore(self)

    def task_store(self) -> RedisTaskStore:
        """The task store (one per RedisStore: it keeps one subscription for watchers)."""
        if self._tasks is None:
            self._tasks = RedisTaskStore(self)
        return self._tasks


class RedisProofLedger:
    """DPoP proofs used and the nonce secret, shared by every worker
    (:class:`~mcpgen.runtime.stores.shared_store.ProofLedger`)."""

    def __init__(self, store: RedisStore) -> None:
        self.shared = store

    async def first_use(self, key: str, ttl: float) -> bool:
        store = self.shared
        name = store.key("dpop", hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest())
        return bool(await store.call(store.client.set(name, b"1", nx=True, px=ms(ttl))))

    async def shared_secret(self, name: str) -> bytes:
        store = self.shared
        key = store.key("secret", name)
        pipe = store.client.pipeline(transaction=False)
        pipe.set(key, secrets.token_bytes(32), nx=True)  # the first worker's, kept
        pipe.get(key)
        _, value = await store.call(pipe.execute())
        if not isinstance(value, bytes) or len(value) < 16:
            raise StoreUnavailable(store.name, f"the {name} secret is missing or damaged")
        return value


class _Session(msgspec.Struct):
    o: str  # owner
    s: str  # the standalone stream's name
    w: str = ""  # the worker holding it


_session_decoder = msgspec.json.Decoder(_Session)


class RedisSessionRegistry:
    """Sessions in Redis: ``<prefix>:session:<id>`` holds whose it is, the worker holding
    it and its standalone stream's name (JSON)."""

    def __init__(self, store: RedisStore) -> None:
        self.shared = store

    async def add(self, session_id: str, standalone: str, ttl: float, owner: str = "", worker: str = "") -> None:
        store = self.shared
        record = msgspec.json.encode(_Session(owner, standalone, worker))
        await store.call(store.client.set(store.key("session", session_id), record, px=ms(ttl)))

    async def touch(self, session_ids: list[str], ttl: float) -> None:
        if not session_ids:
            return
        store = self.shared
        pipe = store.client.pipeline(transaction=False)
        for session_id in session_ids:
            pipe.pexpire(store.key("session", session_id), ms(ttl))
        try:
            await store.call(pipe.execute())
        except StoreUnavailable as exc:
            log.warning("mcpgen: could not refresh %d sessions: %s", len(session_ids), exc.message)

    async def lookup(self, session_id: str) -> SessionRecord | None:
        store = self.shared
        value = await store.call(store.client.get(store.key("session", session_id)))
        if not isinstance(value, bytes):
            return None
        try:
            found = _session_decoder.decode(value)
        except msgspec.DecodeError:
            return None  # written by another version of mcpgen: unknown here
        return SessionRecord(found.s, found.o, found.w)

    async def remove(self, session_id: str) -> None:
        store = self.shared
        try:
            await store.call(store.client.delete(store.key("session", session_id)))
        except StoreUnavailable as exc:
            log.warning("mcpgen: could not remove an ended session: %s", exc.message)
