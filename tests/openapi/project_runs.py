"""Generating a project with the real command line, and starting its server, for the tests
of ``mcpgen openapi``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.paths import ROOT


def mcpgen(*args: str, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``mcpgen ARGS`` in a subprocess (the installed command line, as a user runs it)."""
    return subprocess.run(
        [sys.executable, "-m", "mcpgen", *args], capture_output=True, text=True, timeout=timeout, cwd=cwd or ROOT
    )


def generate(spec: str, target: Path, name: str, *extra: str) -> Path:
    done = mcpgen("openapi", spec, "-o", str(target), "--name", name, *extra)
    assert done.returncode == 0, done.stdout + done.stderr
    return target


def server_env(**variables: str) -> dict[str, str]:
    """The environment a generated server runs in: this one (its PATH, the venv) plus ``variables``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PETS_", "API_", "MCP_"))}
    return {**env, **variables}


def server_command(package: str) -> list[str]:
    return [sys.executable, "-m", f"{package}.server"]
