"""What tasks make a server keep is bounded (issue 36.14): a finished task's record holds
its result until it expires, so the records a process keeps are counted, in number and in
bytes, in all and per caller (its principal, else its address). Past a bound a new task is
refused at once (-32000) while another caller still gets in, a result too big to keep fails
its task saying so, and room comes back as records expire. uvicorn over loopback, callers
on two loopback addresses, raw stateless-era HTTP."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import httpx
import pytest

from mcpgen import Server
from tests.http_server import serving_in_thread
from tests.runtime.server.test_tasks_server import Peer

pytestmark = pytest.mark.anyio


def records_server() -> Server:
    server = Server("records")

    @server.tool(task="optional")
    async def quick(size: int = 10) -> str:
        return "x" * size

    return server


@contextlib.asynccontextmanager
async def peers(server: Server) -> AsyncIterator[tuple[Peer, Peer]]:
    with serving_in_thread(server.http_app()) as port:
        base = f"http://127.0.0.1:{port}"

        def leaving(address: str) -> httpx.AsyncClient:
            transport = httpx.AsyncHTTPTransport(local_address=address)
            return httpx.AsyncClient(base_url=base, timeout=10, transport=transport)

        one, two = leaving("127.0.0.1"), leaving("127.0.0.2")
        async with one, two:
            yield Peer(one), Peer(two)


async def test_one_caller_keeps_at_most_its_records_and_others_still_get_in() -> None:
    server = records_server()
    server.tasks.records.max_kept_per_caller = 3
    server.tasks.ttl_ms = 1500
    async with peers(server) as (alice, bob):
        for _ in range(3):
            task = await alice.start("quick")
            await alice.until(task["taskId"], "completed")
        refused = await alice.call("tools/call", {"name": "quick", "arguments": {}})
        assert refused.messages[-1]["error"]["code"] == -32000, refused.messages
        assert "this caller has 3 task records kept" in refused.messages[-1]["error"]["message"]
        assert (await bob.start("quick"))["status"] == "working"  # another caller is not refused
        assert server.tasks.records.kept[0] == 4
        await asyncio.sleep(1.7)  # the records expire: room again
        assert server.tasks.records.kept == (0, 0)
        assert (await alice.start("quick"))["status"] == "working"


async def test_a_result_too_big_to_keep_fails_its_task_and_the_server_holds_no_more() -> None:
    server = records_server()
    server.tasks.records.max_kept_bytes_per_caller = 300_000
    async with peers(server) as (alice, _):
        first = await alice.start("quick", {"size": 200_000})
        done = await alice.until(first["taskId"], "completed")
        assert len(done["result"]["content"][0]["text"]) == 200_000
        second = await alice.start("quick", {"size": 200_000})
        failed = await alice.until(second["taskId"], "failed")
        assert "more than this server keeps" in failed["error"]["message"]
        kept, size = server.tasks.records.kept
        assert kept == 2 and size < 300_000


async def test_the_records_of_all_callers_are_bounded_in_total() -> None:
    server = records_server()
    server.tasks.records.max_kept = 2
    async with peers(server) as (alice, bob):
        await alice.start("quick")
        await bob.start("quick")
        refused = await bob.call("tools/call", {"name": "quick", "arguments": {}})
        assert refused.messages[-1]["error"]["code"] == -32000
        assert "too many task records kept" in refused.messages[-1]["error"]["message"]
