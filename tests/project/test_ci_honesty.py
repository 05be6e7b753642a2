"""A green CI means every test ran (issue 36, point 24): under ``CI=true`` any skip (plain,
``skipif``, ``importorskip``, a module skipped while collecting) and any non-strict xfail
fails the run and is named; without CI they are reported and the run passes. An xfail is
strict by default (``xfail_strict``): one that starts passing fails the run anywhere.

Each case is a small test file in a temporary folder, run by a pytest subprocess with this
project's configuration and its tests/conftest.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.paths import ROOT

PROBES = """
import pytest

def test_runs() -> None:
    assert True

def test_plain_skip() -> None:
    pytest.skip("not today")

@pytest.mark.skipif(True, reason="a condition")
def test_skipif() -> None:
    pass

def test_importorskip() -> None:
    pytest.importorskip("no_such_module_anywhere")

@pytest.mark.xfail(strict=False, reason="flaky, they say")
def test_lenient_xfail() -> None:
    assert False

@pytest.mark.xfail(reason="a known failure")
def test_known_failure() -> None:
    assert False
"""
MODULE_SKIP = 'import pytest\npytest.importorskip("no_such_module_either")\n\ndef test_never() -> None:\n    pass\n'
XPASS = "import pytest\n\n@pytest.mark.xfail(reason='fixed since')\ndef test_fixed() -> None:\n    assert True\n"


def pytest_on(folder: Path, ci: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci:
        env["CI"] = "true"
    command = [sys.executable, "-m", "pytest", "-c", "pyproject.toml", "--rootdir", ".", "-p", "tests.conftest"]
    command += ["-p", "no:cacheprovider", "-q", str(folder)]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_under_ci_every_skip_and_lenient_xfail_fails_the_run(tmp_path: Path) -> None:
    (tmp_path / "test_probe.py").write_text(PROBES)
    (tmp_path / "test_module_skip.py").write_text(MODULE_SKIP)
    relaxed = pytest_on(tmp_path, ci=False)
    assert relaxed.returncode == 0, relaxed.stdout[-3000:]
    strict = pytest_on(tmp_path, ci=True)
    assert strict.returncode == 1, strict.stdout[-3000:]
    assert "CI=true: 5 test(s) did not run" in strict.stdout
    for named in (
        "test_module_skip.py: skipped while collecting",
        "test_probe.py::test_plain_skip: skipped (not today)",
        "test_probe.py::test_skipif: skipped (a condition)",
        "test_probe.py::test_importorskip: skipped",
        "test_probe.py::test_lenient_xfail: a non-strict xfail",
    ):
        assert named in strict.stdout, (named, strict.stdout[-3000:])
    assert "test_known_failure:" not in strict.stdout  # strict: it must keep failing, and may stay


def test_an_xfail_that_passes_fails_the_run(tmp_path: Path) -> None:
    (tmp_path / "test_xpass.py").write_text(XPASS)
    run = pytest_on(tmp_path, ci=False)
    assert run.returncode == 1 and "XPASS(strict)" in run.stdout, run.stdout[-2000:]
