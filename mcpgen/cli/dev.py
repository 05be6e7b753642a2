"""`mcpgen dev FILE`: the server a file defines, served over Streamable HTTP on loopback and
restarted whenever a Python file of its folder changes, with the official MCP Inspector
(npm ``@modelcontextprotocol/inspector``, its web UI) open against it.

* The server runs as ``mcpgen run FILE --transport http`` in a child process of its own
  process group (a restart ends what it started too). A change is seen by polling the
  modification times of the folder's ``*.py`` files twice a second: a development loop on one
  project costs nothing measurable that way, and needs no native watcher. A server that
  fails to start is reported and waited on: the next change starts it again.
* The Inspector is started once, by ``npx`` at a pinned version (``MCPGEN_INSPECTOR`` names
  another command, such as an installed ``mcp-inspector``), told the server's URL and to find
  the protocol era itself: in the stateless era a restart costs the Inspector nothing, in the
  handshake era it reconnects. Without Node.js, ``--no-inspector`` keeps the reloading server.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated

import typer

from mcpgen.cli.console import Debug

INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"  # tested with this one (tests/cli/inspector)
POLL = 0.5  # seconds between looks at the files
START_WAIT = 30.0  # seconds a (re)started server has to listen
MAX_FILES = 20_000  # files looked at, at most: a folder this big is not one project
SKIPPED = {".git", ".venv", "venv", "node_modules", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"}

Say = Callable[[str], None]


def inspector_command(url: str) -> list[str]:
    """The command that opens the Inspector's web UI on ``url``."""
    custom = os.environ.get("MCPGEN_INSPECTOR", "").strip()
    prefix = shlex.split(custom) if custom else [shutil.which("npx") or "npx", "-y", INSPECTOR]
    return [*prefix, "--web", "--transport", "http", "--server-url", url, "--protocol-era", "auto"]


def server_command(target: str, port: int) -> list[str]:
    return [sys.executable, "-m", "mcpgen", "run", target, "--transport", "http", "--port", str(port)]


def _python_files(folder: Path) -> Iterator[Path]:
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d not in SKIPPED and not d.endswith(".egg-info")]
        for name in files:
            if name.endswith(".py"):
                yield Path(root, name)


def snapshot(folder: Path) -> dict[Path, float]:
    """Modification times of the folder's Python files (at most :data:`MAX_FILES`)."""
    times: dict[Path, float] = {}
    for path in _python_files(folder):
        if len(times) >= MAX_FILES:
            break
        try:
            times[path] = path.stat().st_mtime
        except OSError:
            continue  # removed meanwhile: the next look sees it gone
    return times


def changed(before: dict[Path, float], after: dict[Path, float]) -> list[Path]:
    """The files added, removed or modified between two snapshots."""
    return sorted(path for path in before.keys() | after.keys() if before.get(path) != after.get(path))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        return True
    except OSError:
        return False


class Child:
    """A process in a process group of its own, ended with everything it started."""

    def __init__(self, command: list[str], cwd: Path | None = None) -> None:
        self.process = subprocess.Popen(command, cwd=cwd, start_new_session=os.name == "posix")

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, grace: float = 5.0) -> None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                if os.name == "posix":
                    os.killpg(self.process.pid, sig)
                elif sig == signal.SIGTERM:
                    self.process.terminate()
                else:
                    self.process.kill()
            except (ProcessLookupError, PermissionError):
                break
            try:
                self.process.wait(grace)
                break
            except subprocess.TimeoutExpired:
                continue
        if self.process.poll() is None:
            self.process.wait(grace)


def start_server(target: str, port: int, say: Say) -> Child:
    """Start the server and wait (bounded) until it listens, or says why it could not."""
    child = Child(server_command(target, port))
    deadline = time.monotonic() + START_WAIT
    while time.monotonic() < deadline:
        if _listening(port):
            return child
        if not child.alive():
            say(f"dev: the server exited with status {child.process.returncode}; waiting for a change to retry")
            return child
        time.sleep(0.05)
    say(f"dev: the server is not listening after {START_WAIT:g} s; waiting for a change")
    return child


def run_dev(target: str, port: int, inspector: bool, say: Say, rounds: int | None = None) -> None:
    """Serve ``target`` with reload (and the Inspector) until interrupted (``rounds``: the
    number of looks at the files before returning, for tests)."""
    where = Path(target.rpartition(":")[0] if ":" in target and not Path(target).exists() else target)
    folder = where.resolve().parent if where.suffix == ".py" else Path.cwd()
    url = f"http://127.0.0.1:{port}/mcp"
    say(f"dev: serving {target} at {url}, restarting when a .py file under {folder} changes")
    seen = snapshot(folder)
    server = start_server(target, port, say)
    viewer = None
    if inspector:
        command = inspector_command(url)
        if shutil.which(command[0]) is None and not Path(command[0]).exists():
            server.stop()
            raise FileNotFoundError(
                f"the Inspector needs Node.js ({command[0]} is not on PATH); install Node.js 22 or "
                "use --no-inspector to serve with reload only"
            )
        say(f"dev: opening the MCP Inspector: {shlex.join(command)}")
        viewer = Child(command)
    try:
        looks = 0
        while rounds is None or looks < rounds:
            time.sleep(POLL)
            looks += 1
            now = snapshot(folder)
            edits = changed(seen, now)
            if not edits:
                continue
            seen = now
            names = ", ".join(str(path.relative_to(folder)) for path in edits[:3]) + (" ..." if len(edits) > 3 else "")
            say(f"dev: {names} changed: restarting the server")
            server.stop()
            server = start_server(target, port, say)
            if server.alive():
                say(f"dev: restarted at {url}")
    finally:
        # The Inspector first: its proxy holds connections (an SSE stream) to the server,
        # which a server shutting down would otherwise wait on before its grace ran out.
        if viewer is not None:
            viewer.stop()
        server.stop()


def dev(
    target: Annotated[
        str, typer.Argument(metavar="FILE", help="A Python file or module, with :NAME to pick the Server in it.")
    ],
    port: Annotated[int, typer.Option(help="The server's port on 127.0.0.1. Default: a free one.")] = 0,
    no_inspector: Annotated[
        bool, typer.Option("--no-inspector", help="Serve with reload only; do not start the Inspector.")
    ] = False,
    debug: Debug = False,
) -> None:
    """Develop a server: reload on change, with the MCP Inspector.

    The server is served over HTTP on this machine and restarted when a Python file of its
    folder changes. The Inspector (npm @modelcontextprotocol/inspector) is started with npx, which needs
    Node.js; MCPGEN_INSPECTOR names another command for it. It prints the address of its
    web UI; in the stateless era a restart of the server goes unnoticed there. Ctrl-C stops
    both.

    Examples:
      mcpgen dev server.py
      mcpgen dev server.py:weather --port 8000
      mcpgen dev mypkg.server --no-inspector
    """
    from mcpgen.cli.console import err, fail, user_errors

    if not 0 <= port <= 65535:
        fail(f"--port is 0 to 65535, not {port}")
    chosen = port or free_port()

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # SIGTERM stops as Ctrl-C does: the server and the Inspector too

    signal.signal(signal.SIGTERM, stop)
    with user_errors():
        try:
            run_dev(target, chosen, not no_inspector, lambda line: err.print(line, markup=False, highlight=False))
        except KeyboardInterrupt:
            err.print("dev: stopped", markup=False, highlight=False)


__all__ = ["INSPECTOR", "changed", "dev", "inspector_command", "run_dev", "server_command", "snapshot"]
