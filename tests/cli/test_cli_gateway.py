"""`mcpgen gateway CONFIG`: served over stdio (as a host app starts it) and over HTTP, a
configuration checked with --check, and each mistake one line with exit status 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcpgen import Client
from tests.http_server import free_port, running
from tests.paths import ROOT

BACKEND = ROOT / "tests" / "runtime" / "gateway" / "backends.py"


def mcpgen(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "mcpgen", *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120
    )


def config(tmp_path: Path, **backends: list[str]) -> Path:
    file = tmp_path / "gateway.json"
    servers = {name: {"command": sys.executable, "args": [str(BACKEND), *args]} for name, args in backends.items()}
    file.write_text(json.dumps({"mcpServers": servers}))
    return file


@pytest.mark.anyio
async def test_served_over_stdio_in_either_era(tmp_path: Path) -> None:
    file = config(tmp_path, old=["--versions", "2025-11-25"], new=["--versions", "2026-07-28"])
    for era in ("handshake", "stateless"):
        async with Client.stdio(sys.executable, "-m", "mcpgen", "gateway", str(file), era=era) as client:
            names = {tool.name for tool in await client.list_tools()}
            assert {"old_echo", "new_echo", "old_add", "new_add"} <= names
            for name in ("old_echo", "new_echo"):
                echoed = await client.call_tool(name, {"text": f"{era} via {name}"})
                assert echoed.content[0].text == f"{era} via {name}"  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_served_over_http(tmp_path: Path) -> None:
    file = config(tmp_path, only=["--versions", "2025-11-25"])
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    command = [sys.executable, "-m", "mcpgen", "gateway", str(file), "--transport", "http", "--port", str(port)]
    with running(command, url, cwd=ROOT):
        for era in ("handshake", "stateless"):
            async with Client.http(url, era=era) as client:
                assert client.spoken_era == era
                added = await client.call_tool("add", {"a": 20, "b": 22})
                assert added.structured_content == {"result": 42}


def test_check_connects_to_every_backend(tmp_path: Path) -> None:
    file = config(tmp_path, old=["--versions", "2025-11-25"], new=["--versions", "2026-07-28"])
    done = mcpgen("gateway", str(file), "--check")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("ok   backend old") and "handshake era (2025-11-25), 12 tools" in lines[0]
    assert lines[1].startswith("ok   backend new") and "stateless era (2026-07-28), 12 tools" in lines[1]
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"mcpServers": {"gone": {"command": sys.executable, "args": ["-c", "pass"]}}}))
    done = mcpgen("gateway", str(broken), "--check")
    assert done.returncode == 1 and done.stdout.startswith("FAIL backend gone"), done.stdout + done.stderr


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (None, "cannot read"),
        ("{", "is not JSON"),
        ('{"mcpServers": {"b": {"url": "ftp://x"}}}', "url must be http:// or https://"),
        ('{"mcpServers": {"b": {"url": "https://e.test/mcp", "headers": {"K": "${NOT_SET_ANYWHERE}"}}}}', "is not set"),
    ],
)
def test_a_bad_configuration_is_one_line(tmp_path: Path, content: str | None, says: str) -> None:
    file = tmp_path / "gateway.json"
    if content is not None:
        file.write_text(content)
    done = mcpgen("gateway", str(file))
    assert done.returncode == 2, done.stdout + done.stderr
    assert says in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr


def test_an_unknown_transport_is_refused(tmp_path: Path) -> None:
    done = mcpgen("gateway", str(config(tmp_path, b=[])), "--transport", "carrier-pigeon")
    assert done.returncode == 2 and "--transport is stdio or http" in done.stderr


def test_help_shows_examples() -> None:
    done = mcpgen("gateway", "--help")
    assert done.returncode == 0
    assert "mcpgen gateway servers.json --transport http --port 8080" in done.stdout
