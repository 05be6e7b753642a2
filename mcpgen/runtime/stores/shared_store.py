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

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, NamedTuple, Protocol, runtime_checkable

from mcpgen.runtime.errors import INTERNAL_ERROR, McpError

if TYPE_CHECKING:
    from mcpgen.runtime.stores.event_store import SharedEventStore
    from mcpgen.runtime.stores.task_store import TaskStore


class StoreUnavailable(McpError):
    """The shared store could not be reached. A request that needed it is answered with
    this error (-32603; the message names the store), the server carries on."""

    def __init__(self, store: str, why: str) -> None:
        super().__init__(INTERNAL_ERROR, f"{store} unavailable: {why}")


class WriterGone(Exception):
    """The worker writing a followed stream has stopped (its lease expired): nothing more
    will come. ``request`` is the JSON id of the request the stream answers, if it was one."""

    def __init__(self, request: bytes | None) -> None:
        super().__init__("the worker writing this stream has stopped")
        self.request = request


class SessionRecord(NamedTuple):
    """A session as the registry knows it: the name its standalone stream has in the
    shared event store, whom it belongs to, and the worker holding it."""

    standalone: str
    owner: str
    worker: str = ""


class SessionRegistry(Protocol):
    """Which handshake-era (Streamable HTTP) sessions exist, across workers. A session lives
    in the worker that created it (its home); the others need to know it exists, whose it
    is and where it lives, to pass its requests there and to follow its streams from the
    event store."""

    async def add(self, session_id: str, standalone: str, ttl: float, owner: str = "", worker: str = "") -> None:
        """Record a session, whom it belongs to (``owner``: its principal on a protected
        server, else "") and the worker holding it; expires after ``ttl`` seconds unless
        touched (adding it again replaces the record)."""
        ...

    async def touch(self, session_ids: list[str], ttl: float) -> None:
        """Keep these sessions for another ``ttl`` seconds (best effort: never raises)."""
        ...

    async def lookup(self, session_id: str) -> SessionRecord | None:
        """The session's record, or None if no worker has it."""
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
    """Everything several workers share: one object to pass to the HTTP app.

    Besides the stores, it knows the workers: each has an id (:attr:`worker`) and a lease
    it renews while it lives (:meth:`keep_alive`, started by whoever needs it); another
    worker asks :meth:`alive`. And each worker has an inbox, where the others leave what
    is for the sessions it holds (:meth:`post`, :meth:`receive`). A store may also offer
    ``proofs`` (a :class:`ProofLedger`) for DPoP across workers."""

    sessions: SessionRegistry

    @property
    def worker(self) -> str:
        """This worker's id (this process's, for this store)."""
        ...

    def keep_alive(self, on_lapse: Callable[[], Awaitable[None]] | None = None) -> None:
        """Renew this worker's lease from now on (in the running event loop); ``on_lapse``
        is awaited when the store turns out to have lost it (restarted empty), once the
        store answers again: what this worker had put there must be put back."""
        ...

    async def alive(self, worker: str) -> bool:
        """Whether ``worker``'s lease is current."""
        ...

    async def post(self, worker: str, message: bytes) -> None:
        """Leave ``message`` in ``worker``'s inbox."""
        ...

    async def receive(self, timeout: float) -> bytes | None:
        """The next message of this worker's inbox, waiting up to ``timeout`` seconds."""
        ...

    def event_store(self) -> SharedEventStore:
        """A fresh event store for one session (called once per session)."""
        ...

    def task_store(self) -> TaskStore:
        """The task store of the server (the same object on every call)."""
        ...
