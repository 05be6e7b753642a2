"""`mcpgen call` against real servers: the demo server over stdio and HTTP, and the
reference server-everything (npm)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.http_server import demo_http, free_port, running, wait_until_up
from tests.interop.test_interop import everything_command  # noqa: F401 (the npm-installed peer)
from tests.wire import DEMO

DEMO_CMD = f"{sys.executable} {DEMO}"


def mcpgen(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mcpgen.cli", "call", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )


def test_lists_everything_a_server_offers() -> None:
    proc = mcpgen(DEMO_CMD)
    assert proc.returncode == 0, proc.stderr
    for expected in (
        "demo 1.2.3",
        "tools (",
        "add",
        "resources (",
        "config://app",
        "file:///{name}",
        "prompts (",
        "review",
    ):
        assert expected in proc.stdout
    listing = json.loads(mcpgen(DEMO_CMD, "--json").stdout)
    assert {t["name"] for t in listing["tools"]} >= {"add", "echo"}
    assert listing["resourceTemplates"][0]["uriTemplate"] == "file:///{name}"


def test_tool_read_and_prompt() -> None:
    added = json.loads(mcpgen(DEMO_CMD, "tool", "add", "-a", "a=1", "-a", "b=41", "--json").stdout)
    assert added["structuredContent"] == {"result": 42}
    assert mcpgen(DEMO_CMD, "tool", "echo", "-a", "text=hello world").stdout.strip() == "hello world"
    assert "remember the milk" in mcpgen(DEMO_CMD, "read", "file:///notes.txt").stdout
    prompt = mcpgen(DEMO_CMD, "prompt", "review", "-a", "code=x = 1")
    assert "Review this python code" in prompt.stdout


def test_exit_codes() -> None:
    assert mcpgen(DEMO_CMD, "tool", "fail").returncode == 1  # the tool reported an error
    missing = mcpgen(DEMO_CMD, "read", "file:///none")  # auto: the stateless era's code for it
    assert missing.returncode == 2 and "-32602" in missing.stderr
    old = mcpgen("--era", "handshake", DEMO_CMD, "read", "file:///none")
    assert old.returncode == 2 and "-32002" in old.stderr
    assert mcpgen(DEMO_CMD, "frobnicate", "x").returncode == 2
    assert mcpgen(DEMO_CMD, "tool", "add", "-a", "novalue").returncode == 2
    dead = mcpgen(f"{sys.executable} -c pass")
    assert dead.returncode == 2 and dead.stderr.startswith("error: cannot connect")
    assert "Traceback" not in dead.stderr


def test_verbose_says_which_era_was_spoken() -> None:
    auto = mcpgen("-v", DEMO_CMD, "tool", "echo", "-a", "text=hi")
    assert auto.returncode == 0 and auto.stdout.strip() == "hi"
    assert (
        auto.stderr.splitlines()[0]
        == "connected to demo 1.2.3: stateless era (no handshake), protocol version 2026-07-28"
    )
    pinned = mcpgen("--verbose", "--era", "handshake", DEMO_CMD, "tool", "echo", "-a", "text=hi")
    assert (
        pinned.stderr.splitlines()[0]
        == "connected to demo 1.2.3: handshake era (initialize), protocol version 2025-11-25"
    )
    version = mcpgen("-v", "--era", "2025-06-18", DEMO_CMD)
    assert version.stderr.splitlines()[0].endswith("handshake era (initialize), protocol version 2025-06-18")
    assert "connected to" not in mcpgen(DEMO_CMD, "tool", "echo", "-a", "text=hi").stderr  # only when asked
    wrong = mcpgen("--era", "1999-01-01", DEMO_CMD)
    assert wrong.returncode == 2 and wrong.stderr.startswith("error: --era is one of auto, handshake, stateless")
    with demo_http() as url:
        over_http = mcpgen("-v", url, "tool", "echo", "-a", "text=hi")
        assert over_http.stderr.splitlines()[0].endswith("stateless era (no handshake), protocol version 2026-07-28")
        legacy = mcpgen("-v", url.replace("/mcp", "/sse"), "tool", "echo", "-a", "text=hi")
        assert legacy.stdout.strip() == "hi"  # HTTP+SSE exists only in the handshake era: no probe
        assert legacy.stderr.splitlines()[0].endswith("handshake era (initialize), protocol version 2025-11-25")


def test_over_http() -> None:
    with demo_http() as url:
        proc = mcpgen(url, "tool", "echo", "-a", "text=over http")
        assert proc.returncode == 0 and proc.stdout.strip() == "over http"
        assert "add" in mcpgen(url).stdout


def test_against_server_everything(everything_command: list[str]) -> None:  # noqa: F811
    command = " ".join(everything_command)
    listing = json.loads(mcpgen(command, "--json").stdout)
    names = {t["name"] for t in listing["tools"]}
    assert "echo" in names
    echoed = mcpgen(command, "tool", "echo", "-a", "message=hi there")
    assert echoed.returncode == 0 and "hi there" in echoed.stdout


PEER = ROOT / "tests" / "servers" / "cli_peer.py"
PEER_CMD = f"{sys.executable} {PEER}"
CRASHING_CMD = f"{sys.executable} {ROOT / 'tests' / 'servers' / 'crashing.py'}"


def narrow(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "60", "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mcpgen.cli", "call", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )


def test_arguments_follow_the_input_schema() -> None:
    proc = mcpgen(PEER_CMD, "tool", "label", "-a", "code=42", "-a", "count=7", "-a", "ratio=2", "-a", 'tags=["x"]')
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "code='42' count=7 ratio=2.0 tags=['x']"
    zero = mcpgen(PEER_CMD, "tool", "label", "-a", "code=007", "-a", "count=1", "--json")
    assert "code='007'" in json.loads(zero.stdout)["content"][0]["text"]
    # prompt arguments are text, taken as written
    assert "Hello 1e3 (plain)" in mcpgen(PEER_CMD, "prompt", "greet", "-a", "name=1e3").stdout


def test_listing_shows_arguments_and_whole_uris() -> None:
    from tests.servers.cli_peer import LONG_URI

    proc = narrow(PEER_CMD)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "  label  code: string, count: integer, [ratio: number], [tags: array|null]" in lines
    assert "  greet  name, [style]" in lines
    assert f"  {LONG_URI}  text/plain" in lines  # on one line, never cut, however narrow
    assert "…" not in proc.stdout


def test_images_are_summarised_and_structured_results_printed_once() -> None:
    from tests.servers.cli_peer import PIXEL

    picture = mcpgen(PEER_CMD, "tool", "picture")
    assert picture.stdout.strip() == "<image image/png, 70 bytes>"
    assert PIXEL[:20] not in picture.stdout
    shape = mcpgen(PEER_CMD, "tool", "shape")
    assert shape.returncode == 0
    assert shape.stdout.count("triangle-unique-marker") == 1
    assert json.loads(shape.stdout) == {"sides": 3, "name": "triangle-unique-marker"}
    blob = mcpgen(DEMO_CMD, "read", "bin://logo")
    assert blob.stdout.strip() == "<blob image/png, 12 bytes> bin://logo"


@pytest.mark.parametrize("era", ["auto", "handshake"])  # auto: the stateless era (logs only when asked for)
def test_progress_and_logs_show_as_they_arrive(tmp_path: Path, era: str) -> None:
    flag = tmp_path / "go"
    env = {**os.environ, "NO_COLOR": "1"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mcpgen.cli",
            "call",
            "-v",
            "--era",
            era,
            PEER_CMD,
            "tool",
            "wait_for",
            "-a",
            f"path={flag}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )
    try:
        assert proc.stderr is not None and proc.stdout is not None
        seen: list[str] = []
        timer = threading.Timer(60, proc.kill)  # bounded: a hang fails instead of blocking the suite
        timer.start()
        while not any(line.startswith("log ") for line in seen):
            line = proc.stderr.readline()
            assert line, f"the call ended before its notifications showed: {seen}"
            seen.append(line.rstrip("\n"))
        assert proc.poll() is None  # still waiting for the tool's answer
        assert seen[0].endswith(
            "stateless era (no handshake), protocol version 2026-07-28"
            if era == "auto"
            else "handshake era (initialize), protocol version 2025-11-25"
        )
        assert "progress 1/2 waiting" in seen
        assert "log info peer: waiting for the file" in seen
        flag.touch()
        out, rest = proc.communicate(timeout=60)
        timer.cancel()
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 0
    assert out.strip() == "arrived"
    assert "progress 2/2 done" in rest


def test_legacy_sse_by_flag_by_path_and_by_fallback() -> None:
    with demo_http() as url:
        sse_url = url.replace("/mcp", "/sse")
        assert mcpgen(sse_url, "tool", "echo", "-a", "text=by path").stdout.strip() == "by path"
        assert mcpgen("--transport", "sse", sse_url, "tool", "echo", "-a", "text=by flag").stdout.strip() == "by flag"
        wrong = mcpgen("--transport", "stdio", url)
        assert wrong.returncode == 2 and "needs a command" in wrong.stderr
    port = free_port()
    events = f"http://127.0.0.1:{port}/events"
    with running(
        [sys.executable, str(PEER), "--http", str(port), "--legacy-at", "/events"], f"http://127.0.0.1:{port}/mcp"
    ):
        found = mcpgen(events, "tool", "label", "-a", "code=1", "-a", "count=1")
        assert found.returncode == 0, found.stderr
        assert found.stdout.strip().startswith("code='1'")
        strict = mcpgen("--transport", "http", events)
        assert strict.returncode == 2
        assert strict.stderr.strip() == f"error: cannot connect to {events}: HTTP 405 Method Not Allowed from {events}"


def test_http_errors_are_one_line(tmp_path: Path) -> None:
    port = free_port()
    page = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        wait_until_up(url, page)
        proc = mcpgen(url)
    finally:
        page.terminate()
        page.wait(5)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [f"error: cannot connect to {url}: HTTP 501 Not Implemented from {url}"]
    refused = mcpgen(f"http://127.0.0.1:{free_port()}/mcp")
    assert refused.returncode == 2 and len(refused.stderr.splitlines()) == 1


def test_a_closed_stdout_is_not_an_error() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpgen.cli", "call", PEER_CMD], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # like `| head -0`
    assert proc.wait(timeout=60) == 0
    assert proc.stderr.read() == b""


def test_a_server_that_dies_says_why() -> None:
    fatal = mcpgen(f"{CRASHING_CMD} exit3")
    assert fatal.returncode == 2
    assert fatal.stderr.splitlines() == [
        "starting up",
        "fatal: missing API_KEY",  # the server's stderr, passed through
        f"error: cannot connect to {CRASHING_CMD} exit3: the server exited with status 3 before answering: "
        "fatal: missing API_KEY",
    ]
    quiet = mcpgen("-q", f"{CRASHING_CMD} exit3")
    assert quiet.stderr.splitlines() == fatal.stderr.splitlines()[2:]
    broken = mcpgen("-q", f"{CRASHING_CMD} import")
    assert broken.stderr.strip().endswith(
        "status 1 before answering: ModuleNotFoundError: No module named 'mcpgen_no_such_module'"
    )
    missing = mcpgen("-q", f"{sys.executable} {ROOT / 'no_such_server.py'}")
    assert "exited with status 2 before answering: " in missing.stderr and "no_such_server.py" in missing.stderr
    midway = mcpgen("-q", f"{CRASHING_CMD} on-call", "tool", "die")
    assert midway.returncode == 2
    assert midway.stderr.strip() == "error: the server exited with status 5 before answering: dying now"


@pytest.mark.slow
def test_the_help_example_works_against_server_everything(everything_command: list[str]) -> None:  # noqa: F811
    """The server-everything example printed by `mcpgen call --help`, run as printed but
    with the npm-installed copy in place of `npx -y` (no network at test time)."""
    env = {**os.environ, "COLUMNS": "80", "NO_COLOR": "1"}
    shown = subprocess.run(
        [sys.executable, "-m", "mcpgen.cli", "call", "--help"], capture_output=True, text=True, env=env, timeout=60
    ).stdout
    lines = [line.strip(" │") for line in shown.splitlines()]
    start = next(i for i, line in enumerate(lines) if "@modelcontextprotocol/server-everything" in line)
    example = lines[start]
    while example.endswith("\\"):
        start += 1
        example = example[:-1] + lines[start]
    words = shlex.split(example)
    assert words[:2] == ["mcpgen", "call"] and words[2] == "npx -y @modelcontextprotocol/server-everything"
    words[2] = shlex.join(everything_command)
    proc = subprocess.run(
        [sys.executable, "-m", "mcpgen.cli", *words[1:]], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "Paris" in proc.stdout
