"""What a handler's return value becomes (issue 35, point 13): a ``-> str`` resource is
``text/plain``, ``-> bytes`` ``application/octet-stream``; a tool that returns what cannot be
sent fails as a tool (an ``isError`` result naming the type), not as a protocol error; a
script's server.run("http") on a port in use says so in one line naming ``port=``."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from mcpgen import Client, Server
from mcpgen.generated import BlobResourceContents, TextContent, TextResourceContents

pytestmark = pytest.mark.anyio


class Opaque:
    """Nothing msgspec can encode."""


def made() -> Server:
    server = Server("made")

    @server.resource("note://plain")
    def plain() -> str:
        return "hello"

    @server.resource("note://raw")
    def raw() -> bytes:
        return b"\x00\x01"

    @server.tool
    def opaque() -> Opaque:
        return Opaque()

    @server.tool
    def fine() -> str:
        return "ok"

    return server


@pytest.mark.parametrize("era", ["handshake", "stateless"])
async def test_resource_types_and_an_unsendable_tool_result(era: str) -> None:
    async with Client(made(), era=era) as client:
        listed = {r.uri: r.mime_type for r in await client.list_resources()}
        assert listed == {"note://plain": "text/plain", "note://raw": "application/octet-stream"}
        (text,) = (await client.read_resource("note://plain")).contents
        assert isinstance(text, TextResourceContents) and (text.text, text.mime_type) == ("hello", "text/plain")
        (blob,) = (await client.read_resource("note://raw")).contents
        assert isinstance(blob, BlobResourceContents) and blob.mime_type == "application/octet-stream"
        failed = await client.call_tool("opaque", {})
        assert failed.is_error is True
        (said,) = failed.content
        assert isinstance(said, TextContent) and "cannot be sent (Opaque)" in said.text
        assert (await client.call_tool("fine", {})).is_error is False  # the session goes on


def test_a_script_on_a_port_in_use_gets_one_line_naming_port_in_server_run(tmp_path: Path) -> None:
    script = tmp_path / "server.py"
    script.write_text(
        "import sys\nfrom mcpgen import Server\nServer('busy').run('http', port=int(sys.argv[1]))\n", encoding="utf-8"
    )
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, str(script), str(port)], capture_output=True, text=True, timeout=60, cwd=tmp_path
        )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"error: port {port} on 127.0.0.1 is in use (another server is listening there): stop it, or pick "
        "another port (port= in server.run, --port with mcpgen run)"
    ]
