"""The stateless era's fast admission (params read straight into the method's type by a
cached typed decoder) answers every request byte for byte as the general path does (params
parsed to a dict, then converted): valid requests, and each kind of refusal in the order
the protocol gives (-32602 for _meta, -32020 for headers, -32022 for the version, -32601,
-32602 for the params), with and without HTTP headers. (Speed is measured by bench/; this
pins down that the fast path changes nothing a peer can see.)"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from mcpgen import Context, Server
from mcpgen.runtime.jsonrpc import kernel
from mcpgen.runtime.jsonrpc.framing import decode_envelope
from mcpgen.runtime.server.stateless import StatelessServer, _Plan

VERSION = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    "io.modelcontextprotocol/clientInfo": {"name": "plan-test", "version": "1"},
}


def make_server() -> Server:
    server = Server("plan", state_key="a key both servers share, 32+ bytes long")

    @server.tool(blocking=False)
    def echo(text: str) -> str:
        return text

    @server.tool()
    async def asks(ctx: Context) -> str:
        answer = await ctx.elicit("Name?", {"type": "object", "properties": {"name": {"type": "string"}}}, key="who")
        return f"hello {answer.content}"

    @server.prompt()
    def greet(name: str) -> str:
        return f"Hello {name}"

    @server.resource("res://a")
    def a_resource() -> str:
        return "A"

    return server


def general(server: Server) -> Server:
    """The same server with the typed read turned off: every request takes the dict path."""
    front = server.features.stateless
    planned = StatelessServer._plan

    def without_read(self: StatelessServer, method: str) -> _Plan | None:
        plan = planned(self, method)
        if plan is not None:
            plan.read = None
        return plan

    front._plan = without_read.__get__(front)  # type: ignore[method-assign]
    return server


def request(method: str, params: Any, rid: Any = 1) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not _ABSENT:
        message["params"] = params
    return message


_ABSENT: Any = object()


def call(**params: Any) -> dict[str, Any]:
    return request("tools/call", {"_meta": META, **params})


def meta(**changes: Any) -> dict[str, Any]:
    found = {**META, **changes}
    return {k: v for k, v in found.items() if v is not _ABSENT}


CASES: list[dict[str, Any]] = [
    call(name="echo", arguments={"text": "héllo"}),
    call(name="echo"),  # invalid arguments: an isError result
    call(name="echo", arguments={"text": 3}),
    call(name="echo", arguments=None),
    call(name="echo", arguments=[1]),
    call(name=3, arguments={"text": "x"}),
    call(name="nope", arguments={}),
    call(name="echo", arguments={"text": "x"}, task=5),  # a handshake-era field, checked as before
    call(name="echo", arguments={"text": "x"}, task={"ttl": 1000}),
    call(name="echo", arguments={"text": "x"}, unknown={"a": 1}),
    call(name="echo", arguments={"text": "x"}, requestState=None),
    call(name="echo", arguments={"text": "x"}, requestState=7),
    call(name="echo", arguments={"text": "x"}, requestState="forged.state"),
    call(name="echo", arguments={"text": "x"}, inputResponses=[]),
    call(name="echo", arguments={"text": "x"}, inputResponses={}),
    call(name="asks", arguments={}),
    call(name="asks", arguments={}, inputResponses={"who": {"action": "accept", "content": {"name": "Ada"}}}),
    request("tools/call", {"name": "echo", "arguments": {"text": "x"}}),
    request("tools/call", {"_meta": None, "name": "echo"}),
    request("tools/call", {"_meta": [], "name": "echo"}),
    request("tools/call", {"_meta": meta(**{"io.modelcontextprotocol/protocolVersion": _ABSENT}), "name": "echo"}),
    request("tools/call", {"_meta": meta(**{"io.modelcontextprotocol/protocolVersion": 7}), "name": "echo"}),
    request("tools/call", {"_meta": meta(**{"io.modelcontextprotocol/protocolVersion": "1999-01-01"}), "name": "e"}),
    request("tools/call", {"_meta": meta(**{"io.modelcontextprotocol/protocolVersion": "2025-11-25"}), "name": "e"}),
    request("tools/call", {"_meta": meta(**{"io.modelcontextprotocol/clientCapabilities": []}), "name": "echo"}),
    request("tools/call", {"_meta": meta(**{"io.modelcontextprotocol/clientInfo": "me"}), "name": "echo"}),
    request("tools/call", {"_meta": meta(**{"io.modelcontextprotocol/logLevel": "loud"}), "name": "echo"}),
    request(
        "tools/call",
        {"_meta": meta(**{"io.modelcontextprotocol/logLevel": "debug"}), "name": "echo", "arguments": {"text": "x"}},
    ),
    request("tools/call", [1, 2]),
    request("tools/call", _ABSENT),
    request("tools/call", {"_meta": {**META, "progressToken": "p1"}, "name": "echo", "arguments": {"text": "x"}}),
    request("prompts/get", {"_meta": META, "name": "greet", "arguments": {"name": "Ada"}}),
    request("prompts/get", {"_meta": META, "name": "greet", "arguments": {"name": 1}}),
    request("prompts/get", {"_meta": META, "name": 1}),
    request("resources/read", {"_meta": META, "uri": "res://a"}),
    request("resources/read", {"_meta": META, "uri": "res://missing"}),
    request("resources/read", {"_meta": META, "uri": 5}),
    request("tools/list", {"_meta": META}),
    request("tools/list", {"_meta": META, "cursor": 5}),
    request("resources/list", {"_meta": META, "cursor": "not a cursor"}),
    request("server/discover", {"_meta": META}),
    request("server/discover", {}),
    request("ping", {"_meta": META}),
    request("initialize", {"_meta": META}),
    request("no/such/method", {"_meta": META}),
    request("completion/complete", {"_meta": META, "ref": {"type": "ref/prompt", "name": "greet"}}),
]


def headers_for(message: dict[str, Any], name: Any = None) -> dict[str, str]:
    params = message.get("params")
    found = {"mcp-protocol-version": VERSION, "mcp-method": str(message["method"])}
    if isinstance(params, dict):
        named = params.get("uri") if message["method"] == "resources/read" else params.get("name")
        if name is not None or isinstance(named, str):
            found["mcp-name"] = str(name if name is not None else named)
    return found


@pytest.mark.parametrize("case", range(len(CASES)))
def test_the_fast_path_answers_as_the_general_path(case: int) -> None:
    message = CASES[case]
    fast = make_server()
    slow = general(make_server())
    body = json.dumps(message).encode()

    async def main() -> None:
        variants: list[dict[str, str] | None] = [None, headers_for(message), headers_for(message, name="other")]
        variants.append({**headers_for(message), "mcp-protocol-version": "2026-01-01"})
        for headers in variants:
            env = decode_envelope(body)
            got = await fast.features.stateless.handle(env, headers=headers)
            expected = await slow.features.stateless.handle(decode_envelope(body), headers=headers)
            if b"requestState" in got[0]:  # sealed with a fresh expiry: compare all but the state
                got = (_without_state(got[0]), got[1])
                expected = (_without_state(expected[0]), expected[1])
            assert got == expected, (message, headers)

    asyncio.run(main())


def test_the_fast_path_is_taken() -> None:
    """Valid requests of the core methods are read by the typed decoder (the general path
    is taken only for what it refuses)."""
    server = make_server()
    front = server.features.stateless
    for method in ("tools/call", "prompts/get", "resources/read", "tools/list", "server/discover"):
        front.admit(decode_envelope(json.dumps(CASES[0]).encode()), sink=None, reply=kernel.OneReply(), slots=None)
        plan = front._plan(method)
        assert plan is not None and plan.read is not None, method
    assert front._plan("ping") is None  # not a method of this era: nothing planned


def _without_state(frame: bytes) -> bytes:
    reply = json.loads(frame)
    result = reply.get("result", {})
    if "requestState" in result:
        result["requestState"] = "..."
    return json.dumps(reply).encode()
