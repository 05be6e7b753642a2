"""A backend's static credentials from the gateway's configuration: ``headers`` on every
request to a URL backend, ``env`` in a command backend's environment, ``${NAME}`` filled
from the gateway's environment; in both eras of the client in front. And what they are
not: a backend's headers never reach another backend."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from mcpgen import Client, Gateway, Server
from mcpgen.generated import TextContent
from tests.http_server import free_port, serving_in_thread

pytestmark = pytest.mark.anyio

# A command backend: one tool telling the value of an environment variable.
ENV_BACKEND = """
import os
from mcpgen import Server
server = Server("env-backend")
@server.tool()
def variable(name: str) -> str:
    return os.environ.get(name, "<unset>")
server.run()
"""


class Recorder:
    """An ASGI app around another, keeping the headers of every HTTP request it gets."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.seen: list[dict[str, str]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            self.seen.append({k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]})
        await self.app(scope, receive, send)


def text(result: Any) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


@pytest.mark.parametrize("era", ["stateless", "handshake"])
async def test_static_headers_and_env_reach_their_backend_only(era: str) -> None:
    plain = Server("plain")

    @plain.tool()
    def ping() -> str:
        return "pong"

    keyed, other = Recorder(plain.http_app()), Recorder(Server("other").http_app())
    keyed_port, other_port = free_port(), free_port()
    config = {
        "mcpServers": {
            "keyed": {"url": f"http://127.0.0.1:{keyed_port}/mcp", "headers": {"X-Api-Key": "${API_KEY}"}},
            "other": {"url": f"http://127.0.0.1:{other_port}/mcp"},
            "local": {"command": sys.executable, "args": ["-c", ENV_BACKEND], "env": {"GREETING": "${GREETING}"}},
        }
    }
    environ = {"API_KEY": "k-123", "GREETING": "hello from the config"}
    with serving_in_thread(keyed, keyed_port), serving_in_thread(other, other_port):
        front = Gateway(config, environ=environ).server()
        async with Client(front, era=era) as client:
            assert text(await client.call_tool("keyed_ping")) == "pong"
            said = await client.call_tool("local_variable", {"name": "GREETING"})
            assert text(said) == "hello from the config"
            await client.list_tools()  # every backend listed: "other" was asked too
    assert keyed.seen and all(headers.get("x-api-key") == "k-123" for headers in keyed.seen)
    assert other.seen and not any("x-api-key" in headers for headers in other.seen)
