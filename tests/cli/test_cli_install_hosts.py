"""`mcpgen install HOST` for each host app people use (issue 35.10), against a fake home
folder: the file each host reads, in its shape, with what was there kept; and the entry
written starts the server the way the host would. (The paths are Linux's, where CI runs;
Claude Desktop and Goose keep theirs elsewhere on macOS and Windows.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.paths import ROOT

PEER = ROOT / "tests" / "servers" / "cli_peer.py"
RUN = ["-m", "mcpgen", "run", str(PEER)]

# host -> (its file under the fake home or the current folder, the key of its servers, the
# entry it gets); None: the path is the current folder's.
HOSTS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "claude-code": ("home/.claude.json", "mcpServers", {"type": "stdio", "command": sys.executable, "args": RUN}),
    "cursor": ("home/.cursor/mcp.json", "mcpServers", {"command": sys.executable, "args": RUN}),
    "vscode": ("project/.vscode/mcp.json", "servers", {"type": "stdio", "command": sys.executable, "args": RUN}),
    "gemini-cli": ("home/.gemini/settings.json", "mcpServers", {"command": sys.executable, "args": RUN}),
    "mcp-json": ("project/mcp.json", "mcpServers", {"command": sys.executable, "args": RUN}),
    "claude-desktop": (
        "xdg/Claude/claude_desktop_config.json",
        "mcpServers",
        {"command": sys.executable, "args": RUN},
    ),
    "goose": (
        "xdg/goose/config.yaml",
        "extensions",
        {
            "enabled": True,
            "type": "stdio",
            "name": "cli-peer",
            "description": "MCP server cli-peer (mcpgen run)",
            "cmd": sys.executable,
            "args": RUN,
            "envs": {},
            "timeout": 300,
        },
    ),
}


def install(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`mcpgen install` with a fake home (and XDG config folder), from a project folder."""
    (tmp_path / "project").mkdir(exist_ok=True)
    env = {**os.environ, "HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "NO_COLOR": "1"}
    env.pop("APPDATA", None)
    return subprocess.run(
        [sys.executable, "-m", "mcpgen", "install", *args],
        cwd=tmp_path / "project",
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def load(path: Path) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    data = yaml.safe_load(text) if path.suffix == ".yaml" else json.loads(text)
    assert isinstance(data, dict)
    return data


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_each_host_gets_its_own_file_and_shape(tmp_path: Path, host: str) -> None:
    relative, key, entry = HOSTS[host]
    path = tmp_path / relative
    path.parent.mkdir(parents=True)
    theirs = {"theme": "dark", key: {"other": {"command": "other-server", "args": []}}}
    path.write_text(yaml.safe_dump(theirs) if path.suffix == ".yaml" else json.dumps(theirs))
    done = install(tmp_path, host, str(PEER))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"added 'cli-peer' in {path}; restart "), done.stdout
    data = load(path)
    assert data["theme"] == "dark" and data[key]["other"] == {"command": "other-server", "args": []}  # kept
    assert data[key]["cli-peer"] == entry
    again = install(tmp_path, host, str(PEER), "--env", "KEY=v")
    assert again.returncode == 0 and again.stdout.startswith("replaced 'cli-peer'")
    written = load(path)[key]["cli-peer"]
    assert written.get("env", written.get("envs")) == {"KEY": "v"}


@pytest.mark.parametrize("host", ["goose", "gemini-cli", "claude-code"])
def test_a_new_file_is_made_and_its_entry_runs_the_server(tmp_path: Path, host: str) -> None:
    relative, key, _ = HOSTS[host]
    assert install(tmp_path, host, str(PEER)).returncode == 0
    entry = load(tmp_path / relative)[key]["cli-peer"]
    command = [entry.get("command", entry.get("cmd")), *entry["args"]]
    started = subprocess.run(
        [sys.executable, "-m", "mcpgen", "call", " ".join(command), "tool", "label", "-a", "code=x", "-a", "count=1"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert started.returncode == 0 and started.stdout.startswith("code='x'"), started.stderr


def test_project_scope_for_claude_code_and_a_yaml_that_is_not_a_mapping(tmp_path: Path) -> None:
    done = install(tmp_path, "claude-code", str(PEER), "--config", ".mcp.json")
    assert done.returncode == 0, done.stderr
    assert load(tmp_path / "project" / ".mcp.json")["mcpServers"]["cli-peer"]["type"] == "stdio"
    broken = tmp_path / "broken.yaml"
    broken.write_text("- a list\n- not a mapping\n")
    refused = install(tmp_path, "goose", str(PEER), "--config", str(broken))
    assert refused.returncode == 2 and f"{broken} holds a YAML list, not a mapping" in refused.stderr
    assert broken.read_text() == "- a list\n- not a mapping\n"
    dry = install(tmp_path, "goose", str(PEER), "--dry-run")
    assert dry.returncode == 0 and yaml.safe_load(dry.stdout)["extensions"]["cli-peer"]["cmd"] == sys.executable
