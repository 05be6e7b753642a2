"""The official MCP conformance suite (npm @modelcontextprotocol/conformance, pinned in
conformance/package.json) against examples/everything_server.py and
examples/everything_client.py, through conformance/run.py."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT

RUN = ROOT / "conformance" / "run.py"
pytestmark = pytest.mark.slow  # the conformance suites: run by `pytest -m slow` (CI runs both)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(RUN), *args], capture_output=True, text=True, timeout=900)


def test_every_server_scenario_passes() -> None:
    proc = run("server")
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
    assert proc.stdout.splitlines()[-1] == "32 passed, 0 failed"


def test_supported_client_scenarios_pass() -> None:
    proc = run("client")
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
    assert proc.stdout.splitlines()[-1] == "26 passed, 0 failed"
