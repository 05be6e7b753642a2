"""`mcpgen call` against real servers: the demo server over stdio and HTTP, and the
reference server-everything (npm)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import ROOT
from tests.http_server import demo_http
from tests.test_interop import everything_command  # noqa: F401 (the npm-installed peer)
from tests.wire import DEMO

DEMO_CMD = f"{sys.executable} {DEMO}"


def mcpgen(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "mcpgen.cli", "call", *args], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=120)  # fmt: skip


def test_lists_everything_a_server_offers() -> None:
    proc = mcpgen(DEMO_CMD)
    assert proc.returncode == 0, proc.stderr
    for expected in ("demo 1.2.3", "tools (", "add", "resources (", "config://app", "file:///{name}", "prompts (", "review"):
        assert expected in proc.stdout
    listing = json.loads(mcpgen(DEMO_CMD, "--json").stdout)
    assert {t["name"] for t in listing["tools"]} >= {"add", "echo"}
    assert listing["resourceTemplates"][0]["uriTemplate"] == "file:///{name}"


def test_tool_read_and_prompt() -> None:
    added = json.loads(mcpgen(DEMO_CMD, "tool", "add", "-a", "a=1", "-a", "b=41", "--json").stdout)
    assert added["structuredContent"] == {"result": 42}
    assert mcpgen(DEMO_CMD, "tool", "echo", "-a", "text=hello world").stdout.strip() == "hello world"
    assert "remember the milk" in mcpgen(DEMO_CMD, "read", "file:///notes.txt").stdout
    prompt = mcpgen(DEMO_CMD, "prompt", "review", "-a", "code=x = 1")
    assert "Review this python code" in prompt.stdout


def test_exit_codes() -> None:
    assert mcpgen(DEMO_CMD, "tool", "fail").returncode == 1  # the tool reported an error
    missing = mcpgen(DEMO_CMD, "read", "file:///none")
    assert missing.returncode == 2 and "-32002" in missing.stderr
    assert mcpgen(DEMO_CMD, "frobnicate", "x").returncode == 2
    assert mcpgen(DEMO_CMD, "tool", "add", "-a", "novalue").returncode == 2
    dead = mcpgen(f"{sys.executable} -c pass")
    assert dead.returncode == 2 and dead.stderr.startswith("error: cannot connect")
    assert "Traceback" not in dead.stderr


def test_over_http() -> None:
    with demo_http() as url:
        proc = mcpgen(url, "tool", "echo", "-a", "text=over http")
        assert proc.returncode == 0 and proc.stdout.strip() == "over http"
        assert "add" in mcpgen(url).stdout


def test_against_server_everything(everything_command: list[str]) -> None:  # noqa: F811
    command = " ".join(everything_command)
    listing = json.loads(mcpgen(command, "--json").stdout)
    names = {t["name"] for t in listing["tools"]}
    assert "echo" in names
    echoed = mcpgen(command, "tool", "echo", "-a", "message=hi there")
    assert echoed.returncode == 0 and "hi there" in echoed.stdout
