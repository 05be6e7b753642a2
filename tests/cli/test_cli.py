"""The command line: generate (and --check), revisions, exit codes and error lines."""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

from mcpgen import __version__
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
        'm = decode(b\'{"jsonrpc":"2.0","id":1,"method":"elicitation/create",'
        '"params":{"message":"hi","requestedSchema":{"type":"object","properties":{}}}}\', ElicitRequest);'
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
    bad.write_text('{"$defs": {"A": {"$ref": "https://example.com/elsewhere.json"}}}')
    proc = mcpgen("generate", "--schema", str(bad), "--out", str(tmp_path / "x"))
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    expected = "unsupported reference 'https://example.com/elsewhere.json': expected `#/$defs/<Name>`"
    assert lines == [f"error: {bad}: /$defs/A/$ref: {expected}"]
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


def test_version() -> None:
    proc = mcpgen("--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"mcpgen {__version__}"


def test_debug_after_the_command_shows_the_traceback(tmp_path: Path) -> None:
    proc = mcpgen("generate", "--schema", str(tmp_path / "none.json"), "--out", str(tmp_path / "x"), "--debug")
    assert proc.returncode != 0
    assert "Traceback" in proc.stderr
    quiet = mcpgen("generate", "--schema", str(tmp_path / "none.json"), "--out", str(tmp_path / "x"))
    assert quiet.returncode == 2 and "Traceback" not in quiet.stderr


def wide(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "80", "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mcpgen.cli", *args], capture_output=True, text=True, cwd=ROOT, env=env
    )


def test_help_has_no_type_noise_and_summaries_fit_one_line() -> None:
    from mcpgen.cli.app import app

    names = [command.name or command.callback.__name__ for command in app.registered_commands if command.callback]
    top = wide("--help")
    assert top.returncode == 0
    for name in names:
        (row,) = [line for line in top.stdout.splitlines() if line.startswith(f"│ {name} ")]
        following = top.stdout.splitlines()[top.stdout.splitlines().index(row) + 1]
        assert following.startswith(("│ ", "╰")) and not following.startswith("│   "), f"{name}'s summary wraps"
    for name in [None, *names]:
        text = wide(*([name] if name else []), "--help").stdout
        assert not re.search(r"<(bool|str|int|float|path|list\[str\])>", text), text
        assert "{" not in text.split("\n", 3)[1], "usage line shows {ARGUMENT}"


def test_help_examples_and_prose_are_not_broken_mid_line() -> None:
    from mcpgen.cli.app import app

    for command in app.registered_commands:
        assert command.callback is not None
        name = command.name or command.callback.__name__
        doc = inspect.cleandoc(command.callback.__doc__ or "")
        examples = [line.strip() for line in doc.split("Example")[-1].splitlines()[1:] if line.strip()]
        assert examples, f"{name} has no examples"
        shown = [line.strip(" │") for line in wide(name, "--help").stdout.splitlines()]
        for example in examples:
            assert example in shown, f"{name}: {example!r} is not on a line of its own"
        first_prose = doc.split("\n\n")[1] if doc.count("\n\n") > 1 else ""
        if first_prose and not first_prose.startswith("Example"):
            # a prose paragraph is reflowed to the terminal, not broken where the docstring was
            assert " ".join(first_prose.split()[:6]) in " ".join(shown)


def test_exit_codes_are_documented() -> None:
    top = wide("--help").stdout
    assert "Exit codes:" in top
    for line in ("0  success", "1  generate --check found stale files", "2  bad usage or input"):
        assert line in top
    assert "Exit codes: 0 done, 1 the tool reported an error, 2 bad usage" in " ".join(
        line.strip(" │") for line in wide("call", "--help").stdout.splitlines()
    )


def test_typer_pin_keeps_the_plain_help() -> None:
    """pyproject's typer range is the one whose help was checked above (0.27 and later
    print <str>/<bool> beside options; before 0.26 typer used whatever click is installed)."""
    import tomllib

    import typer

    pins = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert "typer>=0.26,<0.27" in pins
    assert typer.__version__.startswith("0.26.")


def test_the_console_script_entry_point_resolves() -> None:
    """pyproject's ``mcpgen = "mcpgen.cli:main"`` names the command's main, loaded lazily by
    the package (whose __init__ imports nothing until asked)."""
    import importlib
    import tomllib

    target = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]["mcpgen"]
    module, _, attr = target.partition(":")
    from mcpgen.cli.app import main

    assert getattr(importlib.import_module(module), attr) is main


def test_hints_keep_their_brackets(tmp_path: Path) -> None:
    """rich markup would read `[codegen]` as a style tag and print `pip install 'mcpgen'`:
    the CLI prints text it did not write as it is (here, with the generator's jinja2
    hidden, the missing-extra hint; and a schema path holding brackets)."""
    hide = "import sys; sys.modules['jinja2'] = None; from mcpgen.cli.app import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", hide, "generate", "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert f"pip install -e '{ROOT}[codegen]'" in done.stderr, done.stderr  # as this checkout was installed
    odd = tmp_path / "[draft]" / "schema.json"
    odd.parent.mkdir()
    odd.write_text("{not json")
    done = mcpgen("generate", "--schema", str(odd), "--out", str(tmp_path / "x"))
    assert done.returncode == 2 and "[draft]" in done.stderr, done.stderr
