"""Several workers without stickiness (``uvicorn --workers N``): any worker serves any
request of a live handshake-era session, through the shared store.

A session lives in the worker that opened it (its home: its state, its handlers, its
requests to the client all stay there). A request reaching another worker is passed to the
home through the home's inbox in the store, with the name of a stream to answer on; the
home serves it as its own, writing what it sends (progress, requests to the client, the
answer) to that stream in the store, and the worker that took the request relays it to
the client: as JSON when the answer is all there is, else as SSE whose event ids resume on
any worker. Notifications and responses from the client (``notifications/cancelled``, the
answer to an elicitation) go to the home the same way; so does a DELETE. A GET follows the
session's standalone stream, which the home writes to the store.

Nothing is lost silently: a home that does not take a request within a few seconds and
whose lease has lapsed has stopped (the client is told 404, "another worker held this
session and has stopped": it starts a new one); a stream whose writer stopped ends with an
error answering its request; when the store restarts empty, every worker puts its live
sessions back (:meth:`Forwarder.reregister`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from typing import TYPE_CHECKING

import msgspec

from mcpgen.runtime.errors import SERVER_BUSY
from mcpgen.runtime.jsonrpc.framing import Envelope, FrameDropped, FrameError, decode_envelope, error_frame
from mcpgen.runtime.server.http_streams import Stream, drain, serve_shared
from mcpgen.runtime.stores.event_store import SharedEventStore
from mcpgen.runtime.stores.shared_store import SessionRecord, StoreUnavailable
from mcpgen.runtime.transports import sse
from mcpgen.runtime.transports.asgi import HttpError, Receive, Send, respond

if TYPE_CHECKING:
    from mcpgen.runtime.server.http_options import HttpOptions
    from mcpgen.runtime.server.http_sessions import Live, SessionTable
    from mcpgen.runtime.stores.shared_store import SharedStore

log = logging.getLogger("mcpgen")

ACCEPT_WAIT = 5.0  # seconds a home may take to take a request before its lease is checked
GIVE_UP = 30.0  # seconds after which a living home that has not taken a request is "busy"
GONE = "Not Found: another worker held this session and has stopped; start a new session"
UNKNOWN = "Not Found: unknown or ended session"


class Forwarded(msgspec.Struct, omit_defaults=True):
    """What one worker leaves in another's inbox for a session it holds."""

    kind: str  # "request", "message" (a notification or a response), "end"
    session: str
    owner: str = ""
    frame: str = ""  # the JSON-RPC message, as the client sent it
    stream: str = ""  # a request's: the name of the stream to answer on


_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(Forwarded).decode


class Forwarder:
    """Passes requests to the worker holding their session, and serves those passed here."""

    def __init__(self, options: HttpOptions, store: SharedStore, table: SessionTable) -> None:
        self.options = options
        self.store = store
        self.table = table
        self._inbox: asyncio.Task[None] | None = None
        self._served: set[asyncio.Task[None]] = set()

    def start(self) -> None:
        """Renew this worker's lease and read its inbox, from now on (once)."""
        if self._inbox is None or self._inbox.done():
            self.store.keep_alive(self.reregister)
            self._inbox = asyncio.ensure_future(self._read_inbox())

    async def close(self) -> None:
        if self._inbox is not None:
            self._inbox.cancel()
            await asyncio.gather(self._inbox, return_exceptions=True)
        for task in list(self._served):
            task.cancel()

    # ------------------------------------------------------------ the worker taking the request

    async def lookup(self, session_id: str, owner: str) -> SessionRecord:
        """The record of a session held elsewhere, if the request's principal owns it; 404
        otherwise (503 while the store is away)."""
        try:
            found = await self.table.registry.lookup(session_id) if self.table.registry is not None else None
        except StoreUnavailable as exc:
            raise HttpError(503, f"Service Unavailable: {exc.message}", code=exc.code) from None
        if found is None or found.owner != owner or not found.worker:
            raise HttpError(404, UNKNOWN, code=-32001)
        return found

    async def tell(self, record: SessionRecord, kind: str, session_id: str, owner: str, frame: bytes = b"") -> None:
        """Leave a notification, a response, or the session's end in its home's inbox."""
        message = Forwarded(kind, session_id, owner, frame.decode("utf-8", "replace"))
        try:
            await self.store.post(record.worker, _encode(message))
        except StoreUnavailable as exc:
            raise HttpError(503, f"Service Unavailable: {exc.message}", code=exc.code) from None

    async def request(
        self,
        record: SessionRecord,
        session_id: str,
        owner: str,
        env: Envelope,
        body: bytes,
        prime: bool,
        receive: Receive,
        send: Send,
    ) -> None:
        """Pass a request to its session's home and relay what the home answers on it."""
        stream_id = f"{session_id[:8]}-f{secrets.token_urlsafe(6)}"
        name = f"{stream_id}.{secrets.token_urlsafe(12)}"  # unguessable, as every stream's name
        message = Forwarded("request", session_id, owner, body.decode("utf-8", "replace"), name)
        events = self.options.event_store()
        assert isinstance(events, SharedEventStore)
        try:
            await self.store.post(record.worker, _encode(message))
            taken, ended = await self._taken(events, name, record, session_id)
        except StoreUnavailable as exc:
            raise HttpError(503, f"Service Unavailable: {exc.message}", code=exc.code) from None
        extra = [(b"mcp-session-id", session_id.encode())]
        frames = [(event_id, frame) for event_id, frame in taken if frame]
        if ended and len(frames) <= 1:
            # The answer is all there is: plain JSON, as the home would have answered.
            answer = frames[0][1] if frames else b""
            if answer and _unknown_session(answer):
                await respond(send, 404, answer)
                return
            await respond(send, 200 if answer else 202, answer, extra=extra)
            return
        first = b""
        if prime and taken:
            first = sse.event(b"", taken[0][0], self.options.retry_ms)  # resumable from the start
        replayed = [(event_id, frame or b"") for event_id, frame in taken if frame is not None]
        await serve_shared(
            self.options, events, session_id, f"{name}/0", replayed, receive, send, follow=not ended, first=first
        )

    async def _taken(
        self, events: SharedEventStore, name: str, record: SessionRecord, session_id: str
    ) -> tuple[list[tuple[str, bytes | None]], bool]:
        """What the home wrote on ``name`` until its first frame (or the end): its events
        so far, and whether the stream has ended. A home that takes nothing within
        ``ACCEPT_WAIT`` seconds is checked: stopped -> 404, the record dropped; alive but
        silent for ``GIVE_UP`` seconds -> 503."""
        loop = asyncio.get_running_loop()
        started = checked = loop.time()
        after = f"{name}/0"
        taken: list[tuple[str, bytes | None]] = []
        while True:
            found = await events.read(after, min(2.0, ACCEPT_WAIT))
            for event_id, frame in found:
                after = event_id
                taken.append((event_id, frame))
                if frame is None:
                    return taken, True
            frames = [frame for _, frame in taken if frame]
            if len(frames) > 1 or (frames and not _is_answer(frames[0])):
                return taken, False  # more than the answer: a stream
            if frames:
                continue  # the answer: its stream's end follows it at once (JSON then)
            now = loop.time()
            if taken:
                continue  # taken (the empty first entry): its first frame will come
            if now - checked >= ACCEPT_WAIT:
                checked = now
                if not await self.store.alive(record.worker):
                    log.warning("mcpgen: the worker holding session %s has stopped", session_id[:8])
                    if self.table.registry is not None:
                        await self.table.registry.remove(session_id)  # the next request: 404 at once
                    raise HttpError(404, GONE, code=-32001)
                if now - started >= GIVE_UP:
                    raise HttpError(503, "Service Unavailable: the session's worker is not answering", code=SERVER_BUSY)

    # ------------------------------------------------------------ the home

    async def _read_inbox(self) -> None:
        """Serve what the other workers leave for the sessions held here, for as long as
        this worker lives (a store that is away is waited for)."""
        tries = 0
        while True:
            try:
                data = await self.store.receive(2.0)
            except StoreUnavailable as exc:
                if tries == 0:
                    log.warning("mcpgen: this worker's inbox is out of reach: %s", exc.message)
                tries += 1
                await asyncio.sleep(min(2.0, 0.1 * 2 ** min(tries, 5)))
                continue
            tries = 0
            if data is None:
                continue
            try:
                message = _decode(data)
            except msgspec.DecodeError:
                log.warning("mcpgen: dropped an unreadable message from another worker")
                continue
            task = asyncio.ensure_future(self._serve(message))
            self._served.add(task)
            task.add_done_callback(self._served.discard)

    async def _serve(self, message: Forwarded) -> None:
        live = self.table.sessions.get(message.session)
        if live is not None and _owner_text(live) != message.owner:
            live = None  # someone else's: as if unknown
        if message.kind == "end":
            if live is not None:
                await self.table.end(message.session)
            return
        try:
            env = decode_envelope(message.frame.encode())
        except (FrameError, FrameDropped):
            env = None
        if message.kind == "message":
            if live is not None and env is not None:
                live.transport.last_active = time.monotonic()
                live.session.on_envelope(env)
            return
        events = self.options.event_store() if live is None else live.transport.events
        if not isinstance(events, SharedEventStore):
            return
        stream_id = message.stream.rpartition(".")[0]
        if live is None or env is None or env.id is msgspec.UNSET:
            # Unknown here (ended, or never this worker's): say so on the stream.
            events.adopt(stream_id, message.stream)
            with contextlib.suppress(StoreUnavailable):
                await events.store(stream_id, error_frame(-32001, UNKNOWN))
                await events.end(stream_id)
            return
        await self._take(live, env, events, stream_id, message.stream)

    async def _take(self, live: Live, env: Envelope, events: SharedEventStore, stream_id: str, name: str) -> None:
        """Serve a request passed here as the session's own, its stream going to the store."""
        transport = live.transport
        transport.last_active = time.monotonic()
        events.adopt(stream_id, name, msgspec.json.encode(env.id))
        if env.id in transport.streams:
            taken = error_frame(-32600, f"Invalid Request: id {env.id!r} is already in use", env.id)
            with contextlib.suppress(StoreUnavailable):
                await events.store(stream_id, taken)
                await events.end(stream_id)
            return
        stream = Stream(stream_id)
        transport.stream_ids.add(stream_id)
        transport.streams[env.id] = stream
        try:
            await events.store(stream_id, b"")  # taken: the first entry (its writer, its request)
        except StoreUnavailable:
            transport.streams.pop(env.id, None)
            return  # the worker that passed it finds nothing taken, and says so
        drains: set[asyncio.Task[None]] = live.extra.setdefault("drains", set())
        task = asyncio.ensure_future(drain(live, stream, events))
        drains.add(task)
        task.add_done_callback(drains.discard)
        live.session.on_envelope(env)

    async def reregister(self) -> None:
        """Put this worker's live sessions back in the registry (the store lost them)."""
        registry = self.table.registry
        if registry is None:
            return
        for session_id, live in list(self.table.sessions.items()):
            name = live.transport.standalone_name()
            try:
                await registry.add(
                    session_id, name, self.options.session_idle_timeout, _owner_text(live), self.store.worker
                )
            except StoreUnavailable as exc:
                log.warning("mcpgen: could not register session %s again: %s", session_id[:8], exc.message)
                return


def _owner_text(live: Live) -> str:
    owner = live.extra.get("owner")
    return "\n".join(owner) if owner is not None else ""


def _unknown_session(frame: bytes) -> bool:
    """Whether the home's answer says it holds no such session (an error with no id)."""
    try:
        found = msgspec.json.decode(frame)
    except msgspec.DecodeError:
        return False
    return isinstance(found, dict) and found.get("id") is None and found.get("error", {}).get("code") == -32001


def _is_answer(frame: bytes) -> bool:
    """Whether a frame is a response (not a notification or a request to the client)."""
    try:
        return decode_envelope(frame).method is msgspec.UNSET
    except (FrameError, FrameDropped):
        return True  # what the home wrote as its answer (an error without an id)
