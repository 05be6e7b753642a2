"""Every server feature, in both protocol eras, over stdio against the demo server.

The handshake era (``initialize``, 2025-11-25) and the stateless era (per-request
``_meta``, 2026-07-28) must give the same outcomes from the same handlers; where the eras
differ by design (how a question reaches the client, the resource-not-found code, how list
changes are delivered) each test says so.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import msgspec
import pytest

from mcpgen.generated import ServerCapabilities
from tests.era import ERAS, MODERN, EraPeer, RpcError, era_peer

pytestmark = pytest.mark.anyio


@pytest.fixture(params=ERAS)
def era(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def peer(era: str) -> AsyncIterator[EraPeer]:
    async with era_peer(era) as p:
        yield p


def text(result: dict[str, Any]) -> str:
    return "".join(block.get("text", "") for block in result["content"])


async def test_tools_list_and_call_with_structured_output(peer: EraPeer) -> None:
    tools = await peer.call("tools/list")
    names = [t["name"] for t in tools["tools"]]
    assert {"add", "echo", "count", "ask_user"} <= set(names)
    result = await peer.call("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    assert result["structuredContent"] == {"result": 5}
    assert not result.get("isError")
    summed = await peer.call("tools/call", {"name": "sum_all", "arguments": {"numbers": [1, 2, 3]}})
    assert summed["structuredContent"] == {"total": 6, "terms": [1, 2, 3]}
    if peer.era == "stateless":
        assert tools["resultType"] == "complete" and tools["cacheScope"] in ("private", "public")
        assert result["resultType"] == "complete" and "ttlMs" not in result
    else:
        assert "resultType" not in result and "ttlMs" not in tools


async def test_bad_arguments_and_unknown_tools(peer: EraPeer) -> None:
    bad = await peer.call("tools/call", {"name": "add", "arguments": {"a": "two", "b": 3}})
    assert bad["isError"] is True and "Invalid arguments" in text(bad)
    with pytest.raises(RpcError) as info:
        await peer.call("tools/call", {"name": "no_such_tool", "arguments": {}})
    assert info.value.code == -32602


async def test_resources_templates_and_not_found(peer: EraPeer) -> None:
    listed = await peer.call("resources/list")
    assert "config://app" in [r["uri"] for r in listed["resources"]]
    templates = await peer.call("resources/templates/list")
    assert templates["resourceTemplates"][0]["uriTemplate"] == "file:///{name}"
    read = await peer.call("resources/read", {"uri": "file:///notes.txt"})
    assert read["contents"][0]["text"] == "remember the milk"
    with pytest.raises(RpcError) as info:
        await peer.call("resources/read", {"uri": "file:///missing.txt"})
    # The stateless era answers a missing resource with -32602; the handshake era keeps -32002.
    assert info.value.code == (-32602 if peer.era == "stateless" else -32002)
    assert info.value.error["data"] == {"uri": "file:///missing.txt"}


async def test_prompts_and_completion(peer: EraPeer) -> None:
    prompts = await peer.call("prompts/list")
    assert {"review", "chat"} <= {p["name"] for p in prompts["prompts"]}
    got = await peer.call("prompts/get", {"name": "review", "arguments": {"code": "x = 1"}})
    assert "x = 1" in json.dumps(got["messages"])
    done = await peer.call(
        "completion/complete",
        {
            "ref": {"type": "ref/prompt", "name": "review"},
            "argument": {"name": "language", "value": "py"},
        },
    )
    assert "python" in done["completion"]["values"]


async def test_progress_reaches_the_caller(peer: EraPeer) -> None:
    result = await peer.call("tools/call", {"name": "count", "arguments": {"to": 3}}, meta={"progressToken": "p1"})
    assert text(result) == "counted to 3"
    progress = peer.seen("notifications/progress")
    assert [n["params"]["progress"] for n in progress] == [1, 2, 3]
    assert {n["params"]["progressToken"] for n in progress} == {"p1"}


async def test_logging_follows_the_level(era: str) -> None:
    async with era_peer(era, log_level="info") as peer:
        await peer.call("tools/call", {"name": "count", "arguments": {"to": 2}})
        assert [n["params"]["data"] for n in peer.seen("notifications/message")] == ["counted 1", "counted 2"]
    async with era_peer(era, log_level="error") as peer:
        await peer.call("tools/call", {"name": "count", "arguments": {"to": 2}})
        assert peer.seen("notifications/message") == []


async def test_no_log_level_means_no_logs_in_the_stateless_era() -> None:
    async with era_peer("stateless") as peer:
        await peer.call("tools/call", {"name": "count", "arguments": {"to": 2}})
        assert peer.seen("notifications/message") == []


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("ask_user", {}, 'accept: {"name":"Ada","age":36}'),
        ("ask_model", {"question": "Capital of France?"}, "Paris"),
        ("roots", {}, None),
    ],
)
async def test_questions_to_the_client(
    peer: EraPeer, tool: str, arguments: dict[str, Any], expected: str | None
) -> None:
    """The same handler asks the same question: a request in the handshake era, an
    InputRequiredResult and a retry in the stateless era."""
    result = await peer.call("tools/call", {"name": tool, "arguments": arguments})
    if expected is None:
        assert "file:///work" in json.dumps(result)
    else:
        assert text(result) == expected
    assert peer.rounds == (1 if peer.era == "stateless" else 0)


async def test_pagination(era: str) -> None:
    async with era_peer(era, "--page-size", "2") as peer:
        first = await peer.call("tools/list")
        assert len(first["tools"]) == 2 and "nextCursor" in first
        second = await peer.call("tools/list", {"cursor": first["nextCursor"]})
        assert {t["name"] for t in second["tools"]}.isdisjoint({t["name"] for t in first["tools"]})
        with pytest.raises(RpcError) as info:
            await peer.call("tools/list", {"cursor": "not-a-cursor"})
        assert info.value.code == -32602


async def test_cancellation_stops_the_handler_and_sends_nothing(peer: EraPeer) -> None:
    rid = peer.raw.next_id()
    params: dict[str, Any] = {"name": "slow", "arguments": {"seconds": 30}}
    if peer.era == "stateless":
        params["_meta"] = peer.meta()
    await peer.raw.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})
    # Cancel once the handler runs (a request cancelled before it starts never runs at all).
    for _ in range(100):
        if any(f"slow started {rid}" in line for line in peer.raw.stderr):
            break
        await asyncio.sleep(0.1)
    await peer.raw.notify("notifications/cancelled", {"requestId": rid, "reason": "test"})
    assert await peer.raw.nothing_within(0.5)
    for _ in range(100):  # the server's stderr is read by a task of ours: give a loaded machine time
        if any(f"slow cancelled {rid}" in line for line in peer.raw.stderr):
            break
        await asyncio.sleep(0.1)
    assert any(f"slow cancelled {rid}" in line for line in peer.raw.stderr), peer.raw.stderr
    assert (await peer.call("tools/call", {"name": "echo", "arguments": {"text": "still here"}}))["content"]


async def test_list_changes_reach_the_client(peer: EraPeer) -> None:
    """Handshake era: list_changed on the session. Stateless era: on a subscriptions/listen
    stream, acknowledged first, every notification tagged with the listen request's id."""
    if peer.era == "handshake":
        await peer.call("tools/call", {"name": "add_tool", "arguments": {"name": "fresh"}})
        await peer.settle()
        assert peer.seen("notifications/tools/list_changed")
        return
    listen_id = peer.raw.next_id()
    await peer.raw.send(
        {
            "jsonrpc": "2.0",
            "id": listen_id,
            "method": "subscriptions/listen",
            "params": {
                "_meta": peer.meta(),
                "notifications": {"toolsListChanged": True, "resourceSubscriptions": ["file:///notes.txt"]},
            },
        }
    )
    ack = await peer.raw.recv()
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["notifications"] == {"toolsListChanged": True, "resourceSubscriptions": ["file:///notes.txt"]}
    assert ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == listen_id
    await peer.call("tools/call", {"name": "add_tool", "arguments": {"name": "fresh"}})
    await peer.call("tools/call", {"name": "touch", "arguments": {"name": "notes.txt"}})
    await peer.settle()
    changed = peer.seen("notifications/tools/list_changed")
    updated = peer.seen("notifications/resources/updated")
    assert len(changed) == 1 and len(updated) == 1
    assert updated[0]["params"]["uri"] == "file:///notes.txt"
    for note in (*changed, *updated):
        assert note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == listen_id
    await peer.raw.notify("notifications/cancelled", {"requestId": listen_id})
    assert await peer.raw.nothing_within(0.3)  # a cancelled listen gets no answer
    assert MODERN in (await peer.call("server/discover"))["supportedVersions"]


async def test_methods_the_server_has_no_handler_for() -> None:
    """Server inherits no revision's stubs: a request it has no handler for is -32601 (here
    2025-11-25's tasks/get, with the tasks capability declared so that the handler is what
    is missing), a notification it has none for is ignored."""
    from mcpgen import Server
    from mcpgen.runtime.jsonrpc.transport import memory_pair

    server = Server("bare")
    server.capabilities = lambda: msgspec.convert({"tasks": {}, "tools": {}}, ServerCapabilities)  # type: ignore[method-assign]
    a, b = memory_pair()
    task = asyncio.create_task(server.serve(a))

    async def rpc(rid: int, method: str, params: dict[str, Any]) -> Any:
        await b.send(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode())
        return json.loads(await b.receive())  # type: ignore[arg-type]

    await rpc(
        1,
        "initialize",
        {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
    )
    await b.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    missing = await rpc(2, "tasks/get", {"taskId": "t-1"})
    assert missing["error"]["code"] == -32601
    await b.send(b'{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}')
    assert "result" in await rpc(3, "tools/list", {})
    await b.close()
    await task
