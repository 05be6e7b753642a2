"""The SSE events of Streamable HTTP sessions, in Redis, for several workers.

``<prefix>:ev:<stream id>.<secret>`` is a Redis stream of one SSE stream's events. Entry
ids are ``<n>-0`` with n counting from 1 (the writer is the one worker serving the
stream), an entry is ``{f: frame}`` or the end marker ``{e: 1}``; the first entry also
names its writer (``w``: the worker's id, whose lease a follower checks) and, for a
request's stream, the request (``r``: its JSON id). The SSE event id is
``<stream id>.<secret>/<n>``: the secret (96 random bits per stream) is what makes an id
unguessable, so one client cannot read another's stream by counting.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import AsyncIterator
from typing import Any

from mcpgen.runtime.stores.redis_base import Connection, entries, ms, number, parse
from mcpgen.runtime.stores.shared_store import StoreUnavailable, WriterGone

log = logging.getLogger("mcpgen")


class RedisEventStore:
    """The SSE events of one session's streams, as Redis streams (see the module's doc).

    One instance per session, in the worker that serves it: it remembers each stream's
    key, its last event number and what its first entry says. Any worker's instance can
    replay, read and follow any stream whose event id it is given."""

    def __init__(self, store: Connection) -> None:
        self.shared = store
        # stream id -> [key name, last number, the request's JSON id or None]
        self._streams: dict[str, list[Any]] = {}

    def _entry(self, stream_id: str) -> list[Any]:
        found = self._streams.get(stream_id)
        if found is None:
            found = self._streams[stream_id] = [f"{stream_id}.{secrets.token_urlsafe(12)}", 0, None]
        return found

    def name_of(self, stream_id: str) -> str:
        return str(self._entry(stream_id)[0])

    def adopt(self, stream_id: str, name: str, request: bytes | None = None) -> None:
        self._streams[stream_id] = [name, 0, request]

    async def _append(self, stream_id: str, fields: dict[str, bytes]) -> str:
        store = self.shared
        entry = self._entry(stream_id)
        name, n = entry[0], entry[1] + 1
        if n == 1:  # the first entry says who writes the stream, and which request it answers
            fields = {**fields, "w": store.worker.encode()}
            if entry[2] is not None:
                fields["r"] = entry[2]
        key = store.key("ev", name)
        pipe = store.client.pipeline(transaction=False)
        # Trimmed exactly: replay_after's hole check reads the real first entry.
        pipe.xadd(key, fields, id=f"{n}-0", maxlen=store.per_stream, approximate=False)  # type: ignore[arg-type]
        pipe.pexpire(key, ms(store.event_ttl))
        try:
            await store.call(pipe.execute())
        except StoreUnavailable as exc:
            # A write that timed out may still have been applied (a frozen Redis runs what it
            # had queued once it thaws): the retry of the same number then finds it there.
            if "equal or smaller" not in exc.message:
                raise
        entry[1] = n  # only once stored: a failed write is retried under the same number
        return f"{name}/{n}"

    async def store(self, stream_id: str, frame: bytes) -> str:
        return await self._append(stream_id, {"f": frame})

    async def end(self, stream_id: str) -> None:
        await self._append(stream_id, {"e": b"1"})

    async def replay_after(self, event_id: str) -> tuple[str, list[tuple[str, bytes]]] | None:
        parsed = parse(event_id)
        if parsed is None:
            return None
        name, n = parsed
        store = self.shared
        key = store.key("ev", name)
        pipe = store.client.pipeline(transaction=False)
        pipe.xrange(key, "-", "+", count=1)
        pipe.xrange(key, f"({n}-0", "+")
        first, after = await store.call(pipe.execute())
        if not first or number(first[0][0]) > n + 1:
            return None  # unknown, forgotten, expired, or trimmed past what the client has
        return name.rpartition(".")[0], [(f"{name}/{number(i)}", f[b"f"]) for i, f in after if b"f" in f]

    async def read(self, event_id: str, block: float) -> list[tuple[str, bytes | None]]:
        parsed = parse(event_id)
        if parsed is None:
            return []
        name, n = parsed
        store = self.shared
        key = store.key("ev", name)
        reply = await store.call(store.client.xread({key: f"{n}-0"}, block=ms(block)), longer=block)
        return [(f"{name}/{number(i)}", f.get(b"f")) for i, f in entries(reply)]

    async def follow(
        self, event_id: str, *, writer: str | None = None, missing_ok: bool = False
    ) -> AsyncIterator[list[tuple[str, bytes]]]:
        parsed = parse(event_id)
        if parsed is None:
            return
        name, n = parsed
        store = self.shared
        key = store.key("ev", name)
        last: bytes | str = f"{n}-0"
        # The writer and the request, as the first entry says (read once), or as given.
        origin: tuple[str, bytes | None] | None = (writer, None) if writer is not None else None
        while True:
            reply = await store.call(store.client.xread({key: last}, block=ms(store.block)), longer=store.block)
            found = entries(reply)
            if not found:
                # Quiet: is the stream still there, and is its writer still alive?
                if origin is None:
                    origin = await self._origin(key)
                    if origin is None:
                        if missing_ok:
                            continue
                        return  # forgotten (the session ended) or expired
                elif not missing_ok and not await store.call(store.client.exists(key)):
                    return
                if origin[0] and not await store.alive(origin[0]):
                    raise WriterGone(origin[1])
                continue
            batch: list[tuple[str, bytes]] = []
            for entry_id, fields in found:
                last = entry_id
                if b"f" not in fields:  # the end marker
                    if batch:
                        yield batch
                    return
                batch.append((f"{name}/{number(entry_id)}", fields[b"f"]))
            yield batch

    async def _origin(self, key: str) -> tuple[str, bytes | None] | None:
        """What the first entry of a stream says: its writer, and the request it answers."""
        store = self.shared
        first: Any = await store.call(store.client.xrange(key, "-", "+", count=1))
        if not first:
            return None
        fields: dict[bytes, bytes] = first[0][1]
        writer = fields.get(b"w", b"")
        return writer.decode(), fields.get(b"r")

    async def forget(self, stream_id: str) -> None:
        entry = self._streams.pop(stream_id, None)
        if entry is None or entry[1] == 0:
            return  # nothing of it was written
        store = self.shared
        try:
            await store.call(store.client.delete(store.key("ev", entry[0])))
        except StoreUnavailable as exc:
            log.debug("mcpgen: could not forget a stream's events (they expire): %s", exc.message)
