"""A hostile server's text never reaches the terminal as the terminal would act on it
(issue 36.3): names, descriptions, results, errors, logs, progress, task status, elicitation
questions, its stderr, and the `mcpgen stubs --check` report all go through
:mod:`mcpgen.cli.sanitize`. The server is real (tests/cli/hostile_server.py, over stdio)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcpgen.cli.sanitize import clean, clean_line, json_text, markup
from tests.cli.hostile_server import ALL, BIDI, CLIPBOARD, FORBIDDEN, LINK, TITLE
from tests.paths import ROOT

HOSTILE = f"{sys.executable} {ROOT / 'tests' / 'cli' / 'hostile_server.py'}"


def mcpgen(*args: str, stdin: str = "", cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mcpgen", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )


def assert_inert(*texts: str) -> None:
    for text in texts:
        found = sorted({repr(c) for c in FORBIDDEN if c in text})
        assert not found, f"{found} reached the terminal in:\n{text}"


# ---------------------------------------------------------------- the functions


def test_every_character_a_terminal_acts_on_is_spelled_out() -> None:
    assert clean("a\x1b]52;c;eA==\x07b") == "a\\x1b]52;c;eA==\\x07b"
    assert clean("\x9b31m \u202e \u2066 \x7f \x00") == "\\x9b31m \\u202e \\u2066 \\x7f \\x00"
    assert clean("two\r\nlines\tand a tab") == "two\nlines\tand a tab"  # CRLF is a line break
    assert clean("over\rwrite\b") == "over\\x0dwrite\\x08"
    assert clean("héllo wörld ✓ 日本") == "héllo wörld ✓ 日本"  # text is text
    assert clean_line("one\nline\ttab") == "one\\nline tab"
    assert markup("[bold]x[/] \x1b[2K") == "\\[bold]x\\[/] \\x1b[2K"


def test_json_stays_the_same_json() -> None:
    data = {"text": "result" + ALL, "ünïcode": "日本", "n": [1, 2.5, None]}
    shown = json_text(data)
    assert_inert(shown)
    assert json.loads(shown) == data  # the escapes decode back to exactly what was sent
    assert "日本" in shown  # readable text stays readable


# ---------------------------------------------------------------- mcpgen call


@pytest.mark.parametrize(
    ("args", "stdin"),
    [
        pytest.param([], "", id="listing"),
        pytest.param(["-v", "tool", "steal\x9b31m"], "", id="result"),
        pytest.param(["tool", "steal\x9b31m", "--json"], "", id="json"),
        pytest.param(["tool", "chatty", "--era", "handshake"], "1\n", id="logs-progress-elicitation"),
        pytest.param(["tool", "task_job", "--task"], "", id="task-status"),
        pytest.param(["tool", "fail"], "", id="tool-error"),
        pytest.param(["tool", "broken"], "", id="protocol-error"),
        pytest.param(["read", "note://hostilex"], "", id="resource"),
        pytest.param(["prompt", "ask", "-a", "topic=t"], "", id="prompt"),
    ],
)
def test_call_shows_a_hostile_server_inert(args: list[str], stdin: str) -> None:
    done = mcpgen("call", HOSTILE, *args, stdin=stdin)
    assert done.returncode in (0, 1, 2), done.stderr
    assert_inert(done.stdout, done.stderr)
    shown = done.stdout + done.stderr
    assert "\\x1b" in shown or "\\u001b" in shown, shown  # what was sent is visible, spelled out
    assert "stderr line\\x1b]52;c;" in done.stderr  # the server's own stderr, passed on sanitized


def test_each_kind_of_hostile_text_shows() -> None:
    """Not dropped: the user sees what the server sent, made inert."""
    listing = mcpgen("call", HOSTILE, "-q")
    assert clean_line("hostile" + TITLE) in listing.stdout
    assert clean_line("A tool" + CLIPBOARD)[:40] in listing.stdout
    chatty = mcpgen("call", HOSTILE, "-q", "tool", "chatty", "--era", "handshake", stdin="1\n")
    assert "log info " + clean_line("logger" + TITLE) in chatty.stderr
    assert "progress 1/2 " + clean_line("progress" + ALL) in chatty.stderr
    assert "The server asks: " + clean_line("question" + ALL) in chatty.stderr
    assert "1. " + clean_line("choice" + LINK) in chatty.stderr
    assert chatty.stdout.strip() == clean("answered accept" + BIDI)
    as_json = mcpgen("call", HOSTILE, "-q", "tool", "steal\x9b31m", "--json")
    assert json.loads(as_json.stdout)["content"][0]["text"] == "result" + ALL  # lossless


# ---------------------------------------------------------------- mcpgen stubs --check


def test_the_stubs_check_report_is_inert(tmp_path: Path) -> None:
    made = mcpgen("stubs", HOSTILE, "--save", "hostile.json", "-o", "client.py", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    same = mcpgen("stubs", "hostile.json", "-o", "client.py", "--check", cwd=tmp_path)
    assert same.returncode == 0, same.stderr
    assert_inert(same.stdout, same.stderr)
    assert clean_line("hostile" + TITLE) in same.stdout
    saved = json.loads((tmp_path / "hostile.json").read_text())
    for tool in saved["tools"]:
        if tool["name"] == "chatty":
            hostile = "x" + TITLE
            tool["inputSchema"] = {"type": "object", "properties": {hostile: {"type": "string"}}, "required": [hostile]}
    saved["tools"] = [t for t in saved["tools"] if t["name"] != "fail"]
    (tmp_path / "changed.json").write_text(json.dumps(saved))
    stale = mcpgen("stubs", "changed.json", "-o", "client.py", "--check", cwd=tmp_path)
    assert stale.returncode == 1, stale.stderr
    assert_inert(stale.stdout, stale.stderr)
    assert "tool removed: fail" in stale.stdout and "does not match " + clean_line("hostile" + TITLE) in stale.stderr
