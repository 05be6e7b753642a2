"""The README's examples and commands are the ones that work: its quick-start server runs
(stdio, a real subprocess) and answers the mcpgen Client; its test command is CI's."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from mcpgen import Client
from mcpgen.generated import TextContent, TextResourceContents
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")


def block_after(marker: str) -> str:
    """The fenced code block right after an HTML comment ``<!-- marker -->``."""
    found = re.search(rf"<!-- {re.escape(marker)} -->\n```\w*\n(.*?)```", README, re.S)
    assert found, f"no code block after <!-- {marker} --> in README.md"
    return found[1]


@pytest.fixture
def quick_start(tmp_path: Path) -> Path:
    server = tmp_path / "server.py"
    server.write_text(block_after("quick-start server"), encoding="utf-8")
    return server


@pytest.mark.anyio
async def test_the_quick_start_server_answers_the_client(quick_start: Path) -> None:
    with anyio.fail_after(30):
        async with Client.stdio(sys.executable, str(quick_start), cwd=str(quick_start.parent)) as client:
            tools = {tool.name: tool for tool in await client.list_tools()}
            assert tools["add"].description == "Add two numbers."
            result = await client.call_tool("add", {"a": 1, "b": 2})
            assert result.is_error is not True
            assert result.structured_content == {"result": 3}  # an int result is wrapped, per the spec

            assert [resource.uri for resource in await client.list_resources()] == ["config://app"]
            contents = (await client.read_resource("config://app")).contents
            assert contents == [TextResourceContents(uri="config://app", text="theme=dark")]

            assert [prompt.name for prompt in await client.list_prompts()] == ["review"]
            prompt = await client.get_prompt("review", {"code": "x = 1"})
            assert prompt.messages[0].content == TextContent(text="Please review this code:\n\nx = 1")


def test_the_quick_start_server_can_be_imported_without_serving(quick_start: Path) -> None:
    """``server.run()`` sits under ``if __name__ == "__main__"``: importing the module (as a
    test or another module would) returns at once instead of serving stdin."""
    stdin, keep_open = os.pipe()  # stdin stays open: a server reading it would never return
    try:
        run = subprocess.run(
            [sys.executable, "-c", "import server; print(server.server.info.name)"],
            cwd=quick_start.parent,
            stdin=stdin,
            capture_output=True,
            text=True,
            timeout=20,
        )
    finally:
        os.close(stdin)
        os.close(keep_open)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "demo"


def test_the_readme_opens_with_the_two_commands_and_ci_runs_its_test_command() -> None:
    """The first lines are one command that installs and runs the main job and one that
    installs and runs the tests; .ci/run runs that test command exactly."""
    assert README.startswith("# mcpgen\n\n```bash\n")
    first_block = README.split("```bash\n", 1)[1].split("```", 1)[0]
    commands = [line for line in first_block.splitlines() if line and not line.startswith("#")]
    assert len(commands) == 2, commands
    generate, test = commands
    assert "pip install" in generate and "mcpgen generate" in generate
    assert "pip install" in test and test.endswith("pytest && pytest -m slow")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert ci.rstrip("\n").splitlines()[-1] == test
