"""The 2024-11-05 HTTP+SSE transport, server side, for older clients.

GET ``/sse`` opens the event stream; its first event (``endpoint``) gives the URL to POST
messages to (``/messages?session_id=...``). Every server message, responses included,
travels on the event stream; POSTs are answered 202.
"""

from __future__ import annotations

import asyncio
import secrets
from typing import TYPE_CHECKING, Protocol
from urllib.parse import parse_qs

from msgspec import UNSET, UnsetType

from mcpgen.runtime.auth.info import current_owner
from mcpgen.runtime.jsonrpc.framing import FrameDropped, FrameError, RequestId, decode_envelope, error_frame
from mcpgen.runtime.server.session import ServerSession
from mcpgen.runtime.transports import sse
from mcpgen.runtime.transports.asgi import (
    HttpError,
    Receive,
    Scope,
    Send,
    read_body,
    refuse_unreadable,
    respond,
    sse_headers,
    wait_disconnect,
)

if TYPE_CHECKING:
    from mcpgen.runtime.auth.bearer import BearerAuth
    from mcpgen.runtime.server.host import Host

SSE_PATH = "/sse"
MESSAGES_PATH = "/messages"


class LegacyTransport:
    def __init__(self) -> None:
        self.inbox: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.outbox: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.closed = False
        self.owner = current_owner()  # on a protected server, whose token opened the stream

    async def receive(self) -> bytes | None:
        return await self.inbox.get()

    async def send(self, frame: bytes, *, related: RequestId | UnsetType = UNSET, final: bool = False) -> None:
        if self.closed:
            raise ConnectionError("session closed")
        self.outbox.put_nowait(frame)

    async def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.inbox.put_nowait(None)
            self.outbox.put_nowait(None)


class Room(Protocol):
    """Where the app counts its sessions (these with its own, against ``max_sessions`` and
    each caller's share): :meth:`admit` raises the HTTP refusal when there is no room."""

    def admit(self) -> str | None: ...
    def release(self, caller: str | None) -> None: ...


class _Unbounded:
    def admit(self) -> str | None:
        return None

    def release(self, caller: str | None) -> None:
        pass


class LegacySseEndpoints:
    def __init__(
        self,
        host: Host,
        *,
        max_body: int,
        keepalive: float,
        guard: BearerAuth | None,
        room: Room | None = None,
    ) -> None:
        self.host = host
        self.room: Room = room if room is not None else _Unbounded()
        self.max_body = max_body
        self.keepalive = keepalive
        self.guard = guard
        self.sessions: dict[str, LegacyTransport] = {}

    def handles(self, path: str) -> bool:
        return path in (SSE_PATH, MESSAGES_PATH)

    async def __call__(self, scope: Scope, receive: Receive, send: Send, path: str) -> None:
        if path == SSE_PATH and scope["method"] == "GET":
            await self._stream(scope, receive, send)
        elif path == MESSAGES_PATH and scope["method"] == "POST":
            query = parse_qs(scope.get("query_string", b"").decode())
            transport = self.sessions.get((query.get("session_id") or [""])[0])
            if transport is None or transport.owner != current_owner():
                raise HttpError(404, "Not Found: unknown session")
            body = await read_body(receive, self.max_body)
            try:
                env = decode_envelope(body)
            except FrameError as exc:
                await respond(send, 400, error_frame(exc.code, exc.message, exc.id))
                return
            except FrameDropped as exc:
                await refuse_unreadable(send, exc)
                return
            guard = self.guard
            if guard is not None and (refusal := guard.denied(env)) is not None:
                await refusal.send(send)  # 403 insufficient_scope for what this message calls
                return
            transport.inbox.put_nowait(body)
            await respond(send, 202, b"Accepted", b"text/plain")
        else:
            await respond(send, 405, b"")

    async def _stream(self, scope: Scope, receive: Receive, send: Send) -> None:
        caller = self.room.admit()
        try:
            await self._serve_stream(scope, receive, send)
        finally:
            self.room.release(caller)

    async def _serve_stream(self, scope: Scope, receive: Receive, send: Send) -> None:
        session_id = secrets.token_hex(16)
        transport = LegacyTransport()
        session = ServerSession(transport, self.host, **self.host.session_options)
        self.sessions[session_id] = transport
        self.host.sessions.add(session)
        task = asyncio.ensure_future(session.run())
        disconnected = asyncio.ensure_future(wait_disconnect(receive))
        root = scope.get("root_path", "")
        endpoint = f"{root}{MESSAGES_PATH}?session_id={session_id}".encode()
        try:
            await send({"type": "http.response.start", "status": 200, "headers": sse_headers([])})
            await send(
                {
                    "type": "http.response.body",
                    "body": b"event: endpoint\ndata: " + endpoint + b"\n\n",
                    "more_body": True,
                }
            )
            while True:
                getter = asyncio.ensure_future(transport.outbox.get())
                ready, _ = await asyncio.wait(
                    {getter, disconnected}, timeout=self.keepalive, return_when=asyncio.FIRST_COMPLETED
                )
                if disconnected in ready:
                    getter.cancel()
                    break
                if getter not in ready:
                    getter.cancel()
                    await send({"type": "http.response.body", "body": sse.KEEPALIVE, "more_body": True})
                    continue
                frame = getter.result()
                if frame is None:
                    break
                await send({"type": "http.response.body", "body": sse.event(frame), "more_body": True})
        finally:
            disconnected.cancel()
            self.sessions.pop(session_id, None)
            self.host.sessions.discard(session)
            await transport.close()
            await asyncio.wait([task], timeout=5)


__all__ = ["LegacySseEndpoints"]
