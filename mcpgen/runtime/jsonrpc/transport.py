"""What a session needs from a transport, what a transport may offer beyond that, and an
in-memory one for tests and `Client(server)`.

A transport is a :class:`Transport` (frames in and out). What it may do besides is a named
Protocol each, below; a session asks once, when it is made (:func:`abilities`), and keeps the
answer, so no code probes a transport's attributes request by request. A new transport
implements :class:`Transport` and whichever of the others apply: a byte carrier lives in
``mcpgen.runtime.transports``; ``Server.run`` serves over it through a
:class:`~mcpgen.runtime.server.running.Runner`, ``Client(transport)`` connects through it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple, Protocol, runtime_checkable

from msgspec import UNSET, UnsetType

from mcpgen.runtime.jsonrpc.framing import RequestId


class Transport(Protocol):
    """A bidirectional stream of JSON-RPC frames (one message each)."""

    async def receive(self) -> bytes | None:
        """The next frame, or None once the peer has closed."""
        ...

    async def send(self, frame: bytes, *, related: RequestId | UnsetType = UNSET, final: bool = False) -> None:
        """Send one frame. ``related`` names the incoming request it belongs to (progress,
        logs or requests made while handling it; ``final`` marks its response), for
        transports that route by request (Streamable HTTP); others ignore both."""
        ...

    async def close(self) -> None: ...


@runtime_checkable
class ImmediateTransport(Transport, Protocol):
    """A transport that can also take a frame without waiting. Sessions answer requests
    whose handlers finish at once (a synchronous tool) on the spot, without a task, when
    their transport offers this."""

    def send_now(self, frame: bytes, *, related: RequestId | UnsetType = UNSET, final: bool = False) -> bool:
        """Queue ``frame``; False when the peer is not keeping up, so the caller should
        wait (``await drain()``) before sending more."""
        ...

    async def drain(self) -> None: ...


class Delivering(Protocol):
    """Hands a frame over as it reads it (from its own callbacks), instead of waiting for
    ``receive()``: the session sets ``deliver``."""

    deliver: Callable[[bytes], None] | None


class ReportingSendFailures(Protocol):
    """Sends our requests in the background (an HTTP POST each): a request that could not
    be sent fails through ``on_request_error``, which the session sets."""

    on_request_error: Callable[[RequestId, BaseException], None] | None


class Abandoning(Protocol):
    """Holds something open for each request it carries (an HTTP POST waiting for its
    answer): ``abandon`` ends it when the request was cancelled and no answer will come."""

    def abandon(self, related: RequestId) -> None: ...


class Forgetting(Protocol):
    """Reads the answer of each of our requests on its own (an HTTP POST's reply):
    ``forget`` stops reading it once we stopped waiting."""

    def forget(self, related: RequestId) -> None: ...


class Draining(Protocol):
    """Can say when the peer has caught up with what was queued (``drain``)."""

    async def drain(self) -> None: ...


class WithSession(Protocol):
    """Carries a session of its own (Streamable HTTP's ``Mcp-Session-Id``)."""

    session_id: str | None


class EraAware(Protocol):
    """A client transport whose wire differs by era (Streamable HTTP: headers, no session
    in the stateless era): the client says which it speaks, and when the handshake era's
    session starts (``started``) and is ready (``initialized``)."""

    def use_era(self, era: str) -> None: ...
    async def started(self, protocol_version: str) -> None: ...
    async def initialized(self) -> None: ...


class Abilities(NamedTuple):
    """What one transport can do besides :class:`Transport`, read once (see :func:`abilities`)."""

    immediate: ImmediateTransport | None  # takes a frame without waiting
    delivers: bool
    reports_send_failures: bool
    abandon: Callable[[RequestId], None] | None
    forget: Callable[[RequestId], None] | None
    drain: Callable[[], Awaitable[None]] | None
    use_era: Callable[[str], None] | None
    started: Callable[[str], Awaitable[None]] | None
    initialized: Callable[[], Awaitable[None]] | None
    # Fixed by the transport: the only era its wire has (legacy SSE: "handshake"), its URL,
    # whether it authenticates requests itself (OAuth), how it explains a peer that exited.
    only_era: str | None
    url: str | None
    authenticates: bool
    exit_error: Callable[[], Awaitable[Any]] | None


def abilities(transport: object) -> Abilities:
    """What ``transport`` offers of the Protocols above (asked once per session)."""
    found = getattr
    return Abilities(
        immediate=transport if isinstance(transport, ImmediateTransport) else None,
        delivers=hasattr(transport, "deliver"),
        reports_send_failures=hasattr(transport, "on_request_error"),
        abandon=found(transport, "abandon", None),
        forget=found(transport, "forget", None),
        drain=found(transport, "drain", None),
        use_era=found(transport, "use_era", None),
        started=found(transport, "started", None),
        initialized=found(transport, "initialized", None),
        only_era=found(transport, "only_era", None),
        url=found(transport, "url", None),
        authenticates=bool(found(transport, "authenticates", False)),
        exit_error=found(transport, "exit_error", None),
    )


def plain_send(transport: object) -> bool:
    """Whether ``transport``'s ``send()`` is no more than ``send_now()`` then, when that says
    so, ``drain()`` (its class names that very method ``_plain_send``). A session then calls
    ``send_now`` for its requests itself: no coroutine to make and await per request. A
    subclass that overrides ``send`` (to watch frames) keeps getting every request."""
    # Only classes with send_now name a _plain_send; no isinstance against the Protocol
    # here (that costs ~8 us, once per session already).
    plain = getattr(type(transport), "_plain_send", None)
    return plain is not None and getattr(type(transport), "send", None) is plain


class MemoryTransport:
    """One end of an in-process pipe; see :func:`memory_pair`."""

    def __init__(self, inbox: asyncio.Queue[bytes | None], outbox: asyncio.Queue[bytes | None]) -> None:
        self._inbox = inbox
        self._outbox = outbox
        self._closed = False

    async def receive(self) -> bytes | None:
        frame = await self._inbox.get()
        if frame is None:
            self._inbox.put_nowait(None)  # later calls see the end too
        return frame

    async def send(self, frame: bytes, *, related: RequestId | UnsetType = UNSET, final: bool = False) -> None:
        self.send_now(frame)

    _plain_send = send  # see plain_send

    def send_now(self, frame: bytes, *, related: RequestId | UnsetType = UNSET, final: bool = False) -> bool:
        if self._closed:
            raise ConnectionError("transport closed")
        self._outbox.put_nowait(frame)
        return True

    async def drain(self) -> None:
        pass

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._outbox.put_nowait(None)
            self._inbox.put_nowait(None)


class Servable(Protocol):
    """Anything that serves one peer over a transport until it closes: what ``Client(server)``
    connects to in process (a :class:`~mcpgen.runtime.server.server.Server` is one), named
    here so that the client never imports the server."""

    async def serve(self, transport: Transport) -> None: ...


def memory_pair() -> tuple[MemoryTransport, MemoryTransport]:
    """Two connected transports: what one sends, the other receives."""
    a: asyncio.Queue[bytes | None] = asyncio.Queue()
    b: asyncio.Queue[bytes | None] = asyncio.Queue()
    return MemoryTransport(a, b), MemoryTransport(b, a)
