"""A client that stops reading its HTTP event stream (issue 37.9): a real server process
(``server.run("http")``) whose tool sends 100 MB of progress to a raw socket client that
reads nothing. The server keeps at most its stream buffer (progress past it is dropped; the
answer is kept), its memory stays flat, the tool finishes, and the connection is ended once
it has taken nothing for ``stall_timeout`` seconds. In both eras."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.era import CAPABILITIES, MODERN
from tests.http_server import free_port, wait_until_up
from tests.paths import SERVERS

pytestmark = pytest.mark.slow  # 100 MB of progress through a real server, twice: ~30 s
FLOODING = SERVERS / "flooding.py"
STALL = 2.0
COUNT, SIZE = 100_000, 1000  # 100 MB of progress messages


def memory_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(field)


@pytest.fixture
def server() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    process = subprocess.Popen(
        [sys.executable, str(FLOODING), str(port), str(STALL)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        wait_until_up(url, process)
        yield url, process
    finally:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def post_raw(port: int, body: bytes, headers: dict[str, str]) -> socket.socket:
    """Send one POST on a socket with a small receive buffer, and read nothing."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    lines = ["POST /mcp HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {len(body)}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
    return sock


def ended_within(sock: socket.socket, seconds: float) -> bool:
    """Whether the server closes the connection within ``seconds`` (reading what it sent)."""
    sock.settimeout(seconds)
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            if not sock.recv(1 << 20):
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False
    return False


def floods_done(url: str, headers: dict[str, str], meta: dict[str, object] | None) -> int:
    params: dict[str, object] = {"name": "done", "arguments": {}}
    if meta is not None:
        params["_meta"] = meta
    body = {"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": params}
    sent = {**headers, "mcp-name": "done"} if meta is not None else headers
    reply = httpx.post(url, content=json.dumps(body), headers=sent, timeout=10).json()
    return int(reply["result"]["structuredContent"]["result"])


@pytest.mark.parametrize("era", ["stateless", "handshake"])
def test_a_client_that_stops_reading_costs_the_server_its_buffer_and_no_more(
    server: tuple[str, subprocess.Popen[bytes]], era: str
) -> None:
    url, process = server
    port = int(url.split(":")[2].split("/")[0])
    base = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    meta = None
    if era == "stateless":
        meta = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": CAPABILITIES,
        }
        headers = {**base, "mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": "flood"}
        call_meta: dict[str, object] = {**meta, "progressToken": "p"}
    else:
        hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
        opened = httpx.post(
            url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}, headers=base
        )
        headers = {**base, "mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
        httpx.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
        call_meta = {"progressToken": "p"}
    floods_done(url, headers, meta)  # warmed up
    before = memory_kib(process.pid, "VmHWM")
    params = {"name": "flood", "arguments": {"count": COUNT, "size": SIZE}, "_meta": call_meta}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).encode()
    sock = post_raw(port, body, headers)
    try:
        deadline = time.monotonic() + 120
        while floods_done(url, headers, meta) < 1:  # the tool ran to its end, unhindered
            assert time.monotonic() < deadline, "the flood did not finish"
            time.sleep(0.2)
        grown = memory_kib(process.pid, "VmHWM") - before
        assert grown < 40 * 1024, f"the server's peak memory grew {grown} KiB for a client that read nothing"
        # Nothing taken for STALL seconds: the connection is ended (its unread bytes dropped).
        assert ended_within(sock, STALL + 15), "the server kept the stream of a client that reads nothing"
    finally:
        sock.close()
    assert process.poll() is None
