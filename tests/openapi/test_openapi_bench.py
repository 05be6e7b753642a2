"""bench/openapi.py still runs, scaled down, every call answered correctly. Its figures are
reported by running it (docs/openapi.md), never asserted here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import ROOT

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("era", ["handshake", "stateless"])
def test_openapi_bench(tmp_path: Path, era: str) -> None:
    out = tmp_path / "openapi.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "openapi.py"), "--calls", "200", "--runs", "1", "--startups", "1"]
        + ["--era", era, "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    report = json.loads(out.read_text())
    assert set(report["servers"]) == {"generated", "hand-written"}
    for server in report["servers"].values():
        assert server["errors"] == 0 and server["cpu_us_per_call"] > 0
    assert report["httpx_alone_cpu_us_per_request"] > 0
    github = report["github"]  # the corpora are installed by the corpus tests (npm ci) or by hand
    assert github is None or (github["first_page_tools"] == 100 and github["more_pages"])
