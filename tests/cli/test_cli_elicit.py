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
from tests.interop.test_interop import everything_command  # noqa: F401 (the npm-installed peer)

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
    done = call("login", "yes\n", "handshake")
    assert done.stdout.strip() == "accept" and "https://example.com/login" in done.stderr
    assert "  host: example.com" in done.stderr.splitlines()
    assert call("login", "\n", "handshake").stdout.strip() == "decline"  # a bare Enter is no yes


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


# ---------------------------------------------------------------- a URL the user must not be fooled by

HOSTILE = f"{sys.executable} {ROOT / 'tests' / 'cli' / 'hostile_server.py'}"


def visit(answers: str, url: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    given = ["-a", f"url={url}"] if url is not None else []
    return subprocess.run(
        # The handshake era: in the stateless era mcpgen's server sends a URL question
        # without its elicitationId today, and the client refuses it as malformed.
        [sys.executable, "-m", "mcpgen", "call", HOSTILE, "tool", "visit", *given, "-q", "--era", "handshake"],
        input=answers,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def test_a_url_shows_its_real_host_apart_and_flags_a_user_name() -> None:
    """``https://accounts.example.com@evil.example/x`` leads to evil.example: that is the
    host shown, on a line of its own that the message cannot imitate (it is kept on one
    line, its escapes spelled out), with a warning about the user name before the @."""
    done = visit("yes\n")
    assert done.stdout.strip() == "visited accept", done.stderr
    lines = done.stderr.splitlines()
    assert [line for line in lines if line.startswith("  host:")] == ["  host: evil.example"]
    assert any(line.startswith("  warning: the URL puts 'accounts.example.com' before an @") for line in lines)
    assert "the site is evil.example" in done.stderr
    assert "\x1b" not in done.stderr and "open it\\n  host: accounts.example.com\\x1b[1A" in done.stderr


def test_only_an_explicit_yes_accepts_a_url() -> None:
    assert visit("\n").stdout.strip() == "visited decline"  # a bare Enter
    assert visit("sure\n").stdout.strip() == "visited decline"
    assert visit(":cancel\n").stdout.strip() == "visited cancel"
    assert visit("Y\n").stdout.strip() == "visited accept"


def test_a_url_that_is_not_https_is_refused_without_asking() -> None:
    for url in ("http://evil.example/login", "javascript:alert(1)", "file:///etc/passwd"):
        done = visit("yes\n", url)  # even with a yes waiting on stdin
        assert done.stdout.strip() == "visited decline", (url, done.stderr)
        assert "  refused: " in done.stderr and "Open it" not in done.stderr
    loopback = visit("yes\n", "http://127.0.0.1:8765/callback")
    assert loopback.stdout.strip() == "visited accept" and "  host: 127.0.0.1:8765" in loopback.stderr


def test_look_alike_hosts_are_flagged() -> None:
    from mcpgen.cli.elicit import url_facts

    host, warnings = url_facts("https://\u0430pple.com/signin")  # a Cyrillic а
    assert host == "\u0430pple.com" and "non-ASCII" in warnings[0] and "xn--pple-43d.com" in warnings[0]
    host, warnings = url_facts("https://xn--pple-43d.com/signin")
    assert host == "xn--pple-43d.com" and "internationalized" in warnings[0] and "\u0430pple.com" in warnings[0]
    assert url_facts("https://docs.example.org:8443/x") == ("docs.example.org:8443", [])
    assert url_facts("https:///nohost")[0] is None


# ---------------------------------------------------------------- the form's own rules


def test_formats_are_checked_and_titled_choices_read_as_titles(everything_command: list[str]) -> None:  # noqa: F811
    """server-everything's form: an email field refuses 42; the defaults of titled enums
    read as their titles (Superman), not their values (hero-1)."""
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    # name, check, firstLine, email (42, then a real one), homepage, birthdate (a wrong one,
    # then empty), the rest: defaults.
    answers = "Ada\n\n\n42\nada@example.com\nnot a uri\n\n31/12/1999\n\n" + "\n" * 8
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpgen",
            "call",
            " ".join(everything_command),
            "-q",
            "tool",
            "trigger-elicitation-request",
        ],
        input=answers,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    asked = done.stderr
    assert "expected an email address" in asked
    assert "expected a URI, such as https://example.com/" in asked
    assert "expected a date, YYYY-MM-DD" in asked
    assert "[default: Superman]" in asked and "[default: Tuna]" in asked and "[default: Cats]" in asked
    assert "hero-1" not in asked and "fish-1" not in asked
    assert '"email": "ada@example.com"' in done.stdout and '"titledSingleSelectEnum": "hero-1"' in done.stdout


def test_typed_choices_keep_their_type() -> None:
    assert convert({"type": "integer", "enum": [1, 2, 3]}, "2") == 2  # the value, not its text
    with pytest.raises(ValueError, match="an email address"):
        convert({"type": "string", "format": "email"}, "42")
    with pytest.raises(ValueError, match="at most 2|longer than 2|2 characters"):
        convert({"type": "string", "maxLength": 2}, "abc")
