"""The Streamable HTTP transport, client side (httpx).

Each frame is POSTed; the reply is JSON, an SSE stream (read until the request's
response), or 202. After the handshake the session id and negotiated protocol version go
on every request, and a GET opens the standalone stream for server-initiated messages.
A stream that drops before its response is resumed with a GET carrying ``Last-Event-ID``,
after the server's ``retry`` delay. Closing sends DELETE.

In the stateless era (``use_era("stateless")``) there is no session, GET stream, DELETE or
resumption: every request carries ``MCP-Protocol-Version`` (its ``_meta`` version),
``Mcp-Method``, ``Mcp-Name`` and the ``Mcp-Param-*`` mirrors of its tool arguments; an
error answered with a 4xx status and a JSON-RPC body reaches the caller as that error; a
stream that ends before its response loses the request; and the client sends no
notifications (closing a request's stream is how it cancels).

POSTs go through :mod:`mcpgen.runtime.transports.http11` (a keep-alive HTTP/1.1 client on asyncio and
httptools: the request path is the hot path, and httpx cost about 1 ms of CPU per call)
unless the caller gave an httpx client of its own or a proxy from the environment applies;
a redirect moves the transport to httpx for good (httpx follows it), and so does a cookie
(httpx's jar keeps it and sends it from then on). An ``httpx.Auth`` (OAuth) runs its flow
as httpx would run it, each request of the flow sent on the fast path. GET streams and
DELETE always use httpx. A request whose reply is plain JSON on a kept-alive connection
runs on callbacks, with no task of its own (without auth, whose flow is asynchronous).

The server is not trusted (:mod:`mcpgen.runtime.transports.bounded`): a body comes only in
an encoding we offer, a whole answer is at most ``max_message`` bytes decoded (16 MiB, as
over stdio), so is a line or an event of a stream, and a stream's frames wait in a bounded
inbox, the stream's reading (and so the server's writing) pausing while it is full. A
redirect is followed only to the same origin (scheme, host and port): the headers the
user gave (an API key, a token) go nowhere else, and the redirect's own body is read only
up to 64 KiB.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any

import httpx
import msgspec
from msgspec import UNSET, UnsetType

from mcpgen.runtime.errors import INTERNAL_ERROR, NO_ANSWER, ConnectionClosed, McpError
from mcpgen.runtime.jsonrpc.framing import RequestId, error_frame
from mcpgen.runtime.shared.headers import NAME_PARAMS, encode_value
from mcpgen.runtime.shared.meta import META_VERSION
from mcpgen.runtime.shared.origins import same_origin
from mcpgen.runtime.transports import bounded, http11, sse
from mcpgen.runtime.transports.stdio import MAX_MESSAGE

log = logging.getLogger("mcpgen")
_ACCEPT = "application/json, text/event-stream"
_DEFAULT_RETRY_MS = 1000
_GET_ANSWER_WAIT = 5.0  # seconds the first request waits for the GET stream's answer
_MAX_RESUMES = 5
_MAX_RETRY_MS = 60_000  # the longest wait before a resumption a server's ``retry`` may ask for
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_REDIRECT_BODY = 64 * 1024  # bytes of a redirect's body httpx may read (it reads it whole)
# Errors that end the reading of a stream for good: what the server sent breaks a limit.
_REFUSED = (bounded.ResponseTooLarge, bounded.EncodingRefused, bounded.BodyUndecodable, sse.EventTooLarge)


class _Probe(msgspec.Struct):
    id: Any = UNSET
    method: Any = UNSET


_probe = msgspec.json.Decoder(_Probe)


class _ModernParams(msgspec.Struct):
    name: Any = UNSET
    uri: Any = UNSET
    taskId: Any = UNSET  # the tasks extension: tasks/get, tasks/update, tasks/cancel
    arguments: Any = UNSET
    meta: Any = msgspec.field(default=UNSET, name="_meta")


class _ModernProbe(msgspec.Struct):
    """What the stateless era's headers mirror from a request."""

    id: Any = UNSET
    method: Any = UNSET
    params: msgspec.Raw | UnsetType = UNSET


_modern_probe = msgspec.json.Decoder(_ModernProbe)
_modern_params = msgspec.json.Decoder(_ModernParams)
# Method and tool names repeat call after call: encode each once (checking a value char by
# char was a tenth of the client's work per call over HTTP). Long values (URIs) are not kept.
_encoded = functools.lru_cache(maxsize=1024)(encode_value)


def _header_value(text: str) -> str:
    return _encoded(text) if len(text) <= 200 else encode_value(text)


ParamHeaders = Callable[[str, Any], dict[str, str]]
"""(tool name, arguments) -> the Mcp-Param-* headers its x-mcp-header annotations ask for."""


@functools.cache
def shared_tls() -> ssl.SSLContext:
    """One TLS context (httpx's default verification) for every client of the process.
    httpx builds a fresh one per client otherwise, loading the CA bundle each time: about
    30 ms of blocked event loop per client, which stalled other clients' requests (and ran
    their era probes out of time) when a process opened many at once."""
    return httpx.create_ssl_context()


class HttpStatusError(McpError):
    """An HTTP error status whose body is not a JSON-RPC answer."""

    def __init__(self, status: int, url: str, text: str) -> None:
        super().__init__(-32603, f"HTTP {status} from {url}: {text}")
        self.status = status


class SessionExpired(ConnectionClosed):
    """The server no longer knows our session (404): a new session must be started."""


class CrossOriginRedirect(httpx.HTTPError):
    """A redirect to another origin: not followed (the user's headers are for one origin)."""


def with_defaults(headers: dict[str, str] | None) -> dict[str, str]:
    """The caller's headers, with Accept-Encoding (what the client decodes) unless given."""
    given = dict(headers or {})
    if not any(name.lower() == "accept-encoding" for name in given):
        given["accept-encoding"] = bounded.ACCEPT_ENCODING
    return given


def same_origin_redirects(url: str) -> Callable[[httpx.Response], Awaitable[None]]:
    """An httpx response hook: a redirect away from ``url``'s origin raises
    :class:`CrossOriginRedirect` instead of being followed (httpx drops Authorization on
    its way to another origin, but not the other headers: an API key, a cookie of ours),
    and a redirect's body (which httpx reads whole) is cut off after 64 KiB."""

    async def check(response: httpx.Response) -> None:
        if not response.has_redirect_location:
            return
        target = str(response.request.url.join(response.headers["location"]))
        if not same_origin(target, url):
            raise CrossOriginRedirect(
                f"refusing the redirect from {response.request.url} to {target}: another origin "
                "(the client's headers and credentials are for the first one only)"
            )
        response.stream = _Capped(response.stream, _REDIRECT_BODY)

    return check


class _Capped(httpx.AsyncByteStream):
    """A response stream that ends in an error after ``limit`` bytes."""

    def __init__(self, stream: httpx.SyncByteStream | httpx.AsyncByteStream, limit: int) -> None:
        self._stream = stream
        self._limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        assert isinstance(self._stream, httpx.AsyncByteStream)
        seen = 0
        async for chunk in self._stream:
            seen += len(chunk)
            if seen > self._limit:
                raise httpx.ReadError(f"a redirect's body exceeds {self._limit} bytes")
            yield chunk

    async def aclose(self) -> None:
        if isinstance(self._stream, httpx.AsyncByteStream):
            await self._stream.aclose()


class HttpTransport:
    def __init__(
        self,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        auth: httpx.Auth | None = None,
        timeout: float = 60.0,
        client: httpx.AsyncClient | None = None,
        standalone_stream: bool = True,
        max_message: int = MAX_MESSAGE,
        uds: str | None = None,
    ) -> None:
        self.url = url
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self.standalone_stream = standalone_stream
        self.max_message = max_message  # bytes of one answer, line or event (decoded)
        self._own_client = client is None
        headers = with_defaults(headers)
        # A caller's own httpx client keeps its own rules (redirects, encodings, limits on
        # what it reads whole); ours follows redirects within the origin only.
        self._client = client or httpx.AsyncClient(
            headers=headers,
            auth=auth,
            timeout=httpx.Timeout(timeout, read=None),
            follow_redirects=True,
            verify=shared_tls(),
            event_hooks={"response": [same_origin_redirects(url)]},
            # A Unix domain socket (the URL names the host and path the server sees).
            transport=httpx.AsyncHTTPTransport(uds=uds, verify=shared_tls()) if uds is not None else None,
        )
        # The fast POST path (see the module docstring); None: every POST goes through httpx.
        self._fast: http11.Pool | None = None
        self._auth = auth if client is None else None
        if client is None and uds is None and http11.usable(url, headers):
            self._fast = http11.Pool(
                url, headers=headers, connect_timeout=timeout, tls=shared_tls, max_message=max_message
            )
        self._fast_pending: dict[Any, http11.Response] = {}  # request id -> its reply, read on callbacks
        self._retired: list[http11.Pool] = []  # fast paths left for httpx, closed at the end
        self._inbox = bounded.Inbox(max_message)
        self._tasks: set[asyncio.Task[None]] = set()
        self._requests: dict[Any, asyncio.Task[None]] = {}  # request id -> the task reading its reply
        # Set by the session: fail one of its pending requests with an exception.
        self.on_request_error: Callable[[Any, BaseException], None] | None = None
        # Set by the session: handle a frame now. A plain JSON answer read on callbacks is
        # handed over at once instead of through the inbox (the session's receive loop
        # would take another turn of the event loop to see it). Not for a subclass that
        # watches receive(): it sees every frame.
        self.deliver: Callable[[bytes], None] | None = None
        self._may_deliver = type(self).receive is HttpTransport.receive
        self._closed = False
        self.stateless = False
        self.param_headers: ParamHeaders | None = None
        # Requests may wait for an authorization flow (a token to fetch, a user to sign in):
        # time the client spends, not a sign of a server that does not answer.
        self.authenticates = auth is not None or (client is not None and client.auth is not None)

    # ------------------------------------------------------------ Transport

    async def receive(self) -> bytes | None:
        return await self._inbox.get()

    def use_era(self, era: str) -> None:
        """Speak the stateless era's HTTP binding, or (back to) the handshake era's."""
        self.stateless = era == "stateless"

    async def send(self, frame: bytes, *, related: RequestId | UnsetType = UNSET, final: bool = False) -> None:
        if self._closed:
            raise ConnectionClosed("the HTTP transport is closed")
        if self.stateless:
            await self._send_modern(frame)
            return
        probe = _probe.decode(frame)
        headers = self._headers()
        headers["content-type"] = "application/json"
        if probe.method is UNSET or probe.id is UNSET or probe.method == "initialize":
            # A notification or a response (202 expected), or the handshake (whose reply
            # carries the session id): wait for it here, so failures raise to the sender.
            await self._post(frame, headers, probe.id if probe.method == "initialize" else UNSET, probe.method)
            return
        self._start(frame, headers, probe.id, probe.method)

    async def _send_modern(self, frame: bytes) -> None:
        probe = _modern_probe.decode(frame)
        if probe.method is UNSET or probe.id is UNSET:
            return  # the stateless era defines no client notifications over HTTP
        headers = {"accept": _ACCEPT, "content-type": "application/json", **self._modern_headers(probe)}
        self._start(frame, headers, probe.id, probe.method)

    def _start(self, frame: bytes, headers: dict[str, str], request_id: Any, method: Any) -> None:
        """Send a request whose reply (JSON or a stream) arrives in the background, so the
        session's per-call timeout and cancellation keep working while it is awaited: on
        callbacks when a kept-alive connection is free, else in a task."""
        fast = self._fast
        if fast is not None and self._auth is None:
            conn = fast.take()
            if conn is not None:
                try:
                    data = fast.request_bytes(headers, frame)
                except http11.HttpError:
                    fast.release(conn)
                    raise
                response = conn.send(data)
                self._fast_pending[request_id] = response
                response.notify = functools.partial(self._fast_event, frame, headers, request_id, method)
                return
        self._spawn_request(self._post_request(frame, headers, request_id, method), request_id)

    def _spawn_request(self, coro: Coroutine[Any, Any, None], request_id: Any) -> None:
        """Read a request's reply in a task of its own (``forget`` cancels it)."""
        task = asyncio.ensure_future(coro)
        self._requests[request_id] = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(lambda _: self._requests.pop(request_id, None))

    def _fast_event(
        self, frame: bytes, headers: dict[str, str], request_id: Any, method: Any, response: http11.Response
    ) -> None:
        """The reply to a request sent on callbacks moved on: its head arrived, it is
        complete, or its connection failed. Runs inside the connection's parser: never raises."""
        if response.error is not None:
            self._fast_pending.pop(request_id, None)
            self._request_failed(request_id, ConnectionClosed(f"POST {self.url} failed: {response.error}"))
            return
        if not response.complete:
            if response.status_code in _REDIRECTS or _streams(response):
                # Redirects and streams are read in a task, like every reply through httpx.
                response.notify = None
                self._fast_pending.pop(request_id, None)
                self._spawn_request(self._post_request(frame, headers, request_id, method, response), request_id)
            return  # the rest of a plain answer comes with a later event
        self._fast_pending.pop(request_id, None)
        try:
            self._keep_cookies(response)
            push = self.deliver if self._may_deliver and self.deliver is not None else self._inbox.put_nowait
            self._on_answer(response.status_code, response.headers, response.body(), request_id, method, push)
        except Exception as exc:
            self._request_failed(request_id, exc)

    def _request_failed(self, request_id: Any, exc: BaseException) -> None:
        if self.on_request_error is not None:
            self.on_request_error(request_id, exc)
        else:
            self._fail(request_id, str(exc))

    def _modern_headers(self, probe: _ModernProbe) -> dict[str, str]:
        """MCP-Protocol-Version, Mcp-Method, Mcp-Name and Mcp-Param-* for one request."""
        method: str = probe.method
        params = _modern_params.decode(probe.params) if isinstance(probe.params, msgspec.Raw) else _ModernParams()
        headers = {"mcp-method": _header_value(method)}
        version = params.meta.get(META_VERSION) if isinstance(params.meta, dict) else None
        if isinstance(version, str):
            headers["mcp-protocol-version"] = version
        # The tasks extension names the task in Mcp-Name, for routing to where it lives.
        field = NAME_PARAMS.get(method) or ("taskId" if method.startswith("tasks/") else None)
        named = getattr(params, field, None) if field is not None else None
        if isinstance(named, str):
            headers["mcp-name"] = _header_value(named)
        if method == "tools/call" and isinstance(params.name, str) and self.param_headers is not None:
            headers.update(self.param_headers(params.name, params.arguments))
        return headers

    async def _post(
        self,
        frame: bytes,
        headers: dict[str, str],
        awaiting: Any,
        method: Any,
        started: http11.Response | None = None,
    ) -> None:
        """POST a frame (or go on with the reply to one sent on callbacks, ``started``)
        and handle its reply."""
        response: httpx.Response | http11.Response
        fast = self._fast
        if started is not None or fast is not None:
            try:
                if started is not None:
                    response = started
                elif self._auth is not None:
                    assert fast is not None
                    response = await self._authorized_post(fast, self._auth, headers, frame)
                else:
                    assert fast is not None
                    response = await fast.post(headers, frame)
            except http11.HttpError as exc:
                raise ConnectionClosed(f"POST {self.url} failed: {exc}") from exc
            if response.status_code not in _REDIRECTS:
                try:
                    self._keep_cookies(response)
                    await self._handle_post_response(response, awaiting, method)
                except BaseException:
                    await response.aclose()
                    raise
                return
            # httpx follows redirects (a POST answered 301/302/303 becomes a GET, as it
            # decides): this transport sends through httpx from now on.
            await response.aclose()
            self._leave_fast_path()
        request = self._client.build_request("POST", self.url, content=frame, headers=headers)
        try:
            sent = await self._client.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise ConnectionClosed(f"POST {self.url} failed: {exc}") from exc
        try:
            await self._handle_post_response(sent, awaiting, method)
        except BaseException:
            await sent.aclose()
            raise

    async def _authorized_post(
        self, fast: http11.Pool, auth: httpx.Auth, headers: dict[str, str], frame: bytes
    ) -> http11.Response:
        """POST through ``auth``'s flow, as httpx drives it: the flow puts its headers on
        the request (a bearer token, a DPoP proof) and sees each response (a 401 to renew
        the token on, a DPoP nonce to retry with) until it is content. Each request of the
        flow goes on the fast path; the flow sees an error answer's body, a success's head."""
        request = httpx.Request("POST", self.url, headers=headers, content=frame)
        flow = auth.async_auth_flow(request)
        try:
            request = await flow.__anext__()
            while True:
                response = await fast.post(dict(request.headers.items()), request.content)
                self._keep_cookies(response)  # from every answer of the flow, as httpx keeps them
                body = await response.aread() if response.status_code >= 400 else b""
                # The body is decoded already: its encoding must not be undone twice.
                raw = [(name, value) for name, value in response.raw_headers if name.lower() != b"content-encoding"]
                seen = httpx.Response(response.status_code, headers=raw, content=body, request=request)
                try:
                    request = await flow.asend(seen)
                except StopAsyncIteration:
                    return response
                await response.aclose()  # the flow asks again: this answer is spent
        finally:
            await flow.aclose()

    def _leave_fast_path(self) -> None:
        """Send every later POST through httpx (redirects, cookies). Requests under way on
        the fast path finish there; close() closes its connections."""
        if self._fast is not None:
            self._retired.append(self._fast)
            self._fast = None

    def _keep_cookies(self, response: http11.Response | httpx.Response) -> None:
        """A cookie from the fast path goes to httpx's jar (which sends it from then on), as
        httpx would have kept it; the transport moves to httpx to send it."""
        if not isinstance(response, http11.Response) or "set-cookie" not in response.headers:
            return
        request = httpx.Request("POST", self.url)
        self._client.cookies.extract_cookies(
            httpx.Response(response.status_code, headers=response.raw_headers, request=request)
        )
        self._leave_fast_path()

    async def _post_request(
        self,
        frame: bytes,
        headers: dict[str, str],
        request_id: Any,
        method: Any,
        started: http11.Response | None = None,
    ) -> None:
        try:
            await self._post(frame, headers, request_id, method, started)
        except Exception as exc:  # the caller of that request gets it (an OAuthError, say)
            self._request_failed(request_id, exc)

    def forget(self, request_id: Any) -> None:
        """The session gave up on a request (timeout, cancellation): stop reading its reply."""
        task = self._requests.pop(request_id, None)
        if task is not None:
            task.cancel()
        response = self._fast_pending.pop(request_id, None)
        if response is not None:
            response.abort()  # its connection goes down with it (stateless era: that cancels)

    async def _handle_post_response(
        self, response: httpx.Response | http11.Response, awaiting: Any, method: Any
    ) -> None:
        if _streams(response):
            self._note_session(response.headers, method)
            task = asyncio.ensure_future(self._read_stream(response, awaiting))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            return
        if response.status_code == 404 and self.session_id is not None and not self.stateless:
            await response.aclose()
            raise SessionExpired("the server ended our session (404): start a new one")
        body = await self._whole(response)
        self._on_answer(response.status_code, response.headers, body, awaiting, method)

    async def _whole(self, response: httpx.Response | http11.Response) -> bytes:
        """A reply's whole body, decoded, at most ``max_message`` bytes."""
        if isinstance(response, http11.Response):
            return await response.aread()  # bounded by its pool's max_message
        loaded = _loaded(response)
        if loaded is not None:
            if len(loaded) > self.max_message:
                raise bounded.ResponseTooLarge("the server's answer", self.max_message)
            return loaded
        encoding = response.headers.get("content-encoding")
        return await bounded.read_whole(response.aiter_raw(), encoding, self.max_message, "the server's answer")

    def _lines(self, response: httpx.Response | http11.Response) -> AsyncIterator[str]:
        """A stream's lines, decoded, each at most ``max_message`` bytes."""
        if isinstance(response, http11.Response):
            return response.aiter_lines()
        loaded = _loaded(response)
        if loaded is not None:
            return bounded.lines(_once(loaded), self.max_message)
        pieces = bounded.decoded(response.aiter_raw(), response.headers.get("content-encoding"))
        return bounded.lines(pieces, self.max_message)

    def _note_session(self, headers: Any, method: Any) -> None:
        session_id = headers.get("mcp-session-id")
        if session_id and method == "initialize" and not self.stateless:
            self.session_id = session_id

    def _on_answer(
        self,
        status: int,
        headers: Any,
        body: bytes,
        awaiting: Any,
        method: Any,
        push: Callable[[bytes], None] | None = None,
    ) -> None:
        """A POST's whole reply (not a stream): the answer to ``push`` (the inbox by
        default), or an exception."""
        push = push or self._inbox.put_nowait
        if self.stateless and status >= 400:
            if _answers(body, awaiting):  # a JSON-RPC error (-32022, -32601 with 404, ...)
                push(body)
                return
            raise HttpStatusError(status, self.url, _error_text(body))
        self._note_session(headers, method)
        if status == 404 and self.session_id is not None:
            raise SessionExpired("the server ended our session (404): start a new one")
        if status >= 400:
            if _answers(body, awaiting):
                # The server's own JSON-RPC error (a 400 with -32020, say): its code, not ours.
                push(body)
                return
            raise McpError(-32603, f"HTTP {status} from {self.url}: {_error_text(body)}")
        kind = headers.get("content-type", "").split(";")[0].strip().lower()
        if body.strip() and kind in ("application/json", ""):
            push(body)

    def _headers(self) -> dict[str, str]:
        headers = {"accept": _ACCEPT}
        if self.session_id is not None:
            headers["mcp-session-id"] = self.session_id
        if self.protocol_version is not None:
            headers["mcp-protocol-version"] = self.protocol_version
        return headers

    async def _read_stream(self, response: httpx.Response | http11.Response, awaiting: Any) -> None:
        """Deliver a POST's SSE events; resume with GET if it stops before the response.

        A stream the server ended on purpose is resumed after its ``retry`` delay; one that
        broke is retried at once. When it cannot be resumed, the request fails now rather
        than at its timeout.
        """
        parser = sse.Parser(self.max_message)
        status = await self._pump(response, parser, awaiting)
        if isinstance(status, Exception):  # the stream broke a limit: it is not resumed
            if awaiting is not UNSET and not self._closed:
                self._fail(awaiting, f"the server's event stream was closed: {status}")
            return
        if self.stateless and status != "response" and awaiting is not UNSET and not self._closed:
            # Streams are not resumable in the stateless era: the request is lost.
            self._fail(awaiting, "the response stream ended before the response")
            return
        resumes = 0
        while status != "response" and awaiting is not UNSET and not self._closed:
            if parser.last_id is None or resumes >= _MAX_RESUMES:
                self._fail(awaiting, "the response stream ended before the response and cannot be resumed")
                return
            resumes += 1
            if status == "ended":
                await asyncio.sleep(_retry_seconds(parser))
            resumed = await self._get_stream(parser.last_id)
            if resumed is None:
                self._fail(awaiting, "the connection to the server was lost before the response")
                return
            status = await self._pump(resumed, parser, awaiting)
            if isinstance(status, Exception):
                self._fail(awaiting, f"the server's event stream was closed: {status}")
                return

    def _fail(self, request_id: Any, why: str) -> None:
        """Answer our own pending request with an error, as if the server had (marked as
        ours: :attr:`~mcpgen.runtime.errors.McpError.answered` is False)."""
        self._inbox.put_nowait(error_frame(INTERNAL_ERROR, why, request_id, {NO_ANSWER: True}))

    async def _pump(
        self, response: httpx.Response | http11.Response, parser: sse.Parser, awaiting: Any
    ) -> str | Exception:
        """Read events into the inbox: "response" once the awaited response came by,
        "ended" when the server closed the stream, "broken" when the connection failed,
        and the error itself when what the server sent broke a limit (a line or an event
        too long, an encoding not offered): such a stream is closed, never resumed. While
        the inbox is full this waits, and reads nothing more from the socket."""
        try:
            async for line in self._lines(response):
                found = parser.line(line)
                if found is None or not found.data or found.event != "message":
                    continue
                data = found.data.encode()
                if awaiting is not UNSET:
                    probe = _probe.decode(data)
                    if probe.method is UNSET and probe.id == awaiting:
                        self._inbox.put_nowait(data)  # an answer of ours never waits
                        return "response"
                if self._inbox.full():
                    await self._inbox.put(data)  # waits, and reads nothing more meanwhile
                else:
                    self._inbox.put_nowait(data)
        except _REFUSED as exc:
            log.warning("mcpgen: closing the event stream from %s: %s", self.url, exc)
            return exc
        except (httpx.HTTPError, http11.HttpError, msgspec.DecodeError) as exc:
            log.debug("mcpgen: SSE stream broke: %s", exc)
            return "broken"
        finally:
            await response.aclose()
        return "ended"

    async def _get_stream(self, last_event_id: str | None) -> httpx.Response | None:
        headers = self._headers()
        headers["accept"] = "text/event-stream"
        if last_event_id is not None:
            headers["last-event-id"] = last_event_id
        try:
            response = await self._client.send(
                self._client.build_request("GET", self.url, headers=headers), stream=True
            )
        except httpx.HTTPError as exc:
            log.debug("mcpgen: GET stream failed: %s", exc)
            return None
        if response.status_code != 200:
            await response.aclose()
            return None
        return response

    # ------------------------------------------------------------ lifecycle hooks

    async def started(self, protocol_version: str) -> None:
        """The server answered ``initialize``: send its version from now on."""
        self.protocol_version = protocol_version

    async def initialized(self) -> None:
        """The handshake is over: open the GET stream. The first request waits until the
        server has answered the GET (for a few seconds at most), so that a server never
        takes this stream for the resumption of a request's stream that it just closed."""
        if not self.standalone_stream or self.session_id is None:
            return
        answered = asyncio.Event()
        task = asyncio.ensure_future(self._standalone(answered))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        try:
            await asyncio.wait_for(answered.wait(), _GET_ANSWER_WAIT)
        except TimeoutError:
            log.debug("mcpgen: the server has not answered the GET stream yet; going on")

    async def _standalone(self, answered: asyncio.Event) -> None:
        parser = sse.Parser(self.max_message)
        while not self._closed:
            response = await self._get_stream(parser.last_id)
            answered.set()
            if response is None:
                return  # 405 (no standalone stream offered) or the server is gone
            status = await self._pump(response, parser, UNSET)
            if isinstance(status, Exception):
                return  # it broke a limit: not opened again
            if status == "ended":
                await asyncio.sleep(_retry_seconds(parser))

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for response in list(self._fast_pending.values()):
            response.abort()
        self._fast_pending.clear()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=2)
        if self.session_id is not None:
            try:
                request = self._client.build_request("DELETE", self.url, headers=self._headers(), timeout=5)
                await (await self._client.send(request, stream=True)).aclose()  # its body is not read
            except httpx.HTTPError:
                pass  # the server may be gone already; nothing to clean up then
        for pool in [*self._retired, *([self._fast] if self._fast is not None else [])]:
            pool.close()
        if self._own_client:
            await self._client.aclose()
        self._inbox.put_nowait(None)


def _loaded(response: httpx.Response) -> bytes | None:
    """The body of an httpx response that holds it already (one made with its content, as
    a caller's mock transport makes them), else None: it is to be read."""
    try:
        return response.content
    except httpx.ResponseNotRead:
        return None


async def _once(data: bytes) -> AsyncIterator[bytes]:
    yield data


def _retry_seconds(parser: sse.Parser) -> float:
    """The wait before a resumption: the server's ``retry``, at most a minute."""
    return min(parser.retry_ms or _DEFAULT_RETRY_MS, _MAX_RETRY_MS) / 1000


def _streams(response: httpx.Response | http11.Response) -> bool:
    """Whether a POST's reply is an SSE stream to read event by event."""
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    return response.status_code < 400 and kind == "text/event-stream"


def _answers(body: bytes, request_id: Any) -> bool:
    """Whether an error status's body is the JSON-RPC error answering ``request_id``."""
    try:
        data = msgspec.json.decode(body)
    except msgspec.DecodeError:
        return False
    return isinstance(data, dict) and isinstance(data.get("error"), dict) and data.get("id") == request_id


def _error_text(body: bytes) -> str:
    try:
        data = msgspec.json.decode(body)
        return str(data.get("error", {}).get("message", body[:200].decode(errors="replace")))
    except (msgspec.DecodeError, AttributeError):
        return body[:200].decode(errors="replace")
