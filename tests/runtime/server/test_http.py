"""Streamable HTTP, server and client: a real uvicorn server process and httpx over
loopback."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mcpgen import Client, McpError, Server
from mcpgen.generated import TextContent
from tests.http_server import demo_http, free_port
from tests.runtime.client.test_client import elicitor, sampler

pytestmark = pytest.mark.anyio
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with demo_http() as url:
        yield url


def post(url: str, message: Any, headers: dict[str, str] | None = None, **kwargs: Any) -> httpx.Response:
    return httpx.post(url, content=json.dumps(message), headers={**ACCEPT, **(headers or {})}, **kwargs)


def open_session(url: str, version: str = "2025-11-25") -> str:
    reply = post(url, {**INIT, "params": {**INIT["params"], "protocolVersion": version}})  # type: ignore[dict-item]
    assert reply.status_code == 200
    session_id = reply.headers["mcp-session-id"]
    done = post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, {"mcp-session-id": session_id})
    assert done.status_code == 202 and done.content == b""
    return session_id


def sse_events(text: str) -> list[dict[str, str]]:
    events = []
    for block in text.strip().split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.split("\n"):
            if line and not line.startswith(":"):
                name, _, value = line.partition(":")
                fields[name] = (fields[name] + "\n" if name in fields else "") + value.lstrip(" ")
        if fields:
            events.append(fields)
    return events


# ---------------------------------------------------------------- sessions and headers


def test_initialize_opens_a_session(url: str) -> None:
    reply = post(url, INIT)
    assert reply.status_code == 200
    assert reply.headers["content-type"] == "application/json"
    session_id = reply.headers["mcp-session-id"]
    assert len(session_id) >= 22 and all(0x21 <= ord(c) <= 0x7E for c in session_id)  # >=128 bits
    assert reply.json()["result"]["protocolVersion"] == "2025-11-25"


def test_session_ids_are_unique(url: str) -> None:
    assert len({post(url, INIT).headers["mcp-session-id"] for _ in range(20)}) == 20


def test_missing_unknown_and_ended_sessions(url: str) -> None:
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    assert post(url, ping).status_code == 400
    assert post(url, ping, {"mcp-session-id": "nope"}).status_code == 404
    session_id = open_session(url)
    assert post(url, ping, {"mcp-session-id": session_id}).json()["result"] == {}
    assert httpx.delete(url, headers={"mcp-session-id": session_id}).status_code == 200
    assert post(url, ping, {"mcp-session-id": session_id}).status_code == 404


def test_protocol_version_header(url: str) -> None:
    session_id = open_session(url)
    ping = {"jsonrpc": "2.0", "id": 3, "method": "ping"}
    for version in ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"):
        assert post(url, ping, {"mcp-session-id": session_id, "mcp-protocol-version": version}).status_code == 200
    assert post(url, ping, {"mcp-session-id": session_id, "mcp-protocol-version": "2099-01-01"}).status_code == 400


def test_content_type_and_accept(url: str) -> None:
    assert httpx.post(url, content=json.dumps(INIT), headers={"content-type": "text/plain"}).status_code == 415
    wrong_accept = {"content-type": "application/json", "accept": "text/html"}
    assert httpx.post(url, content=json.dumps(INIT), headers=wrong_accept).status_code == 406
    session_id = open_session(url)
    assert httpx.get(url, headers={"mcp-session-id": session_id, "accept": "application/json"}).status_code == 406


def test_malformed_bodies_are_400_with_a_json_rpc_error(url: str) -> None:
    for body in (b"{oops", b"[]", b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]'):
        reply = httpx.post(url, content=body, headers=ACCEPT)
        assert reply.status_code == 400
        assert reply.json()["error"]["code"] in (-32700, -32600)


def test_unreadable_response_is_400_and_the_session_goes_on(url: str) -> None:
    """A response we cannot read (here a number beyond float range in its error code)
    has no request to answer: the POST gets 400, nothing breaks (it once got a 500)."""
    session_id = open_session(url)
    headers = {**ACCEPT, "mcp-session-id": session_id}
    body = b'{"jsonrpc":"2.0","id":"zz","error":{"code":-1e400,"message":"unknown"}}'
    reply = httpx.post(url, content=body, headers=headers)
    assert reply.status_code == 400 and "id" not in reply.json() and reply.json()["error"]["code"] == -32600
    assert (
        post(url, {"jsonrpc": "2.0", "id": 3, "method": "ping"}, {"mcp-session-id": session_id}).json()["result"] == {}
    )


def test_dns_rebinding_protection(url: str) -> None:
    assert post(url, INIT, {"host": "evil.example.com"}).status_code == 403
    assert post(url, INIT, {"origin": "http://evil.example.com"}).status_code == 403
    assert post(url, INIT, {"origin": "http://localhost:5173"}).status_code == 200
    assert post(url, INIT, {"host": "localhost:1234"}).status_code == 200


def test_body_limit() -> None:
    with demo_http("--max-body", "2000") as small:
        big = {**INIT, "params": {**INIT["params"], "padding": "x" * 5000}}  # type: ignore[dict-item]
        assert post(small, big).status_code == 413
        assert post(small, INIT).status_code == 200

        def pieces(message: Any, size: int) -> Iterator[bytes]:
            data = json.dumps(message).encode()
            yield from (data[i : i + size] for i in range(0, len(data), size))

        # A body sent in pieces (chunked: uvicorn hands it over in several messages) is read
        # whole, and counted against the limit across the pieces.
        whole = httpx.post(small, content=pieces(INIT, 40), headers=ACCEPT)
        assert whole.status_code == 200 and whole.json()["result"]["serverInfo"]["name"]
        assert httpx.post(small, content=pieces(big, 1000), headers=ACCEPT).status_code == 413


# ---------------------------------------------------------------- streams


def test_request_with_progress_streams_sse_then_ends(url: str) -> None:
    session_id = open_session(url)
    call = {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "tools/call",
        "params": {"name": "count", "arguments": {"to": 2}, "_meta": {"progressToken": 5}},
    }
    reply = post(url, call, {"mcp-session-id": session_id})
    assert reply.headers["content-type"] == "text/event-stream"
    events = sse_events(reply.text)
    assert events[0]["data"] == "" and "id" in events[0] and events[0]["retry"] == "200"  # priming
    frames = [json.loads(e["data"]) for e in events[1:]]
    assert [f.get("method") for f in frames[:-1]] == [
        "notifications/progress",
        "notifications/message",
        "notifications/progress",
        "notifications/message",
    ]
    assert frames[0]["params"]["progressToken"] == 5
    assert frames[-1]["id"] == 9 and frames[-1]["result"]["content"][0]["text"] == "counted to 2"
    assert len({e["id"] for e in events}) == len(events)  # unique event ids


def test_no_priming_for_older_protocol_versions(url: str) -> None:
    session_id = open_session(url, "2025-06-18")
    call = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "count", "arguments": {"to": 1}}}
    events = sse_events(post(url, call, {"mcp-session-id": session_id}).text)
    assert all(e.get("data") for e in events)


def test_dropped_stream_is_replayed_with_last_event_id(url: str) -> None:
    session_id = open_session(url)
    call = {"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": {"name": "poll"}}
    reply = post(url, call, {"mcp-session-id": session_id})
    events = sse_events(reply.text)
    assert len(events) == 1 and events[0]["data"] == "" and events[0]["retry"] == "200"
    resumed = httpx.get(
        url,
        headers={"mcp-session-id": session_id, "accept": "text/event-stream", "last-event-id": events[0]["id"]},
        timeout=5,
    )
    frames = [json.loads(e["data"]) for e in sse_events(resumed.text) if e.get("data")]
    assert frames == [
        {"jsonrpc": "2.0", "id": 11, "result": {"content": [{"type": "text", "text": "answered after the reconnect"}]}}
    ]
    again = httpx.get(
        url,
        headers={"mcp-session-id": session_id, "accept": "text/event-stream", "last-event-id": events[0]["id"]},
        timeout=5,
    )
    assert [json.loads(e["data"])["id"] for e in sse_events(again.text) if e.get("data")] == [11]
    unknown = httpx.get(
        url, headers={"mcp-session-id": session_id, "accept": "text/event-stream", "last-event-id": "nope/3"}
    )
    assert unknown.status_code == 404


def test_quiet_streams_get_keepalive_comments() -> None:
    """A stream with nothing to say still sends a comment now and then, so proxies and
    clients do not take it for dead; the client's SSE parser skips comments."""
    with demo_http("--keepalive", "0.2") as quick:
        session_id = open_session(quick)
        headers = {"mcp-session-id": session_id, "accept": "text/event-stream"}
        lines: list[str] = []
        with httpx.stream("GET", quick, headers=headers, timeout=5) as stream:
            assert stream.status_code == 200 and stream.headers["content-type"].startswith("text/event-stream")
            for line in stream.iter_lines():
                lines.append(line)
                if sum(1 for seen in lines if seen.startswith(":")) >= 2:
                    break
        comments = [line for line in lines if line.startswith(":")]
        assert len(comments) >= 2
        assert all(line.strip() == "data:" for line in lines if line.startswith("data"))  # priming only


# ---------------------------------------------------------------- the client


@pytest.mark.parametrize(("era", "version"), [("handshake", "2025-11-25"), ("auto", "2026-07-28")])
async def test_client_over_http(url: str, era: str, version: str) -> None:
    progress: list[float] = []
    async with Client.http(url, sampling=sampler, elicitation=elicitor, era=era) as client:
        assert client.session.protocol_version == version
        assert (await client.call_tool("add", {"a": 1, "b": 2})).structured_content == {"result": 3}
        counted = await client.call_tool("count", {"to": 3}, on_progress=lambda p, t, m: progress.append(p))
        assert counted.content == [TextContent(text="counted to 3")]
        assert (await client.call_tool("ask_model", {"question": "q"})).content[0].text == "answer to q"  # type: ignore[union-attr]
        assert (await client.call_tool("ask_user")).content[0].text.startswith("accept")  # type: ignore[union-attr]
        assert (await client.call_tool("poll")).content == [TextContent(text="answered after the reconnect")]
        assert (await client.read_resource("file:///notes.txt")).contents[0].text.startswith("remember")  # type: ignore[union-attr]
        with pytest.raises(McpError):
            await client.read_resource("file:///missing")
    assert progress == [1, 2, 3]


async def test_client_waits_for_the_get_stream_before_its_first_request() -> None:
    """Otherwise a server may take the GET for the resumption of a request's stream it has
    just closed (the conformance suite's sse-retry server did, now and then)."""
    import uvicorn

    server = Server("s")

    @server.tool()
    def echo(text: str) -> str:
        return text

    app = server.http_app()
    seen: list[str] = []

    async def recorder(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        if scope["method"] != "GET":
            seen.append(scope["method"])
            await app(scope, receive, send)
            return
        await asyncio.sleep(0.3)  # a server slow to answer the GET

        async def noting(message: Any) -> None:
            if message["type"] == "http.response.start":
                seen.append("GET answered")
            await send(message)

        await app(scope, receive, noting)

    port = free_port()
    web = uvicorn.Server(uvicorn.Config(recorder, host="127.0.0.1", port=port, log_level="warning"))
    serving = asyncio.ensure_future(web.serve())
    try:
        while not web.started:
            await asyncio.sleep(0.01)
        async with Client.http(f"http://127.0.0.1:{port}/mcp", era="handshake") as client:
            assert (await client.call_tool("echo", {"text": "x"})).content == [TextContent(text="x")]
    finally:
        web.should_exit = True
        await serving
    # initialize, notifications/initialized, the GET answered, then the first request
    assert seen[:4] == ["POST", "POST", "GET answered", "POST"], seen


async def test_standalone_stream_delivers_list_changed(url: str) -> None:
    seen: asyncio.Queue[str] = asyncio.Queue()
    async with Client.http(url, on_notification=lambda m, p: seen.put_nowait(m)) as client:
        await asyncio.sleep(0.2)  # the GET stream is open
        await client.call_tool("add_tool", {"name": "via_http"})
        assert await asyncio.wait_for(seen.get(), 5) == "notifications/tools/list_changed"


async def test_json_response_mode() -> None:
    with demo_http("--json-response") as json_url:
        reply = post(json_url, INIT)
        session_id = reply.headers["mcp-session-id"]
        call = {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "count", "arguments": {"to": 2}}}
        answer = post(json_url, call, {"mcp-session-id": session_id})
        assert answer.headers["content-type"] == "application/json"
        async with Client.http(json_url, sampling=sampler) as client:
            assert (await client.call_tool("ask_model", {"question": "json"})).content[0].text == "answer to json"  # type: ignore[union-attr]


async def test_stateless_mode() -> None:
    with demo_http("--stateless") as stateless:
        call = {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 2, "b": 2}},
        }
        reply = post(stateless, call)
        assert reply.status_code == 200 and "mcp-session-id" not in reply.headers
        assert reply.json()["result"]["structuredContent"] == {"result": 4}
        assert httpx.get(stateless, headers={"accept": "text/event-stream"}).status_code == 405
        async with Client.http(stateless) as client:
            assert (await client.call_tool("echo", {"text": "hi"})).content == [TextContent(text="hi")]


@pytest.mark.parametrize("era", ["handshake", "stateless"])
async def test_hundred_concurrent_sessions(url: str, era: str) -> None:
    async def one(n: int) -> list[str]:
        async with Client.http(url, standalone_stream=False, era=era) as client:
            out = []
            for i in range(5):
                result = await client.call_tool("echo", {"text": f"{n}-{i}"})
                out.append(result.content[0].text)  # type: ignore[union-attr]
            return out

    results = await asyncio.gather(*(one(n) for n in range(100)))
    assert results == [[f"{n}-{i}" for i in range(5)] for n in range(100)]


async def test_legacy_http_sse(url: str) -> None:
    legacy = url.replace("/mcp", "/sse")
    async with Client.sse(legacy, sampling=sampler) as client:
        assert (await client.call_tool("add", {"a": 40, "b": 2})).structured_content == {"result": 42}
        assert (await client.call_tool("ask_model", {"question": "old"})).content[0].text == "answer to old"  # type: ignore[union-attr]
