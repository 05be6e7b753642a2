"""The client's cache of stateless-era results, as their caching hints allow.

A server stamps the results of ``server/discover``, the list methods and ``resources/read``
with ``ttlMs`` (how long they stay fresh) and ``cacheScope``. The client keeps a result's
raw JSON for that long under the method plus the params that shape it (the cursor of a
page, the URI read), so a repeated call within the TTL makes no round trip; each hit is
decoded afresh, so callers never share (and never alter) a cached object. The cache lives
in one client's memory, i.e. one authorization context, so "private" results may be kept
as well as "public" ones. Change notifications drop what they make stale. Results of
retried requests (after questions to the client) are never stored.
"""

from __future__ import annotations

import time
from typing import Any

CACHEABLE = frozenset(
    {"server/discover", "tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read"}
)
# Which cached methods a change notification makes stale.
_STALE_AFTER = {
    "notifications/tools/list_changed": ("tools/list",),
    "notifications/prompts/list_changed": ("prompts/list",),
    "notifications/resources/list_changed": ("resources/list", "resources/templates/list"),
}

Key = tuple[str, Any]


def cache_key(method: str, params: dict[str, Any]) -> Key | None:
    """The key of a request's result, or None when it is not cacheable."""
    if method not in CACHEABLE:
        return None
    if method == "resources/read":
        uri = params.get("uri")
        return (method, uri) if isinstance(uri, str) else None
    cursor = params.get("cursor")
    return (method, cursor if isinstance(cursor, str) else None)


class ResultCache:
    def __init__(self, clock: Any = time.monotonic) -> None:
        self._clock = clock
        self._entries: dict[Key, tuple[float, bytes]] = {}

    def get(self, key: Key) -> bytes | None:
        found = self._entries.get(key)
        if found is None:
            return None
        expires, raw = found
        if self._clock() >= expires:
            del self._entries[key]
            return None
        return raw

    def put(self, key: Key, raw: bytes, ttl_ms: Any) -> None:
        """Keep ``raw`` for ``ttl_ms`` milliseconds (missing, negative or not a number: 0,
        i.e. not at all)."""
        if isinstance(ttl_ms, bool) or not isinstance(ttl_ms, (int, float)) or ttl_ms <= 0:
            return
        self._entries[key] = (self._clock() + ttl_ms / 1000, bytes(raw))

    def invalidate(self, method: str, params: Any) -> None:
        """Drop what a notification (``method`` with its params as JSON data) makes stale."""
        if method == "notifications/resources/updated":
            uri = params.get("uri") if isinstance(params, dict) else None
            self._entries.pop(("resources/read", uri), None)
            return
        for stale in _STALE_AFTER.get(method, ()):
            self.drop(stale)

    def drop(self, method: str) -> None:
        """Drop every cached result of ``method`` (all pages of a list)."""
        for key in [k for k in self._entries if k[0] == method]:
            del self._entries[key]

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
