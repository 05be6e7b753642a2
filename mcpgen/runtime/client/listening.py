"""How a :class:`~mcpgen.runtime.client.client.Client` follows a server's changes:
:meth:`Listening.listen` in either era (a ``subscriptions/listen`` stream in the stateless
era; in the handshake era, a filter on what the server sends unasked), and the client's own
background stream that carries ``subscribe`` and the list changes to ``on_notification``
in the stateless era.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from mcpgen.runtime.client.listen import Listener, subscription_filter
from mcpgen.runtime.errors import McpError

if TYPE_CHECKING:
    from mcpgen.runtime.client.session import ClientSession

log = logging.getLogger("mcpgen")


class Listening:
    """The listening of :class:`~mcpgen.runtime.client.client.Client`, which inherits it."""

    if TYPE_CHECKING:  # what the Client provides
        request_timeout: float | None
        _session: ClientSession | None
        _subscribed: list[str]
        _background: tuple[asyncio.Task[Any], Listener] | None
        _handshake_listeners: set[Listener]

        @property
        def session(self) -> ClientSession: ...

        @property
        def stateless(self) -> bool: ...

    @contextlib.asynccontextmanager
    async def listen(
        self,
        *,
        tools: bool = False,
        prompts: bool = False,
        resources: bool = False,
        uris: Sequence[str] = (),
        timeout: float | None = None,
    ) -> AsyncIterator[Listener]:
        """Follow changes while the block runs: list changes of tools, prompts or
        resources, and updates of the resources ``uris``. Yields a
        :class:`~mcpgen.runtime.client.listen.Listener` once the server has acknowledged
        it (stateless era; ``timeout``: seconds to wait for that, default the request
        timeout). Changes also make cached results stale and reach ``on_notification``."""
        listener = Listener(subscription_filter(tools, prompts, resources, list(uris)))
        if not self.stateless:
            async with self._handshake_listen(listener):
                yield listener
            return
        task = asyncio.ensure_future(self._run_listen(listener))
        try:
            await asyncio.wait_for(listener.ready.wait(), timeout if timeout is not None else self.request_timeout)
            if task.done():
                task.result()  # refused: raise why
            yield listener
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            listener.end()

    async def _run_listen(self, listener: Listener) -> None:
        try:
            await self.session.listen(listener.wanted, listener.deliver)
        finally:
            listener.end()

    @contextlib.asynccontextmanager
    async def _handshake_listen(self, listener: Listener) -> AsyncIterator[None]:
        """The handshake era's stand-in: filter what the server sends unasked."""
        peer = self.session.peer_caps
        honoured: dict[str, Any] = {
            flag: True
            for flag, feature in (
                ("toolsListChanged", "tools"),
                ("promptsListChanged", "prompts"),
                ("resourcesListChanged", "resources"),
            )
            if listener.wanted.get(flag) and peer.has(f"{feature}.listChanged")
        }
        uris = list(listener.wanted.get("resourceSubscriptions", ()))
        if uris and peer.has("resources.subscribe"):
            honoured["resourceSubscriptions"] = uris
            for uri in uris:
                await self.session.subscribe(uri=uri)
        listener.acknowledged = honoured
        self._handshake_listeners.add(listener)
        try:
            yield
        finally:
            self._handshake_listeners.discard(listener)
            listener.end()
            if "resourceSubscriptions" in honoured and self._session is not None and self._session.is_open:
                for uri in uris:
                    if uri not in self._subscribed:
                        with contextlib.suppress(McpError, ConnectionError):
                            await self.session.unsubscribe(uri=uri)

    def _to_listeners(self, method: str, params: Any) -> None:
        if not self._handshake_listeners:
            return
        data = msgspec.to_builtins(params) if params is not None else {}
        data = data if isinstance(data, dict) else {}
        for listener in list(self._handshake_listeners):
            if listener.wants(method, data):
                listener.deliver(method, data)

    async def _restart_background(self) -> None:
        """(Re)open the client's own listen stream (stateless era), which carries what the
        handshake era would send unasked to ``on_notification``: the list changes the
        server offers, and updates of the URIs ``subscribe`` named."""
        if self._background is not None:
            task, _ = self._background
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            self._background = None
        peer = self.session.peer_caps
        # Its notifications reach on_notification through the session; its own queue is not
        # read, so it keeps only the acknowledgement.
        listener = Listener(
            subscription_filter(
                peer.has("tools.listChanged"),
                peer.has("prompts.listChanged"),
                peer.has("resources.listChanged"),
                self._subscribed if peer.has("resources.subscribe") else [],
            ),
            keep_changes=False,
        )
        if not listener.wanted:
            return
        task = asyncio.ensure_future(self._run_listen(listener))
        self._background = (task, listener)
        try:
            await asyncio.wait_for(listener.ready.wait(), self.request_timeout)
        except TimeoutError:
            log.warning("mcpgen: the server did not acknowledge the client's listen stream")


__all__ = ["Listening"]
