"""What the Redis stores (:mod:`.redis_events`, :mod:`.redis_tasks`) use of the
:class:`~mcpgen.runtime.stores.redis_store.RedisStore` that holds them (a Protocol, so that
they sit below it), and the small helpers they share."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from redis.asyncio import Redis

T = TypeVar("T")
MAX_EVENT_ID = 256  # longer Last-Event-IDs are not ours; refused before reaching Redis


class Connection(Protocol):
    """A :class:`~mcpgen.runtime.stores.redis_store.RedisStore`, as the stores it holds use it."""

    name: str
    event_ttl: float
    per_stream: int
    block: float
    connect_timeout: float

    @property
    def client(self) -> Redis: ...
    @property
    def worker(self) -> str: ...
    def key(self, *parts: str) -> str: ...
    def keep_alive(self) -> None: ...
    async def alive(self, worker: str) -> bool: ...
    async def call(self, awaitable: Awaitable[T], *, longer: float = 0.0, bounded: bool = True) -> T: ...


def ms(seconds: float) -> int:
    return max(1, int(seconds * 1000))


def parse(event_id: str) -> tuple[str, int] | None:
    """``<stream id>.<secret>/<n>`` -> (``<stream id>.<secret>``, n), or None if malformed."""
    if len(event_id) > MAX_EVENT_ID:
        return None
    name, _, n = event_id.rpartition("/")
    if not n.isdigit() or not n.isascii() or "." not in name or not name.isprintable():
        return None
    return name, int(n)


def number(entry_id: bytes | str) -> int:
    text = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
    return int(text.partition("-")[0])


def entries(reply: Any) -> list[tuple[bytes, dict[bytes, bytes]]]:
    """XREAD's entries for one key (RESP2 answers a list of [key, entries], RESP3 a dict)."""
    if not reply:
        return []
    if isinstance(reply, dict):
        return list(next(iter(reply.values()))[0]) if reply else []
    return list(reply[0][1])
