"""Shared fixtures: the official schemas in ../shared and packages generated from them.

``../shared`` (beside the checkout, not in it) holds the official MCP reference files: the
released schemas, the spec's example pages, the JSON-Schema-Test-Suite. A fresh clone has
no ``../shared``: the tests that need it skip with the one reason :data:`SHARED_MISSING`,
everything else runs.

Under ``CI=true`` a green run means every test ran: any skip (``pytest.skip``, a
``skipif``, an ``importorskip``, a whole module skipped while collecting) and any xfail
that is not strict fails the run, each named at the end. CI has ../shared, redis-server,
Chromium and Node (``.ci/run`` installs them), so a skip there is a test that did not run.
A strict xfail (``xfail_strict``, the default here) is a known failure that must keep
failing, and may stay.
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


# ---------------------------------------------------------------- CI: every test must run


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1")


_not_run: list[str] = []  # "nodeid: why", for every skip and every non-strict xfail


def _strict(item: pytest.Item) -> bool:
    marker = item.get_closest_marker("xfail")
    if marker is None:
        return False
    strict = marker.kwargs.get("strict", item.config.getini("xfail_strict"))
    return bool(strict)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if not report.skipped:
        return
    if hasattr(report, "wasxfail"):
        if not _strict(item):
            _not_run.append(f"{report.nodeid}: a non-strict xfail ({report.wasxfail or 'no reason'})")
    else:
        _not_run.append(f"{report.nodeid}: skipped ({_reason(report)})")


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.skipped:  # a module skipped as a whole while collecting
        _not_run.append(f"{report.nodeid}: skipped while collecting ({_reason(report)})")


def _reason(report: pytest.CollectReport | pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A CI run where a test did not run is not green: fail it instead of passing on fewer."""
    if _in_ci() and _not_run and exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if _in_ci() and _not_run:
        terminalreporter.write_line(
            f"CI=true: {len(_not_run)} test(s) did not run, and CI must run every test (a missing "
            f"../shared, redis-server or browser is a broken CI machine):",
            red=True,
        )
        for line in _not_run[:50]:
            terminalreporter.write_line(f"  {line}", red=True)
