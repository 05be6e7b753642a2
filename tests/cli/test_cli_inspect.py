"""`mcpgen inspect` (issue 35.9): what a server offers, in both eras, as text and as JSON:
who it is, the era and version, instructions, capabilities, extensions, tasks, and its
tools, resources, templates and prompts. Real servers over stdio."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.paths import ROOT
from tests.wire import DEMO

DEMO_CMD = f"{sys.executable} {DEMO}"
APPS_CMD = f"{sys.executable} {ROOT / 'examples' / 'apps' / 'server.py'}"


def inspect(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "mcpgen", "inspect", *args], capture_output=True, text=True, env=env, timeout=120
    )


@pytest.mark.parametrize(
    ("era", "spoken", "version", "tasks"),
    [
        ("auto", "stateless era (no handshake)", "2026-07-28", "offered for tools/call"),
        ("handshake", "handshake era (initialize)", "2025-11-25", "not offered"),
    ],
)
def test_what_a_server_offers_in_each_era(era: str, spoken: str, version: str, tasks: str) -> None:
    done = inspect(DEMO_CMD, "--era", era)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:6] == [
        "demo 1.2.3",
        f"  era: {spoken}, protocol version {version}",
        "  instructions: A server for tests.",
        "  capabilities: completions, logging, prompts (listChanged), resources (listChanged, subscribe), "
        "tools (listChanged)",
        "  extensions: none",
        f"  tasks: {tasks}",
    ]
    for heading in ("tools (18)", "resources (2)", "resourceTemplates (1)", "prompts (2)"):
        assert heading in lines
    assert "  add  a: integer, b: integer" in lines


def test_extensions_and_json() -> None:
    done = inspect(APPS_CMD, "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["server"] == {"name": "dice", "version": "1.0.0"}
    assert data["extensions"] == {"io.modelcontextprotocol/ui": {}}
    assert (data["era"], data["protocolVersion"], data["tasks"]) == ("stateless", "2026-07-28", True)
    assert {tool["name"] for tool in data["tools"]} == {"roll_dice", "reset_seed"}
    assert "extensions" not in data["capabilities"]  # listed apart
    handshake = json.loads(inspect(APPS_CMD, "--json", "--era", "handshake").stdout)
    assert handshake["extensions"] == data["extensions"] and handshake["era"] == "handshake"
    text = inspect(APPS_CMD).stdout
    assert "  extensions: io.modelcontextprotocol/ui" in text.splitlines()


def test_an_unreachable_server_is_one_line() -> None:
    done = inspect(f"{sys.executable} -c pass")
    assert done.returncode == 2 and done.stderr.startswith("error: cannot connect")
