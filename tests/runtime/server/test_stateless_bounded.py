"""Stateless-era HTTP requests have no session to bound them: the server bounds them all
together, as a session bounds its own (``max_concurrency`` run, four times as many wait in
order, the rest are refused with -32000 before their handler starts)."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

import httpx

from tests.era import CAPABILITIES, MODERN
from tests.http_server import free_port, running
from tests.paths import SERVERS

SERVER = SERVERS / "bounded.py"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": CAPABILITIES,
}


async def call(client: httpx.AsyncClient, url: str, rid: int, tool: str) -> dict[str, Any]:
    message = {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {"_meta": META, "name": tool, "arguments": {}},
    }
    headers = {
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": tool,
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    response = await client.post(url, content=json.dumps(message), headers=headers, timeout=20)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def text(answer: dict[str, Any]) -> str:
    return str(answer["result"]["content"][0]["text"])


def test_handlers_beyond_the_limit_wait_in_order_and_past_the_line_are_refused() -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"

    async def main() -> None:
        limits = httpx.Limits(max_connections=32)
        async with httpx.AsyncClient(limits=limits) as client:
            # Two run, eight wait: all ten are taken.
            holders = [asyncio.ensure_future(call(client, url, i, "hold")) for i in range(10)]
            deadline = time.monotonic() + 10
            while text(await call(client, url, 100, "status")) != "2/2":
                assert time.monotonic() < deadline, "the holders never started"
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.2)  # let the other eight reach the line
            # The eleventh is refused at once, before any handler starts.
            refused = await call(client, url, 11, "hold")
            assert refused["error"]["code"] == -32000 and refused["id"] == 11
            assert text(await call(client, url, 101, "status")) == "2/2"
            assert text(await call(client, url, 102, "release")) == "released"
            answers = await asyncio.gather(*holders)
            assert [text(a) for a in answers] == ["held"] * 10
            # Never more than two ran at once; the slots are free again afterwards.
            assert text(await call(client, url, 103, "status")) == "0/2"
            assert text(await call(client, url, 12, "hold")) == "held"

    with running([sys.executable, str(SERVER), str(port)], url):
        asyncio.run(main())
