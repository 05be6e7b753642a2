"""`mcpgen dev` (issue 35.9): the server a file defines served over HTTP and restarted when a
Python file of its folder changes, with the official MCP Inspector (npm, pinned in
tests/cli/inspector) opened against it. What can be tested without a screen: the command it
builds, the reload (a real server, a real file edit, a real client), and the Inspector itself,
started by `mcpgen dev` (its web UI answers) and asked through its CLI mode."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from mcpgen.cli.dev import INSPECTOR, changed, inspector_command, snapshot
from tests.http_server import free_port
from tests.paths import ROOT

INSPECTOR_DIR = ROOT / "tests" / "cli" / "inspector"
SERVER = (
    'from mcpgen import Server\n\nserver = Server("dev-demo")\n\n\n@server.tool()\ndef hello() -> str:\n'
    '    return "{text}"\n'
)


def test_the_inspector_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCPGEN_INSPECTOR", raising=False)
    command = inspector_command("http://127.0.0.1:9/mcp")
    assert command[1:] == [
        "-y",
        INSPECTOR,
        "--web",
        "--transport",
        "http",
        "--server-url",
        "http://127.0.0.1:9/mcp",
        "--protocol-era",
        "auto",
    ]
    assert Path(command[0]).name == "npx"
    monkeypatch.setenv("MCPGEN_INSPECTOR", "node '/opt/my inspector/cli.js'")
    assert inspector_command("u")[:3] == ["node", "/opt/my inspector/cli.js", "--web"]


def test_changes_are_seen_in_python_files_only(tmp_path: Path) -> None:
    (tmp_path / "server.py").write_text("x = 1\n")
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "site.py").write_text("")
    before = snapshot(tmp_path)
    assert list(before) == [tmp_path / "server.py"]
    (tmp_path / "notes.txt").write_text("not code")
    (tmp_path / ".venv" / "site.py").write_text("changed")
    assert changed(before, snapshot(tmp_path)) == []
    (tmp_path / "helpers.py").write_text("")
    assert changed(before, snapshot(tmp_path)) == [tmp_path / "helpers.py"]


class Dev:
    """`mcpgen dev` running, its output collected as it comes."""

    def __init__(self, cwd: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mcpgen", "dev", "server.py", *args],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "NO_COLOR": "1", **(env or {})},
            # Ctrl-C as a terminal delivers it, even when the suite itself runs in the
            # background (a shell's `cmd &` hands its children SIGINT ignored).
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        self.lines: list[str] = []
        assert self.process.stdout is not None
        stream = self.process.stdout
        threading.Thread(target=lambda: self.lines.extend(stream), daemon=True).start()

    def wait_for(self, text: str, after: int = 0, timeout: float = 60) -> int:
        """Wait until a line (from line ``after`` on) holds ``text``; its index."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for index, line in enumerate(self.lines[after:], after):
                if text in line:
                    return index
            assert self.process.poll() is None, "".join(self.lines)
            time.sleep(0.05)
        raise AssertionError(f"{text!r} never came:\n{''.join(self.lines)}")

    def stop(self) -> int:
        self.process.send_signal(signal.SIGINT)
        try:
            # `mcpgen dev` gives each of its two children 5 s after SIGTERM, then 5 s after
            # SIGKILL (and 5 s more to be reaped): 30 s is its bound, not a margin.
            return self.process.wait(45)
        finally:
            if self.process.poll() is None:
                self.process.kill()


def edit(path: Path, text: str) -> None:
    """Rewrite a file so that its modification time moves, however coarse the clock."""
    stamp = path.stat().st_mtime
    path.write_text(text)
    os.utime(path, (stamp + 2, stamp + 2))


def call(url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcpgen", "call", url, "tool", "hello"], capture_output=True, text=True, timeout=60
    )


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, str, int]]:
    (tmp_path / "server.py").write_text(SERVER.format(text="first"))
    port = free_port()
    yield tmp_path, f"http://127.0.0.1:{port}/mcp", port


def test_an_edit_restarts_the_server(served: tuple[Path, str, int]) -> None:
    folder, url, port = served
    dev = Dev(folder, "--port", str(port), "--no-inspector")
    try:
        dev.wait_for(f"serving dev-demo over Streamable HTTP at {url}")
        assert call(url).stdout.strip() == "first"
        mark = len(dev.lines)
        edit(folder / "server.py", SERVER.format(text="second"))
        dev.wait_for(f"dev: restarted at {url}", after=mark)
        assert call(url).stdout.strip() == "second"
        # A broken edit: said, and the next edit brings the server back.
        mark = len(dev.lines)
        edit(folder / "server.py", "this is not python\n")
        dev.wait_for("the server exited with status", after=mark)
        mark = len(dev.lines)
        edit(folder / "server.py", SERVER.format(text="third"))
        dev.wait_for(f"dev: restarted at {url}", after=mark)
        assert call(url).stdout.strip() == "third"
    finally:
        assert dev.stop() == 0, "".join(dev.lines)
    assert "dev: stopped" in "".join(dev.lines)
    assert call(url).returncode == 2  # the server went with it


@pytest.mark.slow
def test_the_inspector_is_opened_and_sees_each_restart(served: tuple[Path, str, int]) -> None:
    folder, url, port = served
    inspector = [shutil_which("node"), str(installed_inspector())]
    ui, proxy = free_port(), free_port()
    env = {"MCPGEN_INSPECTOR": " ".join(inspector), "CLIENT_PORT": str(ui), "SERVER_PORT": str(proxy)}
    dev = Dev(folder, "--port", str(port), env=env)

    def inspector_cli() -> str:
        done = subprocess.run(
            [*inspector, "--cli", url, "--method", "tools/list"], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    try:
        dev.wait_for("opening the MCP Inspector")
        dev.wait_for(f"http://127.0.0.1:{ui}", timeout=120)  # the Inspector's web UI is up
        assert httpx.get(f"http://127.0.0.1:{ui}/", timeout=30).status_code == 200
        assert '"name": "hello"' in inspector_cli()
        mark = len(dev.lines)
        edit(
            folder / "server.py",
            SERVER.format(text="x") + "\n\n@server.tool()\ndef added() -> str:\n    return 'new'\n",
        )
        dev.wait_for(f"dev: restarted at {url}", after=mark)
        assert '"name": "added"' in inspector_cli()
    finally:
        assert dev.stop() == 0, "".join(dev.lines)
    deadline = time.monotonic() + 10  # the Inspector went with it
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{ui}/", timeout=1)
        except httpx.HTTPError:
            break
        time.sleep(0.2)
    else:
        raise AssertionError("the Inspector's web UI still answers after mcpgen dev stopped")


def installed_inspector() -> Path:
    """The pinned Inspector's command, installed with ``npm ci`` when node_modules is missing
    or holds another version than the lockfile."""
    lock = json.loads((INSPECTOR_DIR / "package-lock.json").read_text())
    wanted = lock["packages"]["node_modules/@modelcontextprotocol/inspector"]["version"]
    manifest = INSPECTOR_DIR / "node_modules" / "@modelcontextprotocol" / "inspector" / "package.json"
    if not manifest.is_file() or json.loads(manifest.read_text())["version"] != wanted:
        done = subprocess.run(
            [shutil_which("npm"), "ci", "--no-audit", "--no-fund"],
            cwd=INSPECTOR_DIR,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stdout + done.stderr
    return INSPECTOR_DIR / "node_modules" / ".bin" / "mcp-inspector"


def shutil_which(name: str) -> str:
    import shutil

    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not on PATH: the Inspector needs Node.js")
    return found
