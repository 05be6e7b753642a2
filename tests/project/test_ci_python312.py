"""The Python 3.12 leg of .ci/run (issue 36, point 27): the fast suite runs again on a
Python 3.12 (where a request's task starts eagerly) or the run fails; it never passes
quietly on a machine without one. .ci/python312 finds a 3.12 (PATH, pyenv) or installs one;
these tests give it a PATH without any (CI_PYTHON312_NO_INSTALL=1 keeps it from installing:
the real installation is what .ci/run does on a clean machine)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.paths import ROOT

FIND = ROOT / ".ci" / "python312"


def bare_env(path: Path) -> dict[str, str]:
    """No Python 3.12 anywhere: PATH holds the system's tools and ``path`` only."""
    return {
        "PATH": f"{path}:/usr/bin:/bin",
        "HOME": str(path),
        "PYENV_ROOT": str(path / "no-pyenv"),
        "CI_PYTHON312_NO_INSTALL": "1",
    }


def test_without_a_python_312_the_finder_fails(tmp_path: Path) -> None:
    done = subprocess.run([str(FIND)], env=bare_env(tmp_path), capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stdout == "", done.stdout + done.stderr
    assert "no Python 3.12" in done.stderr


def test_the_finder_prints_a_python_312_it_finds(tmp_path: Path) -> None:
    fake = tmp_path / "python3.12"  # answers the version check as a 3.12 would
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    done = subprocess.run([str(FIND)], env=bare_env(tmp_path), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == str(fake), done.stdout + done.stderr
    fake.write_text("#!/bin/sh\nexit 1\n")  # not a 3.12 after all
    again = subprocess.run([str(FIND)], env=bare_env(tmp_path), capture_output=True, text=True, timeout=60)
    assert again.returncode == 1


def test_ci_run_fails_its_312_leg_without_one(tmp_path: Path) -> None:
    """.ci/run's own function for the leg, run as .ci/run defines it: exit 1, said why."""
    script = 'eval "$(sed -n "/^on_python_312()/,/^}/p" .ci/run)"; on_python_312'
    env = {**bare_env(tmp_path), "PATH": f"{tmp_path}:/usr/bin:/bin"}
    done = subprocess.run(["bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "fast suite on Python 3.12: no Python 3.12, and none could be installed" in done.stderr
    run = (ROOT / ".ci" / "run").read_text()
    assert '[ "$py312" = 0 ]' in run and "py312=0; on_python_312 || py312=$?" in run
    assert os.access(FIND, os.X_OK)
