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
"""

from __future__ import annotations

import asyncio
import functools
import logging
import ssl
from collections.abc import Callable
from typing import Any

import httpx
import msgspec
from msgspec import UNSET, UnsetType

from mcpgen.runtime import sse
from mcpgen.runtime.errors import INTERNAL_ERROR, ConnectionClosed, McpError
from mcpgen.runtime.framing import RequestId, error_frame
from mcpgen.runtime.headers import NAME_PARAMS, encode_value

log = logging.getLogger("mcpgen")
_ACCEPT = "application/json, text/event-stream"
_DEFAULT_RETRY_MS = 1000
_GET_ANSWER_WAIT = 5.0  # seconds the first request waits for the GET stream's answer
_MAX_RESUMES = 5


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
    ) -> None:
        self.url = url
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self.standalone_stream = standalone_stream
        self._own_client = client is None
        self._client = client or httpx.AsyncClient(
            headers=headers,
            auth=auth,
            timeout=httpx.Timeout(timeout, read=None),
            follow_redirects=True,
            verify=shared_tls(),
        )
        self._inbox: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._tasks: set[asyncio.Task[None]] = set()
        self._requests: dict[Any, asyncio.Task[None]] = {}  # request id -> the task reading its reply
        # Set by the session: fail one of its pending requests with an exception.
        self.on_request_error: Callable[[Any, BaseException], None] | None = None
        self._closed = False
        self.stateless = False
        self.param_headers: ParamHeaders | None = None

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
        request = self._client.build_request(
            "POST", self.url, content=frame, headers={**self._headers(), "content-type": "application/json"}
        )
        if probe.method is UNSET or probe.id is UNSET or probe.method == "initialize":
            # A notification or a response (202 expected), or the handshake (whose reply
            # carries the session id): wait for it here, so failures raise to the sender.
            await self._post(request, probe.id if probe.method == "initialize" else UNSET, probe.method)
            return
        # A request: its reply (JSON or a stream) arrives in the background, so the
        # session's per-call timeout and cancellation keep working while it is awaited.
        task = asyncio.ensure_future(self._post_request(request, probe.id, probe.method))
        self._requests[probe.id] = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(lambda _: self._requests.pop(probe.id, None))

    async def _send_modern(self, frame: bytes) -> None:
        probe = _modern_probe.decode(frame)
        if probe.method is UNSET or probe.id is UNSET:
            return  # the stateless era defines no client notifications over HTTP
        headers = {"accept": _ACCEPT, "content-type": "application/json", **self._modern_headers(probe)}
        request = self._client.build_request("POST", self.url, content=frame, headers=headers)
        task = asyncio.ensure_future(self._post_request(request, probe.id, probe.method))
        self._requests[probe.id] = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(lambda _: self._requests.pop(probe.id, None))

    def _modern_headers(self, probe: _ModernProbe) -> dict[str, str]:
        """MCP-Protocol-Version, Mcp-Method, Mcp-Name and Mcp-Param-* for one request."""
        method: str = probe.method
        params = _modern_params.decode(probe.params) if isinstance(probe.params, msgspec.Raw) else _ModernParams()
        headers = {"mcp-method": encode_value(method)}
        version = params.meta.get("io.modelcontextprotocol/protocolVersion") if isinstance(params.meta, dict) else None
        if isinstance(version, str):
            headers["mcp-protocol-version"] = version
        # The tasks extension names the task in Mcp-Name, for routing to where it lives.
        field = NAME_PARAMS.get(method) or ("taskId" if method.startswith("tasks/") else None)
        named = getattr(params, field, None) if field is not None else None
        if isinstance(named, str):
            headers["mcp-name"] = encode_value(named)
        if method == "tools/call" and isinstance(params.name, str) and self.param_headers is not None:
            headers.update(self.param_headers(params.name, params.arguments))
        return headers

    async def _post(self, request: httpx.Request, awaiting: Any, method: Any) -> None:
        try:
            response = await self._client.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise ConnectionClosed(f"POST {self.url} failed: {exc}") from exc
        try:
            await self._handle_post_response(response, awaiting, method)
        except BaseException:
            await response.aclose()
            raise

    async def _post_request(self, request: httpx.Request, request_id: Any, method: Any) -> None:
        try:
            await self._post(request, request_id, method)
        except Exception as exc:  # the caller of that request gets it (an OAuthError, say)
            if self.on_request_error is not None:
                self.on_request_error(request_id, exc)
            else:
                self._fail(request_id, str(exc))

    def forget(self, request_id: Any) -> None:
        """The session gave up on a request (timeout, cancellation): stop reading its reply."""
        task = self._requests.pop(request_id, None)
        if task is not None:
            task.cancel()

    async def _handle_post_response(self, response: httpx.Response, awaiting: Any, method: Any) -> None:
        if self.stateless and response.status_code >= 400:
            body = await response.aread()
            if _answers(body, awaiting):  # a JSON-RPC error (-32022, -32601 with 404, ...)
                self._inbox.put_nowait(body)
                return
            raise HttpStatusError(response.status_code, self.url, _error_text(body))
        session_id = response.headers.get("mcp-session-id")
        if session_id and method == "initialize" and not self.stateless:
            self.session_id = session_id
        if response.status_code == 404 and self.session_id is not None:
            await response.aclose()
            raise SessionExpired("the server ended our session (404): start a new one")
        if response.status_code >= 400:
            body = await response.aread()
            raise McpError(-32603, f"HTTP {response.status_code} from {self.url}: {_error_text(body)}")
        kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind == "text/event-stream":
            task = asyncio.ensure_future(self._read_stream(response, awaiting))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            return
        body = await response.aread()
        if body.strip() and kind in ("application/json", ""):
            self._inbox.put_nowait(body)

    def _headers(self) -> dict[str, str]:
        headers = {"accept": _ACCEPT}
        if self.session_id is not None:
            headers["mcp-session-id"] = self.session_id
        if self.protocol_version is not None:
            headers["mcp-protocol-version"] = self.protocol_version
        return headers

    async def _read_stream(self, response: httpx.Response, awaiting: Any) -> None:
        """Deliver a POST's SSE events; resume with GET if it stops before the response.

        A stream the server ended on purpose is resumed after its ``retry`` delay; one that
        broke is retried at once. When it cannot be resumed, the request fails now rather
        than at its timeout.
        """
        parser = sse.Parser()
        status = await self._pump(response, parser, awaiting)
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
                await asyncio.sleep((parser.retry_ms or _DEFAULT_RETRY_MS) / 1000)
            resumed = await self._get_stream(parser.last_id)
            if resumed is None:
                self._fail(awaiting, "the connection to the server was lost before the response")
                return
            status = await self._pump(resumed, parser, awaiting)

    def _fail(self, request_id: Any, why: str) -> None:
        """Answer our own pending request with an error, as if the server had."""
        self._inbox.put_nowait(error_frame(INTERNAL_ERROR, why, request_id))

    async def _pump(self, response: httpx.Response, parser: sse.Parser, awaiting: Any) -> str:
        """Read events into the inbox: "response" once the awaited response came by,
        "ended" when the server closed the stream, "broken" when the connection failed."""
        try:
            async for line in response.aiter_lines():
                found = parser.line(line)
                if found is None or not found.data or found.event != "message":
                    continue
                data = found.data.encode()
                self._inbox.put_nowait(data)
                if awaiting is not UNSET:
                    probe = _probe.decode(data)
                    if probe.method is UNSET and probe.id == awaiting:
                        return "response"
        except (httpx.HTTPError, msgspec.DecodeError) as exc:
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
        parser = sse.Parser()
        while not self._closed:
            response = await self._get_stream(parser.last_id)
            answered.set()
            if response is None:
                return  # 405 (no standalone stream offered) or the server is gone
            if await self._pump(response, parser, UNSET) == "ended":
                await asyncio.sleep((parser.retry_ms or _DEFAULT_RETRY_MS) / 1000)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=2)
        if self.session_id is not None:
            try:
                await self._client.delete(self.url, headers=self._headers(), timeout=5)
            except httpx.HTTPError:
                pass  # the server may be gone already; nothing to clean up then
        if self._own_client:
            await self._client.aclose()
        self._inbox.put_nowait(None)


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
