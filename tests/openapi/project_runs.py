"""Generating a project with the real command line, and starting its server, for the tests
of ``mcpgen openapi``."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

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


@contextlib.contextmanager
def running(command: list[str], url: str, cwd: Path, env: dict[str, str], timeout: float = 20) -> Iterator[None]:
    """A generated server serving HTTP at ``url`` until the block ends (stderr shown on failure)."""
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                raise RuntimeError(
                    f"the server exited {process.returncode}: {process.stderr.read() if process.stderr else ''}"
                )
            try:
                httpx.get(url, timeout=0.5)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"nothing answered at {url}") from None
                time.sleep(0.05)
        yield
    finally:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
