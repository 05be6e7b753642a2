"""The TypeScript MCP SDK v2 peer of the benchmarks: its Node project, installed on demand.

``bench/servers/ts`` is a small Node project (``package.json`` and ``package-lock.json``
pinned; ``node_modules`` is git-ignored) holding the SDK's echo servers: ``stdio.mjs``
(``serveStdio``) and ``http.mjs`` (``createMcpHandler`` under ``node:http``). The
benchmarks call :func:`node_command` before spawning one: it checks Node.js (>= 20, the
SDK's floor) and runs ``npm ci`` when ``node_modules`` is missing or does not hold the
versions the lockfile names. Nothing in the fast test suite needs any of this.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

PROJECT = Path(__file__).resolve().parent / "servers" / "ts"
PACKAGES = ("@modelcontextprotocol/server", "@modelcontextprotocol/node")
MIN_NODE = 20


class PeerUnavailable(RuntimeError):
    """Node.js or npm is missing, too old, or the install failed."""


def locked_versions() -> dict[str, str]:
    lock = json.loads((PROJECT / "package-lock.json").read_text())
    return {name: str(lock["packages"][f"node_modules/{name}"]["version"]) for name in PACKAGES}


def installed_versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for name in PACKAGES:
        manifest = PROJECT / "node_modules" / name / "package.json"
        found[name] = str(json.loads(manifest.read_text())["version"]) if manifest.is_file() else None
    return found


def node_command(script: str) -> list[str]:
    """``[node, <script>]`` for one of the peer's scripts (``stdio.mjs``, ``http.mjs``),
    after installing the project with ``npm ci`` if it is missing or stale."""
    node = shutil.which("node")
    if node is None:
        raise PeerUnavailable("node is not on PATH: the TypeScript SDK peer needs Node.js >= 20")
    found = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    if int(found.lstrip("v").split(".")[0] or 0) < MIN_NODE:
        raise PeerUnavailable(f"node {found} is too old: the TypeScript SDK v2 needs Node.js >= {MIN_NODE}")
    if installed_versions() != locked_versions():
        npm = shutil.which("npm")
        if npm is None:
            raise PeerUnavailable(f"npm is not on PATH: cannot install {PROJECT} (npm ci)")
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"], cwd=PROJECT, capture_output=True, text=True, timeout=600
        )
        if done.returncode != 0 or installed_versions() != locked_versions():
            raise PeerUnavailable(f"npm ci in {PROJECT} failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr}")
    return [node, str(PROJECT / script)]


def version() -> str:
    """The pinned SDK version, and Node's."""
    node = shutil.which("node")
    found = (
        subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout.strip() if node else "-"
    )
    return f"@modelcontextprotocol/server {locked_versions()[PACKAGES[0]]}, node {found}"
