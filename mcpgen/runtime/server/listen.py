"""``subscriptions/listen`` (stateless era): the one long-lived request whose stream carries
change notifications.

A listen request opens a subscription with a filter (which list changes, which resource
URIs). The stream starts with ``notifications/subscriptions/acknowledged`` naming what the
server honours; every notification on it, the acknowledgement included, carries the listen
request's id as ``_meta["io.modelcontextprotocol/subscriptionId"]``. Changes fan out to every
open subscription that asked for them, and to nothing else. The subscription ends when the
client cancels the request (stdio: ``notifications/cancelled``; HTTP: closing the stream)
or when the server closes, which answers the request with a final result.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

import msgspec

from mcpgen.runtime.shared.meta import META_SUBSCRIPTION

if TYPE_CHECKING:
    from mcpgen.runtime.server.stateless import FrontHost, StatelessRequest, StatelessServer

log = logging.getLogger("mcpgen")

SUBSCRIPTION_ID = META_SUBSCRIPTION
# Filter flag -> (the feature whose list it follows, the capability that offers it)
_LIST_FLAGS = {
    "toolsListChanged": ("tools", "tools.listChanged"),
    "promptsListChanged": ("prompts", "prompts.listChanged"),
    "resourcesListChanged": ("resources", "resources.listChanged"),
}
_QUEUE_LIMIT = 1024  # notifications waiting for a slow listener before it is dropped
_CLOSE: Any = object()


# A msgspec Struct compared and hashed by identity (kept in a set), not a dataclass: a
# dataclass costs ~0.4 ms to create at import, before every server's first answer.
class Subscription(msgspec.Struct, eq=False):
    id: Any
    features: frozenset[str]  # "tools", "prompts", "resources"
    uris: frozenset[str]
    queue: asyncio.Queue[Any] = msgspec.field(default_factory=lambda: asyncio.Queue(_QUEUE_LIMIT))


class ListenHub:
    """The open subscriptions of one server (in this process)."""

    def __init__(self, server: FrontHost) -> None:
        self.server = server
        self.subscriptions: set[Subscription] = set()

    async def listen(self, stateless: StatelessServer, request: StatelessRequest, params: Any) -> dict[str, Any]:
        """Serve one listen request: acknowledge, then forward changes until it ends."""
        wanted = msgspec.to_builtins(params.notifications)
        honoured: dict[str, Any] = {}
        for flag, (_, capability) in _LIST_FLAGS.items():
            if wanted.get(flag) and self.server.declares(capability):
                honoured[flag] = True
        uris = wanted.get("resourceSubscriptions")
        if uris and self.server.declares("resources.subscribe"):
            honoured["resourceSubscriptions"] = list(uris)
        sub = Subscription(
            id=request.id,
            features=frozenset(_LIST_FLAGS[f][0] for f in honoured if f in _LIST_FLAGS),
            uris=frozenset(honoured.get("resourceSubscriptions", ())),
        )
        tag = {SUBSCRIPTION_ID: request.id}
        await stateless.notify(
            request, "notifications/subscriptions/acknowledged", {"notifications": honoured, "_meta": tag}
        )
        self.subscriptions.add(sub)
        try:
            while (item := await sub.queue.get()) is not _CLOSE:
                method, params = item
                await stateless.notify(request, method, {**params, "_meta": tag})
        finally:
            self.subscriptions.discard(sub)
        return {"_meta": tag}

    def list_changed(self, feature: str) -> None:
        """Tell every subscription that follows ``feature`` ("tools", ...) its list changed."""
        self._fan_out(lambda s: feature in s.features, f"notifications/{feature}/list_changed", {})

    def resource_updated(self, uri: str) -> None:
        self._fan_out(lambda s: uri in s.uris, "notifications/resources/updated", {"uri": uri})

    def close(self) -> None:
        """End every subscription with its final result (the server is going away)."""
        for sub in list(self.subscriptions):
            _put(sub, _CLOSE)

    def _fan_out(self, wants: Any, method: str, params: dict[str, Any]) -> None:
        for sub in list(self.subscriptions):
            if wants(sub):
                _put(sub, (method, params))


def _put(sub: Subscription, item: Any) -> None:
    try:
        sub.queue.put_nowait(item)
    except asyncio.QueueFull:
        # A listener this far behind is not reading: end its stream rather than grow.
        log.warning("mcpgen: listen subscription %r fell behind; closing it", sub.id)
        while not sub.queue.empty():
            sub.queue.get_nowait()
        sub.queue.put_nowait(_CLOSE)
