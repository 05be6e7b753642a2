"""Tasks through a proxy: relayed where the client and the backend speak the same kind (here
the 2026-07-28 tasks extension at both ends: the task is the backend's, its status, its
questions and its result reach the client through the proxy), otherwise the call runs to
its end and the client gets the result itself (no task the backend cannot keep)."""

from __future__ import annotations

import pytest

from mcpgen import Client, Context, Proxy, Server
from mcpgen.generated import ElicitResult

pytestmark = pytest.mark.anyio
MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"
FORM = {"type": "object", "properties": {"deploy": {"type": "boolean"}}, "required": ["deploy"]}


def builder(versions: list[str] | None) -> Server:
    """A backend whose tools ask a question on the way: ``build`` may run as a task,
    ``release`` only as one (called any other way it is refused: a result proves the
    backend ran it as its task)."""
    server = Server("builder", versions=versions)

    async def run(target: str, ctx: Context) -> str:
        answer = await ctx.elicit("Deploy too?", FORM)
        return f"built {target}" + (" and deployed" if (answer.content or {}).get("deploy") else "")

    @server.tool(task="optional")
    async def build(target: str, ctx: Context) -> str:
        return await run(target, ctx)

    if versions != [HANDSHAKE]:

        @server.tool(task="required")
        async def release(target: str, ctx: Context) -> str:
            return await run(target, ctx)

    return server


async def deploy(params: object) -> ElicitResult:
    return ElicitResult(action="accept", content={"deploy": True})


async def test_a_backends_task_reaches_a_stateless_client_through_the_proxy() -> None:
    proxy = Proxy(builder([MODERN]))
    async with Client(proxy, era="stateless", elicitation=deploy) as client:
        handle = await client.start_task("release", {"target": "web"})
        assert handle.task_id is not None
        status = await handle.status()  # tasks/get, relayed
        assert status.task_id == handle.task_id
        result = await handle.wait(timeout=30)  # its question answered by tasks/update, relayed
        assert result.content[0].text == "built web and deployed"


@pytest.mark.parametrize(
    ("front", "versions"),
    [("stateless", [HANDSHAKE]), ("handshake", [MODERN])],
    ids=["stateless-client-handshake-backend", "handshake-client-stateless-backend"],
)
async def test_across_the_eras_the_call_runs_to_its_end(front: str, versions: list[str]) -> None:
    proxy = Proxy(builder(versions))
    async with Client(proxy, era=front, elicitation=deploy) as client:
        if front == "handshake":
            # 2025-11-25's tasks are not offered for a backend that has none; a call asking
            # for one anyway (its task member) gets the result, not a task.
            assert not client.tasks_offered
            asked = {"name": "build", "arguments": {"target": "api"}, "task": {"ttl": 60000}}
            result = await client.request("tools/call", asked)
            assert "task" not in result
            assert result["content"] == [{"type": "text", "text": "built api and deployed"}]
            return
        handle = await client.start_task("build", {"target": "api"})
        assert handle.task_id is None  # no task that one end could not keep
        done = await handle.wait(timeout=30)
        assert done.content[0].text == "built api and deployed"
