"""State shared by several worker processes serving one endpoint, behind one object.

A server on one process keeps its legacy-era SSE events, its sessions and its tasks in
memory. Behind a load balancer (``uvicorn --workers 4``) a request may land on any worker,
so whatever a later request needs must live outside the process: the user passes one
:class:`SharedStore` (``server.run("http", store=RedisStore(url))``, or
``server.http_app(store=...)``) and the HTTP app takes from it the event store of each
session, the registry of legacy sessions and the task store.

This module only says what such a store provides; :mod:`mcpgen.runtime.stores.redis_store` is the
implementation mcpgen ships.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from mcpgen.runtime.errors import INTERNAL_ERROR, McpError

if TYPE_CHECKING:
    from mcpgen.runtime.stores.event_store import SharedEventStore
    from mcpgen.runtime.stores.task_store import TaskStore


class StoreUnavailable(McpError):
    """The shared store could not be reached. A request that needed it is answered with
    this error (-32603; the message names the store), the server carries on."""

    def __init__(self, store: str, why: str) -> None:
        super().__init__(INTERNAL_ERROR, f"{store} unavailable: {why}")


class SessionRegistry(Protocol):
    """Which legacy-era (Streamable HTTP) sessions exist, across workers. A session lives in
    the worker that created it; the others only need to know it exists, and which of its
    streams is the standalone (GET) one, to resume its streams from the event store."""

    async def add(self, session_id: str, standalone: str, ttl: float, owner: str = "") -> None:
        """Record a new session and whom it belongs to (``owner``: its principal on a
        protected server, else ""); expires after ``ttl`` seconds unless touched."""
        ...

    async def touch(self, session_ids: list[str], ttl: float) -> None:
        """Keep these sessions for another ``ttl`` seconds (best effort: never raises)."""
        ...

    async def lookup(self, session_id: str) -> tuple[str, str] | None:
        """The session's standalone stream id and owner, or None if no worker has it."""
        ...

    async def remove(self, session_id: str) -> None:
        """The session ended (best effort: never raises; the record expires anyway)."""
        ...


@runtime_checkable
class ProofLedger(Protocol):
    """What the DPoP proof checks of a protected server share across its workers
    (:mod:`mcpgen.runtime.auth.dpop_verify`): the proofs already used, so that a proof
    accepted by one worker is a replay at every other, and the secret the nonces are made
    from, so that a nonce one worker hands out is good at all of them. A store offers one
    as its ``proofs`` attribute (``RedisStore`` does); the HTTP app hands it to the
    server's ``BearerAuth``."""

    async def first_use(self, key: str, ttl: float) -> bool:
        """Record ``key`` for ``ttl`` seconds: True if no worker had recorded it (raises
        :class:`StoreUnavailable` when the store cannot say)."""
        ...

    async def shared_secret(self, name: str) -> bytes:
        """Random bytes named ``name``, made by the first worker that asks, the same for
        every worker after it."""
        ...


class SharedStore(Protocol):
    """Everything several workers share: one object to pass to the HTTP app. A store may
    also offer ``proofs`` (a :class:`ProofLedger`) for DPoP across workers."""

    sessions: SessionRegistry

    def event_store(self) -> SharedEventStore:
        """A fresh event store for one session (called once per session)."""
        ...

    def task_store(self) -> TaskStore:
        """The task store of the server (the same object on every call)."""
        ...
