"""What the transports' endpoints and the runner use of the server they serve.

:class:`Host` lists it, so that :mod:`.http_server`, :mod:`.http_exchange`,
:mod:`.legacy_sse` and :mod:`.running` sit below :mod:`.server` and never import it: a
:class:`~mcpgen.runtime.server.server.Server` satisfies the Protocol structurally (mypy
checks it where a server is handed over). Typing only: nothing checks it at run time."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from mcpgen.protocol.v2025_11_25 import Implementation
    from mcpgen.runtime.auth.bearer import BearerAuth
    from mcpgen.runtime.server.session import ServerSession
    from mcpgen.runtime.server.stateless import StatelessServer
    from mcpgen.runtime.server.tasks import TaskManager
    from mcpgen.runtime.server.threads import ThreadPool


class Host(Protocol):
    """A server as its connections, HTTP endpoints and runner see it. A connection
    (:class:`~mcpgen.runtime.server.session.ServerSession`) also calls the handlers the
    method table names on it."""

    @property
    def info(self) -> Implementation: ...
    @property
    def sessions(self) -> set[ServerSession]: ...
    @property
    def session_options(self) -> dict[str, Any]: ...
    @property
    def max_message(self) -> int: ...
    @property
    def auth(self) -> BearerAuth | None: ...
    @property
    def tasks(self) -> TaskManager: ...
    @property
    def stateless(self) -> StatelessServer: ...
    @property
    def threads(self) -> ThreadPool: ...

    def capabilities(self) -> Any: ...
    async def stop_tasks(self) -> None: ...
