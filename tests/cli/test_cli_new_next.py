"""`mcpgen new`, then the "Next:" line it prints, as a new user runs them (issue 35.1): from
this checkout, into a folder that shares nothing with it but `/`, with the pip that
`python -m venv` brings on Python 3.11 (23.2, which refuses a relative file URL that climbs
to `/`). The project installs mcpgen from where it came from, and its own tests pass."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import ROOT

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("options", [[], ["--auth"]], ids=["stdio", "auth"])
def test_the_next_line_works(tmp_path: Path, options: list[str]) -> None:
    assert Path(os.path.commonpath([tmp_path, ROOT])) == Path("/"), "the point: nothing shared but /"
    target = tmp_path / "demo"
    created = subprocess.run(
        [sys.executable, "-m", "mcpgen", "new", "demo", "--dir", str(target), *options],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert created.returncode == 0, created.stderr
    lines = created.stdout.splitlines()
    assert lines[0].endswith("Next:"), lines
    next_line = lines[1].strip()
    assert next_line.startswith(f"cd {target} && python -m venv .venv") and next_line.endswith("pytest")
    # `python` is this Python 3.11, as on the user's PATH; nothing of this venv leaks in.
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    ran = subprocess.run(["bash", "-c", next_line], capture_output=True, text=True, timeout=1200, env=env)
    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-4000:]
    pip = subprocess.run(
        [str(target / ".venv" / "bin" / "pip"), "--version"], capture_output=True, text=True, timeout=60
    )
    assert pip.stdout.startswith("pip 23."), pip.stdout  # the pip venv brings on 3.11, not a newer one
    assert " passed" in ran.stdout and " failed" not in ran.stdout, ran.stdout[-2000:]
