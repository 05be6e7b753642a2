"""``Server(versions=[...])``: a server pinned to some protocol revisions refuses the others as
a server that does not speak them does, in process, over stdio and over HTTP; clients that
probe (era="auto") land on what it speaks."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import httpx
import pytest

from mcpgen import Client, Server
from mcpgen.runtime.errors import INVALID_PARAMS, UNSUPPORTED_VERSION, McpError
from mcpgen.runtime.versions import SUPPORTED, served
from tests.http_server import serving_in_thread

pytestmark = pytest.mark.anyio
MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"


def pinned(*versions: str) -> Server:
    server = Server("pinned", versions=list(versions))

    @server.tool()
    async def hello() -> str:
        return "hi"

    return server


def test_served_versions_are_checked_and_kept_in_order() -> None:
    assert served(None) == SUPPORTED
    assert served([HANDSHAKE, MODERN]) == (MODERN, HANDSHAKE)
    assert served(HANDSHAKE) == (HANDSHAKE,)
    with pytest.raises(ValueError, match="1999-01-01"):
        served(["1999-01-01"])
    with pytest.raises(ValueError, match="no protocol version"):
        served([])
    with pytest.raises(ValueError):
        Server("x", versions=["2030-01-01"])


async def test_a_handshake_only_server_is_spoken_to_in_the_handshake_era() -> None:
    server = pinned(HANDSHAKE)
    async with Client(server) as client:  # auto: the probe is refused as by an older server
        assert client.spoken_era == "handshake" and client.session.protocol_version == HANDSHAKE
        assert (await client.call_tool("hello")).content[0].text == "hi"  # type: ignore[union-attr]
    async with Client(server, era="2025-06-18") as client:
        # A version it does not speak: answered with the one it does.
        assert client.session.protocol_version == HANDSHAKE
    with pytest.raises(McpError):
        async with Client(server, era="stateless"):
            pass


async def test_a_stateless_only_server_refuses_the_handshake() -> None:
    server = pinned(MODERN)
    async with Client(server) as client:
        assert client.spoken_era == "stateless"
        assert client.session.discovered is not None
        assert client.session.discovered.supported_versions == [MODERN]
    with pytest.raises(McpError) as refused:
        async with Client(server, era="handshake"):
            pass
    assert refused.value.code == INVALID_PARAMS
    assert refused.value.data == {"supported": [MODERN], "requested": HANDSHAKE}


def stdio_server(tmp_path: Path, versions: list[str]) -> list[str]:
    script = tmp_path / "pinned.py"
    script.write_text(
        textwrap.dedent(
            f"""
            from mcpgen import Server
            server = Server("pinned", versions={versions!r})

            @server.tool()
            async def hello() -> str:
                return "hi"

            server.run()
            """
        )
    )
    return [sys.executable, str(script)]


@pytest.mark.parametrize(("versions", "era"), [([HANDSHAKE], "handshake"), ([MODERN], "stateless")])
async def test_over_stdio_a_probing_client_lands_on_the_served_era(
    tmp_path: Path, versions: list[str], era: str
) -> None:
    command = stdio_server(tmp_path, versions)
    async with Client.stdio(*command) as client:
        assert client.spoken_era == era
        assert client.session.protocol_version == versions[0]
        assert (await client.call_tool("hello")).content[0].text == "hi"  # type: ignore[union-attr]


def test_over_http_each_refusal_names_the_served_versions() -> None:
    handshake_only, modern_only = pinned(HANDSHAKE), pinned(MODERN)
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "hello", "_meta": meta}}
    headers = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": "hello",
    }
    with serving_in_thread(handshake_only.http_app()) as port:
        reply = httpx.post(f"http://127.0.0.1:{port}/mcp", json=call, headers=headers)
        error = reply.json()["error"]
        assert reply.status_code == 400 and error["code"] == UNSUPPORTED_VERSION
        assert error["data"]["supported"] == [HANDSHAKE]
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": HANDSHAKE, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    with serving_in_thread(modern_only.http_app()) as port:
        reply = httpx.post(
            f"http://127.0.0.1:{port}/mcp", json=initialize, headers={"accept": "application/json, text/event-stream"}
        )
        body = reply.text
        answer = json.loads(body[body.index("{") :].splitlines()[0]) if "data:" in body else reply.json()
        assert answer["error"]["code"] == INVALID_PARAMS
        assert answer["error"]["data"] == {"supported": [MODERN], "requested": HANDSHAKE}
        discover = {"jsonrpc": "2.0", "id": 2, "method": "server/discover", "params": {"_meta": meta}}
        found = httpx.post(
            f"http://127.0.0.1:{port}/mcp",
            json=discover,
            headers={**headers, "mcp-method": "server/discover"},
        ).json()
        assert found["result"]["supportedVersions"] == [MODERN]
