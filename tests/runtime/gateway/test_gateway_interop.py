"""The gateway between real peers, over stdio (real subprocesses):

* the official Python SDK's client (``mcp`` 2.3) in its 2026-07-28 mode, through ``mcpgen
  gateway``, to the reference server-everything (npm, pinned in tests/interop: a
  handshake-era server): its tools that elicit and sample ask the SDK's callbacks, as
  InputRequiredResult rounds; concurrent calls' questions do not cross; and the same in
  the SDK's handshake-era mode;
* a FastMCP server (PyPI) behind the gateway, called by mcpgen's client in both eras,
  its elicitation included;
* the MCP Inspector's CLI (npm, pinned in tests/cli/inspector) in front of the gateway,
  listing and calling the tools of a stateless-only backend behind it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp.types as sdk
import pytest
from mcp import Client as SdkClient
from mcp import StdioServerParameters, stdio_client
from mcp.client.session import ClientRequestContext

from mcpgen import Client
from mcpgen.generated import ElicitRequestParams, ElicitResult, TextContent, TextResourceContents
from tests.cli.test_cli_dev import installed_inspector, shutil_which
from tests.interop.test_interop import INTEROP, everything_command  # noqa: F401 (a fixture)
from tests.paths import ROOT

pytestmark = [
    pytest.mark.slow,
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]
TIMEOUT = 60.0  # seconds per test: servers start (Node, Python), through a gateway


def gateway_config(tmp_path: Path, backends: dict[str, Any]) -> Path:
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"mcpServers": backends}))
    return config


def gateway_command(config: Path) -> list[str]:
    return [sys.executable, "-m", "mcpgen", "gateway", str(config)]


def text_of(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


@asynccontextmanager
async def sdk_client(config: Path, mode: str, tmp_path: Path, **callbacks: Any) -> AsyncIterator[SdkClient]:
    command = gateway_command(config)
    params = StdioServerParameters(command=command[0], args=command[1:], cwd=str(ROOT))
    with (tmp_path / "gateway-stderr.log").open("w") as errlog:
        async with SdkClient(stdio_client(params, errlog=errlog), mode=mode, read_timeout_seconds=30, **callbacks) as c:
            yield c


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
async def test_the_sdk_client_through_the_gateway_to_server_everything(
    everything_command: list[str],  # noqa: F811 (the fixture imported above)
    tmp_path: Path,
    mode: str,
) -> None:
    config = gateway_config(
        tmp_path,
        {"everything": {"command": everything_command[0], "args": everything_command[1:], "cwd": str(INTEROP)}},
    )
    elicited: list[sdk.ElicitRequestParams] = []

    async def elicitation(context: ClientRequestContext, params: sdk.ElicitRequestParams) -> sdk.ElicitResult:
        elicited.append(params)
        assert isinstance(params, sdk.ElicitRequestFormParams)
        assert "name" in params.requested_schema["properties"]
        content = {"name": "Ada", "check": True, "integer": 7, "untitledMultipleSelectEnum": ["Piano"]}
        return sdk.ElicitResult(action="accept", content=content)

    async def sampling(
        context: ClientRequestContext, params: sdk.CreateMessageRequestParams
    ) -> sdk.CreateMessageResult:
        question = params.messages[0].content
        assert isinstance(question, sdk.TextContent)
        return sdk.CreateMessageResult(
            role="assistant",
            content=sdk.TextContent(type="text", text=f"sampled <{question.text}>"),
            model="sdk-fake",
            stop_reason="endTurn",
        )

    with anyio.fail_after(TIMEOUT):
        async with sdk_client(
            config, mode, tmp_path, elicitation_callback=elicitation, sampling_callback=sampling
        ) as client:
            assert client.protocol_version == ("2026-07-28" if mode != "legacy" else "2025-11-25")
            tools = {tool.name for tool in (await client.list_tools()).tools}
            # The tools server-everything registers for a client that can be asked: the
            # gateway's connection to it declared what the SDK client declared.
            assert {"echo", "trigger-elicitation-request", "trigger-sampling-request"} <= tools
            echoed = await client.call_tool("echo", {"message": "héllo"})
            assert text_of(echoed) == "Echo: héllo"

            form = await client.call_tool("trigger-elicitation-request", {})
            assert form.is_error is False, text_of(form)
            assert "- Name: Ada" in text_of(form) and "- Favorite Integer: 7" in text_of(form)
            assert len(elicited) == 1

            sampled = await client.call_tool("trigger-sampling-request", {"prompt": "hello", "maxTokens": 12})
            assert sampled.is_error is False and "sampled <" in text_of(sampled) and "hello" in text_of(sampled)

            # Concurrent calls: each one's question reaches the client with its own prompt,
            # and each answer goes back to the call that asked it.
            answers: dict[str, str] = {}

            async def sample(word: str) -> None:
                answers[word] = text_of(
                    await client.call_tool("trigger-sampling-request", {"prompt": word, "maxTokens": 12})
                )

            async with anyio.create_task_group() as group:
                for word in ("alpha", "bravo", "charlie", "delta"):
                    group.start_soon(sample, word)
            for word, answer in answers.items():
                assert f"context: {word}>" in answer, answers


async def ask_name(params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"value": "Grace"})


@pytest.mark.parametrize("pinned", ["auto", "handshake"])
@pytest.mark.parametrize("era", ["handshake", "stateless"])
async def test_a_fastmcp_server_behind_the_gateway(tmp_path: Path, era: str, pinned: str) -> None:
    """FastMCP speaks both eras (its discover names 2026-07-28 only; the gateway tries its
    initialize for a handshake-era client and finds it), but asks the user only in the
    handshake era: behind a gateway told to speak that era to it (``"era": "handshake"``),
    a stateless-era client is asked too, in rounds."""
    script = ROOT / "tests" / "runtime" / "gateway" / "fastmcp_server.py"
    backend = {"command": sys.executable, "args": [str(script)], "era": pinned}
    config = gateway_config(tmp_path, {"fastmcp": backend})
    with anyio.fail_after(TIMEOUT):
        async with Client.stdio(*gateway_command(config), era=era, elicitation=ask_name) as client:
            assert client.spoken_era == era
            assert client.initialize_result is not None
            assert client.initialize_result.server_info.name == "fastmcp-peer"
            assert {tool.name for tool in await client.list_tools()} == {"shout", "whoami"}
            assert text_of(await client.call_tool("shout", {"text": "quiet"})) == "QUIET"
            whoami = text_of(await client.call_tool("whoami"))
            if era == "stateless" and pinned == "auto":
                assert "unavailable on 2026-07-28 connections" in whoami  # FastMCP's own answer, relayed
            else:
                assert whoami == "you are Grace"
            read = await client.read_resource("fastmcp://motto")
            assert isinstance(read.contents[0], TextResourceContents) and read.contents[0].text == "fast, they said"


def test_the_inspector_cli_in_front_of_the_gateway(tmp_path: Path) -> None:
    """The Inspector speaks the handshake era; the backend only the stateless era."""
    backend = ROOT / "tests" / "runtime" / "gateway" / "backends.py"
    config = gateway_config(
        tmp_path, {"modern": {"command": sys.executable, "args": [str(backend), "--versions", "2026-07-28"]}}
    )
    inspector = [shutil_which("node"), str(installed_inspector()), "--cli", *gateway_command(config)]

    def inspect(*args: str) -> Any:
        done = subprocess.run([*inspector, *args], capture_output=True, text=True, timeout=120, cwd=ROOT)
        assert done.returncode == 0, done.stdout + done.stderr
        return json.loads(done.stdout)

    listed = inspect("--method", "tools/list")
    assert {"echo", "add", "ask"} <= {tool["name"] for tool in listed["tools"]}
    called = inspect("--method", "tools/call", "--tool-name", "echo", "--tool-arg", "text=through the gateway")
    assert called["content"] == [{"type": "text", "text": "through the gateway"}]
    added = inspect("--method", "tools/call", "--tool-name", "add", "--tool-arg", "a=2", "--tool-arg", "b=3")
    assert added["structuredContent"] == {"result": 5}
    resources = inspect("--method", "resources/list")
    assert [r["uri"] for r in resources["resources"]] == ["data://greeting"]
    assert isinstance(TextContent(text="x"), TextContent)  # the bindings the other tests use load too
