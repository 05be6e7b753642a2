"""A third transport through the transport contract: Streamable HTTP over a Unix domain
socket, server and client (``server.run("http", uds=PATH)``, ``Client.http(url, uds=PATH)``),
answered in both eras and by curl; and ``Server.run`` / ``Client`` taking transport objects."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpgen import Client, Server
from mcpgen.runtime.jsonrpc.transport import memory_pair
from tests.era import CAPABILITIES, MODERN
from tests.paths import ROOT, SERVERS

pytestmark = pytest.mark.anyio

SERVER = SERVERS / "lifespan_server.py"
ERAS = ("handshake", "stateless")


def socket_path(tmp_path: Path) -> str:
    # AF_UNIX paths are short (108 bytes): a short folder of its own under /tmp.
    folder = Path(f"/tmp/mcpgen-uds-{os.getpid()}-{tmp_path.name[-12:]}")
    folder.mkdir(exist_ok=True)
    return str(folder / "mcp.sock")


def answers(path: str) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
        return True
    except OSError:
        return False
    finally:
        probe.close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    path = socket_path(tmp_path)
    env = {**os.environ, "LIFESPAN_LOG": str(tmp_path / "lifespan.log")}
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "--uds", path],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 15
    while not answers(path):
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
        assert time.monotonic() < deadline, "the server never listened"
        time.sleep(0.05)
    try:
        yield path
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        shutil.rmtree(Path(path).parent, ignore_errors=True)


@pytest.mark.parametrize("era", ERAS)
async def test_a_client_reaches_the_server_through_the_socket(era: str, served: str) -> None:
    async with Client.http("http://localhost/mcp", uds=served, era=era) as client:
        assert client.spoken_era == era
        answer = await client.call_tool("state")
        assert answer.content[0].text.startswith("opened-by-")  # type: ignore[union-attr]


def test_curl_gets_answers_over_the_socket(served: str) -> None:
    curl = shutil.which("curl")
    assert curl is not None, "curl is needed (Debian: apt-get install curl)"
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "state",
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": CAPABILITIES,
            },
        },
    }
    headers = [
        "-H", "content-type: application/json",
        "-H", "accept: application/json, text/event-stream",
        "-H", f"mcp-protocol-version: {MODERN}",
        "-H", "mcp-method: tools/call",
        "-H", "mcp-name: state",
    ]  # fmt: skip
    done = subprocess.run(
        [curl, "-s", "--unix-socket", served, "http://localhost/mcp", *headers, "-d", json.dumps(body)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    reply = json.loads(done.stdout)
    assert reply["result"]["resultType"] == "complete"
    assert reply["result"]["content"][0]["text"].startswith("opened-by-")


def test_the_socket_is_this_users_alone(served: str) -> None:
    mode = stat.S_IMODE(os.stat(served).st_mode)
    assert mode & 0o077 == 0, oct(mode)


def test_a_stale_socket_is_replaced_and_a_live_one_refused(tmp_path: Path) -> None:
    from mcpgen.runtime.server.running import BindError, listen_on_unix

    path = socket_path(tmp_path)
    try:
        stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stale.bind(path)
        stale.close()  # the file stays, nobody listens: a server that died
        live = listen_on_unix(path, 8)
        try:
            with pytest.raises(BindError, match="in use"):
                listen_on_unix(path, 8)
        finally:
            live.close()
        os.unlink(path)
        Path(path).write_text("not a socket")
        with pytest.raises(BindError, match="not a socket"):
            listen_on_unix(path, 8)
    finally:
        shutil.rmtree(Path(path).parent, ignore_errors=True)


# ---------------------------------------------------------------- transports as objects


async def test_a_client_takes_a_transport_object() -> None:
    server = Server("objects")

    @server.tool()
    def hello() -> str:
        return "hello"

    ours, theirs = memory_pair()
    serving = asyncio.ensure_future(server.serve(theirs))
    async with Client(ours) as client:
        assert (await client.call_tool("hello")).content[0].text == "hello"  # type: ignore[union-attr]
    await asyncio.wait_for(serving, 5)


def test_server_run_takes_a_runner_object() -> None:
    ran: list[Any] = []

    class Recording:
        def run(self, server: Server) -> None:
            ran.append(server)

    server = Server("runner")
    server.run(Recording())
    assert ran == [server]
    with pytest.raises(TypeError, match="Runner"):
        server.run(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown transport"):
        server.run("carrier-pigeon")
