"""The mcpgen Client in both protocol eras against mcpgen's own dual-era server: the demo
server over stdio (a real subprocess) and over Streamable HTTP (uvicorn on loopback), in
automatic, handshake-only and stateless-only modes."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import msgspec
import pytest

from mcpgen import Client, McpError
from mcpgen.generated import PromptReference, Root, TextContent
from mcpgen.runtime.client import era as eras
from mcpgen.runtime.client.stateless import Envelope, MissingInputHandler, UnsupportedVersions
from mcpgen.runtime.jsonrpc.transport import Transport
from mcpgen.runtime.transports.http_client import HttpTransport
from tests.http_server import free_port, running, serving_in_thread
from tests.runtime.client.test_client import elicitor, sampler
from tests.wire import DEMO

pytestmark = pytest.mark.anyio
HEADERS_SERVER = DEMO.parent / "headers_server.py"
MODES = ("auto", "handshake", "stateless")
SPOKEN = {"auto": "stateless", "handshake": "handshake", "stateless": "stateless"}


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with running([sys.executable, str(DEMO), "--http", str(port)], url):
        yield url


class Counter:
    """Counts the requests a client sends (a hook on its transport)."""

    def __init__(self, client: Client) -> None:
        self.methods: list[str] = []
        transport: Any = client.session.transport
        original = transport.send

        async def send(frame: bytes, **kw: Any) -> None:
            import msgspec

            data = msgspec.json.decode(frame)
            if "id" in data and "method" in data:
                self.methods.append(data["method"])
            await original(frame, **kw)

        transport.send = send


def make(kind: str, era: str, url: str = "", **options: Any) -> Client:
    handlers: dict[str, Any] = {
        "sampling": sampler,
        "elicitation": elicitor,
        "roots": [Root(uri="file:///work", name="work")],
    }
    handlers.update(options)
    if kind == "stdio":
        return Client.stdio(sys.executable, str(DEMO), era=era, **handlers)
    return Client.http(url, era=era, **handlers)


@pytest.fixture(params=["stdio", "http"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.mark.parametrize("era", MODES)
async def test_every_feature_in_each_mode(kind: str, era: str, http_url: str) -> None:
    async with make(kind, era, http_url) as client:
        assert client.spoken_era == SPOKEN[era]
        assert client.initialize_result is not None and client.initialize_result.server_info.name == "demo"
        tools = {t.name for t in await client.list_tools()}
        assert {"add", "ask_user", "count"} <= tools
        assert (await client.call_tool("add", {"a": 2, "b": 3})).structured_content == {"result": 5}
        # The server's questions: answered by the same handlers in both eras (stateless: MRTR rounds).
        contact = await client.call_tool("ask_user")
        assert contact.content == [TextContent(text='accept: {"name":"Ada","age":36}')]
        assert (await client.call_tool("ask_model", {"question": "x"})).content[0].text == "answer to x"  # type: ignore[union-attr]
        assert (await client.call_tool("roots")).content == [TextContent(text="file:///work")]
        config = await client.read_resource("config://app")
        assert config.contents[0].text == '{"debug": false, "level": 3}'  # type: ignore[union-attr]
        review = await client.get_prompt("review", {"code": "x = 1"})
        assert review.messages[0].content == TextContent(text="Review this python code:\nx = 1")
        done = await client.complete(PromptReference(name="review"), "language", "p")
        assert done.completion.values == ["python", "perl", "php"]
        progress: list[float] = []
        result = await client.call_tool("count", {"to": 3}, on_progress=lambda p, t, m: progress.append(p))
        assert result.content[0].text == "counted to 3" and progress == [1, 2, 3]  # type: ignore[union-attr]
        await client.ping()


async def test_stateless_retries_with_new_ids_and_echoed_state(kind: str, http_url: str) -> None:
    async with make(kind, "stateless", http_url) as client:
        counter = Counter(client)
        sent: list[Any] = []
        transport: Any = client.session.transport
        inner = transport.send

        async def spy(frame: bytes, **kw: Any) -> None:
            import msgspec

            sent.append(msgspec.json.decode(frame))
            await inner(frame, **kw)

        transport.send = spy
        await client.call_tool("ask_user")
        calls = [f for f in sent if f.get("method") == "tools/call"]
        assert len(calls) == 2  # the question, then the retry with its answer
        assert calls[0]["id"] != calls[1]["id"]
        assert "inputResponses" not in calls[0]["params"] and "requestState" not in calls[0]["params"]
        assert calls[1]["params"]["inputResponses"] == {
            "elicitation-1": {"action": "accept", "content": {"name": "Ada", "age": 36}}
        }
        assert isinstance(calls[1]["params"]["requestState"], str)
        meta = calls[1]["params"]["_meta"]
        assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
        assert set(meta["io.modelcontextprotocol/clientCapabilities"]) == {"sampling", "elicitation", "roots"}
        assert meta["io.modelcontextprotocol/clientInfo"]["name"] == "mcpgen"
        assert counter.methods == ["tools/call", "tools/call"]


async def test_a_question_without_a_handler_is_a_clear_error(kind: str, http_url: str) -> None:
    async with make(kind, "stateless", http_url, elicitation=None) as client:
        with pytest.raises(McpError) as info:
            await client.call_tool("ask_user")
        # The server sees no elicitation capability and refuses (-32021), or asks anyway and
        # the client says which handler is missing.
        assert info.value.code == -32021 or isinstance(info.value, MissingInputHandler)


async def test_lists_are_cached_within_their_ttl_and_listen_invalidates(kind: str, headers_url: str) -> None:
    def connect(**options: Any) -> Client:
        if kind == "stdio":
            return Client.stdio(sys.executable, str(HEADERS_SERVER), era="stateless", **options)
        return Client.http(headers_url, era="stateless", **options)

    async with connect() as client:
        counter = Counter(client)
        first = {t.name for t in await client.list_tools()}
        again = {t.name for t in await client.list_tools()}
        assert first == again
        assert counter.methods.count("tools/list") == 1  # the second came from the cache
        assert await _tools_ttl(client) == 60_000
        async with client.listen(tools=True) as changes:
            assert changes.acknowledged == {"toolsListChanged": True}
            name = f"fresh_{kind}"
            await client.call_tool("add_tool", {"name": name})
            change = await changes.next(timeout=5)
            assert change.method == "notifications/tools/list_changed"
        assert name in {t.name for t in await client.list_tools()}  # the change dropped the cached list
        assert counter.methods.count("tools/list") == 3
    async with connect(cache=False) as client:
        counter = Counter(client)
        await client.list_tools()
        await client.list_tools()
        assert counter.methods.count("tools/list") == 2


async def _tools_ttl(client: Client) -> int:
    import msgspec

    raw = await client.session.send_request("tools/list", {}, msgspec.Raw, fresh=True)
    found = msgspec.json.decode(raw).get("ttlMs", 0)
    return int(found)


async def test_on_notification_and_subscribe_work_in_the_stateless_era(kind: str, http_url: str) -> None:
    seen: list[tuple[str, Any]] = []
    async with make(kind, "stateless", http_url, on_notification=lambda m, p: seen.append((m, p))) as client:
        await client.subscribe("file:///notes.txt")
        await client.call_tool("touch", {"name": "notes.txt"})
        await client.call_tool("add_tool", {"name": f"also_{kind}"})
        for _ in range(50):
            methods = {m for m, _ in seen}
            if {"notifications/resources/updated", "notifications/tools/list_changed"} <= methods:
                break
            await asyncio.sleep(0.1)
        assert {"notifications/resources/updated", "notifications/tools/list_changed"} <= {m for m, _ in seen}


async def test_listen_in_the_handshake_era_too() -> None:
    async with make("stdio", "handshake") as client:
        async with client.listen(tools=True, uris=["file:///todo.md"]) as changes:
            await client.call_tool("touch", {"name": "todo.md"})
            change = await changes.next(timeout=5)
            assert change.method == "notifications/resources/updated" and change.uri == "file:///todo.md"


async def test_http_verdict_is_cached_per_endpoint(http_url: str) -> None:
    eras.forget(http_url)
    async with make("http", "auto", http_url) as client:
        assert client.spoken_era == "stateless"
    assert eras.known(http_url) == "stateless"
    eras.remember(http_url, "auto", "handshake", False)  # as if found before: no probe this time
    try:
        async with make("http", "auto", http_url) as client:
            assert client.spoken_era == "handshake"
    finally:
        eras.forget(http_url)


async def test_a_stdio_server_is_probed_once() -> None:
    async with make("stdio", "auto") as client:
        counter = Counter(client)
        await client.list_tools()
        await client.call_tool("add", {"a": 1, "b": 1})
        assert "server/discover" not in counter.methods


async def test_version_switch_and_the_error_naming_both_lists() -> None:
    envelope = Envelope("2030-01-01", {}, {"name": "c", "version": "0"})
    envelope.switch({"supported": ["2026-07-28", "2025-11-25"], "requested": "2030-01-01"})
    assert envelope.version == "2026-07-28"
    pinned = Envelope("2026-07-28", {}, {}, pinned=True)
    with pytest.raises(UnsupportedVersions) as info:
        pinned.switch({"supported": ["2099-01-01"], "requested": "2026-07-28"})
    assert "2026-07-28" in info.value.message and "2099-01-01" in info.value.message


async def test_pinned_version_the_server_lacks_fails_clearly(http_url: str) -> None:
    with pytest.raises(ValueError, match="does not speak"):
        async with make("stdio", "1999-01-01"):
            pass


@pytest.fixture(scope="module")
def headers_url() -> Iterator[str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with running([sys.executable, str(HEADERS_SERVER), str(port)], url):
        yield url


async def test_x_mcp_header_tools(headers_url: str, caplog: pytest.LogCaptureFixture) -> None:
    async with Client.http(headers_url, era="stateless") as client:
        with caplog.at_level(logging.WARNING, logger="mcpgen"):
            names = {t.name for t in await client.list_tools()}
        assert "regional" in names and not {"on_number", "nested"} & names  # the invalid ones are left out...
        assert "on_number" in caplog.text and "nested" in caplog.text  # ...with a warning naming them
        # The server refuses a call whose Mcp-Param-* headers do not mirror the arguments.
        result = await client.call_tool("regional", {"region": "eu-west  ", "count": 3})
        assert result.content == [TextContent(text="eu-west  :3")]
        assert client._param_headers("regional", {"region": "é", "count": None}) == {
            "Mcp-Param-Region": "=?base64?w6k=?="
        }


async def test_the_header_map_is_learnt_when_a_call_comes_first(headers_url: str) -> None:
    async with Client.http(headers_url, era="stateless") as client:
        result = await client.call_tool("regional", {"region": "north"})
        assert result.content == [TextContent(text="north:0")]


async def test_stateless_results_keep_tool_schemas_as_sent(http_url: str) -> None:
    async with make("http", "stateless", http_url) as client:
        tools = {t.name: t for t in await client.list_tools()}
        assert tools["add"].input_schema == {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
            "additionalProperties": False,
        }


# ---------------------------------------------------------------- "auto", the default


async def test_auto_is_the_default() -> None:
    async with Client.stdio(sys.executable, str(DEMO)) as client:
        assert client.era == "auto" and client.spoken_era == "stateless"
        assert client.session.protocol_version == "2026-07-28"


class RecordingHttp(HttpTransport):
    """Notes, for each frame sent, its method and the era and session it went out in."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.frames: list[tuple[str | None, bool, str | None]] = []

    async def send(self, frame: bytes, **kw: Any) -> None:
        self.frames.append((msgspec.json.decode(frame).get("method"), self.stateless, self.session_id))
        await super().send(frame, **kw)


async def test_a_probe_that_times_out_falls_back_cleanly_over_http(http_url: str) -> None:
    eras.forget(http_url)
    made: list[RecordingHttp] = []

    async def connect() -> Transport:
        made.append(RecordingHttp(http_url))
        return made[-1]

    async with Client(connect=connect, probe_timeout=0.0001) as client:  # no server answers that fast
        assert client.spoken_era == "handshake"
        assert (await client.call_tool("add", {"a": 2, "b": 2})).structured_content == {"result": 4}
    frames = made[0].frames
    assert frames[0] == ("server/discover", True, None)
    # The probe's notifications/cancelled goes out in its own era (over HTTP: nowhere, closing
    # the stream cancels), never as a handshake-era POST without a session, which is refused.
    assert ("notifications/cancelled", True, None) in frames
    assert all(stateless or session or method == "initialize" for method, stateless, session in frames), frames
    # Silence is no verdict on the server (a busy modern server is silent too): probed again.
    assert eras.known(http_url) is None
    async with make("http", "auto", http_url) as client:
        assert client.spoken_era == "stateless"


async def test_a_probe_through_an_authorization_flow_is_not_timed_out(http_url: str) -> None:
    """With an auth handler the probe's wait includes the authorization (a token to fetch, a
    user to sign in): the client's own time, so probe_timeout does not cut it short (which
    would start the flow over on initialize and spend its retry limit)."""
    eras.forget(http_url)
    async with Client.http(http_url, auth=httpx.Auth(), probe_timeout=0.0001) as client:
        assert client.spoken_era == "stateless"
        assert (await client.call_tool("add", {"a": 2, "b": 5})).structured_content == {"result": 7}


async def test_a_slow_probe_over_stdio_still_ends_in_the_stateless_era() -> None:
    # The probe made the connection stateless before the client gave up on it: the server
    # refuses initialize with -32022, which only a modern server sends.
    async with Client.stdio(sys.executable, str(DEMO), probe_timeout=0.0001) as client:
        assert client.spoken_era == "stateless"
        assert (await client.call_tool("add", {"a": 2, "b": 3})).structured_content == {"result": 5}


async def test_a_pinned_era_is_no_verdict_on_the_server(http_url: str) -> None:
    eras.forget(http_url)
    async with make("http", "handshake", http_url) as client:
        assert client.spoken_era == "handshake"
    assert eras.known(http_url) is None
    async with make("http", "auto", http_url) as client:
        assert client.spoken_era == "stateless"


async def test_legacy_http_sse_speaks_the_handshake_era_without_a_probe(http_url: str) -> None:
    async with Client.sse(http_url.replace("/mcp", "/sse")) as client:
        assert client.era == "handshake" and client.spoken_era == "handshake"
        assert (await client.call_tool("add", {"a": 1, "b": 1})).structured_content == {"result": 2}


async def test_stateless_tools_that_reach_for_the_session_transport(http_url: str) -> None:
    # http_server.close_current_stream (the demo's poll tool) looks for the session's HTTP
    # transport; a stateless request has none, and the tool must still answer.
    async with make("http", "auto", http_url) as client:
        assert client.spoken_era == "stateless"
        assert (await client.call_tool("poll")).content == [TextContent(text="answered after the reconnect")]


def modern_only_app(delay: float, refusal: str) -> Any:
    """An ASGI server that speaks only 2026-07-28 and is slow to answer server/discover (a
    busy one): it refuses initialize as such servers do (-32602 naming the versions it
    supports) and answers a stateless tools/call."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        request = msgspec.json.decode(body) if body else {}
        method, rid = request.get("method"), request.get("id")
        if rid is None:
            await send({"type": "http.response.start", "status": 202, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        meta = {"io.modelcontextprotocol/serverInfo": {"name": "modern-only", "version": "1"}}
        if method == "server/discover":
            await asyncio.sleep(delay)
            result: dict[str, Any] = {
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "modern-only", "version": "1"},
                "resultType": "complete",
            }
            answer: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "result": result}
        elif method == "initialize" and refusal == "versions":
            error = {"code": -32602, "message": "Unsupported protocol version", "data": {"supported": ["2026-07-28"]}}
            answer = {"jsonrpc": "2.0", "id": rid, "error": error}
        elif method == "initialize":  # as the conformance harness's servers do: HTTP 400 and -32020
            error = {"code": -32020, "message": "Missing MCP-Protocol-Version header"}
            await _json(send, 400, {"jsonrpc": "2.0", "id": rid, "error": error})
            return
        elif method == "tools/call":
            content = [{"type": "text", "text": "modern"}]
            answer = {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {"content": content, "resultType": "complete", "_meta": meta},
            }
        else:
            answer = {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}}
        await _json(send, 200, answer)

    return app


async def _json(send: Any, status: int, answer: dict[str, Any]) -> None:
    payload = msgspec.json.encode(answer)
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


async def test_over_http_a_slow_probe_is_waited_for(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unless told, the client waits for server/discover over HTTP as for any answer (every
    HTTP server answers at once, an older one with a status or an error: silence is a busy
    server), and gives up on it over a stream after a few seconds. (The stream's patience is
    shortened here: a discover slower than it is still waited for over HTTP, initialize is
    never sent.)"""
    caplog.set_level(logging.INFO, logger="mcpgen")
    monkeypatch.setattr(eras, "STREAM_PROBE_PATIENCE", 0.05)
    assert eras.probe_patience(None, None) == 0.05
    assert eras.probe_patience(None, "http://127.0.0.1/mcp") == eras.HTTP_PROBE_PATIENCE >= 30
    assert eras.probe_patience(7.0, "http://127.0.0.1/mcp") == 7.0  # the user's choice
    with serving_in_thread(modern_only_app(delay=0.5, refusal="versions")) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        eras.forget(url)
        async with Client.http(url) as client:
            assert client.spoken_era == "stateless"
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert not any("speaking the handshake era" in m for m in said), said


@pytest.mark.parametrize("refusal", ["versions", "http-400"])
async def test_a_slow_probe_of_a_modern_only_server_is_no_downgrade(
    caplog: pytest.LogCaptureFixture, refusal: str
) -> None:
    """The probe times out (the server is busy); initialize is then refused naming only
    2026-07-28: the client speaks the stateless era after all, and says why at info level."""
    caplog.set_level(logging.INFO, logger="mcpgen")
    with serving_in_thread(modern_only_app(delay=0.5, refusal=refusal)) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        eras.forget(url)
        async with Client.http(url, probe_timeout=0.1) as client:
            assert client.spoken_era == "stateless"
            result = await client.call_tool("anything", {})
            assert result.content[0].text == "modern"  # type: ignore[union-attr]
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert any("speaking the handshake era" in m for m in said), said
    assert any("after a slow probe: speaking the stateless era" in m for m in said), said
