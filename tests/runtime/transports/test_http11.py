"""mcpgen.runtime.transports.http11, the client's HTTP/1.1 POST path, and what HttpTransport keeps from
httpx around it: real servers on loopback (uvicorn, and a scripted asyncio server where the
exact bytes and their splitting matter)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import gzip
import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from mcpgen import Client
from mcpgen.generated import TextContent
from mcpgen.runtime.transports import http11
from mcpgen.runtime.transports.http_client import HttpTransport
from tests.http_server import echo_server as demo_server
from tests.http_server import serving_in_thread as serving

pytestmark = pytest.mark.anyio
App = Callable[[Any, Any, Any], Awaitable[None]]


def transport_of(client: Client) -> HttpTransport:
    transport = client.session.transport
    assert isinstance(transport, HttpTransport)
    return transport


# ---------------------------------------------------------------- through the Client


@pytest.mark.parametrize("era", ["handshake", "2026-07-28"])
async def test_calls_share_one_kept_alive_connection(era: str) -> None:
    app = demo_server().http_app()
    peers: list[Any] = []

    async def recording(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            peers.append(scope["client"])
        await app(scope, receive, send)

    with serving(recording) as port:
        async with Client.http(f"http://127.0.0.1:{port}/mcp", era=era, standalone_stream=False) as client:
            assert transport_of(client)._fast is not None
            for n in range(20):
                assert (await client.call_tool("echo", {"text": f"t{n}"})).content == [TextContent(text=f"t{n}")]
            results = await asyncio.gather(*(client.call_tool("echo", {"text": str(n)}) for n in range(64)))
            assert [r.content for r in results] == [[TextContent(text=str(n))] for n in range(64)]
    assert len(set(peers[-84:-64])) == 1, "one connection, kept alive, for calls one after the other"
    assert len(set(peers)) <= 65


@pytest.mark.parametrize("era", ["handshake", "2026-07-28"])
async def test_sse_answer_with_a_line_separator_in_its_json(era: str) -> None:
    """U+2028 is no line break in SSE (only CR, LF and CRLF are), and JSON carries it raw:
    httpx's aiter_lines split there and broke the event."""
    with serving(demo_server().http_app()) as port:
        async with Client.http(f"http://127.0.0.1:{port}/mcp", era=era, standalone_stream=False) as client:
            progress: list[float] = []
            text = "one\u2028two\u2029three\x85four"
            result = await client.call_tool("streamed", {"text": text}, on_progress=lambda p, t, m: progress.append(p))
            assert result.content == [TextContent(text=text)]
            assert progress == [1]


async def test_a_redirect_is_followed_through_httpx() -> None:
    app = demo_server().http_app()
    moved: list[str] = []

    async def redirecting(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/old":
            moved.append(scope["method"])
            await send({"type": "http.response.start", "status": 307, "headers": [(b"location", b"/mcp")]})
            await send({"type": "http.response.body", "body": b""})
            return
        await app(scope, receive, send)

    with serving(redirecting) as port:
        async with Client.http(f"http://127.0.0.1:{port}/old", era="2026-07-28") as client:
            for n in range(3):
                assert (await client.call_tool("echo", {"text": str(n)})).content == [TextContent(text=str(n))]
            assert transport_of(client)._fast is None, "httpx follows redirects: the transport moved to it"
    assert moved and set(moved) == {"POST"}


async def test_a_cookie_is_kept_and_sent_back() -> None:
    app = demo_server().http_app()
    cookies: list[str | None] = []

    async def sticky(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        cookies.append(dict(scope["headers"]).get(b"cookie", b"").decode() or None)

        async def with_cookie(message: Any) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message["headers"], (b"set-cookie", b"node=a7; Path=/")]}
            await send(message)

        await app(scope, receive, with_cookie)

    with serving(sticky) as port:
        async with Client.http(f"http://127.0.0.1:{port}/mcp", era="2026-07-28") as client:
            for n in range(3):
                assert (await client.call_tool("echo", {"text": str(n)})).content == [TextContent(text=str(n))]
    assert cookies[0] is None
    assert cookies[1:] and all(c == "node=a7" for c in cookies[1:]), cookies


def test_proxies_from_the_environment_stay_with_httpx(monkeypatch: pytest.MonkeyPatch) -> None:
    url = "http://127.0.0.1:9/mcp"
    assert http11.usable(url, {"x-api-key": "k"})
    assert not http11.usable("http://user:pw@127.0.0.1:9/mcp", None), "credentials in the URL: httpx's Basic auth"
    assert not http11.usable(url, {"x-bad": "caf\u00e9"})
    assert not http11.usable("ftp://127.0.0.1/mcp", None)
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY"):
        with monkeypatch.context() as env:
            env.setenv(name, "http://proxy.invalid:3128")
            assert not http11.usable(url, None)
            assert HttpTransport(url)._fast is None
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")  # another scheme's proxy
    assert HttpTransport(url)._fast is not None


# ---------------------------------------------------------------- the pool, against scripted bytes

Script = Callable[[bytes, asyncio.StreamWriter], Awaitable[bool]]
"""Gets one request (head and body); writes the answer; False closes the connection."""


@contextlib.asynccontextmanager
async def scripted(script: Script) -> AsyncIterator[tuple[str, list[int]]]:
    """A loopback server reading HTTP/1.1 requests and answering through ``script``;
    yields its URL and, per connection, how many requests it read."""
    counts: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        counts.append(0)
        index = len(counts) - 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.lower().split(b"\r\n")
                length = next((int(line[15:]) for line in lines if line.startswith(b"content-length:")), 0)
                body = await reader.readexactly(length)
                counts[index] += 1
                if not await script(head + body, writer):
                    break
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/mcp", counts
    finally:
        server.close()


def json_answer(body: bytes, extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n%s\r\n%s" % (
        len(body),
        extra,
        body,
    )


async def test_sse_lines_split_anywhere_and_any_line_ending() -> None:
    events = (
        b'id: 1\r\nevent: message\r\ndata: {"a":1}\r\n\r\n'
        b'id: 2\rdata: {"b":"\xe2\x80\xa8\xc3\xa9"}\r\r'
        b": comment\ndata: last\n\nunterminated"
    )
    expected = ["id: 1", "event: message", 'data: {"a":1}', "", "id: 2", 'data: {"b":"\u2028\u00e9"}', ""]
    expected += [": comment", "data: last", "", "unterminated"]
    for size in (1, 2, 3, 7, len(events)):
        chunks = [events[i : i + size] for i in range(0, len(events), size)]

        async def stream(request: bytes, writer: asyncio.StreamWriter, chunks: list[bytes] = chunks) -> bool:
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
            for chunk in chunks:
                writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                await writer.drain()
            writer.write(b"0\r\n\r\n")
            return True

        async with scripted(stream) as (url, _):
            pool = http11.Pool(url)
            response = await pool.post({}, b"{}")
            assert [line async for line in response.aiter_lines()] == expected, size
            pool.close()


async def test_keep_alive_reuse_and_connections_the_server_closes() -> None:
    answers = 0

    async def answer(request: bytes, writer: asyncio.StreamWriter) -> bool:
        nonlocal answers
        answers += 1
        if answers == 3:  # the server says so
            writer.write(json_answer(b'{"n":3}', b"connection: close\r\n"))
            return False
        writer.write(json_answer(b'{"n":%d}' % answers))
        return answers != 5  # the fifth: closed without a word, after answering

    async with scripted(answer) as (url, counts):
        pool = http11.Pool(url)
        for n in range(1, 8):
            response = await pool.post({"x-n": str(n)}, b"{}")
            assert msgspec.json.decode(await response.aread()) == {"n": n}
            await asyncio.sleep(0.05)  # the close, if any, reaches the client
        pool.close()
    assert counts == [3, 2, 2], "reused until the server closed it, then a new connection"


@contextlib.contextmanager
def closing_when_idle(idle: float) -> Iterator[tuple[str, list[int]]]:
    """A server in a thread of its own (so its closes happen while the test's event loop is
    busy elsewhere) that answers every request and closes a connection ``idle`` seconds
    after its last answer, as a server's keep-alive timeout does; yields its URL and, per
    connection, how many requests it answered."""
    listener = socket.create_server(("127.0.0.1", 0))
    counts: list[int] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            counts.append(0)
            with conn:
                conn.settimeout(idle)
                while True:
                    try:
                        head = conn.recv(65536)
                    except TimeoutError:
                        break  # idle: closed, as a keep-alive timeout does
                    if not head:
                        break
                    rid = msgspec.json.decode(head.split(b"\r\n\r\n", 1)[1]).get("id", 0)
                    counts[-1] += 1
                    conn.sendall(json_answer(b'{"jsonrpc":"2.0","id":%d,"result":{}}' % rid))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/mcp", counts
    finally:
        listener.close()
        thread.join(5)


async def test_an_idle_connection_the_server_closed_is_not_reused_before_the_loop_saw_it() -> None:
    """The server closes a kept-alive connection after its idle timeout; on a busy machine
    the client's loop may not have handled that close when the next request takes the
    connection (seen as a connection reset in a conformance scenario under a CPU hog). The
    socket is asked before an idle connection is reused: the request goes on a new one,
    on the task path and on the callback path alike."""
    with closing_when_idle(0.2) as (url, counts):
        pool = http11.Pool(url)
        try:
            for rid in (1, 2):
                response = await pool.post({}, b'{"id":%d}' % rid)
                assert msgspec.json.decode(await response.aread())["id"] == rid
                time.sleep(0.5)  # the loop is busy: the server's close arrives unhandled
        finally:
            pool.close()
        transport = HttpTransport(url, standalone_stream=False)  # replies read on callbacks
        try:
            for rid in (3, 4, 5):
                await transport.send(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}' % rid)
                reply = msgspec.json.decode(await asyncio.wait_for(transport.receive(), 10))
                assert reply["id"] == rid and "result" in reply, reply
                time.sleep(0.5)
        finally:
            await transport.close()
    assert counts == [1, 1, 1, 1, 1], counts  # a new connection each time, none reset


async def test_gzip_close_delimited_and_informational_answers() -> None:
    packed = gzip.compress(b'{"packed":true}')
    replies = [
        b"HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ncontent-length: %d\r\n\r\n%s" % (len(packed), packed),
        b"HTTP/1.1 100 Continue\r\n\r\n" + json_answer(b'{"after":"continue"}'),
        b'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n{"until":"close"}',
    ]

    async def answer(request: bytes, writer: asyncio.StreamWriter) -> bool:
        reply = replies.pop(0)
        writer.write(reply)
        return b"connection: close" not in reply

    async with scripted(answer) as (url, _):
        pool = http11.Pool(url)
        for wanted in ({"packed": True}, {"after": "continue"}, {"until": "close"}):
            response = await pool.post({}, b"{}")
            assert response.status_code == 200
            assert msgspec.json.decode(await response.aread()) == wanted
        pool.close()


async def test_malformed_answers_fail_the_request_not_the_client() -> None:
    replies = [b"HTTP/1.1 banana\r\n\r\n", b"NOT HTTP AT ALL\r\n\r\n", json_answer(b'{"fine":1}')]

    async def answer(request: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(replies.pop(0))
        return True

    async with scripted(answer) as (url, counts):
        pool = http11.Pool(url)
        for _ in range(2):
            with pytest.raises(http11.HttpError, match="malformed"):
                await pool.post({}, b"{}")
        response = await pool.post({}, b"{}")
        assert msgspec.json.decode(await response.aread()) == {"fine": 1}
        pool.close()
    assert counts == [1, 1, 1], "a connection that sent garbage is not used again"


async def test_header_values_cannot_smuggle_lines() -> None:
    pool = http11.Pool("http://127.0.0.1:9/mcp")
    with pytest.raises(http11.HttpError, match="line break"):
        pool.request_bytes({"mcp-session-id": "a\r\nx-evil: 1"}, b"{}")
    with pytest.raises(http11.HttpError, match="ASCII"):
        pool.request_bytes({"mcp-session-id": "caf\u00e9"}, b"{}")
    head = pool.request_bytes({"accept": "application/json"}, b"{}").split(b"\r\n\r\n")[0].split(b"\r\n")
    assert head[0] == b"POST /mcp HTTP/1.1" and b"host: 127.0.0.1:9" in head and b"content-length: 2" in head


async def test_at_most_max_connections_and_the_rest_wait() -> None:
    open_now = peak = 0

    async def slow(request: bytes, writer: asyncio.StreamWriter) -> bool:
        nonlocal open_now, peak
        open_now += 1
        peak = max(peak, open_now)
        await asyncio.sleep(0.05)
        open_now -= 1
        writer.write(json_answer(b"{}"))
        return True

    async with scripted(slow) as (url, counts):
        pool = http11.Pool(url, max_connections=2)

        async def one() -> bytes:
            return await (await pool.post({}, b"{}")).aread()

        assert await asyncio.gather(*(one() for _ in range(7))) == [b"{}"] * 7
        pool.close()
    assert len(counts) == 2 and peak == 2 and sum(counts) == 7


async def test_cancelled_post_takes_its_connection_down() -> None:
    seen = asyncio.Event()

    async def never(request: bytes, writer: asyncio.StreamWriter) -> bool:
        seen.set()
        await asyncio.sleep(30)
        return False

    async with scripted(never) as (url, _):
        pool = http11.Pool(url)
        task = asyncio.ensure_future(pool.post({}, b"{}"))
        await asyncio.wait_for(seen.wait(), 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert not pool._busy and not pool._idle
        pool.close()


def self_signed(tmp: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp / "cert.pem", tmp / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


async def test_https(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    with serving(demo_server().http_app(), ssl_certfile=str(cert), ssl_keyfile=str(key)) as port:
        url = f"https://127.0.0.1:{port}/mcp"
        meta = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        params = {"name": "echo", "arguments": {"text": "tls"}, "_meta": meta}
        call = msgspec.json.encode({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
        headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
        headers |= {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "echo"}
        trusting = ssl.create_default_context(cafile=str(cert))
        pool = http11.Pool(url, tls=lambda: trusting)
        response = await pool.post(headers, call)
        body = await response.aread()
        pool.close()
        assert b'"tls"' in body, body
        # The default verification (shared_tls: httpx's CA bundle) refuses a certificate it cannot trust.
        with pytest.raises(ConnectionError, match="CERTIFICATE_VERIFY_FAILED"):
            async with Client.http(url, era="handshake"):
                pass


async def test_an_auth_flow_runs_on_the_fast_path() -> None:
    """An httpx.Auth (OAuth's OAuthClient is one) sees each response of its flow, the body
    of an error included, and its retries go out on the fast path."""
    app = demo_server().http_app()
    seen: list[str] = []

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            token = dict(scope["headers"]).get(b"authorization", b"").decode()
            seen.append(token)
            if token != "Bearer fresh":
                body = b'{"error":"invalid_token"}'
                head = [(b"www-authenticate", b'Bearer error="invalid_token"'), (b"content-type", b"application/json")]
                await send({"type": "http.response.start", "status": 401, "headers": head})
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    class Renewing(httpx.Auth):
        def __init__(self) -> None:
            self.token = "stale"
            self.bodies: list[bytes] = []

        async def async_auth_flow(self, request: httpx.Request) -> Any:
            request.headers["authorization"] = f"Bearer {self.token}"
            response = yield request
            if response.status_code == 401:
                self.bodies.append(await response.aread())
                self.token = "fresh"
                request.headers["authorization"] = f"Bearer {self.token}"
                yield request

    auth = Renewing()
    with serving(guarded) as port:
        async with Client.http(f"http://127.0.0.1:{port}/mcp", auth=auth, era="2026-07-28") as client:
            assert transport_of(client)._fast is not None
            for n in range(3):
                assert (await client.call_tool("echo", {"text": str(n)})).content == [TextContent(text=str(n))]
            assert transport_of(client)._fast is not None
    assert seen[0] == "Bearer stale" and set(seen[2:]) == {"Bearer fresh"}, seen
    assert auth.bodies == [b'{"error":"invalid_token"}']


@pytest.mark.parametrize("era", ["handshake", "2026-07-28"])
async def test_answers_larger_than_the_read_buffer(era: str) -> None:
    """Several MiB of plain JSON read on callbacks, and as an SSE stream: reading pauses
    only for a stream whose reader lags, never for a body read whole."""
    text = "x" * (3 << 20)
    with serving(demo_server().http_app()) as port:
        async with Client.http(f"http://127.0.0.1:{port}/mcp", era=era, standalone_stream=False) as client:
            for _ in range(2):  # the second on a kept-alive connection: on callbacks
                answer = await client.call_tool("echo", {"text": text}, timeout=20)
                assert answer.content == [TextContent(text=text)]
            streamed = await client.call_tool("streamed", {"text": text}, on_progress=lambda p, t, m: None, timeout=20)
            assert streamed.content == [TextContent(text=text)]


@pytest.mark.parametrize("era", ["handshake", "2026-07-28"])
async def test_answers_go_straight_to_the_session_unless_receive_is_watched(era: str) -> None:
    """A plain JSON answer read on callbacks is handed to the session at once; a transport
    subclass that overrides receive() (to record frames, say) still sees every one."""

    class Watching(HttpTransport):
        def __init__(self, url: str) -> None:
            super().__init__(url, standalone_stream=False)
            self.seen: list[Any] = []

        async def receive(self) -> bytes | None:
            frame = await super().receive()
            if frame is not None:
                self.seen.append(msgspec.json.decode(frame).get("id"))
            return frame

    with serving(demo_server().http_app()) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        async with Client.http(url, era=era, standalone_stream=False) as client:
            plain = transport_of(client)
            assert plain.deliver is not None and plain._may_deliver
            for n in range(5):
                assert (await client.call_tool("echo", {"text": str(n)})).content == [TextContent(text=str(n))]
            assert plain._inbox.empty()
        watching = Watching(url)

        async def connect() -> Watching:
            return watching

        async with Client(connect=connect, era=era) as watched:
            before = len(watching.seen)
            for n in range(5):
                assert (await watched.call_tool("echo", {"text": str(n)})).content == [TextContent(text=str(n))]
            assert len(watching.seen) - before == 5, watching.seen
