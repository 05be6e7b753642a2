"""The stateless era's header mirrors compared exactly (issue 36.17), over real HTTP
(uvicorn on loopback): an integer is compared as a number, never through a float; only
plain ASCII decimals count as numbers; and an MCP header sent twice is refused, whichever
of its values would match."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mcpgen import Server
from mcpgen.runtime.shared.headers import encode_value
from tests.era import CAPABILITIES, MODERN
from tests.http_server import serving_in_thread

META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": CAPABILITIES}
COUNTED = {
    "type": "object",
    "properties": {"count": {"type": "integer", "x-mcp-header": "Count"}},
    "required": ["count"],
}


def counted_server() -> Server:
    server = Server("mirrors")

    @server.tool(input_schema=COUNTED)
    def counted(count: int) -> str:
        return str(count)

    return server


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with serving_in_thread(counted_server().http_app()) as port:
        yield f"http://127.0.0.1:{port}/mcp"


def call(url: str, count: Any, headers: list[tuple[str, str]], *, body: bytes | None = None) -> httpx.Response:
    """A tools/call of ``counted`` with these exact header lines (repeats kept)."""
    message = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"_meta": META, "name": "counted", "arguments": {"count": count}},
    }
    sent = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", MODERN),
        ("mcp-name", "counted"),
        *headers,
    ]
    if not any(name.lower() == "mcp-method" for name, _ in headers):
        sent.append(("mcp-method", "tools/call"))
    return httpx.post(url, content=body if body is not None else json.dumps(message), headers=sent, timeout=10)


def refused(response: httpx.Response) -> bool:
    return response.status_code == 400 and response.json()["error"]["code"] == -32020


def test_a_matching_integer_is_served(url: str) -> None:
    response = call(url, 1000, [("mcp-param-count", "1000")])
    assert response.status_code == 200 and response.json()["result"]["content"][0]["text"] == "1000"


def test_integers_compare_numerically_as_the_spec_says(url: str) -> None:
    assert call(url, 42, [("mcp-param-count", "42.0")]).status_code == 200


def test_integers_above_2_53_are_compared_exactly_not_as_floats(url: str) -> None:
    big = 2**53 + 1  # as a float it is 2**53: the two would compare equal
    assert refused(call(url, big, [("mcp-param-count", str(2**53))]))
    assert call(url, big, [("mcp-param-count", str(big))]).status_code == 200


@pytest.mark.parametrize("text", ["1_000", "\u0661\u0660\u0660\u0660", " 1e3x", "0x3e8", "inf"])
def test_only_plain_ascii_decimals_are_numbers(url: str, text: str) -> None:
    count = 1000
    header = encode_value(text)  # non-ASCII digits travel Base64-wrapped, as a client sends them
    assert refused(call(url, count, [("mcp-param-count", header)])), text


def test_a_repeated_param_header_is_refused_whichever_value_matches(url: str) -> None:
    for values in (("1", "2"), ("2", "1"), ("2", "2")):
        response = call(url, 2, [("mcp-param-count", values[0]), ("mcp-param-count", values[1])])
        assert refused(response), values
        assert "repeated" in response.json()["error"]["message"]


@pytest.mark.parametrize("name", ["mcp-method", "mcp-name", "mcp-protocol-version"])
def test_a_repeated_standard_header_is_refused(url: str, name: str) -> None:
    value = {"mcp-method": "tools/call", "mcp-name": "counted", "mcp-protocol-version": MODERN}[name]
    twice = [(name, value), (name, value)] if name == "mcp-method" else [(name, value)]  # the others: sent once already
    response = call(url, 1, [("mcp-param-count", "1"), *twice])
    assert refused(response), response.text


def test_other_repeated_headers_are_combined_not_refused(url: str) -> None:
    # Two Accept lines are one list (RFC 9110): the request is served.
    response = call(url, 3, [("mcp-param-count", "3"), ("accept", "text/event-stream")])
    assert response.status_code == 200, response.text
