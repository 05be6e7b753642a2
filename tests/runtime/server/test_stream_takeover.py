"""Resuming the standalone GET stream while its old connection is still open (security
issue, point 13): one live reader per stream. The new connection takes over, the old one is
ended, and the notifications are not split between the two: the new one gets every one
after its Last-Event-ID. Served by uvicorn over loopback."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from mcpgen import Context, Server
from tests.http_server import serving_in_thread
from tests.wire_http import SseReader, legacy_headers, open_session, progress_of

pytestmark = pytest.mark.anyio
N = 20


def stepping_server() -> Server:
    server = Server("takeover")

    @server.tool
    async def steps(n: int, ctx: Context) -> int:
        for i in range(1, n + 1):
            await ctx.report_progress(i, n)
            await asyncio.sleep(0.05)
        return n

    return server


async def test_a_resumed_standalone_stream_takes_over_and_loses_nothing() -> None:
    # json_response: a request's progress goes to the session's standalone (GET) stream.
    with serving_in_thread(stepping_server().http_app(json_response=True)) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        async with httpx.AsyncClient(timeout=20) as client:
            session = await open_session(client, url)
            get = legacy_headers(session, accept="text/event-stream")
            old_seen: list[tuple[str | None, int]] = []
            last_id: list[str] = []
            ended = asyncio.Event()

            async def old_reader() -> None:
                async with client.stream("GET", url, headers=get) as response:
                    reader = SseReader(response)
                    while (event := await reader.next()) is not None:
                        step = progress_of(event)
                        if step is not None:
                            old_seen.append((event.id, step))
                            if step == 5:
                                assert event.id is not None
                                last_id.append(event.id)
                ended.set()  # the server ended this response

            old = asyncio.ensure_future(old_reader())
            await asyncio.sleep(0.2)
            params = {"name": "steps", "arguments": {"n": N}, "_meta": {"progressToken": "p"}}
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
            call = asyncio.ensure_future(client.post(url, content=json.dumps(body), headers=legacy_headers(session)))
            while not last_id:
                await asyncio.sleep(0.01)
            new_seen: list[int] = []
            async with client.stream("GET", url, headers={**get, "last-event-id": last_id[0]}) as response:
                assert response.status_code == 200
                await asyncio.wait_for(ended.wait(), 5)  # the old connection was let go
                reader = SseReader(response)
                while len(new_seen) < N - 5:
                    event = await asyncio.wait_for(reader.next(), 5)
                    assert event is not None
                    step = progress_of(event)
                    if step is not None:
                        new_seen.append(step)
            assert new_seen == list(range(6, N + 1))  # every one after the resume point, in order, once
            reply = await call
            assert reply.json()["result"]["structuredContent"]["result"] == N
            await old
