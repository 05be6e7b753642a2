"""Shared fixtures: the official schemas in ../shared and packages generated from them.

``../shared`` (beside the checkout, not in it) holds the official MCP reference files: the
released schemas, the spec's example pages, the JSON-Schema-Test-Suite. A fresh clone has
no ``../shared``: the tests that need it skip with the one reason :data:`SHARED_MISSING`,
everything else runs. CI has it, so there (``CI=true``) a skip for that reason fails the run.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from mcpgen.schema import revisions as shipped_revisions
from tests.paths import ROOT

SHARED = ROOT.parent / "shared"
OFFICIAL = SHARED / "mcp-schema"
SEEDS = SHARED / "seeds"
# Every revision mcpgen ships; each has its official counterpart in ../shared.
REVISIONS = shipped_revisions()


# The one reason every test needing ../shared gives when it is absent (CI looks for it).
SHARED_MISSING = "needs ../shared (the official MCP reference files) beside the checkout"
# A marker for tests (or parameters) that read ../shared at collection time.
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason=SHARED_MISSING)


def shared_path(*parts: str) -> Path:
    """``../shared/<parts>``. Without ../shared the calling test skips with
    :data:`SHARED_MISSING`; with it, a missing file fails the test: a partial copy of the
    reference files is a broken checkout, not a reason to test less. Call it from a test or
    a fixture; what is read while collecting uses :data:`needs_shared` or :func:`shared_params`."""
    if not SHARED.is_dir():
        pytest.skip(SHARED_MISSING)
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.fail(f"{path} is missing from ../shared (an incomplete copy of the reference files?)")
    return path


def shared_params(make: Callable[[], Iterable[Any]], argcount: int) -> list[Any]:
    """Parameters read from ../shared when tests are collected: ``make()``'s, or without
    ../shared a single placeholder (``argcount`` ``None`` values) that skips with
    :data:`SHARED_MISSING`, so collection never fails and the skip says why."""
    if SHARED.is_dir():
        return list(make())
    return [pytest.param(*[None] * argcount, marks=needs_shared, id="needs-shared")]


def official_schema(revision: str) -> Path:
    return shared_path("mcp-schema", revision, "schema.json")


def package_name(revision: str) -> str:
    return "mcp_" + revision.replace("-", "_")


@pytest.fixture(scope="session")
def generated_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding one package generated from each official revision."""
    from mcpgen.codegen.generate import generate, write

    root = tmp_path_factory.mktemp("generated")
    for revision in REVISIONS:
        write(generate(official_schema(revision)), root / package_name(revision))
    sys.path.insert(0, str(root))
    return root


@pytest.fixture(scope="session")
def packages(generated_root: Path) -> dict[str, ModuleType]:
    return {rev: importlib.import_module(package_name(rev)) for rev in REVISIONS}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# ---------------------------------------------------------------- CI: ../shared must be there


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1")


_shared_skips: list[str] = []


def _note_shared_skip(report: pytest.CollectReport | pytest.TestReport) -> None:
    if report.skipped and SHARED_MISSING in str(report.longrepr):
        _shared_skips.append(report.nodeid)


def pytest_collectreport(report: pytest.CollectReport) -> None:
    _note_shared_skip(report)  # a module skipped as a whole


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _note_shared_skip(report)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """In CI every reference file is there, so a test skipped for want of ../shared means
    CI lost it (or a test looks in the wrong place): fail the run instead of going green
    on fewer tests."""
    if _in_ci() and _shared_skips and exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if _in_ci() and _shared_skips:
        terminalreporter.write_line(
            f"CI=true: {len(_shared_skips)} test(s) skipped because they {SHARED_MISSING}, "
            f"e.g. {_shared_skips[0]}; CI must run them (looked for {SHARED})",
            red=True,
        )
