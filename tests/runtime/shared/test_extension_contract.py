"""The extension contract: an extension defined here, in the tests, with its own method and
capability, served and used in both eras over every transport, without a line of it under
mcpgen/. What the built-in extensions (MCP Apps, skills) do through the same contract is
tested beside them; here only the contract itself."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from mcpgen import Call, CallNext, Client, Context, Extension, ExtensionMethod, McpError, Server
from tests.http_server import free_port, running

pytestmark = pytest.mark.anyio

ERAS = ("handshake", "stateless")
IDENTIFIER = "com.example/shout"


class SayParams(msgspec.Struct, omit_defaults=True):
    text: str
    times: int = 1
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class Shout(Extension):
    """Says what it is told, louder: ``shout/say``. Declares ``{"loud": true}`` on a server
    and ``{"accepts": ["text"]}`` on a client."""

    identifier = IDENTIFIER
    meta_keys = frozenset({"com.example/volume"})

    def settings(self) -> dict[str, Any]:
        return {"loud": True}

    def client_settings(self) -> dict[str, Any]:
        return {"accepts": ["text"]}

    def methods(self) -> list[ExtensionMethod]:
        return [ExtensionMethod("shout/say", SayParams, self.say, params_required=True)]

    def attach(self, server: Any) -> None:
        @server.tool()
        def volume() -> str:
            """A tool the extension registers when a server takes it."""
            return "11"

    async def say(self, params: SayParams) -> dict[str, Any]:
        ctx = Context.current()
        declared = ctx.client_capabilities.get("extensions", {}).get(IDENTIFIER)
        return {"text": " ".join([params.text.upper()] * params.times), "client": declared}


def make_server() -> Server:
    seen: list[str] = []

    async def record(call: Call, call_next: CallNext) -> Any:
        seen.append(call.method)
        return await call_next(call)

    server = Server("shouting", extensions=[Shout()], middleware=[record])
    server.seen = seen  # type: ignore[attr-defined]
    return server


async def use(client: Client) -> None:
    assert client.server_extensions[IDENTIFIER] == {"loud": True}
    answer = await client.request("shout/say", {"text": "hi", "times": 2})
    assert answer == {"text": "HI HI", "client": {"accepts": ["text"]}}
    assert [t.name for t in await client.list_tools()] == ["volume"]
    with pytest.raises(McpError) as wrong:
        await client.request("shout/say", {"times": "many"})  # text missing, times not an int
    assert wrong.value.code == -32602


@pytest.mark.parametrize("era", ERAS)
async def test_an_extension_of_the_tests_works_in_process(era: str) -> None:
    server = make_server()
    async with Client(server, era=era, extensions=[Shout()]) as client:
        assert client.spoken_era == era
        await use(client)
    # The middleware saw the call; the malformed one was refused before any handler (as a
    # core method's is, in both eras).
    assert server.seen.count("shout/say") == 1  # type: ignore[attr-defined]
    assert server.extensions == {IDENTIFIER: {"loud": True}}


@pytest.fixture
def script(tmp_path: Path) -> Path:
    """A server script that imports the extension from this very test module."""
    path = tmp_path / "shouting.py"
    path.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(Path(__file__).resolve().parents[3])!r})\n"
        "from tests.runtime.shared.test_extension_contract import make_server\n"
        "server = make_server()\n"
        "if len(sys.argv) > 1:\n"
        "    server.run('http', port=int(sys.argv[1]))\n"
        "else:\n"
        "    server.run()\n"
    )
    return path


@pytest.mark.parametrize("era", ERAS)
async def test_an_extension_of_the_tests_works_over_stdio(era: str, script: Path) -> None:
    async with Client.stdio(sys.executable, str(script), era=era, extensions=[Shout()]) as client:
        assert client.spoken_era == era
        await use(client)


@pytest.fixture
async def http_url(script: Path) -> AsyncIterator[str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with running([sys.executable, str(script), str(port)], url):
        yield url


@pytest.mark.parametrize("era", ERAS)
async def test_an_extension_of_the_tests_works_over_http(era: str, http_url: str) -> None:
    async with Client.http(http_url, era=era, extensions=[Shout()]) as client:
        assert client.spoken_era == era
        await use(client)


def test_an_extension_is_added_once_and_needs_an_identifier() -> None:
    server = Server("twice", extensions=[Shout()])
    with pytest.raises(ValueError, match="added already"):
        server.extend(Shout())
    with pytest.raises(ValueError, match="identifier"):
        Extension()
