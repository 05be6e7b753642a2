"""Every backend's limits, enforced by the proxy in front of it: requests in flight (more
wait in line, more still are refused with -32000), connections (each a process, for a
command), the time a backend may take, and loops (a gateway behind itself, over HTTP and by
starting itself)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcpgen import Client, Gateway, Proxy
from mcpgen.runtime.errors import McpError
from mcpgen.runtime.gateway.config import ConfigError
from mcpgen.runtime.gateway.gateway import CHAIN
from tests.http_server import free_port, serving_in_thread
from tests.paths import ROOT
from tests.runtime.gateway.backends import HANDSHAKE, backend

pytestmark = pytest.mark.anyio
BACKEND = ROOT / "tests" / "runtime" / "gateway" / "backends.py"


async def test_requests_in_flight_are_bounded_then_refused() -> None:
    proxy = Proxy(backend(), max_concurrency=1, timeout=10)
    async with Client(proxy) as client:
        # 1 runs, 4 wait their turn, the 6th is refused at once.
        calls = [asyncio.ensure_future(client.call_tool("slow", {"seconds": 0.3})) for _ in range(6)]
        done = await asyncio.gather(*calls, return_exceptions=True)
        refused = [r for r in done if isinstance(r, McpError)]
        assert len(refused) == 1 and refused[0].code == -32000 and "Server busy" in refused[0].message
        assert sum(1 for r in done if not isinstance(r, BaseException)) == 5


async def test_a_backend_that_takes_too_long_is_an_error() -> None:
    proxy = Proxy(backend(), timeout=0.3)
    async with Client(proxy) as client:
        with pytest.raises(McpError) as slow:
            await client.call_tool("slow", {"seconds": 5})
        assert slow.value.code == -32603 and "did not answer within 0.3 s" in slow.value.message
        assert (await client.call_tool("echo", {"text": "next"})).content[0].text == "next"  # type: ignore[union-attr]


async def test_connections_are_bounded() -> None:
    """Each handshake-era client has a connection of its own to a handshake-era backend:
    with room for one (the listening one is the first), the second client waits, then is
    refused."""
    proxy = Proxy(backend([HANDSHAKE]), max_sessions=2, timeout=0.5)
    async with Client(proxy, era="handshake") as first, Client(proxy, era="handshake") as second:
        assert (await first.call_tool("echo", {"text": "one"})).content[0].text == "one"  # type: ignore[union-attr]
        with pytest.raises(McpError) as busy:
            await second.call_tool("echo", {"text": "two"})
        assert busy.value.code == -32000 and "connections" in busy.value.message
    # The first client has gone: its connection closes, and the next client gets one.
    await proxy.link.sweep()
    async with Client(proxy, era="handshake") as third:
        assert (await third.call_tool("echo", {"text": "three"})).content[0].text == "three"  # type: ignore[union-attr]


def test_a_gateway_that_starts_itself_refuses_to_start(tmp_path: Path) -> None:
    config = tmp_path / "self.json"
    command = {"command": sys.executable, "args": ["-m", "mcpgen", "gateway", str(config)]}
    config.write_text(json.dumps({"mcpServers": {"me": command}}))
    gateway = Gateway(config)
    with pytest.raises(ConfigError, match="behind itself"):
        Gateway(config, environ={**os.environ, CHAIN: gateway.fingerprint})
    # And from the outside: the check connects, the child refuses at once, no process chain.
    done = subprocess.run(
        [sys.executable, "-m", "mcpgen", "gateway", str(config), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.startswith("FAIL backend me"), done.stdout


def test_chains_longer_than_allowed_are_refused(tmp_path: Path) -> None:
    config = {"mcpServers": {"b": {"command": sys.executable, "args": [str(BACKEND)]}}, "gateway": {"max_chain": 2}}
    with pytest.raises(ConfigError, match="max_chain"):
        Gateway(config, environ={CHAIN: "aaaa,bbbb"})


async def test_a_gateway_behind_itself_over_http_is_refused() -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    front = Gateway({"mcpServers": {"me": {"url": url, "timeout": 5}}}).server()
    with serving_in_thread(front.http_app(), port):
        async with Client.http(url, era="handshake") as client:
            with pytest.raises(McpError) as loop:
                await client.list_tools()
        assert loop.value.code == -32600 and "loop" in loop.value.message


async def test_a_burst_of_first_calls_opens_one_connection_per_session() -> None:
    """A handshake-era client's first calls sent at once share the one backend session its
    first call opens (not one each, up to max_sessions)."""
    proxy = Proxy(backend([HANDSHAKE]), max_sessions=16)
    async with Client(proxy, era="handshake") as client:
        await proxy.connect()
        before = sum(len(pool) for pool in proxy.link.conns.values())
        calls = [client.call_tool("echo", {"text": str(i)}) for i in range(20)]
        done = await asyncio.gather(*calls)
        assert [r.content[0].text for r in done] == [str(i) for i in range(20)]  # type: ignore[union-attr]
        assert sum(len(pool) for pool in proxy.link.conns.values()) == before + 1
