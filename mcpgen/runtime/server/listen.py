"""``subscriptions/listen`` (stateless era): the one long-lived request whose stream carries
change notifications.

A listen request opens a subscription with a filter (which list changes, which resource
URIs). The stream starts with ``notifications/subscriptions/acknowledged`` naming what the
server honours; every notification on it, the acknowledgement included, carries the listen
request's id as ``_meta["io.modelcontextprotocol/subscriptionId"]``. Changes fan out to every
open subscription that asked for them, and to nothing else. The subscription ends when the
client cancels the request (stdio: ``notifications/cancelled``; HTTP: closing the stream),
when it has lasted ``lifetime`` seconds, or when the server closes; the last two answer the
request with a final result (a client listens again).

A listen holds a stream (over HTTP, a connection) for as long as it lasts and takes no
slot: the hub bounds them itself. At most ``max_open`` are open at once, at most
``max_per_caller`` for one caller (its principal, else its address), and one names at most
``max_uris`` resources; past a bound a listen is refused at once (-32000, or -32602 for
too many URIs), and those open are kept.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

import msgspec

from mcpgen.runtime.auth.info import current_owner
from mcpgen.runtime.errors import INVALID_PARAMS, SERVER_BUSY, McpError
from mcpgen.runtime.shared.caller import caller_key
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
MAX_OPEN = 256
"""Listen streams open at once (with uvicorn's 1,000 connections: three quarters are left
for short requests)."""
MAX_PER_CALLER = 16
"""Listen streams one caller may hold open."""
MAX_URIS = 1000
"""Resources one listen may name."""
LIFETIME = 3600.0
"""Seconds a listen lasts before the server ends it with its result (the client listens again)."""


# A msgspec Struct compared and hashed by identity (kept in a set), not a dataclass: a
# dataclass costs ~0.4 ms to create at import, before every server's first answer.
class Subscription(msgspec.Struct, eq=False):
    id: Any
    features: frozenset[str]  # "tools", "prompts", "resources"
    uris: frozenset[str]
    queue: asyncio.Queue[Any] = msgspec.field(default_factory=lambda: asyncio.Queue(_QUEUE_LIMIT))


class ListenHub:
    """The open subscriptions of one server (in this process), within its bounds (see the
    module's docstring; set them on the hub, or through ``http_app``'s options)."""

    def __init__(self, server: FrontHost) -> None:
        self.server = server
        self.subscriptions: set[Subscription] = set()
        self.max_open = MAX_OPEN
        self.max_per_caller = MAX_PER_CALLER
        self.max_uris = MAX_URIS
        self.lifetime = LIFETIME
        self._by_caller: dict[str, int] = {}

    def configure(
        self,
        *,
        max_open: int | None = None,
        max_per_caller: int | None = None,
        max_uris: int | None = None,
        lifetime: float | None = None,
    ) -> None:
        """Set the bounds given (None leaves one as it is)."""
        self.max_open = max_open if max_open is not None else self.max_open
        self.max_per_caller = max_per_caller if max_per_caller is not None else self.max_per_caller
        self.max_uris = max_uris if max_uris is not None else self.max_uris
        self.lifetime = lifetime if lifetime is not None else self.lifetime

    async def listen(self, stateless: StatelessServer, request: StatelessRequest, params: Any) -> dict[str, Any]:
        """Serve one listen request: acknowledge, then forward changes until it ends."""
        asked = getattr(params.notifications, "resource_subscriptions", None)
        if isinstance(asked, list) and len(asked) > self.max_uris:
            raise McpError(
                INVALID_PARAMS, f"Invalid params: a listen names at most {self.max_uris} resources, not {len(asked)}"
            )
        caller = caller_key(current_owner())
        self._admit(caller)
        try:
            return await self._listen(stateless, request, params)
        finally:
            self._release(caller)

    def _admit(self, caller: str | None) -> None:
        if len(self.subscriptions) >= self.max_open:
            log.warning("mcpgen: refusing a listen: %d open (max_listens)", len(self.subscriptions))
            raise McpError(SERVER_BUSY, f"Server busy: {self.max_open} listen streams open; retry later")
        if caller is not None:
            held = self._by_caller.get(caller, 0)
            if held >= self.max_per_caller:
                raise McpError(
                    SERVER_BUSY, f"Server busy: this caller has {held} listen streams open; end one or retry later"
                )
            self._by_caller[caller] = held + 1

    def _release(self, caller: str | None) -> None:
        if caller is not None:
            left = self._by_caller.get(caller, 0) - 1
            if left > 0:
                self._by_caller[caller] = left
            else:
                self._by_caller.pop(caller, None)

    async def _listen(self, stateless: StatelessServer, request: StatelessRequest, params: Any) -> dict[str, Any]:
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
        self.subscriptions.add(sub)  # counted from here on: the acknowledgement may wait
        try:
            await stateless.notify(
                request, "notifications/subscriptions/acknowledged", {"notifications": honoured, "_meta": tag}
            )
            loop = asyncio.get_running_loop()
            deadline = loop.time() + self.lifetime
            while True:
                try:
                    async with asyncio.timeout_at(deadline):
                        item = await sub.queue.get()
                except TimeoutError:
                    break  # it has lasted its lifetime: answered, the client listens again
                if item is _CLOSE:
                    break
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
