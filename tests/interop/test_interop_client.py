"""The mcpgen ``Client`` in its automatic era against servers we did not write (issue 13,
point 7), each over stdio and Streamable HTTP, real processes on loopback:

* the official Python SDK 2.3 server (tests/interop/sdk_era_server.py), dual-era as the SDK
  ships it (the client must find 2026-07-28) and pinned to the handshake era (the client
  must fall back to ``initialize``);
* the reference server ``@modelcontextprotocol/server-everything`` (Node, pinned in
  tests/interop/package-lock.json, installed by test_interop's ``everything_command``
  fixture with ``npm ci``), which speaks only the handshake era.

Each connection lists the tools, calls one, reads a resource, gets a prompt and calls a tool
that elicits (answered by the client's elicitation handler), and the era actually spoken is
checked from both ends where the server can tell: the client's verdict and protocol
version, and (SDK) the version the server says it served the request in.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from msgspec import UNSET

from mcpgen import Client
from mcpgen.generated import (
    CallToolResult,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitResult,
    TextContent,
    TextResourceContents,
)
from tests.http_server import free_port, wait_until_up
from tests.interop.test_interop import everything_command  # noqa: F401  (the npm ci fixture)
from tests.paths import ROOT

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

INTEROP = ROOT / "tests" / "interop"
SDK_PEER = INTEROP / "sdk_era_server.py"
# Node's listen(PORT) binds every interface; this preload binds loopback only.
LOOPBACK = ROOT / "conformance" / "loopback.cjs"
TEST_TIMEOUT = 45.0  # seconds per test: an SDK server takes seconds to import on a busy machine
HANDSHAKE, MODERN = "2025-11-25", "2026-07-28"


@contextlib.contextmanager
def serving(command: list[str], url: str, log: Path, env: dict[str, str] | None = None) -> Iterator[None]:
    """A server process until the block ends; its output goes to ``log`` (read on failure)."""
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=INTEROP, env=env)
        try:
            try:
                wait_until_up(url, process, timeout=60)
            except (RuntimeError, TimeoutError) as exc:
                raise RuntimeError(f"{exc}\n{log.read_text(errors='replace')[-2000:]}") from None
            yield
        finally:
            process.terminate()
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture(scope="module")
def sdk_http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The SDK server over Streamable HTTP: ``{base}/mcp`` both eras, ``{base}/handshake/mcp``
    the handshake era only."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = tmp_path_factory.mktemp("sdk-http") / "server.log"
    with serving([sys.executable, str(SDK_PEER), "http", str(port)], f"{base}/mcp", log):
        yield base


@pytest.fixture(scope="module")
def everything_http(everything_command: list[str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:  # noqa: F811
    """server-everything's Streamable HTTP mode (``dist/index.js streamableHttp``) on loopback."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    env = {**os.environ, "PORT": str(port), "NODE_OPTIONS": f"--require {LOOPBACK}"}
    log = tmp_path_factory.mktemp("everything-http") / "server.log"
    node, script, _ = everything_command
    with serving([node, script, "streamableHttp"], url, log, env=env):
        yield url


def text_of(result: CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


# ==================================================================== the official Python SDK server


async def sdk_elicitor(params: ElicitRequestParams) -> ElicitResult:
    assert isinstance(params, ElicitRequestFormParams) and params.message == "Who are you?"
    assert set(params.requested_schema.properties) == {"name", "age"}
    return ElicitResult(action="accept", content={"name": "Ada", "age": 36})


def sdk_client(transport: str, era: str, sdk_http: str | None) -> Client:
    """A Client in its automatic era (no ``era=``) for the SDK server served as asked."""
    if transport == "stdio":
        mode = "stdio" if era == "both" else "stdio-handshake"
        return Client.stdio(
            sys.executable, str(SDK_PEER), mode, cwd=str(ROOT), elicitation=sdk_elicitor, on_stderr=lambda line: None
        )
    assert sdk_http is not None
    return Client.http(f"{sdk_http}{'/mcp' if era == 'both' else '/handshake/mcp'}", elicitation=sdk_elicitor)


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("served", ["both", "handshake"])
async def test_sdk_server(transport: str, served: str, request: pytest.FixtureRequest) -> None:
    """Served as the SDK ships it, the automatic client finds 2026-07-28; pinned to the
    handshake era, it falls back to ``initialize``. The same calls work in both."""
    base = request.getfixturevalue("sdk_http") if transport == "http" else None
    expected_era, version = ("stateless", MODERN) if served == "both" else ("handshake", HANDSHAKE)
    with anyio.fail_after(TEST_TIMEOUT):
        async with sdk_client(transport, served, base) as client:
            assert client.era == "auto"
            assert client.spoken_era == expected_era and client.session.protocol_version == version
            init = client.initialize_result
            assert init is not None and (init.server_info.name, init.server_info.version) == ("sdk-era-peer", "2.3.0")
            assert init.instructions == "The official SDK, both eras."
            # The server's own view of the era it served.
            assert text_of(await client.call_tool("era", {})) == version

            tools = {tool.name: tool for tool in await client.list_tools()}
            assert set(tools) == {"forecast", "primes", "greet", "era"}
            assert tools["forecast"].input_schema["required"] == ["city"]
            assert tools["forecast"].output_schema is not UNSET
            forecast = await client.call_tool("forecast", {"city": "Oslo", "days": 2})
            assert forecast.is_error is False and forecast.structured_content == {"city": "Oslo", "celsius": 22.0}

            # structuredContent: any JSON value from 2026-07-28 on, an object before.
            primes = await client.call_tool("primes", {"below": 12})
            assert isinstance(primes, CallToolResult) and text_of(primes) == "2,3,5,7,11"
            found = [2, 3, 5, 7, 11]
            assert primes.structured_content == (found if served == "both" else {"primes": found})

            # Elicitation: an InputRequiredResult and a retry (2026-07-28), or an
            # elicitation/create request mid-call (handshake era); one handler for both.
            greeted = await client.call_tool("greet", {})
            assert greeted.is_error is False and text_of(greeted) == "hello Ada (36)"

            settings = await client.read_resource("config://settings")
            assert settings.contents == [
                TextResourceContents(uri="config://settings", text='{"theme": "dark"}', mime_type="application/json")
            ]
            prompt = await client.get_prompt("summarize", {"text": "a story", "style": "long"})
            assert prompt.description == "Summarize a text."
            assert [(m.role, m.content) for m in prompt.messages] == [
                ("user", TextContent(text="Summarize (long): a story"))
            ]


# ==================================================================== server-everything (Node)


async def everything_elicitor(params: ElicitRequestParams) -> ElicitResult:
    assert isinstance(params, ElicitRequestFormParams)
    assert params.requested_schema.required == ["name"]
    return ElicitResult(
        action="accept", content={"name": "Ada", "check": True, "integer": 7, "untitledMultipleSelectEnum": ["Piano"]}
    )


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_everything_server(
    transport: str,
    everything_command: list[str],  # noqa: F811
    request: pytest.FixtureRequest,
) -> None:
    """server-everything speaks only the handshake era: the automatic client falls back
    (over HTTP its probe is answered 400 "Server not initialized")."""
    options: dict[str, Any] = {"elicitation": everything_elicitor}
    if transport == "stdio":
        client = Client.stdio(*everything_command, cwd=str(INTEROP), on_stderr=lambda line: None, **options)
    else:
        client = Client.http(request.getfixturevalue("everything_http"), **options)
    with anyio.fail_after(TEST_TIMEOUT):
        async with client:
            assert client.era == "auto"
            assert client.spoken_era == "handshake" and client.session.protocol_version == HANDSHAKE
            init = client.initialize_result
            assert init is not None and init.server_info.name == "mcp-servers/everything"
            # The elicitation tool is registered once the server has read our capabilities
            # (after `initialized`). Its list_changed may go out over HTTP before our GET
            # stream is open, and then nowhere: list until it is there.
            tools: set[str] = set()
            with anyio.fail_after(10):
                while "trigger-elicitation-request" not in tools:
                    tools = {tool.name for tool in await client.list_tools()}
                    await anyio.sleep(0.05)
            assert {"echo", "get-sum", "trigger-elicitation-request"} <= tools
            assert (await client.call_tool("echo", {"message": "héllo"})).content == [TextContent(text="Echo: héllo")]
            assert text_of(await client.call_tool("get-sum", {"a": 2, "b": 3})) == "The sum of 2 and 3 is 5."

            elicited = await client.call_tool("trigger-elicitation-request", {})
            assert "User provided the requested information" in text_of(elicited)
            assert "- Name: Ada" in text_of(elicited) and "- Favorite Integer: 7" in text_of(elicited)

            resources = await client.list_resources()
            assert resources and all(r.uri.startswith("demo://resource/static/") for r in resources)
            document = await client.read_resource(resources[0].uri)
            assert isinstance(document.contents[0], TextResourceContents) and document.contents[0].text
            dynamic = await client.read_resource("demo://resource/dynamic/text/3")
            assert dynamic.contents[0].text.startswith("Resource 3: This is a plaintext resource")  # type: ignore[union-attr]

            prompt = await client.get_prompt("args-prompt", {"city": "Oslo", "state": "Oslo"})
            assert prompt.messages[0].content == TextContent(text="What's weather in Oslo, Oslo?")
