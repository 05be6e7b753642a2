"""Who owns a session or a task on a protected server (security issue, point 4): the token's
issuer and subject, else its client id, never merged across kinds, and a token naming
neither is refused. Served by uvicorn over loopback; the tokens are read by a verifier of
the test's own (``BearerAuth(verifier=...)``, the public extension point), so that each can
name exactly the claims the case needs."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from mcpgen import BearerAuth, Server
from mcpgen.runtime.auth.info import AuthInfo
from tests.http_server import free_port, serving_in_thread
from tests.tokens import Tokens

ISSUER = "https://issuer.example"
TOKENS = {
    "alice": AuthInfo(ISSUER, "alice", "app", frozenset({"mcp"})),
    "bob-subject": AuthInfo(ISSUER, "bob", "app", frozenset({"mcp"})),
    "bob-client": AuthInfo(ISSUER, None, "bob", frozenset({"mcp"})),
    "bob-client-again": AuthInfo(ISSUER, None, "bob", frozenset({"mcp"})),
    "nobody": AuthInfo(ISSUER, None, None, frozenset({"mcp"})),
    "alice-elsewhere": AuthInfo("https://other.example", "alice", "app", frozenset({"mcp"})),
}


def test_the_owner_names_its_kind() -> None:
    assert TOKENS["bob-subject"].owner != TOKENS["bob-client"].owner
    assert TOKENS["bob-client"].owner == TOKENS["bob-client-again"].owner
    assert TOKENS["alice"].owner != TOKENS["alice-elsewhere"].owner
    assert TOKENS["alice"].owner == (ISSUER, "sub:alice")


@pytest.fixture(scope="module")
def url() -> Any:
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}/mcp"
    server = Server("principals", auth=BearerAuth(ISSUER, endpoint, scopes=["mcp"], verifier=Tokens(TOKENS)))

    @server.tool
    def ping() -> str:
        return "pong"

    with serving_in_thread(server.http_app(), port, lifespan="off"):
        yield endpoint


def post(url: str, token: str, body: dict[str, Any], session: str | None = None) -> httpx.Response:
    headers = {
        "authorization": f"Bearer {token}",
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25",
    }
    if session is not None:
        headers["mcp-session-id"] = session
    return httpx.post(url, content=json.dumps(body), headers=headers, timeout=10)


def open_session(url: str, token: str) -> str:
    hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
    reply = post(url, token, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello})
    assert reply.status_code == 200, reply.text
    return reply.headers["mcp-session-id"]


CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ping", "arguments": {}}}


def test_a_token_naming_no_one_is_refused(url: str) -> None:
    reply = post(url, "nobody", CALL)
    assert reply.status_code == 401
    assert 'error="invalid_token"' in reply.headers["www-authenticate"]


@pytest.mark.parametrize(
    ("opener", "other"), [("bob-subject", "bob-client"), ("bob-client", "bob-subject"), ("alice", "alice-elsewhere")]
)
def test_a_session_is_not_shared_across_kinds_or_issuers(url: str, opener: str, other: str) -> None:
    session = open_session(url, opener)
    assert post(url, opener, CALL, session).status_code == 200
    assert post(url, other, CALL, session).status_code == 404  # as if it did not exist


def test_the_same_client_is_the_same_principal(url: str) -> None:
    session = open_session(url, "bob-client")
    assert post(url, "bob-client-again", CALL, session).status_code == 200
