"""Session limits a deployer can rely on (security issue, points 3, 6 and 10), on a real
uvicorn over loopback: past ``max_sessions`` a new session is refused with 503 and
Retry-After while the open ones keep working (a flood of ``initialize`` logs nobody out);
legacy HTTP+SSE sessions count against the same limit; eviction is an explicit option; and
a ``requestState`` key too short to be secret is refused when the server is made."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from mcpgen import Server
from tests.http_server import echo_server, serving_in_thread

pytestmark = pytest.mark.anyio

HELLO = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


async def initialize(client: httpx.AsyncClient, url: str) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": HELLO}
    return await client.post(url, content=json.dumps(body), headers=HEADERS)


async def echo(client: httpx.AsyncClient, url: str, session: str, text: str) -> Any:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": text}}}
    headers = {**HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
    reply = await client.post(url, content=json.dumps(body), headers=headers)
    assert reply.status_code == 200, reply.text
    return reply.json()["result"]["content"][0]["text"]


def app_with(**options: Any) -> Any:
    # One caller (this test, from one address) fills the server: its share is the whole of
    # it here (tests/runtime/server/test_caller_limits.py tests the share).
    options.setdefault("max_sessions_per_caller", options.get("max_sessions"))
    return echo_server("limits").http_app(**options)


async def test_a_full_server_refuses_new_sessions_and_keeps_the_open_ones() -> None:
    with serving_in_thread(app_with(max_sessions=2)) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        async with httpx.AsyncClient(timeout=10) as client:
            first, second = await initialize(client, url), await initialize(client, url)
            sessions = [r.headers["mcp-session-id"] for r in (first, second)]
            for _ in range(5):  # a flood of initialize
                refused = await initialize(client, url)
                assert refused.status_code == 503, refused.text
                assert refused.headers["retry-after"] == "5"
                assert refused.json()["error"]["code"] == -32000
                assert "mcp-session-id" not in refused.headers
            for n, session in enumerate(sessions):  # nobody was logged out
                assert await echo(client, url, session, f"still here {n}") == f"still here {n}"
            # A session that ends makes room again.
            gone = await client.delete(url, headers={"mcp-session-id": sessions[0]})
            assert gone.status_code in (200, 204)
            assert (await initialize(client, url)).status_code == 200


async def test_eviction_when_full_is_an_explicit_option() -> None:
    with serving_in_thread(app_with(max_sessions=1, evict_when_full=True)) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        async with httpx.AsyncClient(timeout=10) as client:
            old = (await initialize(client, url)).headers["mcp-session-id"]
            new = await initialize(client, url)
            assert new.status_code == 200
            assert await echo(client, url, new.headers["mcp-session-id"], "new") == "new"
            headers = {**HEADERS, "mcp-session-id": old, "mcp-protocol-version": "2025-11-25"}
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
            await asyncio.sleep(0.1)  # the evicted session closes in the background
            assert (await client.post(url, content=json.dumps(body), headers=headers)).status_code == 404


async def open_legacy(client: httpx.AsyncClient, base: str) -> tuple[Any, httpx.Response]:
    stream = client.stream("GET", f"{base}/sse", headers={"accept": "text/event-stream"})
    response = await stream.__aenter__()
    return stream, response


async def test_legacy_sse_sessions_count_against_max_sessions() -> None:
    with serving_in_thread(app_with(max_sessions=3)) as port:
        base, url = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{port}/mcp"
        async with httpx.AsyncClient(timeout=10) as client:
            opened = [await open_legacy(client, base) for _ in range(2)]
            try:
                assert [r.status_code for _, r in opened] == [200, 200]
                assert (await initialize(client, url)).status_code == 200  # the third session
                stream, refused = await open_legacy(client, base)
                try:
                    assert refused.status_code == 503 and refused.headers["retry-after"] == "5"
                finally:
                    await stream.__aexit__(None, None, None)
                assert (await initialize(client, url)).status_code == 503
            finally:
                for stream, _ in opened:
                    await stream.__aexit__(None, None, None)


@pytest.mark.parametrize("key", ["", "short", b"x" * 31, "p" * 31])
def test_a_state_key_too_short_to_be_secret_is_refused_at_start(key: str | bytes) -> None:
    with pytest.raises(ValueError, match="at least 32"):
        Server("s", state_key=key)


def test_an_empty_state_key_from_the_environment_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCPGEN_STATE_KEY", "")
    with pytest.raises(ValueError, match=r"MCPGEN_STATE_KEY"):
        Server("s")
    monkeypatch.setenv("MCPGEN_STATE_KEY", "k" * 32)
    assert Server("s").features.state_key == "k" * 32
    monkeypatch.delenv("MCPGEN_STATE_KEY")
    assert Server("s").features.state_key is None  # a random key of this process
