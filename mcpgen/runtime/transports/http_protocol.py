"""uvicorn's HTTP protocol with one socket write per response instead of two.

uvicorn writes a response's status line and headers as soon as the app sends
``http.response.start``, and its body on ``http.response.body``: two ``send`` syscalls for
every JSON answer. On loopback a syscall costs several microseconds, as much as the whole
of mcpgen's own work on a request answered on the spot. Here the protocol's transport is
wrapped so that what is written during one turn of the event loop goes out in one write
at the end of that turn: the head and the body of a response, or the events of an SSE
stream sent together. Nothing waits longer than the current turn.

Used by :meth:`mcpgen.Server.run` for ``transport="http"``. An app served from uvicorn's
command line gets it with ``--http mcpgen.runtime.transports.http_protocol:HttpProtocol``; without
that, uvicorn's own protocol serves it just as correctly, one write slower.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

CLOSE_GRACE = 5.0
"""Seconds a closed connection may take to hand its last bytes to a client that is not
reading, before it is aborted (a close waits for the write buffer to empty, for ever)."""


class CoalescingTransport:
    """A transport whose writes in one loop turn are joined into one write of the real
    transport at the end of the turn; everything else is the real transport's."""

    __slots__ = ("_transport", "_loop", "_pending")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        if not self._pending:
            self._loop.call_soon(self._flush)
        self._pending.append(bytes(data))

    def writelines(self, lines: Any) -> None:
        for data in lines:
            self.write(data)

    def _flush(self) -> None:
        pending = self._pending
        if not pending:
            return
        self._pending = []
        if self._transport.is_closing():
            return  # closed or aborted meanwhile: nothing may be written any more
        self._transport.write(pending[0] if len(pending) == 1 else b"".join(pending))

    def close(self) -> None:
        # What was written before close() goes out first, as the real transport promises.
        self._flush()
        self._transport.close()
        if self._transport.get_write_buffer_size():
            # A client not reading would keep the socket (and this buffer) open for ever.
            self._loop.call_later(CLOSE_GRACE, self._abort_if_stuck)

    def _abort_if_stuck(self) -> None:
        if self._transport.get_write_buffer_size():
            self._transport.abort()

    def abort(self) -> None:
        self._pending = []
        self._transport.abort()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._transport.get_extra_info(name, default)

    def pause_reading(self) -> None:
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        self._transport.resume_reading()

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + sum(map(len, self._pending))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


HEADER_TIMEOUT = 10.0
"""Seconds a connection may take to send a request's line and headers (slowloris)."""
BODY_TIMEOUT = 30.0
"""Seconds a request may take to send its body once its headers are in."""
MAX_CONNECTIONS = 1000
"""Connections served at once; one more is closed as soon as it is accepted."""
MAX_HEAD = 64 * 1024
"""Bytes a request's line and headers may take; a longer head is answered 431 and closed."""

_TOO_LARGE = b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
_made: dict[tuple[float, float, int, int], type[asyncio.Protocol]] = {}


def protocol_class(
    header_timeout: float = HEADER_TIMEOUT,
    body_timeout: float = BODY_TIMEOUT,
    max_connections: int = MAX_CONNECTIONS,
    max_head: int = MAX_HEAD,
) -> type[asyncio.Protocol]:
    """The protocol uvicorn would pick (httptools when installed, else h11), writing
    through a :class:`CoalescingTransport`, and guarding its file descriptors and memory: a
    request whose head takes longer than ``header_timeout`` seconds, or whose body takes
    longer than ``body_timeout`` once the head is in, has its connection closed (uvicorn's
    keep-alive timer only covers a connection that sends nothing at all); a head longer
    than ``max_head`` bytes is answered 431 and its connection closed (httptools keeps a
    head whole, however long, until it ends); past ``max_connections`` open connections a
    new one is closed at once. Made once per setting; uvicorn is imported here, so that
    importing this module costs nothing without the ``http`` extra."""
    key = (header_timeout, body_timeout, max_connections, max_head)
    if key in _made:
        return _made[key]
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    base: Any = AutoHTTPProtocol

    # One timer per connection checks the deadline now and then, rather than a timer armed
    # and cancelled for every request (that costs more than a request's own parsing).
    tick = min(header_timeout, body_timeout) / 2

    class CoalescingProtocol(base):  # type: ignore[misc]
        _watch: asyncio.TimerHandle | None = None
        _reading: str = ""  # "head", "body" or "" (no request being read)
        _since = 0.0  # when reading the current part began (loop time)
        _head = 0  # bytes of the current request's head read so far

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            # (uvloop's transports are not asyncio.Transport subclasses: no isinstance here.)
            real = cast(asyncio.Transport, transport)
            super().connection_made(CoalescingTransport(real, asyncio.get_running_loop()))
            if len(self.connections) > max_connections:
                real.close()  # full: refused before it can hold a descriptor for long
                return
            self._expect("head")
            self._watch = asyncio.get_running_loop().call_later(tick, self._check)

        def data_received(self, data: bytes) -> None:
            if self.transport.is_closing():
                return  # refused (a head too long): nothing more is read
            cycle = getattr(self, "cycle", None)
            if self._reading == "" and (cycle is None or cycle.response_complete):
                self._expect("head")  # a new request begins on a kept-alive connection
            super().data_received(data)
            cycle = getattr(self, "cycle", None)
            if cycle is not None and not cycle.response_complete:
                self._expect("body" if cycle.more_body else "")
            elif self._reading == "head":  # the head has not ended yet
                self._head += len(data)
                if self._head > max_head:
                    self._refuse_head()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._watch is not None:
                self._watch.cancel()
                self._watch = None
            super().connection_lost(exc)

        def _expect(self, part: str) -> None:
            """Note what is being read now (or nothing), and since when."""
            if part != self._reading:
                self._reading = part
                self._since = asyncio.get_running_loop().time()
                self._head = 0

        def _refuse_head(self) -> None:
            """431, then close: the head read so far is dropped with the connection."""
            self.transport.write(_TOO_LARGE)
            self.transport.close()

        def _check(self) -> None:
            loop = asyncio.get_running_loop()
            limit = header_timeout if self._reading == "head" else body_timeout
            if self._reading and loop.time() - self._since > limit:
                self._watch = None
                self.transport.close()
                return
            self._watch = loop.call_later(tick, self._check)

    CoalescingProtocol.__name__ = CoalescingProtocol.__qualname__ = f"Coalescing{base.__name__}"
    _made[key] = CoalescingProtocol
    return CoalescingProtocol


def __getattr__(name: str) -> Any:
    # ``HttpProtocol``, for uvicorn's --http option, made on first use (PEP 562).
    if name == "HttpProtocol":
        return protocol_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
