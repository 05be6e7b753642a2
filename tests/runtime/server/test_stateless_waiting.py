"""A stateless-era connection over a stream (stdio, or in memory here) under more requests
than the server runs at once: the extra ones wait for a slot, as in the handshake era,
and a request cancelled before it started leaves no trace."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest

from mcpgen import Client, Server
from mcpgen.generated import TextContent
from mcpgen.runtime.jsonrpc.transport import memory_pair

pytestmark = pytest.mark.anyio
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


def napping_server(nap_for: float = 0.05, **options: Any) -> Server:
    server = Server("s", **options)

    @server.tool()
    async def nap(tag: str) -> str:
        await asyncio.sleep(nap_for)
        return tag

    return server


async def test_requests_beyond_max_concurrency_wait_for_a_slot() -> None:
    async with Client(napping_server(max_concurrency=2), era="stateless") as client:  # 2 run, 8 wait
        calls = asyncio.gather(*(client.call_tool("nap", {"tag": str(i)}) for i in range(10)))
        results = await asyncio.wait_for(calls, 10)
        assert [r.content for r in results] == [[TextContent(text=str(i))] for i in range(10)]


async def test_past_the_line_a_request_is_refused_busy() -> None:
    # Naps long enough that all eight are read before the first ends, on a loaded machine too.
    async with Client(napping_server(1.0, max_concurrency=1), era="stateless") as client:  # 1 runs, 4 wait
        outcomes = await asyncio.gather(
            *(client.call_tool("nap", {"tag": str(i)}) for i in range(8)), return_exceptions=True
        )
        refused = [o for o in outcomes if isinstance(o, Exception)]
        assert len(refused) == 3 and all(getattr(o, "code", None) == -32000 for o in refused), outcomes


async def test_a_request_cancelled_before_it_started_leaves_its_id_free() -> None:
    server = napping_server()
    ours, theirs = memory_pair()
    serving = asyncio.ensure_future(server.serve(theirs))
    try:
        params = {"name": "nap", "arguments": {"tag": "a"}, "_meta": META}
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "_meta": META}}
        # Both frames are read before the request's task first runs: it is cancelled unstarted.
        await ours.send(msgspec.json.encode(call))
        await ours.send(msgspec.json.encode(cancel))
        await asyncio.sleep(0.2)
        again = {**call, "params": {**call["params"], "arguments": {"tag": "b"}}}
        await ours.send(msgspec.json.encode(again))
        answer = msgspec.json.decode(await asyncio.wait_for(ours.receive(), 5))  # type: ignore[arg-type]
        assert answer["id"] == 1 and answer["result"]["content"] == [{"type": "text", "text": "b"}], answer
    finally:
        await ours.close()
        serving.cancel()
        await asyncio.gather(serving, return_exceptions=True)
