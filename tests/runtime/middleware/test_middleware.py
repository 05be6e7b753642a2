"""The middleware API (issue 24, points 1 and 2): a real server process over stdio, in both
eras, with middleware that record, answer, rewrite, fail and limit
(tests/servers/middleware_server.py); mcpgen's client with its own middleware."""

from __future__ import annotations

import logging
import sys
from typing import Any

import pytest

from mcpgen import BearerAuth, Call, CallNext, Client, McpError, Middleware, RateLimit, Server, Timing
from mcpgen.generated import ElicitResult, ListToolsResult
from mcpgen.runtime.middleware.chain import Notification
from tests.http_server import free_port, serving_in_thread
from tests.paths import SERVERS
from tests.tokens import ISSUER, Tokens

pytestmark = pytest.mark.anyio
SERVER = SERVERS / "middleware_server.py"
ERAS = {"handshake": "2025-11-25", "stateless": "2026-07-28"}


async def _elicit(params: Any) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "Ada"})


class ClientSide(Middleware):
    """The client's own middleware: records, stamps ``_meta``, watches notifications."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str | None, str | None]] = []
        self.notes: list[str] = []

    async def on_request(self, call: Call, call_next: CallNext) -> Any:
        self.calls.append((call.method, call.target, call.era))
        if call.target == "meta":
            call.add_meta({"probe": "from the client"})
        return await call_next(call)

    async def on_notification(self, note: Notification) -> None:
        self.notes.append(note.method)


@pytest.mark.parametrize("era", list(ERAS))
async def test_server_middleware_wraps_every_request(era: str) -> None:
    mine = ClientSide()
    async with Client.stdio(sys.executable, str(SERVER), era=era, middleware=[mine], elicitation=_elicit) as client:
        assert (await client.call_tool("echo", {"text": "hi"})).content[0].text == "hi"  # type: ignore[union-attr]
        # A middleware changed the typed params before the handler saw them.
        assert (await client.call_tool("shout", {"text": "hi"})).content[0].text == "HI"  # type: ignore[union-attr]
        # One answered with an error, another with a result of its own: the tool never ran.
        with pytest.raises(McpError) as blocked:
            await client.call_tool("blocked", {})
        assert (blocked.value.code, blocked.value.message) == (-32001, "blocked by policy")
        shortcut = await client.call_tool("shortcut", {})
        assert shortcut.content[0].text == "from the middleware"  # type: ignore[union-attr]
        # A middleware that raises: -32603 and nothing of what it said.
        with pytest.raises(McpError) as failed:
            await client.call_tool("mw_fails", {})
        assert (failed.value.code, failed.value.message) == (-32603, "Internal error")  # the rest went to its log
        # The response-size limit: a tool error for a tool, -32603 for anything else.
        big = await client.call_tool("big", {})
        assert big.is_error is True and "Response too large" in big.content[0].text  # type: ignore[union-attr]
        with pytest.raises(McpError) as too_big:
            await client.read_resource("memo://big")
        assert too_big.value.code == -32603 and "limit is 8000" in too_big.value.message
        # The rate limit: a burst of 3 prompts/get, then a clear refusal.
        for _ in range(3):
            await client.get_prompt("greet", {"who": "Ada"})
        with pytest.raises(McpError) as limited:
            await client.get_prompt("greet", {"who": "Ada"})
        assert limited.value.code == -32000 and "Rate limit exceeded" in limited.value.message
        assert limited.value.data["retryAfter"] > 0  # type: ignore[index]
        # Input rounds: the middleware sees each round as what it is.
        assert (await client.call_tool("ask", {})).content[0].text == "hello Ada"  # type: ignore[union-attr]
        # The client's middleware put an entry in _meta; the handler and the server's middleware see it.
        assert (await client.call_tool("meta", {})).structured_content == {"probe": "from the client"}
        seen = (await client.call_tool("seen", {})).structured_content
    assert seen is not None
    requests = seen["requests"]
    calls = [r for r in requests if r["method"] == "tools/call"]
    assert [r["target"] for r in calls] == [
        "echo",
        "shout",
        "blocked",
        "shortcut",
        "mw_fails",
        "big",
        *(["ask", "ask"] if era == "stateless" else ["ask"]),
        "meta",
    ]
    # Every request, the era-opening one first (the handshake, or the probe of the stateless era).
    assert requests[0]["method"] == ("initialize" if era == "handshake" else "server/discover")
    assert all(r["era"] == era and r["version"] == ERAS[era] for r in requests)
    assert all(r["session"] is None and r["principal"] is None for r in requests)  # stdio: no session id, no token
    assert all(r["params_type"] == "CallToolRequestParams" for r in calls)  # typed params
    ids = [r["request_id"] for r in requests]
    assert all(isinstance(i, int) for i in ids) and len(set(ids)) == len(ids)
    outcomes = {r["target"]: r["outcome"] for r in calls if r["target"] != "ask"}
    assert outcomes == {
        "echo": "CallToolResult",
        "shout": "CallToolResult",
        "blocked": "McpError",
        "shortcut": "CallToolResult",
        "mw_fails": "RuntimeError",
        "big": "CallToolResult",
        "meta": "CallToolResult",
    }
    asks = [r["outcome"] for r in calls if r["target"] == "ask"]
    assert asks == (["InputRequired", "CallToolResult"] if era == "stateless" else ["CallToolResult"])
    assert [r["meta_probe"] for r in calls if r["target"] == "meta"] == ["from the client"]
    prompts = [r["outcome"] for r in requests if r["method"] == "prompts/get"]
    assert prompts == ["GetPromptResult"] * 3 + ["McpError"]  # the recorder is outside the rate limit
    # Notifications pass through their own hook, on both sides.
    if era == "handshake":
        assert seen["notifications"] == ["notifications/initialized"]
        assert mine.notes == ["notifications/initialized"]
    else:
        assert seen["notifications"] == [] and mine.notes == []
    # The client's middleware saw its outgoing requests, the era-opening one included.
    assert mine.calls[0][0] == ("initialize" if era == "handshake" else "server/discover")
    assert ("tools/call", "echo", era) in mine.calls


async def test_a_task_is_one_call_for_its_whole_life() -> None:
    async with Client.stdio(sys.executable, str(SERVER), era="stateless") as client:
        result = await client.call_tool("slow_add", {"a": 2, "b": 3}, task=True)
        assert result.structured_content == {"result": 5}
        seen = (await client.call_tool("seen", {})).structured_content
    assert seen is not None
    [task] = [r for r in seen["requests"] if r["target"] == "slow_add"]
    # The tool's call ran on after the request was answered with the task, as the task.
    assert task["outcome"] == "CallToolResult" and task["task_id"] and task["seconds"] >= 0.3
    # The client's polls are requests of their own, seen as such (not as the tool's call).
    polls = [r for r in seen["requests"] if r["method"].startswith("tasks/")]
    assert polls and all(r["target"] is None and r["outcome"] == "dict" for r in polls)


@pytest.mark.parametrize("era", list(ERAS))
async def test_over_http_the_principal_is_seen_and_limited_alone(era: str) -> None:
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}/mcp"
    seen: list[tuple[str | None, str | None, str | None]] = []

    async def record(call: Call, call_next: CallNext) -> Any:
        if call.method == "tools/call":
            principal = call.principal.subject if call.principal is not None else None
            seen.append((principal, call.session_id, call.era))
        return await call_next(call)

    server = Server(
        "guarded",
        auth=BearerAuth(ISSUER, endpoint, scopes=["mcp"], verifier=Tokens()),
        middleware=[record, RateLimit(rate=0.01, burst=2, methods=frozenset({"tools/call"}))],
    )

    @server.tool()
    def ping() -> str:
        return "pong"

    with serving_in_thread(server.http_app(), port, lifespan="off"):
        alice = Client.http(endpoint, headers={"authorization": "Bearer alice"}, era=era)
        bob = Client.http(endpoint, headers={"authorization": "Bearer bob"}, era=era)
        async with alice, bob:
            for _ in range(2):
                await alice.call_tool("ping", {})
            with pytest.raises(McpError) as limited:
                await alice.call_tool("ping", {})
            assert limited.value.code == -32000 and "retry in" in limited.value.message
            await bob.call_tool("ping", {})  # a bucket of his own
    assert [who for who, _, _ in seen] == ["alice"] * 3 + ["bob"]
    assert all(found_era == era for _, _, found_era in seen)
    sessions = {session for _, session, _ in seen}
    if era == "handshake":  # two sessions, each with its id
        assert len(sessions) == 2 and None not in sessions
    else:
        assert sessions == {None}


async def test_client_middleware_can_answer_itself() -> None:
    server = Server("local")

    @server.tool()
    def echo(text: str) -> str:
        return text

    async def no_listing(call: Call, call_next: CallNext) -> Any:
        if call.method == "tools/list":
            return ListToolsResult(tools=[])
        if call.target == "forbidden":
            raise McpError(-32001, "not from this client")
        return await call_next(call)

    async with Client(server, middleware=[no_listing]) as client:
        assert await client.list_tools() == []
        with pytest.raises(McpError, match="not from this client"):
            await client.call_tool("forbidden", {})
        assert (await client.call_tool("echo", {"text": "ok"})).content[0].text == "ok"  # type: ignore[union-attr]


async def test_timing_logs_one_structured_record_without_arguments(caplog: pytest.LogCaptureFixture) -> None:
    server = Server("timed", middleware=[Timing()])

    @server.tool()
    def echo(text: str) -> str:
        return text

    caplog.set_level(logging.INFO, logger="mcpgen.requests")
    async with Client(server, era="handshake") as client:
        await client.call_tool("echo", {"text": "a secret argument"})
        with pytest.raises(McpError):
            await client.call_tool("missing", {})
    records = [r for r in caplog.records if r.name == "mcpgen.requests"]
    fields = [r.mcp for r in records]  # type: ignore[attr-defined]
    echo_record = next(f for f in fields if f["target"] == "echo")
    assert echo_record["method"] == "tools/call" and echo_record["outcome"] == "ok"
    assert isinstance(echo_record["request_id"], int) and echo_record["principal"] == "anonymous"
    assert echo_record["era"] == "handshake" and echo_record["duration_ms"] >= 0
    assert next(f for f in fields if f["target"] == "missing")["outcome"] == "-32602"
    assert all("secret" not in r.getMessage() and "arguments" not in r.mcp for r in records)  # type: ignore[attr-defined]

    # Asked for, the arguments are in the record's fields (not in its message).
    caplog.clear()
    async with Client(server, era="handshake", middleware=[Timing(arguments=True)]) as client:
        await client.call_tool("echo", {"text": "shown"})
    mine = [r.mcp for r in caplog.records if r.name == "mcpgen.requests" and r.mcp["side"] == "client"]  # type: ignore[attr-defined]
    assert [f["arguments"] for f in mine if f["method"] == "tools/call"] == [{"text": "shown"}]


def test_the_token_bucket_refills_at_its_rate() -> None:
    limit = RateLimit(rate=2, burst=2)
    assert [limit.take("a", now=0.0) for _ in range(2)] == [0.0, 0.0]
    assert limit.take("a", now=0.0) == pytest.approx(0.5)  # one token comes back in 1/rate s
    assert limit.take("b", now=0.0) == 0.0  # buckets are per principal
    assert limit.take("a", now=0.6) == 0.0
    limit = RateLimit(rate=1, burst=1, max_principals=2)
    for key in ("a", "b", "c"):
        limit.take(key, now=0.0)
    assert limit.take("a", now=0.0) == 0.0  # the least recently used bucket was dropped


async def test_a_server_without_middleware_loads_none_of_it() -> None:
    code = (
        "import sys, asyncio\n"
        "from mcpgen import Server, Client\n"
        "server = Server('plain')\n"
        "@server.tool()\n"
        "def echo(text: str) -> str:\n"
        "    return text\n"
        "async def main():\n"
        "    async with Client(server) as c:\n"
        "        await c.list_tools()\n"
        "asyncio.run(main())\n"
        "print(any(m.startswith('mcpgen.runtime.middleware') for m in sys.modules))\n"
    )
    import subprocess

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=30)
    assert done.stdout.strip() == "False"
