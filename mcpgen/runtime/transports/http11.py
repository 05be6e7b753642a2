"""A small HTTP/1.1 keep-alive client for the Streamable HTTP request path (asyncio + httptools).

Why hand-written (the project prefers kept libraries): every MCP request over Streamable
HTTP is one POST, and httpx spent about 1 ms of client CPU on each in ``bench/client.py``
(its request and response models, cookie extraction, the auth and redirect layers, and
httpcore's pool, which at 64 requests in flight rescanned its connections many times per
request): several times the rest of the client, and slower than the official SDK's client
at 64 in flight. aiohttp's client was the kept alternative; this path costs a fraction of
either because it does only what an MCP POST needs: a request written in one call on a
kept-alive connection (reused last-in first-out, at most ``max_connections`` open, idle
ones dropped after ``keepalive_expiry`` seconds), the response parsed by httptools (the C
parser uvicorn uses, already in the ``http`` extra), its body read whole or streamed (SSE),
bounded as :mod:`mcpgen.runtime.transports.bounded` says (the encodings offered only, a
whole answer at most ``max_message`` bytes once decoded, a stream paused while unread).

:class:`~mcpgen.runtime.transports.http_client.HttpTransport` uses it for the POSTs of a client with
no proxy from the environment and no httpx client of the caller's (an OAuth flow's requests
go through it too, driven as httpx would drive them), and keeps httpx for everything else
(GET streams, DELETE, proxies, and a client that met a redirect or a cookie).
"""

from __future__ import annotations

import asyncio
import select
import ssl
import urllib.request
from collections import deque
from collections.abc import AsyncIterator, Callable
from urllib.parse import urlsplit

import httptools

from mcpgen.runtime.errors import McpError
from mcpgen.runtime.transports import bounded
from mcpgen.runtime.transports.stdio import MAX_MESSAGE

_DEFAULT_PORTS = {"http": 80, "https": 443}
_HIGH_WATER = 1 << 20  # buffered response bytes before the connection stops reading
# An idle connection older than this is asked whether the server closed it before it is
# reused (one system call; connections reused sooner, as under load, are not asked).
_LOOK_AFTER = 0.1
USER_AGENT = "mcpgen"


class HttpError(ConnectionError):
    """The connection failed, or the server's answer is not valid HTTP/1.1."""


def usable(url: str, headers: dict[str, str] | None) -> bool:
    """Whether this client can send POSTs to ``url`` exactly as httpx would: a plain
    http(s) URL without credentials, no proxy from the environment for its scheme (httpx
    honours HTTP(S)_PROXY and ALL_PROXY; those requests stay with httpx), and headers of
    printable ASCII (httpx's rules for anything else stay httpx's)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises ValueError for a malformed port)
    except ValueError:
        return False
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname or parts.username is not None:
        return False
    if not parts.hostname.isascii():
        return False  # IDNA encoding: httpx's job
    proxies = urllib.request.getproxies()
    if proxies.get(parts.scheme) or proxies.get("all"):
        return False
    return all(_clean(name) and _clean(value) for name, value in (headers or {}).items())


def _clean(text: str) -> bool:
    return text.isascii() and text.isprintable()


class Response:
    """One response, as the parser sees it: its head, then its body whole or as it comes.

    Shaped like the part of ``httpx.Response`` the transport uses (``status_code``,
    ``headers.get`` with lower-case names, ``aread``, ``aiter_raw``, ``aclose``), so one
    code path reads either. ``notify`` (if set) is called when the head is parsed, and
    again when the response is complete or has failed. The body is kept as it came
    (compressed, if it was): a body read whole may be at most ``limit`` bytes, before and
    after decoding; a stream (an event stream, or any body read piece by piece) pauses
    its connection while more than a megabyte waits unread."""

    __slots__ = (
        "status_code",
        "headers",
        "raw_headers",
        "head_done",
        "complete",
        "error",
        "notify",
        "_conn",
        "_chunks",
        "_size",
        "_waiter",
        "_encoding",
        "_streaming",
        "_body",
        "limit",
    )

    def __init__(self, conn: _Connection, limit: int = MAX_MESSAGE) -> None:
        self.status_code = 0
        self.headers: dict[str, str] = {}
        self.raw_headers: list[tuple[bytes, bytes]] = []
        self.head_done = False
        self.complete = False
        self.error: BaseException | None = None
        self.notify: Callable[[Response], None] | None = None
        self._conn: _Connection | None = conn
        self._chunks: list[bytes] = []
        self._size = 0
        self._waiter: asyncio.Future[None] | None = None
        self._encoding: str | None = None
        self._streaming = False  # read chunk by chunk: reading may pause while chunks wait
        self._body: bytes | None = None  # decoded, once read whole
        self.limit = limit

    # ------------------------------------------------------------ fed by the connection

    def got_head(self, status: int, raw: list[tuple[bytes, bytes]]) -> None:
        headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in raw}
        if len(headers) != len(raw):  # a repeated header: its values joined, in order
            headers = {}
            for name, value in raw:
                key, text = name.decode("latin-1").lower(), value.decode("latin-1")
                headers[key] = f"{headers[key]}, {text}" if key in headers else text
        self.status_code, self.headers, self.raw_headers = status, headers, raw
        encoding = self._encoding = headers.get("content-encoding")
        if encoding is not None:
            try:
                bounded.Decoder(encoding)  # refused at once: nothing of the body is read
            except McpError as exc:
                raise HttpError(exc.message) from None
        # An event stream is read piece by piece from the start: its reading may pause.
        kind = headers.get("content-type")
        self._streaming = kind is not None and kind[:17].lower() == "text/event-stream"
        self.head_done = True
        self._changed()

    def got_body(self, data: bytes) -> None:
        self._chunks.append(data)
        self._size += len(data)
        if self._streaming:
            if self._size > _HIGH_WATER and self._conn is not None:
                self._conn.pause()  # the reader is behind: the server's writes wait
        elif self._size > self.limit:
            raise HttpError(f"the server's answer exceeds the limit of {self.limit} bytes: not read further")
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def got_end(self) -> None:
        self.complete = True
        self._conn = None
        self._changed()

    def failed(self, exc: BaseException) -> None:
        if self.complete or self.error is not None:
            return
        self.error = exc
        self._conn = None
        self._changed()

    def _changed(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        if self.notify is not None:
            self.notify(self)

    # ------------------------------------------------------------ read by the transport

    def body(self) -> bytes:
        """The whole body of a complete response, decoded (as often as asked): at most
        ``limit`` bytes, else :class:`~mcpgen.runtime.transports.bounded.ResponseTooLarge`."""
        if self._body is None:
            if self._encoding is None:  # the usual case: the bytes as they came, bounded in got_body
                body = b"".join(self._chunks)
                if len(body) > self.limit:
                    raise bounded.ResponseTooLarge("the server's answer", self.limit)
                self._body = body
            else:
                self._body = bounded.decode_whole(self._chunks, self._encoding, self.limit, "the server's answer")
            self._chunks, self._size = [], 0
        return self._body

    def _take(self) -> bytes:
        data = b"".join(self._chunks)
        self._chunks, self._size = [], 0
        return data

    async def _wait(self) -> None:
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    async def wait_head(self) -> None:
        while not self.head_done and self.error is None:
            await self._wait()
        if self.error is not None:
            raise self.error

    async def aread(self) -> bytes:
        if self._streaming:  # read whole after all (an error status): bounded as a whole
            self._streaming = False
            if self._size > self.limit:
                raise HttpError(f"the server's answer exceeds the limit of {self.limit} bytes: not read further")
            if self._conn is not None:
                self._conn.resume()
        while not self.complete and self.error is None:
            await self._wait()
        if self.error is not None:
            raise self.error
        return self.body()

    async def aiter_raw(self) -> AsyncIterator[bytes]:
        """The body as it arrives, as it was sent (still encoded)."""
        self._streaming = True
        while True:
            if self._chunks:
                data = self._take()
                if self._conn is not None:
                    self._conn.resume()
                yield data
            elif self.complete:
                return
            elif self.error is not None:
                raise self.error
            else:
                await self._wait()

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        """The body as it arrives, decoded, in pieces of at most a megabyte."""
        async for piece in bounded.decoded(self.aiter_raw(), self._encoding):
            yield piece

    async def aiter_lines(self) -> AsyncIterator[str]:
        """Lines split at CR, LF or CRLF only (what SSE allows), decoded as UTF-8, each at
        most ``limit`` bytes."""
        async for line in bounded.lines(self.aiter_bytes(), self.limit):
            yield line

    async def aclose(self) -> None:
        """Done with it: a response not read to its end takes its connection down with it
        (the rest of its body would otherwise be read as the next response)."""
        self.notify = None
        if not self.complete and self.error is None:
            self.abort()

    def abort(self) -> None:
        self.notify = None
        conn = self._conn
        self.failed(HttpError("the response was abandoned"))
        if conn is not None:
            conn.close()


class _Connection(asyncio.Protocol):
    """One kept-alive connection; one response at a time (no pipelining)."""

    def __init__(self, pool: Pool) -> None:
        self.pool = pool
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.response: Response | None = None
        self.closed = False
        self.idle_since = 0.0
        self._raw: list[tuple[bytes, bytes]] = []
        self._informational = False
        self._keep_alive = False
        self._close_delimited = False
        self._paused = False

    # ------------------------------------------------------------ asyncio

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if self.response is None:
            self.close()  # bytes nobody asked for: this connection cannot be trusted any more
            return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            # An error raised by one of our callbacks (a body over the limit, an encoding
            # not offered) comes wrapped in HttpParserCallbackError: it says it best itself.
            cause = exc.__context__
            self.abort_with(cause if isinstance(cause, HttpError) else HttpError(f"malformed HTTP response: {exc}"))
        except HttpError as exc:
            self.abort_with(exc)

    def eof_received(self) -> bool | None:
        return None  # let the transport close; connection_lost settles the response

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.pool.discard(self)
        response, self.response = self.response, None
        if response is None:
            return
        if response.head_done and self._close_delimited and exc is None:
            response.got_end()  # a body without length or chunks ends with the connection
        else:
            why = f": {exc}" if exc is not None else ""
            response.failed(HttpError(f"the server closed the connection before the response ended{why}"))

    def pause_writing(self) -> None:
        pass  # requests are small; asyncio buffers what the socket does not take

    # ------------------------------------------------------------ httptools callbacks

    def on_message_begin(self) -> None:
        self._raw = []

    def on_header(self, name: bytes, value: bytes) -> None:
        self._raw.append((name, value))

    def on_headers_complete(self) -> None:
        status = self.parser.get_status_code()
        self._informational = 100 <= status < 200
        if self._informational or self.response is None:
            return  # 100 Continue, 103 Early Hints: the real answer follows
        self._keep_alive = self.parser.should_keep_alive()
        response = self.response
        response.got_head(status, self._raw)
        headers = response.headers
        self._close_delimited = "content-length" not in headers and "transfer-encoding" not in headers

    def on_body(self, body: bytes) -> None:
        if self.response is not None:
            self.response.got_body(body)

    def on_message_complete(self) -> None:
        if self._informational:
            return
        response, self.response = self.response, None
        if self._keep_alive and not self.closed:
            self.pool.release(self)
        else:
            self.close()
        if response is not None:
            response.got_end()

    # ------------------------------------------------------------ used by the pool

    def send(self, data: bytes) -> Response:
        assert self.transport is not None
        response = self.response = Response(self, self.pool.max_message)
        self.transport.write(data)
        return response

    def dropped(self) -> bool:
        """Whether the server closed this idle connection (or sent something nobody asked
        for) though the event loop has not handled it yet: its socket is readable. A server
        closes a kept-alive connection after its own idle timeout (5 s for node and uvicorn,
        as ours): on a busy machine the loop may not have seen that close when the next
        request takes the connection, which then fails with a reset (as urllib3 does, the
        socket is asked before it is reused)."""
        sock = self.transport.get_extra_info("socket") if self.transport is not None else None
        if sock is None:
            return False
        try:
            readable, _, _ = select.select([sock.fileno()], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(readable)

    def pause(self) -> None:
        if not self._paused and self.transport is not None and not self.closed:
            self._paused = True
            self.transport.pause_reading()

    def resume(self) -> None:
        if self._paused and self.transport is not None and not self.closed:
            self._paused = False
            self.transport.resume_reading()

    def close(self) -> None:
        if self.transport is not None and not self.closed:
            self.closed = True
            self.transport.abort()  # nothing of ours is left to flush: no lingering close

    def abort_with(self, exc: HttpError) -> None:
        response, self.response = self.response, None
        self.close()
        if response is not None:
            response.failed(exc)


class Pool:
    """Kept-alive connections to one URL's origin, and the POST that uses them."""

    def __init__(
        self,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        connect_timeout: float | None = 60.0,
        tls: Callable[[], ssl.SSLContext] | None = None,
        max_connections: int = 100,
        keepalive_expiry: float = 5.0,
        max_message: int = MAX_MESSAGE,
    ) -> None:
        parts = urlsplit(url)
        self.scheme = parts.scheme
        self.host = parts.hostname or ""
        self.port = parts.port or _DEFAULT_PORTS[parts.scheme]
        host = f"[{self.host}]" if ":" in self.host else self.host
        if parts.port is not None and parts.port != _DEFAULT_PORTS[parts.scheme]:
            host += f":{parts.port}"
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._request_line = f"POST {target} HTTP/1.1\r\n".encode("ascii")
        # httpx sends these unless told otherwise; the caller's headers replace them by name.
        # Accept-Encoding names what bounded.Decoder undoes (and what it refuses otherwise).
        self._headers = {"host": host, "user-agent": USER_AGENT, "accept-encoding": bounded.ACCEPT_ENCODING}
        self._headers.update({name.lower(): value for name, value in (headers or {}).items()})
        self._tls = tls if self.scheme == "https" else None
        self.connect_timeout = connect_timeout
        self.max_connections = max_connections
        self.keepalive_expiry = keepalive_expiry
        self.max_message = max_message  # the most a body read whole may hold, decoded
        self._idle: list[_Connection] = []
        self._busy: set[_Connection] = set()
        self._opening = 0
        self._waiters: deque[asyncio.Future[_Connection | None]] = deque()
        self._closed = False

    def request_bytes(self, headers: dict[str, str], body: bytes) -> bytes:
        """The request's head and body. Every value the transport puts in a header is
        printable ASCII by construction (headers.encode_value); a value that is not (a
        session id from a broken server, say) fails here, as httpx would refuse it."""
        merged = {**self._headers, **headers}
        merged["content-length"] = str(len(body))
        block = "".join([f"{name}: {value}\r\n" for name, value in merged.items()])
        if block.count("\n") != len(merged) or block.count("\r") != len(merged):
            raise HttpError("a header value holds a line break")
        try:
            return self._request_line + block.encode("ascii") + b"\r\n" + body
        except UnicodeEncodeError:
            raise HttpError("a header value is not ASCII") from None

    def take(self) -> _Connection | None:
        """An idle connection still worth using, or None (without waiting)."""
        if not self._idle:
            return None
        now = asyncio.get_running_loop().time()
        while self._idle:
            conn = self._idle.pop()
            idle = now - conn.idle_since
            if not conn.closed and idle < self.keepalive_expiry and (idle < _LOOK_AFTER or not conn.dropped()):
                self._busy.add(conn)
                return conn
            conn.close()
        return None

    async def acquire(self) -> _Connection:
        """An idle connection, a new one, or (at ``max_connections``) the next one freed."""
        while True:
            if self._closed:
                raise HttpError("the HTTP client is closed")
            conn = self.take()
            if conn is not None:
                return conn
            if len(self._busy) + self._opening < self.max_connections:
                return await self._connect()
            waiter: asyncio.Future[_Connection | None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                handed = await waiter
            except BaseException:
                if waiter.done() and not waiter.cancelled() and waiter.result() is not None:
                    self.release(waiter.result())  # type: ignore[arg-type]
                raise
            if handed is not None:
                return handed

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        self._opening += 1
        try:
            connecting = loop.create_connection(
                lambda: _Connection(self),
                self.host,
                self.port,
                ssl=self._tls() if self._tls is not None else None,
                server_hostname=self.host if self._tls is not None else None,
            )
            _, conn = await asyncio.wait_for(connecting, self.connect_timeout)
        except (OSError, ssl.SSLError, TimeoutError) as exc:
            raise HttpError(f"cannot connect to {self.host}:{self.port}: {exc or type(exc).__name__}") from exc
        finally:
            self._opening -= 1
        if self._closed:
            conn.close()
            raise HttpError("the HTTP client is closed")
        self._busy.add(conn)
        return conn

    async def post(self, headers: dict[str, str], body: bytes) -> Response:
        """POST ``body``; return once the response's head has arrived."""
        data = self.request_bytes(headers, body)
        conn = await self.acquire()
        response = conn.send(data)
        try:
            await response.wait_head()
        except BaseException:
            response.abort()
            raise
        return response

    def release(self, conn: _Connection) -> None:
        self._busy.discard(conn)
        if self._closed or conn.closed:
            conn.close()
            return
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                self._busy.add(conn)
                waiter.set_result(conn)
                return
        conn.idle_since = asyncio.get_running_loop().time()
        self._idle.append(conn)

    def discard(self, conn: _Connection) -> None:
        self._busy.discard(conn)
        if conn in self._idle:
            self._idle.remove(conn)
        while self._waiters:  # room for a new connection: let a waiter open it
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def close(self) -> None:
        """Close every connection; responses still being read fail."""
        self._closed = True
        for conn in [*self._idle, *self._busy]:
            conn.abort_with(HttpError("the HTTP client is closed"))
        self._idle.clear()
        self._busy.clear()
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
