"""The hand-written code (runtime, generator, CLI, examples) passes mypy --strict."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT


def test_mcpgen_and_examples_pass_mypy_strict() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "mcpgen", "examples"], capture_output=True, text=True, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
