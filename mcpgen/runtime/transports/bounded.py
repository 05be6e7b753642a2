"""What the HTTP clients read from a server, bounded: a server is not trusted with sizes.

* A body is decoded only from the content encodings we offer (:data:`ACCEPT_ENCODING`,
  sent on every request): anything else is refused before a byte of it is read.
* It is inflated in pieces of at most :data:`PIECE` bytes, so a small compressed body that
  inflates to gigabytes (a "zip bomb") is stopped at the limit, never held whole.
* A whole answer (a JSON reply) may be at most ``max_message`` bytes once decoded: the
  stdio transport's limit (:data:`mcpgen.runtime.transports.stdio.MAX_MESSAGE`, 16 MiB).
* An event stream is read line by line, each line at most ``max_message`` bytes (a line
  that never ends is cut off there, not buffered for ever); an event's data is capped by
  :class:`mcpgen.runtime.transports.sse.Parser`.
* What the session has not taken yet waits in an :class:`Inbox` of bounded size; a stream
  that would add to a full one waits instead, and stops reading from its socket, so the
  server's writes block (backpressure, as over stdio).
"""

from __future__ import annotations

import asyncio
import zlib
from collections import deque
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from typing import Any

from mcpgen.runtime.errors import INTERNAL_ERROR, McpError
from mcpgen.runtime.transports.stdio import MAX_MESSAGE

ACCEPT_ENCODING = "gzip, deflate"
"""The content encodings the clients offer, and the only ones they decode."""
PIECE = 1 << 20
"""At most this many decoded bytes come out of one step of inflating a body."""
MAX_INBOX_FRAMES = 1024
"""Frames an :class:`Inbox` holds before a stream feeding it waits (as well as its bytes)."""


class ResponseTooLarge(McpError):
    """A server's answer, a line or an event of its stream, over the size limit: the
    request fails (-32603) and the connection is dropped rather than read on."""

    def __init__(self, what: str, limit: int) -> None:
        super().__init__(INTERNAL_ERROR, f"{what} exceeds the limit of {limit} bytes: not read further")
        self.limit = limit


class EncodingRefused(McpError):
    """A body in a content encoding the client did not offer."""

    def __init__(self, encoding: str) -> None:
        super().__init__(
            INTERNAL_ERROR,
            f"the server sent a body in the content encoding {encoding!r}, which was not offered "
            f"(Accept-Encoding: {ACCEPT_ENCODING}): refused",
        )


class BodyUndecodable(McpError):
    """A body that does not decode in the encoding its head names."""

    def __init__(self, why: str) -> None:
        super().__init__(INTERNAL_ERROR, f"the server sent a body that does not decompress: {why}")


class Decoder:
    """Undoes a body's ``Content-Encoding`` (identity, gzip or deflate: what we offer), in
    pieces of at most :data:`PIECE` bytes. Anything else raises :class:`EncodingRefused`
    when the decoder is made, that is as soon as the head is read."""

    def __init__(self, encoding: str | None) -> None:
        name = (encoding or "identity").strip().lower()
        self._zlib: Any = None
        self._raw_fallback = False  # deflate: zlib-wrapped as the RFC says, or raw as some send it
        if name in ("gzip", "x-gzip"):
            self._zlib = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif name == "deflate":
            self._zlib = zlib.decompressobj()
            self._raw_fallback = True
        elif name != "identity":
            raise EncodingRefused(name)

    def feed(self, data: bytes) -> Iterator[bytes]:
        """The decoded pieces of the next chunk of the body."""
        if self._zlib is None:
            if data:
                yield data
            return
        if not data:
            return
        try:
            piece = self._zlib.decompress(data, PIECE)
        except zlib.error as exc:
            if not self._raw_fallback:
                raise BodyUndecodable(str(exc)) from None
            self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
            piece = self._inflate(data)
        self._raw_fallback = False  # decided by the first bytes
        while True:
            if piece:
                yield piece
            tail = self._zlib.unconsumed_tail
            if not tail:
                return
            piece = self._inflate(tail)

    def _inflate(self, data: bytes) -> bytes:
        try:
            return bytes(self._zlib.decompress(data, PIECE))
        except zlib.error as exc:
            raise BodyUndecodable(str(exc)) from None

    def end(self) -> Iterator[bytes]:
        """What is left once the body ended."""
        if self._zlib is not None:
            try:
                rest = self._zlib.flush()
            except zlib.error as exc:
                raise BodyUndecodable(str(exc)) from None
            if rest:
                yield rest


def decode_whole(chunks: Iterable[bytes], encoding: str | None, limit: int, what: str) -> bytes:
    """A whole body from its raw ``chunks``, decoded, at most ``limit`` bytes (else
    :class:`ResponseTooLarge`, before more than ``limit + PIECE`` bytes are held)."""
    decoder = Decoder(encoding)
    parts: list[bytes] = []
    size = 0
    for chunk in [*chunks, None]:
        for piece in decoder.feed(chunk) if chunk is not None else decoder.end():
            size += len(piece)
            if size > limit:
                raise ResponseTooLarge(what, limit)
            parts.append(piece)
    return b"".join(parts)


async def read_whole(raw: AsyncIterable[bytes], encoding: str | None, limit: int, what: str) -> bytes:
    """As :func:`decode_whole`, reading ``raw`` (the body as it arrives) as it goes."""
    decoder = Decoder(encoding)
    parts: list[bytes] = []
    size = 0
    async for chunk in raw:
        for piece in decoder.feed(chunk):
            size += len(piece)
            if size > limit:
                raise ResponseTooLarge(what, limit)
            parts.append(piece)
    for piece in decoder.end():
        size += len(piece)
        if size > limit:
            raise ResponseTooLarge(what, limit)
        parts.append(piece)
    return b"".join(parts)


async def decoded(raw: AsyncIterable[bytes], encoding: str | None) -> AsyncIterator[bytes]:
    """The body as it arrives, decoded, in pieces of at most :data:`PIECE` bytes."""
    decoder = Decoder(encoding)
    async for chunk in raw:
        for piece in decoder.feed(chunk):
            yield piece
    for piece in decoder.end():
        yield piece


async def lines(pieces: AsyncIterable[bytes], max_line: int) -> AsyncIterator[str]:
    """Lines split at CR, LF or CRLF only (what SSE allows; not at the other line breaks
    ``str.splitlines`` knows, which may sit inside a JSON string), decoded as UTF-8, each
    at most ``max_line`` bytes (else :class:`ResponseTooLarge`). The start of a line waits
    as a list of pieces, joined once its end comes (not copied again with every piece)."""
    parts: list[bytes] = []
    size = 0
    async for piece in pieces:
        if b"\n" not in piece and b"\r" not in piece:
            size += len(piece)
            if size > max_line:
                raise ResponseTooLarge("a line of the server's event stream", max_line)
            parts.append(piece)
            continue
        text = b"".join([*parts, piece]) if parts else piece
        # A CR at the end may be the first half of a CRLF: it waits for the next piece.
        held = text.endswith(b"\r")
        if held:
            text = text[:-1]
        found = text.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        pending = found.pop() + (b"\r" if held else b"")
        parts, size = ([pending], len(pending)) if pending else ([], 0)
        if size > max_line:
            raise ResponseTooLarge("a line of the server's event stream", max_line)
        for line in found:
            if len(line) > max_line:
                raise ResponseTooLarge("a line of the server's event stream", max_line)
            yield line.decode("utf-8", "replace")
    if parts:  # the last line had no line ending
        for line in b"".join(parts).rstrip(b"\r").replace(b"\r", b"\n").split(b"\n"):
            yield line.decode("utf-8", "replace")


class Inbox:
    """Frames read from the server, waiting for the session's receive loop.

    :meth:`put_nowait` never waits (the answer to one of our own requests, an error we
    make up for one, the end marker: one per request at most). :meth:`put` (a frame of an
    event stream, which the server may send without end) waits while the inbox holds
    ``max_frames`` frames or ``max_bytes`` bytes, until the session has taken half of them:
    the stream then stops reading its socket, and the server's writes block."""

    def __init__(self, max_bytes: int = MAX_MESSAGE, max_frames: int = MAX_INBOX_FRAMES) -> None:
        self.max_bytes = max_bytes
        self.max_frames = max_frames
        self._items: deque[bytes | None] = deque()
        self._bytes = 0
        self._getter: asyncio.Future[None] | None = None
        self._room: asyncio.Future[None] | None = None  # what waiting putters wait for

    def __len__(self) -> int:
        return len(self._items)

    @property
    def size(self) -> int:
        """The bytes held."""
        return self._bytes

    def empty(self) -> bool:
        return not self._items

    def full(self) -> bool:
        return len(self._items) >= self.max_frames or self._bytes >= self.max_bytes

    def put_nowait(self, item: bytes | None) -> None:
        self._items.append(item)
        if item is not None:
            self._bytes += len(item)
        getter = self._getter
        if getter is not None and not getter.done():
            getter.set_result(None)

    async def put(self, item: bytes) -> None:
        while self.full():
            if self._room is None or self._room.done():
                self._room = asyncio.get_running_loop().create_future()
            await asyncio.shield(self._room)  # one future for every waiting putter
        self.put_nowait(item)

    async def get(self) -> bytes | None:
        while not self._items:
            self._getter = asyncio.get_running_loop().create_future()
            try:
                await self._getter
            finally:
                self._getter = None
        item = self._items.popleft()
        if item is not None:
            self._bytes -= len(item)
        room = self._room
        if (
            room is not None
            and not room.done()
            and len(self._items) <= self.max_frames // 2
            and self._bytes <= self.max_bytes // 2
        ):
            room.set_result(None)
        return item


__all__ = [
    "ACCEPT_ENCODING",
    "PIECE",
    "BodyUndecodable",
    "Decoder",
    "EncodingRefused",
    "Inbox",
    "ResponseTooLarge",
    "decode_whole",
    "decoded",
    "lines",
    "read_whole",
]
