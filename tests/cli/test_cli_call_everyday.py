"""`mcpgen call` as users reach for it (issue 35.6, 35.7, 35.11): a misspelt tool, prompt,
resource or argument gets a "did you mean"; every argument problem is reported at once;
signatures show real types; a task-only tool on any server gets the "add --task" hint; a
server's print at import shows on stderr; a launcher's child does not outlive the command
(nor print "Event loop is closed"); a URL that serves a web page is named at once. Real
servers over stdio and HTTP."""

from __future__ import annotations

import http.server
import os
import shlex
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.interop.test_interop import everything_command  # noqa: F401 (the npm-installed peer)
from tests.paths import ROOT
from tests.processes import running_with

TYPED = f"{sys.executable} {ROOT / 'tests' / 'cli' / 'typed_server.py'}"


def mcpgen(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mcpgen", "call", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120
    )


def error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr)
    [line] = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    return line


def test_a_misspelt_name_gets_a_did_you_mean() -> None:
    assert error_line(mcpgen(TYPED, "tool", "ad", "-a", "a=1")).endswith(
        "(no tool 'ad' is listed; did you mean 'add'?)"
    )
    assert "did you mean 'review'?" in error_line(mcpgen(TYPED, "prompt", "reviw", "-a", "code=x"))
    assert "did you mean 'config://app'?" in error_line(mcpgen(TYPED, "read", "config://ap"))
    prompt = error_line(mcpgen(TYPED, "prompt", "review", "-a", "cod=x"))
    assert "cod: no such argument (did you mean 'code'?); code: missing (required)" in prompt


def test_every_argument_problem_at_once() -> None:
    line = error_line(mcpgen(TYPED, "tool", "place", "-a", "cuont=3", "-a", "point=1,2", "-a", "color=purple"))
    assert line.startswith("error: tool place: ")
    for problem in (
        "--arg point takes an object, written as JSON",
        "cuont: no such argument (did you mean 'count'?)",
        "count: missing (required)",
        'color: expected "green"|"red"|null, got "purple"',
        '(it takes: count: integer, point: object, [color: "green"|"red"|null], [path: array|null])',
    ):
        assert problem in line, (problem, line)
    nested = error_line(mcpgen(TYPED, "tool", "place", "-a", "count=x", "-a", 'point={"x": "a"}'))
    assert 'count: "x" is not of type "integer"' in nested and 'point.x: "a" is not of type "integer"' in nested
    assert '"y" is a required property' in nested


def test_signatures_show_real_types() -> None:
    """A struct argument (a $ref) reads as an object, an optional enum as its values."""
    listing = mcpgen(TYPED)
    assert listing.returncode == 0, listing.stderr
    assert '  place  count: integer, point: object, [color: "green"|"red"|null], [path: array|null]' in (
        listing.stdout.splitlines()
    )
    done = mcpgen(TYPED, "tool", "place", "-a", "count=2", "-a", 'point={"x": 1, "y": 2}', "-a", "color=red")
    assert done.returncode == 0 and done.stdout.strip() == "placed 2 at 1,2 in red", done.stderr


def test_a_task_only_tool_on_any_server_says_add_task(everything_command: list[str]) -> None:  # noqa: F811
    line = error_line(mcpgen(shlex.join(everything_command), "-q", "tool", "simulate-research-query", "-a", "topic=x"))
    assert line == "error: tool simulate-research-query runs only as a task: add --task"


SDK_SERVER = """
print("loading the notes")
from mcp.server.mcpserver import MCPServer

mcp = MCPServer("chatty")


@mcp.tool()
def ping() -> str:
    return "pong"


if __name__ == "__main__":
    mcp.run()
"""


def test_a_print_at_import_shows_on_stderr(tmp_path: Path) -> None:
    """The official SDK's server leaves stdout to print() until it serves: the line is not
    a message, and the user sees it on stderr instead of losing it."""
    (tmp_path / "chatty.py").write_text(SDK_SERVER)
    done = mcpgen(f"{sys.executable} chatty.py", "tool", "ping", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "server stdout: loading the notes" in done.stderr.splitlines()
    assert '"result": "pong"' in done.stdout


def test_a_launchers_child_ends_with_the_command(everything_command: list[str]) -> None:  # noqa: F811
    """Through a launcher (here `sh -c`, as `npx` is one), a task-running server used to
    outlive the command, holding its pipes: asyncio then printed "RuntimeError: Event loop
    is closed" at exit. The server's whole process group ends with the command."""
    token = f"mcpgen-test-{uuid.uuid4().hex}"
    launcher = shlex.join(["sh", "-c", shlex.join([*everything_command, token]) + "; true"])
    done = mcpgen(launcher, "-q", "tool", "simulate-research-query", "-a", "topic=x", "--task")
    try:
        assert done.returncode == 0, done.stderr
        assert "Research Report" in done.stdout
        assert "Event loop is closed" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr
        deadline = time.monotonic() + 10
        while running_with(token) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert running_with(token) == []
    finally:
        for pid in running_with(token):  # what this test started, by its own token
            os.kill(pid, 9)


class _WebPage(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        self.rfile.read(int(self.headers.get("content-length") or 0))
        body = b"<!doctype html><html><head><title>Welcome \x1b[2K home</title></head><body>hi</body></html>"
        self.send_response(200)
        self.send_header("content-type", "text/html; charset=utf-8")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def web_page() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _WebPage)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/"
    finally:
        server.shutdown()
        server.server_close()


def test_a_web_page_is_named_at_once(web_page: str) -> None:
    """With a minute to wait for each answer, the command does not wait it out: the page
    answered 200 text/html, and the error says so (the title sanitized)."""
    line = error_line(mcpgen(web_page, "--timeout", "60"))
    assert line == (
        f'error: {web_page} is not an MCP endpoint: it answered 200 text/html, a page titled "Welcome \\x1b[2K home"'
    )
