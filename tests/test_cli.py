"""The command line: generate (and --check), revisions, exit codes and error lines."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, official_schema


def mcpgen(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "60", "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mcpgen.cli", *args], capture_output=True, text=True, cwd=cwd or ROOT, env=env
    )


def test_generate_writes_a_self_contained_importable_package(tmp_path: Path) -> None:
    out = tmp_path / "mypkg" / "mcp"
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text("")
    proc = mcpgen("generate", "--schema", str(official_schema("2025-06-18")), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "revision 2025-06-18" in proc.stdout
    code = (
        "from mypkg.mcp import decode, encode, ElicitRequest, REVISION;"
        "m = decode(b'{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"elicitation/create\","
        "\"params\":{\"message\":\"hi\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{}}}}', ElicitRequest);"
        "print(REVISION, type(m).__name__)"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert run.stdout.split() == ["2025-06-18", "ElicitRequest"], run.stderr


def test_check_passes_when_fresh_and_fails_with_a_diff_when_stale(tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    assert mcpgen("generate", "--out", str(out)).returncode == 0
    fresh = mcpgen("generate", "--out", str(out), "--check")
    assert fresh.returncode == 0 and "up to date" in fresh.stdout
    types = out / "types.py"
    types.write_text(types.read_text().replace("class Tool(", "class Tool_(", 1))
    stale = mcpgen("generate", "--out", str(out), "--check")
    assert stale.returncode == 1
    assert "-class Tool_(" in stale.stdout and "+class Tool(" in stale.stdout
    assert "differ from a fresh generation" in stale.stderr


def test_committed_bindings_pass_check() -> None:
    proc = mcpgen("generate", "--check")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_bad_schema_is_one_error_line_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"$defs": {"A": {"$ref": "#/$defs/Missing"}}}')
    proc = mcpgen("generate", "--schema", str(bad), "--out", str(tmp_path / "x"))
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines == [f"error: {bad}: /$defs/A/$ref: reference '#/$defs/Missing' names no definition"]
    assert "Traceback" not in proc.stderr


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    proc = mcpgen("--debug", "generate", "--schema", str(tmp_path / "none.json"), "--out", str(tmp_path / "x"))
    assert proc.returncode != 0
    assert "Traceback" in proc.stderr


def test_unknown_revision_and_bad_usage_exit_2(tmp_path: Path) -> None:
    assert mcpgen("generate", "--schema", "1999-01-01", "--out", str(tmp_path)).returncode == 2
    assert mcpgen("generate", "--no-such-flag").returncode == 2


def test_revisions_lists_what_ships() -> None:
    proc = mcpgen("revisions")
    assert proc.returncode == 0
    for revision in ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"):
        assert revision in proc.stdout
    assert "default" in proc.stdout


def test_help_has_examples() -> None:
    proc = mcpgen("generate", "--help")
    assert proc.returncode == 0
    assert "mcpgen generate --schema" in proc.stdout


def test_new_creates_a_project_and_refuses_bad_input(tmp_path: Path) -> None:
    target = tmp_path / "weather"
    proc = mcpgen("new", "weather-tools", "--dir", str(target), "--transport", "http")
    assert proc.returncode == 0, proc.stderr
    assert (target / "weather_tools" / "server.py").is_file()
    assert "pip install -e '.[test]'" in proc.stdout
    pyproject = (target / "pyproject.toml").read_text()
    assert "mcpgen[http]" in pyproject
    assert mcpgen("new", "weather-tools", "--dir", str(target)).returncode == 2  # not empty
    assert mcpgen("new", "weather-tools", "--dir", str(target), "--force").returncode == 0
    bad = mcpgen("new", "Not A Name", "--dir", str(tmp_path / "x"))
    assert bad.returncode == 2 and bad.stderr.startswith("error:")
    assert mcpgen("new", "ok", "--dir", str(tmp_path / "y"), "--transport", "carrier-pigeon").returncode == 2
