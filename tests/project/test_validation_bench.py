"""bench/validation.py still runs: scaled down, both validators compiled and judging its
two instances right. Its speed is reported by running it (see the README), never asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import ROOT

pytestmark = pytest.mark.slow


def test_validation_bench(tmp_path: Path) -> None:
    out = tmp_path / "validation.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "validation.py"), "--quick", "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["problems"] == []
    assert set(report["results"]) == {"mcpgen", "SDK"}
    for figures in report["results"].values():
        assert all(value > 0 for value in figures.values()), figures
    assert "compile_cached_ms" in report["results"]["mcpgen"]
