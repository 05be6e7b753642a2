"""A fresh clone without ../shared: the tests are collected without errors, those that need
the official reference files skip with the one standard reason, the rest run, and under
CI=true those skips fail the run (CI must have ../shared).

The clone is of the committed checkout (as a new user or CI gets it), run with this venv."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest

from tests.conftest import ROOT, SHARED_MISSING

pytestmark = pytest.mark.slow

# A few tests that need ../shared (by official_schema, the seed pages, the generated
# packages, a parameter list read while collecting) and a few that do not.
HANDFUL = [
    "tests/codegen/test_loader.py",
    "tests/codegen/test_roundtrip.py::test_seed_pages_have_examples",
    "tests/codegen/test_roundtrip.py::test_seed_example_round_trips",
    "tests/codegen/test_roundtrip.py::test_invalid_corpus_covers_every_kind",
    "tests/codegen/test_shipped_schema.py",
    "tests/runtime/shared/test_uri_template.py",
]


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("fresh") / "mcpgen"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(where)], check=True, timeout=120)
    assert not (where.parent / "shared").exists()
    return where


def pytest_in(clone: Path, *args: str, ci: bool = False) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTHONPATH")}
    if ci:
        env["CI"] = "true"
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args]
    return subprocess.run(command, cwd=clone, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("suite", [[], ["-m", "slow"]], ids=["fast", "slow"])
def test_every_test_is_collected_without_errors(clone: Path, suite: list[str]) -> None:
    run = pytest_in(clone, "--collect-only", "-q", *suite)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert not re.search(r"^ERROR|\d+ errors? in", run.stdout, re.M), run.stdout[-3000:]
    assert re.search(r"^\d+/\d+ tests collected", run.stdout, re.M), run.stdout[-500:]


def test_the_tests_that_need_shared_skip_with_the_standard_reason(clone: Path, tmp_path: Path) -> None:
    report = tmp_path / "report.xml"
    run = pytest_in(clone, "-q", f"--junitxml={report}", *HANDFUL)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    outcomes: dict[str, list[str]] = {}  # test file -> what happened to each of its tests
    for case in ElementTree.parse(report).iter("testcase"):
        skipped = case.find("skipped")
        outcome = "passed" if skipped is None else skipped.get("message", "")
        assert case.find("failure") is None and case.find("error") is None
        # classname: tests.<folder>.<module> since the tests mirror the package tree
        outcomes.setdefault(case.get("classname", "").split(".")[-1], []).append(outcome)
    skips = {reason for results in outcomes.values() for reason in results if reason != "passed"}
    assert skips == {SHARED_MISSING}, skips
    for needs_shared in ("test_loader", "test_roundtrip", "test_shipped_schema"):
        assert SHARED_MISSING in outcomes[needs_shared], needs_shared
    for runs_anyway in ("test_loader", "test_shipped_schema", "test_uri_template"):
        assert "passed" in outcomes[runs_anyway], runs_anyway
    assert outcomes["test_uri_template"].count("passed") > 50


def test_under_ci_a_skip_for_want_of_shared_fails_the_run(clone: Path) -> None:
    run = pytest_in(clone, "-q", *HANDFUL, ci=True)
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-3000:]
    assert "CI=true:" in run.stdout and SHARED_MISSING in run.stdout
