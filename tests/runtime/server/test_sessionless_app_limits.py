"""``http_app(sessionless=True)`` (a throwaway session per POST) under load (security issue,
point 8): the app bounds the handlers running at once (``max_concurrency``; four times as
many wait, the rest get -32000 at once), and a client that goes away cancels its handler.
Served by uvicorn over loopback."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest

from mcpgen import Server
from tests.http_server import serving_in_thread

pytestmark = pytest.mark.anyio
CAP = 4
CALLS = 40


class Hung:
    def __init__(self) -> None:
        self.running = 0
        self.most = 0
        self.started = 0
        self.cancelled = 0


def hung_server(seen: Hung) -> Server:
    server = Server("hung", max_concurrency=CAP)

    @server.tool
    async def hang() -> str:
        seen.started += 1
        seen.running += 1
        seen.most = max(seen.most, seen.running)
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            seen.cancelled += 1
            raise
        finally:
            seen.running -= 1
        return "woke"

    @server.tool
    def ping() -> str:
        return "pong"

    return server


async def test_a_stateless_app_bounds_running_handlers_and_cancels_abandoned_ones() -> None:
    seen = Hung()
    with serving_in_thread(hung_server(seen).http_app(sessionless=True)) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}

        async def call(n: int, tool: str, timeout: float) -> httpx.Response | None:
            body = {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": tool, "arguments": {}}}
            async with httpx.AsyncClient(timeout=timeout) as client:
                try:
                    return await client.post(url, content=json.dumps(body), headers=headers)
                except httpx.TimeoutException:
                    return None  # gave up: the connection is closed

        replies = await asyncio.gather(*(call(n, "hang", 1.5) for n in range(CALLS)))
        busy = [r for r in replies if r is not None]
        assert len(busy) == CALLS - 5 * CAP  # beyond the running and the waiting: refused at once
        assert all(r.json()["error"]["code"] == -32000 for r in busy)
        assert seen.most <= CAP
        # Every handler that started was cancelled when its client went away.
        deadline = time.monotonic() + 10
        while (seen.running or seen.cancelled < seen.started) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert seen.running == 0 and seen.cancelled == seen.started > 0
        # The slots are free again.
        reply = await call(99, "ping", 10)
        assert reply is not None and reply.json()["result"]["content"][0]["text"] == "pong"


@pytest.mark.parametrize("option", ["sessionless", "stateless"])  # stateless: the old name
async def test_a_sessionless_app_answers_without_a_session(option: str) -> None:
    server = Server("plain")

    @server.tool
    def ping() -> str:
        return "pong"

    with serving_in_thread(server.http_app(**{option: True})) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        hello = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ping", "arguments": {}}}
        async with httpx.AsyncClient(timeout=10) as http:
            opened = await http.post(url, json=hello, headers=headers)
            assert opened.status_code == 200 and "mcp-session-id" not in opened.headers
            # No session to name: the next POST stands alone (the handshake era's version header).
            answered = await http.post(url, json=call, headers={**headers, "mcp-protocol-version": "2025-11-25"})
    assert answered.status_code == 200, answered.text
    assert "pong" in answered.text
