"""`mcpgen run FILE` (stdio and HTTP) and `mcpgen install HOST FILE` (host config files),
with real subprocesses: the installed entry is started the way the host would start it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcpgen import Client
from tests.conftest import ROOT
from tests.http_server import free_port, running

PEER = ROOT / "tests" / "servers" / "cli_peer.py"


def mcpgen(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "mcpgen", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=120
    )


async def label_via(command: str, *args: str, **options: object) -> str:
    async with Client.stdio(command, *args, on_stderr=lambda line: None, **options) as client:  # type: ignore[arg-type]
        result = await client.call_tool("label", {"code": "x", "count": 1})
    return result.content[0].text  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_run_serves_a_file_a_named_server_and_a_module_over_stdio(tmp_path: Path) -> None:
    loud = tmp_path / "loud.py"
    loud.write_text(  # prints while imported: on stdio that must not reach the protocol stream
        "print('hello from import')\n"
        "from mcpgen import Server\n"
        "main = Server('loud')\n"
        "@main.tool()\n"
        "def label(code: str, count: int) -> str:\n"
        "    return 'loud ' + code\n"
        "if __name__ == '__main__':\n"
        "    raise SystemExit('the main block must not run')\n"
    )
    assert await label_via(sys.executable, "-m", "mcpgen", "run", str(PEER)) == "code='x' count=1 ratio=1.0 tags=None"
    assert (await label_via(sys.executable, "-m", "mcpgen", "run", f"{PEER}:server")).startswith("code='x'")
    assert await label_via(sys.executable, "-m", "mcpgen", "run", str(loud)) == "loud x"
    module = await label_via(sys.executable, "-m", "mcpgen", "run", "tests.servers.cli_peer", cwd=str(ROOT))
    assert module.startswith("code='x'")


def test_run_over_http() -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/tools"
    command = [
        sys.executable,
        "-m",
        "mcpgen",
        "run",
        str(PEER),
        "--transport",
        "http",
        "--port",
        str(port),
        "--path",
        "/tools",
    ]
    with running(command, url):
        proc = subprocess.run(
            [sys.executable, "-m", "mcpgen", "call", url, "tool", "picture"],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert proc.stdout.strip() == "<image image/png, 70 bytes>", proc.stderr


@pytest.mark.anyio
async def test_run_over_a_unix_socket() -> None:
    import shutil
    import socket
    import time

    folder = Path(f"/tmp/mcpgen-run-uds-{os.getpid()}")
    folder.mkdir(exist_ok=True)
    path = str(folder / "peer.sock")
    command = [sys.executable, "-m", "mcpgen", "run", str(PEER), "--transport", "http", "--uds", path]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
    try:
        deadline = time.monotonic() + 20
        while True:
            probe = socket.socket(socket.AF_UNIX)
            try:
                probe.connect(path)
                break
            except OSError:
                assert process.poll() is None and time.monotonic() < deadline, process.stderr
                time.sleep(0.05)
            finally:
                probe.close()
        async with Client.http("http://localhost/mcp", uds=path) as client:
            result = await client.call_tool("label", {"code": "x", "count": 1})
        assert result.content[0].text.startswith("code='x'")  # type: ignore[union-attr]
    finally:
        process.terminate()
        process.wait(10)
        shutil.rmtree(folder, ignore_errors=True)
    refused = mcpgen("run", str(PEER), "--uds", path)
    assert refused.returncode == 2 and "--transport http" in refused.stderr


def test_run_says_which_server_it_looked_for(tmp_path: Path) -> None:
    (tmp_path / "two.py").write_text("from mcpgen import Server\nb = Server('b')\na = Server('a')\n")
    (tmp_path / "none.py").write_text("x = 1\n")
    several = mcpgen("run", "two.py", cwd=tmp_path)
    assert several.returncode == 2
    assert several.stderr.strip() == "error: two.py defines several Servers (a, b): pick one with two.py:a"
    none = mcpgen("run", "none.py", cwd=tmp_path)
    assert none.returncode == 2 and "defines no mcpgen.Server at module level" in none.stderr
    wrong = mcpgen("run", "two.py:c", cwd=tmp_path)
    assert wrong.stderr.strip() == "error: two.py:c is nothing, not an mcpgen.Server"
    assert mcpgen("run", "missing.py", cwd=tmp_path).stderr.strip() == "error: no such file: missing.py"
    assert (
        mcpgen("run", "no_such.module", cwd=tmp_path).stderr.strip() == "error: no such file or module: no_such.module"
    )
    assert mcpgen("run", "two.py:a", "--transport", "pigeon", cwd=tmp_path).returncode == 2


@pytest.mark.parametrize(
    ("host", "key"), [("claude-desktop", "mcpServers"), ("vscode", "servers"), ("cursor", "mcpServers")]
)
def test_install_merges_into_the_host_config(tmp_path: Path, host: str, key: str) -> None:
    config = tmp_path / "sub" / "config.json"
    config.parent.mkdir()
    config.write_text(json.dumps({"theme": "dark", key: {"other": {"command": "other-server"}}}))
    proc = mcpgen("install", host, str(PEER), "--config", str(config), "--env", "API_KEY=k=1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"added 'cli-peer' in {config}; restart ")  # the Server's own name
    data = json.loads(config.read_text())
    assert data["theme"] == "dark" and data[key]["other"] == {"command": "other-server"}
    entry = data[key]["cli-peer"]
    expected = {"command": sys.executable, "args": ["-m", "mcpgen", "run", str(PEER)], "env": {"API_KEY": "k=1"}}
    assert entry == ({"type": "stdio", **expected} if host == "vscode" else expected)
    same = mcpgen("install", host, str(PEER), "--config", str(config), "--env", "API_KEY=k=2")
    assert same.returncode == 0 and same.stdout.startswith("replaced 'cli-peer'")  # this server's own entry
    other = mcpgen("install", host, f"{PEER}:server", "--name", "cli-peer", "--config", str(config))
    assert other.returncode == 2 and "already has a server 'cli-peer' that runs something else" in other.stderr
    assert "--force" in other.stderr
    forced = mcpgen("install", host, f"{PEER}:server", "--name", "cli-peer", "--config", str(config), "--force")
    assert forced.returncode == 0 and forced.stdout.startswith("replaced 'cli-peer'")
    assert json.loads(config.read_text())[key]["cli-peer"]["args"][-1] == f"{PEER}:server"
    assert sorted(p.name for p in config.parent.iterdir()) == ["config.json"]  # no temporary file left


@pytest.mark.anyio
async def test_the_installed_entry_starts_the_server(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    assert mcpgen("install", "cursor", str(PEER), "--config", str(config)).returncode == 0
    entry = json.loads(config.read_text())["mcpServers"]["cli-peer"]
    # the way a host starts it: the command and args as written, from another folder
    text = await label_via(entry["command"], *entry["args"], cwd=str(tmp_path))
    assert text.startswith("code='x'")


def test_install_dry_run_default_paths_and_bad_input(tmp_path: Path) -> None:
    dry = mcpgen("install", "vscode", str(PEER), "--dry-run", cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["servers"]["cli-peer"]["type"] == "stdio"
    assert not (tmp_path / ".vscode").exists()
    written = mcpgen("install", "vscode", str(PEER), cwd=tmp_path)
    assert written.returncode == 0 and (tmp_path / ".vscode" / "mcp.json").is_file()
    home = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "NO_COLOR": "1"}
    for host, path in (
        ("cursor", tmp_path / ".cursor" / "mcp.json"),
        ("claude-desktop", tmp_path / "xdg" / "Claude" / "claude_desktop_config.json"),
    ):
        if sys.platform in ("darwin", "win32") and host == "claude-desktop":
            continue
        proc = subprocess.run(
            [sys.executable, "-m", "mcpgen", "install", host, str(PEER)],
            capture_output=True,
            text=True,
            env=home,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr
        assert "cli-peer" in json.loads(path.read_text())["mcpServers"]
    commented = tmp_path / "commented.json"
    commented.write_text('{\n  // my servers\n  "servers": {}\n}\n')
    bad = mcpgen("install", "vscode", str(PEER), "--config", str(commented))
    assert bad.returncode == 2 and bad.stderr.startswith(f"error: {commented} is not plain JSON")
    assert commented.read_text().startswith("{\n  // my servers")  # left as it was
    assert mcpgen("install", "zed", str(PEER)).returncode == 2
    assert mcpgen("install", "cursor", "missing.py", "--config", str(tmp_path / "x.json")).returncode == 2
    assert (
        mcpgen("install", "cursor", str(PEER), "--env", "NOVALUE", "--config", str(tmp_path / "x.json")).returncode == 2
    )


def test_two_projects_with_a_server_py_each_keep_their_entries(tmp_path: Path) -> None:
    """Every project has a server.py: entries are named after each Server, and one project
    never replaces another's entry of the same name without --force."""
    config = tmp_path / "mcp.json"
    for project, name in (("notes", "notes"), ("weather", "weather"), ("clone", "notes")):
        (tmp_path / project).mkdir()
        (tmp_path / project / "server.py").write_text(f"from mcpgen import Server\n\nserver = Server({name!r})\n")
    assert mcpgen("install", "cursor", str(tmp_path / "notes" / "server.py"), "--config", str(config)).returncode == 0
    assert mcpgen("install", "cursor", str(tmp_path / "weather" / "server.py"), "--config", str(config)).returncode == 0
    assert sorted(json.loads(config.read_text())["mcpServers"]) == ["notes", "weather"]
    clash = mcpgen("install", "cursor", str(tmp_path / "clone" / "server.py"), "--config", str(config))
    assert clash.returncode == 2 and "already has a server 'notes'" in clash.stderr
    kept = json.loads(config.read_text())["mcpServers"]["notes"]["args"][-1]
    assert kept == str(tmp_path / "notes" / "server.py")
