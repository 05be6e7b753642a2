"""``subscriptions/listen`` within bounds (issue 36.10), over uvicorn on loopback with
callers on two loopback addresses: at most ``max_listens`` open at once and
``max_listens_per_caller`` for one caller (more are refused -32000 at once, the open ones
kept), at most ``max_listen_uris`` resources named by one, each ending with its result after
``listen_lifetime`` seconds; short requests are served all the while."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mcpgen import Server
from tests.era import CAPABILITIES, MODERN
from tests.http_server import serving_in_thread

META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": CAPABILITIES}
HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": MODERN,
}


def server() -> Server:
    found = Server("listened")

    @found.tool()
    def echo(text: str) -> str:
        return text

    @found.resource("memo://one")
    def memo() -> str:
        return "one"

    return found


def from_address(address: str) -> httpx.Client:
    return httpx.Client(transport=httpx.HTTPTransport(local_address=address), timeout=10)


def listen_body(uris: list[str]) -> bytes:
    params = {"_meta": META, "notifications": {"toolsListChanged": True, "resourceSubscriptions": uris}}
    return json.dumps({"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen", "params": params}).encode()


class Listen:
    """One listen POST, kept open: ``first`` is its first message (the acknowledgement, or
    the refusal)."""

    def __init__(self, client: httpx.Client, url: str, uris: list[str]) -> None:
        self.stream = client.stream(
            "POST", url, content=listen_body(uris), headers={**HEADERS, "mcp-method": "subscriptions/listen"}
        )
        self.response = self.stream.__enter__()
        self.lines = self.response.iter_lines()
        self.status = self.response.status_code
        if not self.response.headers["content-type"].startswith("text/event-stream"):
            self.first: Any = json.loads(self.response.read())
        else:
            self.first = self.next()

    def next(self) -> Any:
        for line in self.lines:
            if line.startswith("data:"):
                return json.loads(line[5:])
        return None

    @property
    def open(self) -> bool:
        return self.first.get("method") == "notifications/subscriptions/acknowledged"

    def close(self) -> None:
        self.stream.__exit__(None, None, None)


def echo(client: httpx.Client, url: str) -> Any:
    params = {"_meta": META, "name": "echo", "arguments": {"text": "short"}}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
    headers = {**HEADERS, "mcp-method": "tools/call", "mcp-name": "echo"}
    return client.post(url, content=body, headers=headers).json()


@pytest.fixture
def url() -> Iterator[str]:
    app = server().http_app(max_listens=3, max_listens_per_caller=2, max_listen_uris=5, listen_lifetime=30)
    with serving_in_thread(app) as port:
        yield f"http://127.0.0.1:{port}/mcp"


def test_listens_are_bounded_in_total_and_per_caller(url: str) -> None:
    opened: list[Listen] = []
    with from_address("127.0.0.1") as a, from_address("127.0.0.2") as b, contextlib.ExitStack() as stack:
        stack.callback(lambda: [listen.close() for listen in opened])
        opened += [Listen(a, url, ["memo://one"]) for _ in range(2)]
        assert all(listen.open for listen in opened)
        third = Listen(a, url, [])
        third.close()
        assert third.first["error"]["code"] == -32000 and "this caller has 2" in third.first["error"]["message"]
        opened.append(Listen(b, url, []))  # another caller: in, the server's third
        assert opened[-1].open
        full = Listen(b, url, [])
        full.close()
        assert full.first["error"]["code"] == -32000 and "3 listen streams open" in full.first["error"]["message"]
        assert echo(a, url)["result"]["content"][0]["text"] == "short"  # short requests go on
        opened.pop(0).close()  # a listen that ends makes room
        deadline = time.monotonic() + 5
        while not (again := Listen(a, url, [])).open:
            again.close()
            assert time.monotonic() < deadline, again.first
            time.sleep(0.05)
        opened.append(again)


def test_a_listen_names_at_most_max_listen_uris_resources(url: str) -> None:
    with from_address("127.0.0.1") as client:
        refused = Listen(client, url, [f"memo://{n}" for n in range(6)])
        refused.close()
        assert refused.status == 400 and refused.first["error"]["code"] == -32602
        assert "at most 5 resources" in refused.first["error"]["message"]
        within = Listen(client, url, [f"memo://{n}" for n in range(5)])
        within.close()
        assert within.open


def test_a_listen_ends_with_its_result_after_its_lifetime() -> None:
    with serving_in_thread(server().http_app(listen_lifetime=0.5)) as port, from_address("127.0.0.1") as client:
        url = f"http://127.0.0.1:{port}/mcp"
        started = time.monotonic()
        listen = Listen(client, url, ["memo://one"])
        try:
            assert listen.open
            final = listen.next()
        finally:
            listen.close()
        assert final["id"] == "L" and "result" in final, final
        assert 0.4 < time.monotonic() - started < 10
