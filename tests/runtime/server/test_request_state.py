"""The stateless era's requestState (security issue, point 5): the answers a client gave in
earlier rounds travel in it encrypted, not only signed (a PIN a user typed must not come
back in clear), and on a protected server a state continues a round only for the caller
it was issued to. Served by uvicorn over loopback; principals from a verifier of the test's
own (``BearerAuth(verifier=...)``)."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx

from mcpgen import BearerAuth, Context, Server
from tests.http_server import serving_in_thread
from tests.tokens import Tokens

MODERN = "2026-07-28"
PIN = "4711-secret-pin"
PIN_FORM = {"type": "object", "properties": {"pin": {"type": "string"}}, "required": ["pin"]}
OK_FORM = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def pin_server(protected: bool) -> Server:
    auth = BearerAuth("https://issuer.example", "http://127.0.0.1/mcp", verifier=Tokens()) if protected else None
    server = Server("pin", auth=auth)

    @server.tool
    async def transfer(ctx: Context) -> str:
        pin = await ctx.elicit("Your PIN?", PIN_FORM, key="pin")
        sure = await ctx.elicit("Sure?", OK_FORM, key="ok")
        return f"done {bool((sure.content or {}).get('ok'))} {len((pin.content or {}).get('pin', ''))}"

    return server


def call(url: str, token: str | None = None, **extra: Any) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    }
    params = {"name": "transfer", "arguments": {}, "_meta": meta, **extra}
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": "transfer",
    }
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    reply = httpx.post(url, content=json.dumps(body), headers=headers, timeout=10)
    return reply.json()  # type: ignore[no-any-return]


def decoded(state: str) -> bytes:
    """Every part of a state, base64url-decoded as far as it goes."""
    out = b""
    for part in state.split("."):
        out += base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    return out


def test_the_answers_in_a_state_are_not_readable() -> None:
    with serving_in_thread(pin_server(protected=False).http_app()) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        first = call(url)["result"]
        assert first["resultType"] == "input_required"
        answered = {"pin": {"action": "accept", "content": {"pin": PIN}}}
        second = call(url, inputResponses=answered, requestState=first["requestState"])["result"]
        assert second["resultType"] == "input_required" and "ok" in second["inputRequests"]
        state = second["requestState"]  # carries the PIN to the next round
        assert PIN not in state and PIN.encode() not in decoded(state)
        done = call(url, inputResponses={"ok": {"action": "accept", "content": {"ok": True}}}, requestState=state)
        assert done["result"]["content"][0]["text"] == f"done True {len(PIN)}"


def test_a_state_continues_a_round_only_for_its_caller() -> None:
    with serving_in_thread(pin_server(protected=True).http_app()) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        first = call(url, "alice")["result"]
        answered = {"pin": {"action": "accept", "content": {"pin": PIN}}}
        state = call(url, "alice", inputResponses=answered, requestState=first["requestState"])["result"]
        ok = {"ok": {"action": "accept", "content": {"ok": True}}}
        stolen = call(url, "bob", inputResponses=ok, requestState=state["requestState"])
        assert stolen["error"]["code"] == -32602 and "another caller" in stolen["error"]["message"]
        mine = call(url, "alice", inputResponses=ok, requestState=state["requestState"])
        assert mine["result"]["content"][0]["text"] == f"done True {len(PIN)}"
