"""The README's examples and commands are the ones that work: its quick-start server runs
(stdio, a real subprocess) and answers the mcpgen Client; its test command is CI's entry
point. (tests/project/test_docs.py runs every python block of the README and the guides as written.)"""

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
    """The fenced code block right after an HTML comment ``<!-- marker -->`` (the quick-start
    server is ``<!-- file: server.py -->``: tests/project/test_docs.py writes it there for the client
    example after it)."""
    found = re.search(rf"<!-- {re.escape(marker)} -->\n```\w*\n(.*?)```", README, re.S)
    assert found, f"no code block after <!-- {marker} --> in README.md"
    return found[1]


@pytest.fixture
def quick_start(tmp_path: Path) -> Path:
    server = tmp_path / "server.py"
    server.write_text(block_after("file: server.py"), encoding="utf-8")
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
            assert contents == [TextResourceContents(uri="config://app", text="theme=dark", mime_type="text/plain")]

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


def test_the_readme_opens_with_the_two_commands_and_its_test_command_is_ci() -> None:
    """The first lines are one command that installs and runs the main job and one that
    installs and runs the tests; the latter is CI's own entry point, .ci/run, so the two
    cannot drift apart, and .ci/run installs the test extra and runs both suites."""
    assert README.startswith("# mcpgen\n\n```bash\n")
    first_block = README.split("```bash\n", 1)[1].split("```", 1)[0]
    commands = [line for line in first_block.splitlines() if line and not line.startswith("#")]
    assert len(commands) == 2, commands
    generate, test = commands
    assert "pip install" in generate and "mcpgen generate" in generate
    assert test == "bash .ci/run"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").rstrip("\n").splitlines()[-1]
    assert "pip install" in ci and ".[test]" in ci, ci
    assert re.search(r"\bpytest\b(?! -m)", ci) and "pytest -m slow" in ci, ci


def test_the_readme_is_for_users() -> None:
    """Short (the lab notes live in docs/), and what mcpgen is comes right after the two commands."""
    lines = README.splitlines()
    assert len(lines) <= 300, len(lines)
    opening = "\n".join(lines[:15])
    assert "Model Context Protocol" in opening, opening
    for heading in ("## Install", "## Quick start", "## The command line", "## Running the tests", "## Documentation"):
        assert f"\n{heading}\n" in README, heading


def test_the_readmes_links_lead_somewhere() -> None:
    """Every relative link of the README names a file of the repository."""
    targets = re.findall(r"\]\((?!https?://)([^)#]+)(?:#[^)]*)?\)", README)
    assert targets
    assert [target for target in targets if not (ROOT / target).exists()] == []


def test_the_readmes_run_command_works(tmp_path: Path) -> None:
    """The first command's job (after the venv and the install this environment already has):
    ``mcpgen generate --out build/mcp`` writes an importable bindings package."""
    first_block = README.split("```bash\n", 1)[1].split("```", 1)[0]
    run = next(line for line in first_block.splitlines() if "mcpgen generate" in line)
    job = run.split(" && ")[-1].split()
    assert job[:2] == ["mcpgen", "generate"] and job[-2:] == ["--out", "build/mcp"], job
    done = subprocess.run(
        [sys.executable, "-c", "from mcpgen.cli import main; main()", *job[1:]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    package = tmp_path / "build" / "mcp"
    check = subprocess.run(
        [sys.executable, "-c", "import mcp.types as t; print(t.__file__, t.CallToolResult.__name__)"],
        cwd=package.parent,
        capture_output=True,
        text=True,
        timeout=60,
    )
    # build/ comes first on the path: the generated package, not the official SDK's ``mcp``.
    assert check.stdout.split() == [str(package / "types.py"), "CallToolResult"], check.stderr


@pytest.mark.slow
def test_the_quick_start_passes_mypy_strict(quick_start: Path) -> None:
    """The README promises mypy --strict clean code: its server and client are (the client
    once read `.contents[0].text`, which a blob resource lacks: union-attr)."""
    client = README.split("in `client.py` beside it:\n\n```python\n", 1)[1].split("```", 1)[0]
    (quick_start.parent / "client.py").write_text(client, encoding="utf-8")
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "server.py", "client.py"],
        cwd=quick_start.parent,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def _ratios(text: str) -> list[str]:
    return re.findall(r"(\d+(?:\.\d+)?)x", text)


def test_the_speed_claims_are_one_set_from_docs_speed() -> None:
    """ "Why pick it" says what the README's speed table says, and the table says what
    docs/speed.md measured (its medians, rounded as the README shows them): one set of
    numbers, never two."""
    claim = next(line for line in README.splitlines() if line.startswith("* **Fast**"))
    rows = {
        "TypeScript SDK": next(
            line for line in README.splitlines() if line.startswith("| mcpgen `async def` ÷ TypeScript")
        ),
        "Python SDK": next(
            line for line in README.splitlines() if line.startswith("| mcpgen `async def` ÷ Python SDK")
        ),
    }
    table = {who: _ratios(row) for who, row in rows.items()}  # stdio 2025 / 2026, HTTP 2025 / 2026
    assert sorted(_ratios(claim)) == sorted(table["TypeScript SDK"] + table["Python SDK"]), (claim, table)
    speed = (ROOT / "docs" / "speed.md").read_text(encoding="utf-8")
    sections = ["stdio, 2025-11-25", "stdio, 2026-07-28", "Streamable HTTP, 2025-11-25", "Streamable HTTP, 2026-07-28"]
    for who, label in (("TypeScript SDK", "vs TypeScript SDK**"), ("Python SDK", "vs Python SDK")):
        for shown, section in zip(table[who], sections, strict=True):
            body = speed.split(f"### {section} (median of 3 runs)", 1)[1].split("###", 1)[0]
            row = next(line for line in body.splitlines() if line.startswith("| **mcpgen `async def` " + label))
            if who == "Python SDK" and "stdio" in section:
                row = next(line for line in body.splitlines() if "vs Python SDK `MCPServer`**" in line)
            measured = float(row.split("|")[3].strip().rstrip("x"))  # req/s, many in flight
            decimals = len(shown.split(".")[1]) if "." in shown else 0
            assert f"{measured:.{decimals}f}" == shown, (who, section, row, shown)
