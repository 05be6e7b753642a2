"""A server's lifespan (``@server.lifespan``): one async context manager entered before the
first request is served and left after the last, whatever serves it (stdio, HTTP, each
worker of several). What it yields is ``Context.lifespan`` in every handler."""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import Any

log = logging.getLogger("mcpgen")


class LifespanRunner:
    """Enters and leaves one server's lifespan: entered when the first of what serves it
    starts (stdio, an in-process connection, the HTTP app's startup), left when the last
    ends. A server without one costs nothing."""

    def __init__(self, factory: Callable[[Any], AbstractAsyncContextManager[Any]] | None, server: Any, host: Any):
        self.factory = factory
        self.server = server  # what the factory is given: the Server users made
        self.host = host  # where the state is kept for handlers (Features.lifespan_state)
        self._entered: AbstractAsyncContextManager[Any] | None = None
        self._children: list[Any] = []  # the mounted servers' runners it entered
        self._users = 0

    async def __aenter__(self) -> LifespanRunner:
        self._users += 1
        if self._users == 1:
            try:
                await self.enter()
            except BaseException:
                self._users -= 1
                raise
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._users -= 1
        if self._users == 0:
            await self.exit(kind, exc, tb)

    async def enter(self) -> None:
        if self._entered is not None:
            return
        # The servers mounted into this one first (Server.mount): its own set-up may use them.
        mounted = list(getattr(self.host, "mounted_lifespans", ()))
        entered_children: list[Any] = []
        try:
            for child in mounted:
                await child.__aenter__()
                entered_children.append(child)
            if self.factory is not None:
                entered = self.factory(self.server)
                self.host.lifespan_state = await entered.__aenter__()
                self._entered = entered
        except BaseException as exc:
            for child in reversed(entered_children):
                await child.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        self._children = entered_children

    async def exit(
        self,
        kind: type[BaseException] | None = None,
        exc: BaseException | None = None,
        tb: TracebackType | None = None,
    ) -> None:
        entered, self._entered = self._entered, None
        children, self._children = self._children, []
        try:
            if entered is not None:
                try:
                    await entered.__aexit__(kind, exc, tb)
                finally:
                    self.host.lifespan_state = None
        finally:
            for child in reversed(children):
                await child.__aexit__(kind, exc, tb)


__all__ = ["LifespanRunner"]
