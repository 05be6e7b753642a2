"""Shared state in Redis, for a server running on several worker processes.

``RedisStore(url)`` is the one object a user passes (``server.run("http", store=...)``):
it hands out the event store of each legacy-era session (:class:`RedisEventStore`), the
registry of legacy sessions (:class:`RedisSessionRegistry`) and the task store. One
``redis.asyncio`` client (a connection pool) serves them all. The ``redis`` package is
imported when the store first talks to Redis, never by the rest of the runtime.

Keys, all under ``<prefix>:`` and all with a TTL:

- ``ev:<stream id>.<secret>``: a Redis stream of one SSE stream's events. Entry ids are
  ``<n>-0`` with n counting from 1 (the writer is the one worker serving the request), an
  entry is ``{f: frame}`` or the end marker ``{e: 1}``. The SSE event id is
  ``<stream id>.<secret>/<n>``: the secret (96 random bits per stream) is what makes an id
  unguessable, so one client cannot read another's stream by counting.
- ``session:<session id>``: a live legacy session; its value is its standalone stream's id.
- ``dpop:<sha256>``: a DPoP proof already used (its key's thumbprint and ``jti``, hashed),
  kept as long as such a proof is acceptable at all; ``secret:<name>``: random bytes every
  worker derives its DPoP nonces from (no TTL: made once, by whichever worker asks first).

Every failure to reach Redis is raised as
:class:`~mcpgen.runtime.stores.shared_store.StoreUnavailable` (-32603, naming the store), except
where cleaning up: a key left behind expires.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from mcpgen.runtime.extras import require
from mcpgen.runtime.stores.shared_store import StoreUnavailable

if TYPE_CHECKING:
    from redis.asyncio import Redis

log = logging.getLogger("mcpgen")

T = TypeVar("T")

_MAX_EVENT_ID = 256  # longer Last-Event-IDs are not ours; refused before reaching Redis


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
    refusing fails the request quickly, naming the store, instead of holding it.
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
        self.sessions = RedisSessionRegistry(self)
        self.proofs = RedisProofLedger(self)
        self._tasks: RedisTaskStore | None = None

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
        if self._tasks is not None:
            await self._tasks.stop_listening()
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

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
        return bool(await store.call(store.client.set(name, b"1", nx=True, px=_ms(ttl))))

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


class RedisSessionRegistry:
    """Legacy sessions in Redis: ``<prefix>:session:<id>`` holds the owner and the standalone
    stream id, joined by a newline (the owner may hold newlines, a stream id none)."""

    def __init__(self, store: RedisStore) -> None:
        self.shared = store

    async def add(self, session_id: str, standalone: str, ttl: float, owner: str = "") -> None:
        store = self.shared
        record = f"{owner}\n{standalone}"  # a stream id holds no newline: the last one splits
        await store.call(store.client.set(store.key("session", session_id), record, px=_ms(ttl)))

    async def touch(self, session_ids: list[str], ttl: float) -> None:
        if not session_ids:
            return
        store = self.shared
        pipe = store.client.pipeline(transaction=False)
        for session_id in session_ids:
            pipe.pexpire(store.key("session", session_id), _ms(ttl))
        try:
            await store.call(pipe.execute())
        except StoreUnavailable as exc:
            log.warning("mcpgen: could not refresh %d sessions: %s", len(session_ids), exc.message)

    async def lookup(self, session_id: str) -> tuple[str, str] | None:
        store = self.shared
        value = await store.call(store.client.get(store.key("session", session_id)))
        if not isinstance(value, bytes):
            return None
        owner, _, standalone = value.decode().rpartition("\n")
        return standalone, owner

    async def remove(self, session_id: str) -> None:
        store = self.shared
        try:
            await store.call(store.client.delete(store.key("session", session_id)))
        except StoreUnavailable as exc:
            log.warning("mcpgen: could not remove an ended session: %s", exc.message)


class RedisEventStore:
    """The SSE events of one session's streams, as Redis streams (see the module's doc).

    One instance per session, in the worker that serves it: it remembers each stream's
    key and its next event number. Any worker's instance can replay and follow any
    stream whose event id it is given."""

    def __init__(self, store: RedisStore) -> None:
        self.shared = store
        self._streams: dict[str, list[Any]] = {}  # stream id -> [key name, last number]

    def _name(self, stream_id: str) -> list[Any]:
        found = self._streams.get(stream_id)
        if found is None:
            found = self._streams[stream_id] = [f"{stream_id}.{secrets.token_urlsafe(12)}", 0]
        return found

    async def _append(self, stream_id: str, fields: dict[str, bytes]) -> str:
        store = self.shared
        entry = self._name(stream_id)
        entry[1] += 1
        name, n = entry[0], entry[1]
        key = store.key("ev", name)
        pipe = store.client.pipeline(transaction=False)
        # Trimmed exactly: replay_after's hole check reads the real first entry.
        pipe.xadd(key, fields, id=f"{n}-0", maxlen=store.per_stream, approximate=False)  # type: ignore[arg-type]
        pipe.pexpire(key, _ms(store.event_ttl))
        await store.call(pipe.execute())
        return f"{name}/{n}"

    async def store(self, stream_id: str, frame: bytes) -> str:
        return await self._append(stream_id, {"f": frame})

    async def end(self, stream_id: str) -> None:
        await self._append(stream_id, {"e": b"1"})

    async def replay_after(self, event_id: str) -> tuple[str, list[tuple[str, bytes]]] | None:
        parsed = _parse(event_id)
        if parsed is None:
            return None
        name, n = parsed
        store = self.shared
        key = store.key("ev", name)
        pipe = store.client.pipeline(transaction=False)
        pipe.xrange(key, "-", "+", count=1)
        pipe.xrange(key, f"({n}-0", "+")
        first, after = await store.call(pipe.execute())
        if not first or _number(first[0][0]) > n + 1:
            return None  # unknown, forgotten, expired, or trimmed past what the client has
        return name.rpartition(".")[0], [(f"{name}/{_number(i)}", f[b"f"]) for i, f in after if b"f" in f]

    async def follow(self, event_id: str) -> AsyncIterator[list[tuple[str, bytes]]]:
        parsed = _parse(event_id)
        if parsed is None:
            return
        name, n = parsed
        store = self.shared
        key = store.key("ev", name)
        last: bytes | str = f"{n}-0"
        while True:
            reply = await store.call(store.client.xread({key: last}, block=int(store.block * 1000)), longer=store.block)
            entries = _entries(reply)
            if not entries:
                if not await store.call(store.client.exists(key)):
                    return  # forgotten (the session ended) or expired
                continue
            batch: list[tuple[str, bytes]] = []
            for entry_id, fields in entries:
                last = entry_id
                if b"f" not in fields:  # the end marker
                    if batch:
                        yield batch
                    return
                batch.append((f"{name}/{_number(entry_id)}", fields[b"f"]))
            yield batch

    async def forget(self, stream_id: str) -> None:
        entry = self._streams.pop(stream_id, None)
        if entry is None:
            return
        store = self.shared
        try:
            await store.call(store.client.delete(store.key("ev", entry[0])))
        except StoreUnavailable as exc:
            log.debug("mcpgen: could not forget a stream's events (they expire): %s", exc.message)


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

    def __init__(self, store: RedisStore) -> None:
        self.shared = store
        self.channel = store.key("task-changes")
        self._waiting: dict[str, set[asyncio.Event]] = {}
        self._listener: asyncio.Task[None] | None = None
        self._subscribed: asyncio.Future[None] | None = None
        self._script: Any = None

    def _key(self, task_id: str) -> str:
        return self.shared.key("task", task_id)

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


def _ms(seconds: float) -> int:
    return max(1, int(seconds * 1000))


def _parse(event_id: str) -> tuple[str, int] | None:
    """``<stream id>.<secret>/<n>`` -> (``<stream id>.<secret>``, n), or None if malformed."""
    if len(event_id) > _MAX_EVENT_ID:
        return None
    name, _, n = event_id.rpartition("/")
    if not n.isdigit() or not n.isascii() or "." not in name or not name.isprintable():
        return None
    return name, int(n)


def _number(entry_id: bytes | str) -> int:
    text = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
    return int(text.partition("-")[0])


def _entries(reply: Any) -> list[tuple[bytes, dict[bytes, bytes]]]:
    """XREAD's entries for one key (RESP2 answers a list of [key, entries], RESP3 a dict)."""
    if not reply:
        return []
    if isinstance(reply, dict):
        return list(next(iter(reply.values()))[0]) if reply else []
    return list(reply[0][1])
