"""The stateless era's own rules (2026-07-28): the order requests are checked in, the
HTTP binding (headers, status codes, JSON or SSE, no GET/DELETE), requestState sealing,
capabilities per request, caching hints, and the era choice on stdio."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mcpgen import Context, Server
from mcpgen.runtime.errors import McpError
from mcpgen.runtime.jsonrpc.transport import memory_pair
from mcpgen.runtime.server.caching import CacheHint
from mcpgen.runtime.server.input_required import StateSealer
from mcpgen.runtime.shared.headers import annotated_params, decode_value, encode_value
from tests.era import CAPABILITIES, MODERN
from tests.http_server import demo_http
from tests.wire import RawPeer

META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": CAPABILITIES,
    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "0"},
}


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with demo_http() as found:
        yield found


def post(
    url: str,
    method: str,
    params: dict[str, Any] | None = None,
    *,
    rid: Any = 1,
    headers: dict[str, str] | None = None,
    meta: dict[str, Any] | None = None,
) -> httpx.Response:
    body_params = {"_meta": META if meta is None else meta, **(params or {})}
    sent = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": method,
    }
    if method in ("tools/call", "prompts/get"):
        sent["Mcp-Name"] = encode_value(str(body_params.get("name", "")))
    if method == "resources/read":
        sent["Mcp-Name"] = encode_value(str(body_params.get("uri", "")))
    sent.update(headers or {})
    message = {"jsonrpc": "2.0", "id": rid, "method": method, "params": body_params}
    return httpx.post(
        url, content=json.dumps(message), headers={k: v for k, v in sent.items() if v is not None}, timeout=10
    )


def events(response: httpx.Response) -> list[Any]:
    if response.headers["content-type"].startswith("application/json"):
        return [response.json()]
    return [json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")]


# ---------------------------------------------------------------- the order of the checks


@pytest.mark.parametrize(
    ("meta", "headers", "status", "code"),
    [
        ({}, {}, 400, -32602),  # no protocol version, no capabilities
        ({"io.modelcontextprotocol/protocolVersion": MODERN}, {}, 400, -32602),
        ({**META, "io.modelcontextprotocol/protocolVersion": "v999.0.0"}, {}, 400, -32020),  # header says 2026-07-28
        (
            {**META, "io.modelcontextprotocol/protocolVersion": "v999.0.0"},
            {"MCP-Protocol-Version": "v999.0.0"},
            400,
            -32022,
        ),
        (META, {"Mcp-Method": "tools/call"}, 400, -32020),
        (META, {"Mcp-Method": "TOOLS/LIST"}, 400, -32020),
    ],
)
def test_requests_are_checked_meta_then_headers_then_version(
    url: str, meta: dict[str, Any], headers: dict[str, str], status: int, code: int
) -> None:
    response = post(url, "tools/list", meta=meta, headers=headers, rid="r-7")
    assert response.status_code == status
    reply = response.json()
    assert reply["error"]["code"] == code and reply["id"] == "r-7"
    if code == -32022:
        assert reply["error"]["data"] == {"supported": reply["error"]["data"]["supported"], "requested": "v999.0.0"}
        discover = post(url, "server/discover").json()["result"]
        assert set(reply["error"]["data"]["supported"]) <= set(discover["supportedVersions"])


def test_a_request_without_client_info_is_still_served(url: str) -> None:
    meta = {k: v for k, v in META.items() if not k.endswith("clientInfo")}
    assert post(url, "tools/list", meta=meta).json()["result"]["tools"]


@pytest.mark.parametrize("method", ["initialize", "ping", "logging/setLevel", "resources/subscribe", "unknown/method"])
def test_removed_and_unknown_methods_are_404(url: str, method: str) -> None:
    response = post(url, method, {"uri": "config://app", "level": "info"})
    assert response.status_code == 404
    assert response.json()["error"]["code"] == -32601


def test_get_and_delete_are_not_part_of_the_stateless_era(url: str) -> None:
    for verb in ("GET", "DELETE"):
        response = httpx.request(verb, url, headers={"MCP-Protocol-Version": MODERN})
        assert response.status_code == 405


def test_discover_names_versions_capabilities_and_the_server(url: str) -> None:
    result = post(url, "server/discover").json()["result"]
    assert result["resultType"] == "complete"
    assert MODERN in result["supportedVersions"] and "2025-11-25" in result["supportedVersions"]
    assert "tools" in result["capabilities"]
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "demo"
    assert isinstance(result["ttlMs"], int) and result["cacheScope"] in ("private", "public")
    assert "serverInfo" not in result


# ---------------------------------------------------------------- headers


def test_mcp_name_must_match_and_may_be_padded_or_base64(url: str) -> None:
    call = {"name": "echo", "arguments": {"text": "hi"}}
    assert decode_value("  echo \t") == "echo"  # optional whitespace (httpx will not send it; the suite does)
    assert post(url, "tools/call", call, headers={"Mcp-Name": "=?base64?ZWNobw==?="}).json()["result"]
    for wrong in ("add", "=?base64?ZWNobw?=", "=?base64?ZW!!bw==?="):
        response = post(url, "tools/call", call, headers={"Mcp-Name": wrong})
        assert response.status_code == 400 and response.json()["error"]["code"] == -32020, wrong
    missing = post(url, "tools/call", call, headers={"Mcp-Name": None})  # type: ignore[dict-item]
    assert missing.status_code == 400


def test_header_values_travel_in_the_base64_sentinel_when_they_must() -> None:
    assert encode_value("plain") == "plain"
    for text in ("héllo", " edge", "tab\there", "=?base64?abc?="):
        wrapped = encode_value(text)
        assert wrapped.startswith("=?base64?") and decode_value(wrapped) == text
    with pytest.raises(McpError) as info:
        decode_value("=?base64?SGVsbG8?=")
    assert info.value.code == -32020


def test_x_mcp_header_annotations_are_valid_only_on_top_level_scalars() -> None:
    ok = {
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "n": {"type": "integer", "x-mcp-header": "N"},
        },
    }
    assert annotated_params(ok) == {"region": "Region", "n": "N"}
    bad = [
        {"properties": {"f": {"type": "number", "x-mcp-header": "F"}}},
        {"properties": {"a": {"type": "string", "x-mcp-header": "X"}, "b": {"type": "string", "x-mcp-header": "x"}}},
        {"properties": {"a": {"type": "string", "x-mcp-header": "has space"}}},
        {"properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "Deep"}}}},
        {"properties": {"a": {"type": "string", "x-mcp-header": ""}}},
    ]
    for schema in bad:
        assert annotated_params(schema) is None, schema


# ---------------------------------------------------------------- answers: JSON or a stream


def test_plain_answers_are_json_and_progress_makes_a_stream(url: str) -> None:
    plain = post(url, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    assert plain.headers["content-type"].startswith("application/json")
    streamed = post(
        url,
        "tools/call",
        {"name": "count", "arguments": {"to": 3}},
        meta={**META, "progressToken": 9, "io.modelcontextprotocol/logLevel": "info"},
    )
    assert streamed.headers["content-type"].startswith("text/event-stream")
    frames = events(streamed)
    assert [f["method"] for f in frames[:-1]].count("notifications/progress") == 3
    assert [f["params"]["data"] for f in frames if f.get("method") == "notifications/message"] == [
        "counted 1",
        "counted 2",
        "counted 3",
    ]
    assert frames[-1]["result"]["content"][0]["text"] == "counted to 3"
    assert all("id" not in f for f in frames[:-1])  # notifications only: never a request


def test_closing_the_stream_cancels_the_handler(url: str) -> None:
    async def main() -> None:
        async with httpx.AsyncClient(timeout=10) as client:
            message = {
                "jsonrpc": "2.0",
                "id": 77,
                "method": "tools/call",
                "params": {"_meta": {**META, "progressToken": 1}, "name": "slow", "arguments": {"seconds": 30}},
            }
            headers = {
                "MCP-Protocol-Version": MODERN,
                "Mcp-Method": "tools/call",
                "Mcp-Name": "slow",
                "Accept": "application/json, text/event-stream",
                "Content-Type": "application/json",
            }
            with pytest.raises(httpx.ReadTimeout):
                await client.post(url, content=json.dumps(message), headers=headers, timeout=0.5)
        # The server is free at once and serves the next request.
        assert post(url, "tools/call", {"name": "echo", "arguments": {"text": "next"}}).json()["result"]

    asyncio.run(main())


# ---------------------------------------------------------------- asking the client


def test_a_question_needs_the_capability_declared_on_this_request(url: str) -> None:
    meta = {**META, "io.modelcontextprotocol/clientCapabilities": {}}
    response = post(url, "tools/call", {"name": "ask_model", "arguments": {"question": "?"}}, meta=meta)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == -32021 and error["data"] == {"requiredCapabilities": {"sampling": {}}}


def test_input_required_round_trip_and_a_tampered_or_foreign_state(url: str) -> None:
    first = post(url, "tools/call", {"name": "ask_user", "arguments": {}}).json()["result"]
    assert first["resultType"] == "input_required" and "ttlMs" not in first
    ((key, question),) = first["inputRequests"].items()
    assert question["method"] == "elicitation/create" and "_meta" not in question["params"]
    answer = {key: {"action": "accept", "content": {"name": "Ada", "age": 3}}}
    retry = {"name": "ask_user", "arguments": {}, "inputResponses": answer, "requestState": first["requestState"]}
    done = post(url, "tools/call", retry, rid=2).json()["result"]
    assert done["resultType"] == "complete" and "Ada" in done["content"][0]["text"]
    tampered = post(url, "tools/call", {**retry, "requestState": first["requestState"] + "-TAMPERED"}, rid=3).json()
    assert tampered["error"]["code"] == -32602
    # The state of one request does not open another's (here: other arguments).
    foreign = post(url, "tools/call", {**retry, "name": "ask_model", "arguments": {"question": "x"}}, rid=4).json()
    assert foreign["error"]["code"] == -32602 and "another request" in foreign["error"]["message"]
    # Answers for keys nobody asked are ignored; a missing answer asks again.
    again = post(
        url,
        "tools/call",
        {"name": "ask_user", "arguments": {}, "inputResponses": {"other": {"action": "decline"}}},
        rid=5,
    )
    assert again.json()["result"]["resultType"] == "input_required"
    assert post(url, "tools/call", {**retry, "inputResponses": None}, rid=6).json()["error"]["code"] == -32602


def test_sealed_state_expires_and_names_its_key() -> None:
    sealer = StateSealer("k1", lifetime=0.5)
    state = sealer.seal({"m": "tools/call"})
    assert sealer.open(state)["m"] == "tools/call"
    with pytest.raises(McpError):
        StateSealer("k2").open(state)  # another key: another server
    with pytest.raises(McpError):
        sealer.open(state.replace(".", ".x", 1))
    time.sleep(1.1)
    with pytest.raises(McpError, match="expired"):
        sealer.open(state)


def test_only_the_three_question_methods_may_ask() -> None:
    """tools/list cannot answer input_required; the handler asking in it gets an error."""
    server = Server("lists")

    @server.tool()
    async def t(ctx: Context) -> str:
        return "x"

    async def main() -> list[Any]:
        a, b = memory_pair()
        task = asyncio.create_task(server.serve(a))
        await b.send(
            json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}}).encode()
        )
        reply = json.loads(await b.receive())  # type: ignore[arg-type]
        await b.close()
        await task
        return [reply]

    (reply,) = asyncio.run(main())
    assert reply["result"]["resultType"] == "complete"


# ---------------------------------------------------------------- caching hints


def test_caching_hints_default_per_list_and_per_resource() -> None:
    server = Server("cache", cache=CacheHint(5, "private"), list_cache={"tools/list": CacheHint(60_000, "public")})

    @server.tool()
    def t() -> str:
        return "x"

    @server.resource("test://r", cache=CacheHint(1000, "public"))
    def r() -> str:
        return "r"

    @server.resource("test://s")
    def s() -> str:
        return "s"

    async def main() -> dict[str, Any]:
        a, b = memory_pair()
        task = asyncio.create_task(server.serve(a))
        out: dict[str, Any] = {}
        calls = [
            ("tools/list", {}),
            ("prompts/list", {}),
            ("resources/read", {"uri": "test://r"}),
            ("resources/read", {"uri": "test://s"}),
            ("server/discover", {}),
        ]
        for i, (method, params) in enumerate(calls):
            message = {"jsonrpc": "2.0", "id": i, "method": method, "params": {"_meta": META, **params}}
            await b.send(json.dumps(message).encode())
            result = json.loads(await b.receive())["result"]  # type: ignore[arg-type]
            out[f"{method} {params.get('uri', '')}".strip()] = (result["ttlMs"], result["cacheScope"])
        await b.close()
        await task
        return out

    assert asyncio.run(main()) == {
        "tools/list": (60_000, "public"),
        "prompts/list": (5, "private"),
        "resources/read test://r": (1000, "public"),
        "resources/read test://s": (5, "private"),
        "server/discover": (5, "private"),
    }
    with pytest.raises(ValueError):
        CacheHint(-1)


# ---------------------------------------------------------------- stdio: the era is chosen once


def test_stdio_era_is_chosen_by_the_first_request() -> None:
    async def main() -> None:
        modern = await RawPeer.start()
        try:
            reply = await modern.request("tools/list", {"_meta": META})
            assert reply["result"]["resultType"] == "complete"
            refused = await modern.request(
                "initialize",
                {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}},
            )
            assert refused["error"]["code"] == -32022
            assert refused["error"]["data"] == {"supported": [MODERN], "requested": "2025-11-25"}
        finally:
            await modern.close()
        legacy = await RawPeer.start()
        try:
            init = await legacy.initialize()
            assert init["result"]["protocolVersion"] == "2025-11-25"
            listed = await legacy.request("tools/list", {"_meta": META})
            assert "resultType" not in listed["result"]  # a handshake-era connection stays one
        finally:
            await legacy.close()

    asyncio.run(main())


def test_base64_state_uses_a_strict_alphabet() -> None:
    sealer = StateSealer(b"k")
    state = sealer.seal({"m": "x"})
    body, mac = state.split(".")
    mangled = body + "." + mac[:-2] + "!!"
    with pytest.raises(McpError):
        sealer.open(mangled)
    assert base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))


def test_a_handler_returning_the_wrong_type_is_an_internal_error() -> None:
    """As in the handshake era: a result of the wrong type never reaches the wire."""

    class Wrong(Server):
        async def call_tool(self, params: Any) -> Any:
            return {"not": "a CallToolResult"}

    server = Wrong("wrong")

    async def main() -> Any:
        a, b = memory_pair()
        task = asyncio.create_task(server.serve(a))
        message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"_meta": META, "name": "x"}}
        await b.send(json.dumps(message).encode())
        reply = json.loads(await b.receive())  # type: ignore[arg-type]
        await b.close()
        await task
        return reply

    assert asyncio.run(main())["error"]["code"] == -32603


def test_the_handler_timeout_bounds_stateless_requests_too() -> None:
    server = Server("timed", handler_timeout=0.2)

    @server.tool()
    async def sleepy() -> str:
        await asyncio.sleep(5)
        return "late"

    async def main() -> Any:
        a, b = memory_pair()
        task = asyncio.create_task(server.serve(a))
        message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"_meta": META, "name": "sleepy"}}
        await b.send(json.dumps(message).encode())
        reply = json.loads(await asyncio.wait_for(b.receive(), 3))  # type: ignore[arg-type]
        await b.close()
        await task
        return reply

    reply = asyncio.run(main())
    assert reply["error"]["code"] == -32603 and "0.2 s" in reply["error"]["message"]


def test_params_that_are_not_utf8_are_invalid_params(url: str) -> None:
    body = b'{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"_meta":{},"x":"\xed"}}'
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/list",
    }
    reply = httpx.post(url, content=body, headers=headers)
    assert reply.status_code == 400 and reply.json()["error"]["code"] == -32602


def test_a_notification_naming_an_unknown_version_is_refused(url: str) -> None:
    body = b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}'
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    assert httpx.post(url, content=body, headers={**headers, "MCP-Protocol-Version": MODERN}).status_code == 202
    refused = httpx.post(url, content=body, headers={**headers, "MCP-Protocol-Version": "2099-01-01"})
    assert refused.status_code == 400 and refused.json()["error"]["data"]["requested"] == "2099-01-01"
