"""The session engine checks each outgoing request against the declared capabilities; the
verdicts it keeps (mcpgen/runtime/jsonrpc/session.py, _check_outgoing) hold only for the very
capability objects they were made with."""

from __future__ import annotations

import pytest

from mcpgen import Client, Server
from mcpgen.runtime.errors import CapabilityError
from mcpgen.runtime.jsonrpc.capabilities import Declared

pytestmark = pytest.mark.anyio


def server() -> Server:
    app = Server("checks")

    @app.tool()
    def echo(text: str) -> str:
        return text

    @app.prompt()
    def greet() -> str:
        return "hello"

    return app


async def test_a_request_the_server_did_not_declare_is_refused_before_it_is_sent() -> None:
    async with Client(server(), era="handshake") as client:
        for _ in range(3):  # allowed, then allowed from what was kept
            assert [p.name for p in await client.list_prompts()] == ["greet"]
        session = client.session
        declared = session.peer_caps
        session.peer_caps = Declared({"tools": {}})  # what another handshake could bring
        with pytest.raises(CapabilityError, match="prompts"):
            await client.list_prompts()
        assert [t.name for t in await client.list_tools()] == ["echo"]
        session.peer_caps = declared
        assert [p.name for p in await client.list_prompts()] == ["greet"]
