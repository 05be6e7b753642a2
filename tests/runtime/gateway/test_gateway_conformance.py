"""The official conformance suite's server legs, run *through* ``mcpgen gateway``: the pinned
harness (conformance/run.py, each leg judged against its own baseline, every one empty)
talks to the gateway, which fronts ``examples/everything_server.py`` over HTTP
(tests/runtime/gateway/conformance_gateway.py stands in for the everything server):

* the 2026-07-28 leg, the backend pinned to 2025-11-25: every stateless-era scenario through
  to a handshake-era server (questions become InputRequiredResult rounds);
* the 2025-11-25 leg, the backend pinned to 2026-07-28: every handshake-era scenario through
  to a stateless-era server (its InputRequiredResult becomes requests on the session);
* the default leg, the backend unpinned (extensions included: tasks, skills).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.paths import ROOT

RUN = ROOT / "conformance" / "run.py"
WRAPPER = ROOT / "tests" / "runtime" / "gateway" / "conformance_gateway.py"
LEGS = {"2026-07-28": ("2025-11-25", 40), "2025-11-25": ("2026-07-28", 33), "default": ("", 65)}
SECONDS = 600  # a leg takes 10-40 s through the gateway on 2 cores


@pytest.mark.slow
@pytest.mark.parametrize("leg", list(LEGS))
def test_server_leg_passes_through_the_gateway(leg: str) -> None:
    pinned, scenarios = LEGS[leg]
    env = {**os.environ, "MCPGEN_CONFORMANCE_SERVER": str(WRAPPER), "MCPGEN_GATEWAY_BACKEND_VERSIONS": pinned}
    proc = subprocess.run(
        [sys.executable, str(RUN), "server", "--leg", leg],
        capture_output=True,
        text=True,
        timeout=SECONDS,
        check=False,
        env=env,
    )
    explained = proc.stdout + proc.stderr[-6000:]
    assert proc.returncode == 0, explained
    assert f"harness verdict with conformance/expected/server-{leg}.yml: pass" in proc.stdout, explained
    assert proc.stdout.splitlines()[-1] == f"{scenarios} passed, 0 failed", explained
    assert not re.search(r"^FAIL ", proc.stdout, flags=re.MULTILINE), explained
