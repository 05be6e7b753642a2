"""What a session needs from a transport, and an in-memory one for tests and `Client(server)`."""

from __future__ import annotations

import asyncio
from typing import Protocol, runtime_checkable

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
