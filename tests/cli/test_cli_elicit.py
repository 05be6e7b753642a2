"""`mcpgen call` answers a server's elicitation in the terminal (form fields typed, with
defaults and choices; a URL to open), from stdin; a server asking it for an LLM sample gets a
clear refusal. Real subprocesses, both eras."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from mcpgen.cli.elicit import choices, convert
from tests.conftest import ROOT

PEER = f"{sys.executable} {ROOT / 'tests' / 'servers' / 'asking_peer.py'}"


def call(tool: str, answers: str, era: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "mcpgen", "call", PEER, "tool", tool, "--era", era, "-q"],
        input=answers,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


@pytest.mark.parametrize("era", ["handshake", "stateless"])
def test_a_form_is_asked_field_by_field(era: str) -> None:
    # name, age (empty: default 30), color (a wrong answer, then its number), subscribe,
    # tags (labels and values), note (optional, left out).
    done = call("signup", "Ada\n\npurple\n2\ny\nAlpha, b\n\n", era)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "action": "accept",
        "content": {"name": "Ada", "age": 30, "color": "green", "subscribe": True, "tags": ["a", "b"]},
    }
    asked = done.stderr
    assert "The server asks: Tell us about you" in asked
    assert "Your name (string, required): as you like to be called" in asked
    assert "age (integer)" in asked and "[default: 30]" in asked
    assert "1. red" in asked and "expected one of: red, green, blue" in asked
    assert "tags (choose several, comma-separated)" in asked and "1. Alpha" in asked


def test_decline_cancel_and_a_url() -> None:
    assert json.loads(call("signup", ":decline\n", "handshake").stdout)["action"] == "decline"
    assert json.loads(call("signup", "", "handshake").stdout)["action"] == "cancel"  # end of input
    done = call("login", "\n", "handshake")
    assert done.stdout.strip() == "accept" and "https://example.com/login" in done.stderr


def test_a_sample_is_refused_clearly() -> None:
    done = call("summarize", "", "handshake")
    assert done.returncode == 1  # the tool reported an error
    assert "sampling" in (done.stdout + done.stderr)


def test_answers_are_typed_by_the_field() -> None:
    assert convert({"type": "number", "minimum": 0}, "2.5") == 2.5
    with pytest.raises(ValueError, match="a number from 0 to 10"):
        convert({"type": "integer", "minimum": 0, "maximum": 10}, "11")
    with pytest.raises(ValueError, match="yes or no"):
        convert({"type": "boolean"}, "maybe")
    assert choices({"type": "string", "enum": ["s", "m"], "enumNames": ["Small", "Medium"]}) == [
        ("s", "Small"),
        ("m", "Medium"),
    ]
    assert convert({"type": "string", "oneOf": [{"const": "x", "title": "Ex"}]}, "Ex") == "x"
