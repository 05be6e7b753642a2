"""Task-backed tool calls are bounded (security issue, point 7): at most ``max_concurrency``
tasks run at once on a server, and at most half of that for one principal on a protected
one; a task call beyond either is refused at once (-32000), nothing running is touched, and
room comes back as tasks end. Served by uvicorn over loopback; principals come from a
verifier of the test's own (``BearerAuth(verifier=...)``)."""

from __future__ import annotations

import asyncio

import pytest

from mcpgen import BearerAuth, Server
from tests.runtime.server.test_tasks_server import Peer, serving
from tests.tokens import ISSUER, Tokens

pytestmark = pytest.mark.anyio


def blocking_server(**options: object) -> Server:
    server = Server("limits", max_concurrency=4, **options)  # type: ignore[arg-type]

    @server.tool(task="optional")
    async def blocker() -> str:
        await asyncio.Event().wait()  # until cancelled
        return "never"

    return server


async def start(peer: Peer, token: str | None = None) -> dict[str, object]:
    headers = {"Authorization": f"Bearer {token}"} if token else None
    reply = await peer.call("tools/call", {"name": "blocker", "arguments": {}}, headers=headers)
    return reply.messages[-1]


async def test_a_server_runs_at_most_max_concurrency_tasks() -> None:
    server = blocking_server()
    async with serving(server) as peer:
        started = [await start(peer) for _ in range(4)]
        assert all(s["result"]["resultType"] == "task" for s in started)  # type: ignore[index]
        refused = await start(peer)
        assert refused["error"]["code"] == -32000, refused  # type: ignore[index]
        assert server.tasks.running == 4
        # One ends (cancelled): room for one more.
        first = started[0]["result"]["taskId"]  # type: ignore[index]
        await peer.call("tasks/cancel", {"taskId": first})
        for _ in range(200):
            if server.tasks.running < 4:
                break
            await asyncio.sleep(0.01)
        assert (await start(peer))["result"]["resultType"] == "task"  # type: ignore[index]
        await server.stop_tasks()


async def test_one_principal_cannot_take_every_task_slot() -> None:
    server = blocking_server(auth=BearerAuth(ISSUER, "http://127.0.0.1/mcp", scopes=["mcp"], verifier=Tokens()))
    async with serving(server) as peer:
        for _ in range(2):
            assert (await start(peer, "alice"))["result"]["resultType"] == "task"  # type: ignore[index]
        refused = await start(peer, "alice")
        assert refused["error"]["code"] == -32000 and "this caller" in refused["error"]["message"]  # type: ignore[index]
        for _ in range(2):  # another principal still has room
            assert (await start(peer, "bob"))["result"]["resultType"] == "task"  # type: ignore[index]
        full = await start(peer, "bob")
        assert full["error"]["code"] == -32000  # type: ignore[index]
        await server.stop_tasks()
