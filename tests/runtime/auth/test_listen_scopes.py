"""A ``subscriptions/listen`` naming resources needs the scopes ``resources/subscribe`` of
each would (issue 36.19): a token refused the subscription is refused the listen too (403
insufficient_scope, naming the scopes to ask for), before any change reaches it. A
protected server under uvicorn on loopback, tokens from the tests' own verifier."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mcpgen import Server
from mcpgen.runtime.auth.bearer import BearerAuth
from mcpgen.runtime.auth.info import AuthInfo
from tests.era import CAPABILITIES, MODERN
from tests.http_server import free_port, serving_in_thread
from tests.tokens import ISSUER, Tokens

META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": CAPABILITIES}
TOKENS = {
    "plain": AuthInfo(ISSUER, "plain", "app", frozenset({"mcp"})),
    "reader": AuthInfo(ISSUER, "reader", "app", frozenset({"mcp", "secret:read"})),
}


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}/mcp"
    server = Server("guarded", auth=BearerAuth(ISSUER, endpoint, scopes=["mcp"], verifier=Tokens(TOKENS)))

    @server.resource("secret://plans", scopes=["secret:read"])
    def plans() -> str:
        return "the plans"

    @server.resource_template("vault://{item}", scopes=["secret:read"])
    def vault(item: str) -> str:
        return item

    @server.resource("public://news")
    def news() -> str:
        return "news"

    with serving_in_thread(server.http_app(), port, lifespan="off"):
        yield endpoint


def listen(url: str, token: str, uris: list[Any]) -> tuple[int, Any]:
    """POST a listen for ``uris``; its status and its first message (the acknowledgement,
    or the refusal)."""
    message = {
        "jsonrpc": "2.0",
        "id": "L",
        "method": "subscriptions/listen",
        "params": {"_meta": META, "notifications": {"toolsListChanged": True, "resourceSubscriptions": uris}},
    }
    headers = {
        "authorization": f"Bearer {token}",
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": "subscriptions/listen",
    }
    with httpx.stream("POST", url, content=json.dumps(message), headers=headers, timeout=10) as response:
        if not response.headers.get("content-type", "").startswith("text/event-stream"):
            return response.status_code, json.loads(response.read())
        for line in response.iter_lines():
            if line.startswith("data:"):
                return response.status_code, json.loads(line[5:])
    raise AssertionError("the stream ended before its first message")


@pytest.mark.parametrize("uri", ["secret://plans", "vault://blueprints"])
def test_a_listen_on_a_resource_needs_its_scopes(url: str, uri: str) -> None:
    status, refusal = listen(url, "plain", ["public://news", uri])
    assert status == 403, refusal
    assert "needs more scopes" in refusal["error"]["message"]
    status, ack = listen(url, "reader", ["public://news", uri])
    assert status == 200 and ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["notifications"]["resourceSubscriptions"] == ["public://news", uri]


def test_a_listen_on_public_resources_or_lists_needs_no_more(url: str) -> None:
    status, ack = listen(url, "plain", ["public://news"])
    assert status == 200 and ack["method"] == "notifications/subscriptions/acknowledged"
    status, ack = listen(url, "plain", [])
    assert status == 200 and ack["params"]["notifications"]["toolsListChanged"] is True


def test_the_refusal_names_the_scopes_to_step_up_to(url: str) -> None:
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "subscriptions/listen",
        "params": {"_meta": META, "notifications": {"resourceSubscriptions": ["secret://plans"]}},
    }
    headers = {
        "authorization": "Bearer plain",
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": "subscriptions/listen",
    }
    refused = httpx.post(url, content=json.dumps(message), headers=headers, timeout=10)
    assert refused.status_code == 403
    challenge = refused.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge and "secret:read" in challenge
