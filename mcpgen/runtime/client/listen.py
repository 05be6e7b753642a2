"""Listening for changes from the client side: :meth:`Client.listen
<mcpgen.runtime.client.client.Client.listen>`.

    async with client.listen(tools=True, uris=["file:///notes.txt"]) as changes:
        async for change in changes:          # or: await changes.next(timeout=5)
            print(change.method, change.params)

In the stateless era this is one ``subscriptions/listen`` request: the server acknowledges
with the part of the filter it honours (:attr:`Listener.acknowledged`), then streams the
changes asked for; leaving the block ends the request. In the handshake era the server
sends list changes unasked and resource updates after ``resources/subscribe``: the same
listener filters those, subscribing to ``uris`` on entry and unsubscribing on exit, so
code written against it works in both eras.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
# Filter flag -> the notification it asks for.
LIST_FLAGS = {
    "toolsListChanged": "notifications/tools/list_changed",
    "promptsListChanged": "notifications/prompts/list_changed",
    "resourcesListChanged": "notifications/resources/list_changed",
}
UPDATED = "notifications/resources/updated"
_END: Any = object()


@dataclass(frozen=True, slots=True)
class Change:
    """One notification of a listen stream: its method and params (JSON data)."""

    method: str
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def uri(self) -> str | None:
        """The resource a ``notifications/resources/updated`` names."""
        uri = self.params.get("uri")
        return uri if isinstance(uri, str) else None


def subscription_filter(tools: bool, prompts: bool, resources: bool, uris: list[str]) -> dict[str, Any]:
    """The ``notifications`` filter of a listen request (flags left out when not asked)."""
    wanted: dict[str, Any] = {}
    if tools:
        wanted["toolsListChanged"] = True
    if prompts:
        wanted["promptsListChanged"] = True
    if resources:
        wanted["resourcesListChanged"] = True
    if uris:
        wanted["resourceSubscriptions"] = list(uris)
    return wanted


class Listener:
    """The changes of one open subscription, in the order they came."""

    def __init__(self, wanted: dict[str, Any], *, keep_changes: bool = True) -> None:
        self.wanted = wanted
        self.keep_changes = keep_changes  # False: only the acknowledgement is kept
        self.acknowledged: dict[str, Any] | None = None
        """What the server honours of ``wanted`` (stateless era: its acknowledgement;
        handshake era: what its capabilities offer)."""
        self.ready = asyncio.Event()
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self.ended = False

    def wants(self, method: str, params: dict[str, Any]) -> bool:
        """Whether this subscription asked for this notification (handshake era, where the
        server does not filter)."""
        if method == UPDATED:
            return params.get("uri") in self.wanted.get("resourceSubscriptions", ())
        return any(self.wanted.get(flag) and method == note for flag, note in LIST_FLAGS.items())

    def deliver(self, method: str, params: dict[str, Any]) -> None:
        if method == ACKNOWLEDGED:
            honoured = params.get("notifications")
            self.acknowledged = honoured if isinstance(honoured, dict) else {}
            self.ready.set()
            return
        if self.keep_changes:
            self._queue.put_nowait(Change(method, {k: v for k, v in params.items() if k != "_meta"}))

    def end(self) -> None:
        """No more changes will come (the server ended the subscription or it was closed)."""
        if not self.ended:
            self.ended = True
            self.ready.set()
            self._queue.put_nowait(_END)

    async def next(self, timeout: float | None = None) -> Change:
        """The next change; TimeoutError after ``timeout`` seconds, StopAsyncIteration once
        the subscription has ended."""
        item = await asyncio.wait_for(self._queue.get(), timeout)
        if item is _END:
            self._queue.put_nowait(_END)  # later calls see the end too
            raise StopAsyncIteration
        return item  # type: ignore[no-any-return]

    def __aiter__(self) -> Listener:
        return self

    async def __anext__(self) -> Change:
        return await self.next()
