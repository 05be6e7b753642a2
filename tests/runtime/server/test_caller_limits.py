"""Limits per caller on an HTTP server (issue 36.12, 36.13), on uvicorn over loopback with
clients on two loopback addresses (127.0.0.1 and 127.0.0.2):

* one caller holds at most its share of ``max_sessions`` (a quarter unless set): past it a
  new session is refused with 429 and Retry-After, while another caller still gets in;
  a caller is its principal on a protected server, else its address (or what a trusted
  proxy's ``forwarded_header`` says);
* ``RateLimit`` keys an unauthenticated caller by that address: a new session does not
  refill its bucket, and stateless callers are not lumped into one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mcpgen import RateLimit, Server
from mcpgen.runtime.auth.bearer import BearerAuth
from tests.era import CAPABILITIES, MODERN
from tests.http_server import free_port, serving_in_thread
from tests.tokens import ISSUER, Tokens

HELLO = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": CAPABILITIES}


def from_address(address: str, **options: Any) -> httpx.Client:
    """An HTTP client whose connections leave from ``address`` (any 127/8 address is local)."""
    return httpx.Client(transport=httpx.HTTPTransport(local_address=address), timeout=10, **options)


def initialize(client: httpx.Client, url: str, **headers: str) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": HELLO}
    return client.post(url, content=json.dumps(body), headers={**HEADERS, **headers})


def echo_server() -> Server:
    server = Server("callers", middleware=[RateLimit(rate=0.01, burst=2, methods=frozenset({"tools/call"}))])

    @server.tool()
    def echo(text: str) -> str:
        return text

    return server


@pytest.fixture
def url() -> Iterator[str]:
    with serving_in_thread(echo_server().http_app(max_sessions=8)) as port:  # a share of 2 each
        yield f"http://127.0.0.1:{port}/mcp"


def test_one_address_holds_its_share_of_the_sessions_and_no_more(url: str) -> None:
    with from_address("127.0.0.1") as first, from_address("127.0.0.2") as second:
        assert [initialize(first, url).status_code for _ in range(2)] == [200, 200]
        refused = initialize(first, url)
        assert refused.status_code == 429, refused.text
        assert refused.headers["retry-after"] == "5" and refused.json()["error"]["code"] == -32000
        assert "this caller has 2 sessions open" in refused.json()["error"]["message"]
        # Another caller is not locked out by the first.
        opened = initialize(second, url)
        assert opened.status_code == 200
        # A session that ends gives its caller room again.
        gone = second.delete(url, headers={"mcp-session-id": opened.headers["mcp-session-id"]})
        assert gone.status_code == 200
        assert [initialize(second, url).status_code for _ in range(3)] == [200, 200, 429]


def test_a_protected_server_counts_principals_not_addresses() -> None:
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}/mcp"
    server = Server("guarded", auth=BearerAuth(ISSUER, endpoint, scopes=["mcp"], verifier=Tokens()))
    with serving_in_thread(server.http_app(max_sessions=4), port, lifespan="off"), from_address("127.0.0.1") as client:
        alice = {"authorization": "Bearer alice"}
        assert [initialize(client, endpoint, **alice).status_code for _ in range(2)] == [200, 429]
        assert initialize(client, endpoint, authorization="Bearer bob").status_code == 200  # same address


def test_a_trusted_proxys_header_names_the_caller() -> None:
    app = echo_server().http_app(max_sessions=8, forwarded_header="X-Forwarded-For")
    with serving_in_thread(app) as port, from_address("127.0.0.1") as proxy:
        url = f"http://127.0.0.1:{port}/mcp"
        one = {"x-forwarded-for": "203.0.113.9, 198.51.100.1"}  # the proxy appended the last one
        other = {"x-forwarded-for": "198.51.100.2"}
        assert [initialize(proxy, url, **one).status_code for _ in range(3)] == [200, 200, 429]
        assert initialize(proxy, url, **other).status_code == 200


def call(client: httpx.Client, url: str, session: str | None, text: str) -> dict[str, Any]:
    if session is None:  # the stateless era: no session
        params: dict[str, Any] = {"_meta": META, "name": "echo", "arguments": {"text": text}}
        headers = {"mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": "echo"}
    else:
        params = {"name": "echo", "arguments": {"text": text}}
        headers = {"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    reply: dict[str, Any] = client.post(url, content=json.dumps(body), headers={**HEADERS, **headers}).json()
    return reply


def test_rate_limit_keys_an_unauthenticated_caller_by_address_not_session(url: str) -> None:
    with from_address("127.0.0.1") as client:
        outcomes = []
        for n in range(3):  # a fresh session for every call: a new bucket no more
            session = initialize(client, url).headers.get("mcp-session-id")
            outcomes.append("result" in call(client, url, session, str(n)))
            if session is not None:
                client.delete(url, headers={"mcp-session-id": session})
        assert outcomes == [True, True, False]


def test_rate_limit_gives_each_stateless_caller_its_own_bucket(url: str) -> None:
    with from_address("127.0.0.1") as busy, from_address("127.0.0.2") as newcomer:
        assert ["result" in call(busy, url, None, str(n)) for n in range(3)] == [True, True, False]
        refused = call(busy, url, None, "again")
        assert refused["error"]["code"] == -32000 and "retry in" in refused["error"]["message"]
        assert "result" in call(newcomer, url, None, "first")  # not refused for another's calls
