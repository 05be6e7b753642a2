"""House style, enforced in CI (which runs the README's test command, so this fast test is
where it happens): the tree passes `ruff check` and `ruff format --check` under the
configuration in pyproject.toml ([tool.ruff]: line length, excludes, rule set)."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT


def ruff(*args: str) -> subprocess.CompletedProcess[str]:
    # The ruff of this environment (the codegen extra), run from the root so that it reads
    # pyproject.toml and its excludes, as the pre-commit hooks do.
    return subprocess.run([sys.executable, "-m", "ruff", *args], capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_the_tree_passes_ruff_check() -> None:
    proc = ruff("check", "--no-cache", "--output-format", "concise", ".")
    assert proc.returncode == 0, f"ruff check . found (fix with `ruff check --fix .`):\n{proc.stdout}{proc.stderr}"


def test_the_tree_is_ruff_formatted() -> None:
    proc = ruff("format", "--no-cache", "--check", ".")
    assert proc.returncode == 0, f"not formatted (fix with `ruff format .`):\n{proc.stdout}{proc.stderr}"


# Folders of tests/ that test the project as a whole, not one package: the README, docs,
# layers and packaging (project/), and the official peers and conformance suite (interop/).
WHOLE_PROJECT = {"project", "interop"}


def test_the_tests_mirror_the_package_tree() -> None:
    """A module's tests are found where the module is: tests/runtime/server/ for
    mcpgen/runtime/server/, and so on (one file name once: pytest imports them by name)."""
    tests = ROOT / "tests"
    misplaced, names = [], {}
    for path in sorted(tests.rglob("test_*.py")):
        folder = path.parent.relative_to(tests)
        if "node_modules" in folder.parts:
            continue
        top = folder.parts[0] if folder.parts else ""
        if top not in WHOLE_PROJECT and not (ROOT / "mcpgen" / folder).is_dir():
            misplaced.append(str(path.relative_to(ROOT)))
        names.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    assert misplaced == [], f"tests outside a folder that mirrors a package of mcpgen/: {misplaced}"
    assert {n: p for n, p in names.items() if len(p) > 1} == {}
