"""Any worker serves any request of a live handshake-era session (issue 37.7), two apps in
this process sharing a real ``redis-server`` (each under its own uvicorn: two "workers").
A session opened on A is used through B, in every way a client uses one: a call answered
as JSON, one streamed (progress), one asking the client a question answered through B, a
cancellation, the GET stream's change notifications, DELETE. (Real processes: uvicorn
``--workers 2``, tests/runtime/stores/test_worker_faults.py.)"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.redis_server import RedisServer, redis_server
from tests.servers.redis_peer import make_app
from tests.wire_http import SseReader, legacy_headers, progress_of, serving

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    with redis_server() as server:
        yield server


async def open_session(client: httpx.AsyncClient, url: str) -> str:
    """initialize (declaring elicitation) + notifications/initialized; the session id."""
    hello = {
        "protocolVersion": "2025-11-25",
        "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "t", "version": "0"},
    }
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}
    reply = await client.post(url, content=json.dumps(init), headers=legacy_headers())
    session = reply.headers["mcp-session-id"]
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await client.post(url, content=json.dumps(done), headers=legacy_headers(session))).status_code == 202
    return session


def request(rid: Any, tool: str, arguments: dict[str, Any], progress: bool = False) -> str:
    params: dict[str, Any] = {"name": tool, "arguments": arguments}
    if progress:
        params["_meta"] = {"progressToken": f"p{rid}"}
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})


async def test_a_session_opened_on_one_worker_is_served_on_another(redis: RedisServer) -> None:
    prefix = f"fw{secrets.token_hex(3)}"
    server_a, app_a, store_a = make_app(redis.url, prefix)
    server_b, app_b, store_b = make_app(redis.url, prefix)
    async with serving(app_a) as url_a, serving(app_b) as url_b, httpx.AsyncClient(timeout=20) as client:
        session = await open_session(client, url_a)
        assert session in app_a.sessions and session not in app_b.sessions
        headers = legacy_headers(session)

        # A plain call through B: served by A (its handlers, its session), answered as JSON.
        reply = await client.post(url_b, content=request(1, "whoami", {}), headers=headers)
        assert reply.status_code == 200 and reply.headers["content-type"].startswith("application/json"), reply.text
        assert reply.json()["id"] == 1 and reply.headers["mcp-session-id"] == session
        assert session not in app_b.sessions  # B holds nothing of it

        # A streamed call through B: every progress event, then the answer, with event ids.
        got: list[Any] = []
        async with client.stream(
            "POST", url_b, content=request(2, "steps", {"n": 5, "pause": 0}, True), headers=headers
        ) as r:
            assert r.headers["content-type"].startswith("text/event-stream")
            reader = SseReader(r)
            while (event := await reader.next()) is not None:
                got.append((progress_of(event), (event.data or {}).get("id"), event.id is not None))
        assert [p for p, _, _ in got if p is not None] == [1, 2, 3, 4, 5]
        assert got[-1][1] == 2 and all(has_id for _, _, has_id in got)

        # A question to the client on a call through B, answered through B too.
        async with client.stream("POST", url_b, content=request(3, "ask", {}), headers=headers) as r:
            reader = SseReader(r)
            asked = await reader.next()
            while asked is not None and asked.data is None:  # the priming event
                asked = await reader.next()
            assert asked is not None and asked.data is not None and asked.data["method"] == "elicitation/create"
            answer = {
                "jsonrpc": "2.0",
                "id": asked.data["id"],
                "result": {"action": "accept", "content": {"word": "yes"}},
            }
            sent = await client.post(url_b, content=json.dumps(answer), headers=headers)
            assert sent.status_code == 202
            final = None
            while (event := await reader.next()) is not None:
                final = event.data
        assert final is not None and final["result"]["structuredContent"]["word"] == "yes"

        # A cancellation through B reaches the call running on A.
        stats = json.loads((await client.post(url_a, content=request(4, "stats", {}), headers=headers)).text)
        before = stats["result"]["structuredContent"]["cancelled"]
        sleeping = asyncio.ensure_future(
            client.post(url_b, content=request(5, "sleeper", {"seconds": 30}), headers=headers)
        )
        for _ in range(100):
            counts = json.loads((await client.post(url_a, content=request(6, "stats", {}), headers=headers)).text)
            if counts["result"]["structuredContent"]["entered"] > stats["result"]["structuredContent"]["entered"]:
                break
            await asyncio.sleep(0.05)
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}}
        assert (await client.post(url_b, content=json.dumps(cancel), headers=headers)).status_code == 202
        for _ in range(100):
            counts = json.loads((await client.post(url_a, content=request(7, "stats", {}), headers=headers)).text)
            if counts["result"]["structuredContent"]["cancelled"] > before:
                break
            await asyncio.sleep(0.05)
        assert counts["result"]["structuredContent"]["cancelled"] == before + 1
        sleeping.cancel()

        # The GET stream through B carries what A sends the session (a tools list change).
        get_headers = legacy_headers(session, accept="text/event-stream")
        async with client.stream("GET", url_b, headers=get_headers) as r:
            assert r.status_code == 200
            reader = SseReader(r)
            await client.post(
                url_a, content=request(8, "announce", {"name": f"t{secrets.token_hex(2)}"}), headers=headers
            )
            note = None
            while note is None or note.data is None:
                note = await asyncio.wait_for(reader.next(), 15)
            assert note.data["method"] == "notifications/tools/list_changed"

        # DELETE through B ends the session on A.
        assert (await client.delete(url_b, headers=headers)).status_code == 200
        for _ in range(100):
            if session not in app_a.sessions:
                break
            await asyncio.sleep(0.05)
        assert session not in app_a.sessions
        gone = await client.post(url_b, content=request(9, "whoami", {}), headers=headers)
        assert gone.status_code == 404
    for server in (server_a, server_b):
        await server.stop_tasks()
    await store_a.aclose()
    await store_b.aclose()
