"""A request whose id is already in flight in its session (security issue, point 14): over
Streamable HTTP the duplicate is refused on its own POST (-32600) and the first keeps its
stream and gets its answer; before, the duplicate took the first one's stream and the first
POST never got an answer. Served by uvicorn over loopback."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from mcpgen import Server
from tests.http_server import serving_in_thread

pytestmark = pytest.mark.anyio

HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def slow_server() -> Server:
    server = Server("dup")

    @server.tool
    async def wait(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return f"waited {seconds}"

    return server


async def post(client: httpx.AsyncClient, url: str, body: dict[str, Any], session: str | None) -> httpx.Response:
    headers = dict(HEADERS)
    if session is not None:
        headers |= {"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
    return await client.post(url, content=json.dumps(body), headers=headers)


def answer(reply: httpx.Response) -> Any:
    if reply.headers["content-type"].startswith("text/event-stream"):
        frames = [
            json.loads(line[5:]) for line in reply.text.splitlines() if line.startswith("data:") and line[5:].strip()
        ]
        return [f for f in frames if "id" in f][-1]
    return reply.json()


async def test_a_duplicate_id_in_flight_is_refused_and_the_first_is_answered() -> None:
    with serving_in_thread(slow_server().http_app()) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        async with httpx.AsyncClient(timeout=10) as client:
            hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
            opened = await post(client, url, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}, None)
            session = opened.headers["mcp-session-id"]
            done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            assert (await post(client, url, done, session)).status_code == 202

            def call(seconds: float) -> dict[str, Any]:
                params = {"name": "wait", "arguments": {"seconds": seconds}}
                return {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}

            first = asyncio.ensure_future(post(client, url, call(0.5), session))
            await asyncio.sleep(0.15)  # the first is in flight
            second = await post(client, url, call(0), session)
            assert second.status_code == 400
            refusal = second.json()
            assert refusal["id"] == 7 and refusal["error"]["code"] == -32600
            reply = await asyncio.wait_for(first, 5)
            assert reply.status_code == 200
            assert answer(reply)["result"]["content"][0]["text"] == "waited 0.5"
            # The id is free again once answered.
            again = await post(client, url, call(0), session)
            assert answer(again)["result"]["content"][0]["text"] == "waited 0.0"
