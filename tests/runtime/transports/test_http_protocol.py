"""mcpgen.runtime.transports.http_protocol: uvicorn's protocol writing a response in one socket write.

The transport wrapper on a real socket pair (what leaves when), then uvicorn serving the
demo server through the protocol on loopback: kept-alive and closed connections, SSE
streams and both eras, and the wiring into Server.run and uvicorn's --http option."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import AsyncIterator
from typing import Any

import msgspec
import pytest
import uvicorn

from mcpgen import Client, Server
from mcpgen.generated import TextContent
from mcpgen.runtime.transports import http_protocol
from mcpgen.runtime.transports.http_protocol import CoalescingTransport, protocol_class
from tests.http_server import echo_server, serving_in_thread

pytestmark = pytest.mark.anyio


class _Quiet(asyncio.Protocol):
    pass


@contextlib.asynccontextmanager
async def wrapped_pair() -> AsyncIterator[tuple[CoalescingTransport, socket.socket]]:
    """A CoalescingTransport over one end of a socket pair, and the other end (non-blocking)."""
    ours, theirs = socket.socketpair()
    loop = asyncio.get_running_loop()
    transport, _ = await loop.connect_accepted_socket(_Quiet, ours)
    theirs.setblocking(False)
    try:
        yield CoalescingTransport(transport, loop), theirs  # type: ignore[arg-type]
    finally:
        transport.close()
        theirs.close()


def pending(sock: socket.socket) -> bytes:
    try:
        return sock.recv(65536)
    except BlockingIOError:
        return b""


async def read_until_eof(sock: socket.socket, limit: float = 5.0) -> bytes:
    got = b""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except BlockingIOError:
            await asyncio.sleep(0.01)
            continue
        if not chunk:
            return got
        got += chunk
    raise AssertionError(f"no EOF within {limit} s (read {got!r})")


async def test_writes_of_one_turn_leave_together_at_its_end() -> None:
    async with wrapped_pair() as (transport, peer):
        transport.write(b"HTTP/1.1 200 OK\r\n\r\n")
        transport.write(bytearray(b"body"))
        transport.writelines([b"-one", memoryview(b"-two")])
        assert transport.get_write_buffer_size() == len(b"HTTP/1.1 200 OK\r\n\r\nbody-one-two")
        await asyncio.sleep(0.05)  # the other side would see a direct write by now
        # Nothing went before the turn ended (the sleep above is that turn's end)...
        transport.write(b"next")
        assert pending(peer) == b"HTTP/1.1 200 OK\r\n\r\nbody-one-two"
        # ...and a write made in a later turn goes at that turn's end.
        assert pending(peer) == b""
        await asyncio.sleep(0.05)
        assert pending(peer) == b"next"
        transport.write(b"")  # an empty write schedules nothing
        assert transport.get_write_buffer_size() == 0


async def test_close_sends_what_was_written_before_it() -> None:
    async with wrapped_pair() as (transport, peer):
        transport.write(b"the last answer")
        transport.close()  # as uvicorn does right after the body of a `connection: close` answer
        assert transport.is_closing()
        assert await read_until_eof(peer) == b"the last answer"
        transport.write(b"too late")  # after close: dropped, no error
        await asyncio.sleep(0.02)


async def test_abort_drops_what_is_pending() -> None:
    async with wrapped_pair() as (transport, peer):
        transport.write(b"never sent")
        transport.abort()
        await asyncio.sleep(0.02)
        assert await read_until_eof(peer) == b""


async def test_everything_else_is_the_real_transports() -> None:
    async with wrapped_pair() as (transport, _):
        assert transport.get_extra_info("socket") is not None
        assert transport.get_extra_info("nothing here", "default") == "default"
        transport.pause_reading()
        transport.resume_reading()
        assert transport.is_reading()  # not wrapped: passed through


# ---------------------------------------------------------------- uvicorn serving through it


def demo_server() -> Server:
    return echo_server("coalescing")


def serving(app: Any) -> contextlib.AbstractContextManager[int]:
    """``app`` under uvicorn, through the coalescing protocol, in a thread; yields the port."""
    return serving_in_thread(app, http=protocol_class())


def post(body: dict[str, Any], extra: str = "") -> bytes:
    data = msgspec.json.encode(body)
    return (
        b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        b"accept: application/json, text/event-stream\r\nmcp-protocol-version: 2026-07-28\r\n"
        b"mcp-method: tools/call\r\nmcp-name: echo\r\n"
        + extra.encode()
        + b"content-length: %d\r\n\r\n" % len(data)
        + data
    )


def echo_call(n: int) -> dict[str, Any]:
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    return {
        "jsonrpc": "2.0",
        "id": n,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": f"t{n}"}, "_meta": meta},
    }


def read_response(sock: socket.socket, buffer: bytearray) -> tuple[bytes, dict[str, Any]]:
    """One content-length response from ``sock`` (blocking): its head and JSON body."""
    while b"\r\n\r\n" not in buffer:
        chunk = sock.recv(65536)
        assert chunk, f"closed before a response head: {bytes(buffer)!r}"
        buffer += chunk
    head, _, rest = bytes(buffer).partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")
    )
    while len(rest) < length:
        chunk = sock.recv(65536)
        assert chunk, "closed inside a response body"
        rest += chunk
    del buffer[:]
    buffer += rest[length:]
    return head, msgspec.json.decode(rest[:length])


def test_kept_alive_and_pipelined_requests_each_get_their_whole_answer() -> None:
    with serving(demo_server().http_app()) as port, socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        buffer = bytearray()
        for n in range(3):  # one after the other on one connection
            sock.sendall(post(echo_call(n)))
            head, body = read_response(sock, buffer)
            assert head.startswith(b"HTTP/1.1 200"), head
            assert body["id"] == n and body["result"]["content"] == [{"type": "text", "text": f"t{n}"}]
        sock.sendall(b"".join(post(echo_call(n)) for n in range(10, 14)))  # pipelined
        assert [read_response(sock, buffer)[1]["id"] for _ in range(4)] == [10, 11, 12, 13]


def test_an_answer_before_connection_close_is_sent_whole() -> None:
    with serving(demo_server().http_app()) as port, socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(post(echo_call(7), "connection: close\r\n"))
        received = b""
        while chunk := sock.recv(65536):  # uvicorn closes right after the body: read to EOF
            received += chunk
        head, _, body = received.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200") and b"connection: close" in head.lower()
        assert msgspec.json.decode(body)["result"]["content"] == [{"type": "text", "text": "t7"}]


@pytest.mark.parametrize("era", ["handshake", "2026-07-28"])
async def test_sse_streams_and_json_answers_through_the_client(era: str) -> None:
    with serving(demo_server().http_app()) as port:
        async with Client.http(f"http://127.0.0.1:{port}/mcp", era=era, standalone_stream=False) as client:
            progress: list[float] = []
            streamed = await client.call_tool("streamed", {"text": "s"}, on_progress=lambda p, t, m: progress.append(p))
            assert streamed.content == [TextContent(text="s")] and progress == [1]
            results = await asyncio.gather(*(client.call_tool("echo", {"text": str(n)}) for n in range(32)))
            assert [r.content for r in results] == [[TextContent(text=str(n))] for n in range(32)]


def test_server_run_and_uvicorns_command_line_use_it(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[type[asyncio.Protocol]] = []

    def record(self: uvicorn.Server, sockets: Any = None) -> None:
        self.config.load()
        seen.append(self.config.http_protocol_class)

    monkeypatch.setattr(uvicorn.Server, "run", record)
    demo_server().run("http", port=0)
    assert seen == [protocol_class()]
    assert issubclass(seen[0], uvicorn.protocols.http.auto.AutoHTTPProtocol)

    config = uvicorn.Config("tests.runtime.transports.test_http_protocol:demo_server", http="mcpgen:HttpProtocol")
    config.http_protocol_class = None  # type: ignore[assignment]
    config.load()
    assert config.http_protocol_class is http_protocol.HttpProtocol is protocol_class()
    with pytest.raises(AttributeError):
        http_protocol.NoSuchThing  # noqa: B018
