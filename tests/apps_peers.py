"""The pinned MCP Apps npm packages (tests/apps, and examples/apps for the example's
interface): installs them with ``npm ci`` when ``node_modules`` is missing or does not match
the lockfile, and names their files."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

APPS = Path(__file__).resolve().parent / "apps"
PACKAGE = APPS / "node_modules" / "@modelcontextprotocol" / "ext-apps"
PUBLISHED_SCHEMA = PACKAGE / "dist" / "src" / "generated" / "schema.json"
EXAMPLE = APPS.parent.parent / "examples" / "apps"


def _locked(directory: Path) -> dict[str, str]:
    lock = json.loads((directory / "package-lock.json").read_text())
    # Optional rows are the other platforms' esbuild binaries: npm installs only this one's.
    rows = lock["packages"].items()
    return {
        name: str(row["version"]) for name, row in rows if name.startswith("node_modules/") and not row.get("optional")
    }


def _installed(directory: Path, name: str) -> str | None:
    manifest = directory / name / "package.json"
    return str(json.loads(manifest.read_text())["version"]) if manifest.is_file() else None


def _fresh(directory: Path) -> bool:
    locked = _locked(directory).items()
    return (
        all(_installed(directory, name) == version for name, version in locked)
        and (directory / "node_modules" / ".bin" / "esbuild").exists()
    )


def ensure_installed(directory: Path = APPS) -> Path:
    """``directory`` with its node_modules matching package-lock.json (``npm ci`` if not)."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not on PATH: the MCP Apps tests need Node.js (>= 20)")
    if not _fresh(directory):
        npm = shutil.which("npm")
        if npm is None:
            pytest.fail("npm is not on PATH: cannot install tests/apps (npm ci)")
        try:
            done = subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund"], cwd=directory, capture_output=True, text=True, timeout=600
            )
        except subprocess.TimeoutExpired as exc:
            pytest.fail(f"npm ci in {directory} timed out:\n{exc.stdout!r}\n{exc.stderr!r}")
        if done.returncode != 0 or not _fresh(directory):
            pytest.fail(f"npm ci in {directory} failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr}")
    return directory
