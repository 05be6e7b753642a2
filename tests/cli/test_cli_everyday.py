"""The CLI's everyday failures, each one line that says what happened and what to do: a
user module that raises, a port in use or out of range, a URL with no host, a host:port run
as a command, a pinned era the server does not speak; serving other host names; and
stopping an HTTP server in the middle of a call. Real subprocesses throughout."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from tests.conftest import ROOT
from tests.http_server import free_port
from tests.interop.test_interop import everything_command  # noqa: F401  (the npm-installed reference server)

SLOW_SERVER = """
import asyncio
from pathlib import Path
from mcpgen import Server

server = Server("slow")


@server.tool()
async def nap(seconds: float) -> str:
    Path("napping").touch()  # the call is in progress (what a test waits for)
    await asyncio.sleep(seconds)
    return "rested"
"""


def mcpgen(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "mcpgen", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=120
    )


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert "Traceback" not in done.stderr and "ExceptionGroup" not in done.stderr, done.stderr
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1, done.stderr
    return errors[0]


def test_a_user_module_that_raises_keeps_its_class_and_place(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(
        "import os\nfrom mcpgen import Server\n\nserver = Server('db')\nURL = os.environ['DATABASE_URL_NOT_SET']\n"
    )
    (tmp_path / "files.py").write_text("from mcpgen import Server\n\nserver = Server('f')\nopen('/no/such/file')\n")
    line = one_error_line(mcpgen("run", "app.py", cwd=tmp_path))
    assert line.startswith("error: app.py:5: KeyError: 'DATABASE_URL_NOT_SET'"), line
    line = one_error_line(mcpgen("run", "files.py", cwd=tmp_path))
    assert "files.py:4: FileNotFoundError: [Errno 2] No such file or directory: '/no/such/file'" in line
    debug = mcpgen("run", "app.py", "--debug", cwd=tmp_path)
    assert debug.returncode != 0 and "Traceback" in debug.stderr and "KeyError" in debug.stderr


def test_a_port_in_use_or_out_of_range(tmp_path: Path) -> None:
    (tmp_path / "slow.py").write_text(SLOW_SERVER)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = one_error_line(mcpgen("run", "slow.py", "--transport", "http", "--port", str(port), cwd=tmp_path))
    assert f"port {port} on 127.0.0.1 is in use" in line and "--port" in line
    line = one_error_line(mcpgen("run", "slow.py", "--transport", "http", "--port", "99999", cwd=tmp_path))
    assert "0 to 65535, not 99999" in line


def test_call_targets_that_are_not_what_they_seem() -> None:
    assert "names no host" in one_error_line(mcpgen("call", "http://"))
    line = one_error_line(mcpgen("call", "localhost:8000"))
    assert "not a command" in line and "http://localhost:8000/mcp" in line
    assert "no such command: no-such-server-here (not found on PATH)" in one_error_line(
        mcpgen("call", "no-such-server-here --stdio")
    )


def test_a_pinned_stateless_era_against_a_handshake_only_server(everything_command: list[str]) -> None:  # noqa: F811
    line = one_error_line(mcpgen("call", " ".join(everything_command), "--era", "stateless", "-q"))
    assert "speaks only the handshake era" in line and "-32601" in line and "exited" not in line


def _serve(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen[str], str, list[str]]:
    """`mcpgen run slow.py` over HTTP; its URL, and its stderr as it comes."""
    (tmp_path / "slow.py").write_text(SLOW_SERVER)
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "mcpgen", "run", "slow.py", "--transport", "http", "--port", str(port), *extra],
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"},
    )
    lines: list[str] = []
    assert process.stderr is not None
    stream = process.stderr

    def read() -> None:
        for line in stream:
            lines.append(line)

    threading.Thread(target=read, daemon=True).start()
    deadline = time.monotonic() + 30
    while not any("serving slow" in line for line in lines):
        assert process.poll() is None and time.monotonic() < deadline, "".join(lines)
        time.sleep(0.05)
    return process, f"http://127.0.0.1:{port}/mcp", lines


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def test_run_serves_an_allowed_host_name(tmp_path: Path) -> None:
    process, url, _ = _serve(tmp_path, "--allowed-host", "mcp.example.test")
    try:
        named = httpx.post(url, json=INITIALIZE, headers={**ACCEPT, "Host": "mcp.example.test"}, timeout=10)
        assert named.status_code == 200, named.text
        other = httpx.post(url, json=INITIALIZE, headers={**ACCEPT, "Host": "elsewhere.test"}, timeout=10)
        assert other.status_code == 403
        local = httpx.post(url, json=INITIALIZE, headers=ACCEPT, timeout=10)
        assert local.status_code == 200
    finally:
        process.kill()
        process.wait()


def test_stopping_during_a_call_says_what_it_waits_for(tmp_path: Path) -> None:
    process, url, lines = _serve(tmp_path)
    caller = subprocess.Popen(
        [sys.executable, "-m", "mcpgen", "call", url, "tool", "nap", "-a", "seconds=30"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60  # a client's start takes seconds on a loaded machine
    while not (tmp_path / "napping").exists():  # the call is in progress
        assert caller.poll() is None and time.monotonic() < deadline, "".join(lines)
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    deadline = time.monotonic() + 10
    while not any("shutting down" in line for line in lines):
        assert time.monotonic() < deadline, "".join(lines)
        time.sleep(0.05)
    assert any("waiting up to 10 s for 1 request(s) in progress" in line for line in lines), "".join(lines)
    assert process.poll() is None  # still waiting for the call
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=10) is not None
    caller.wait(timeout=30)
    text = "".join(lines)
    assert "stopping now" in text and "Traceback" not in text and "KeyboardInterrupt" not in text, text


def test_a_boxed_primitive_prints_once_and_a_crash_names_its_class(tmp_path: Path) -> None:
    """The official SDK sends a str result as the text and as {"result": text}: printed once.
    A resource that raises is answered -32603 naming the resource and the exception's class
    (not its message, which may hold a secret)."""
    sdk = f"{sys.executable} {ROOT / 'tests' / 'interop' / 'sdk_server.py'}"
    done = mcpgen("call", sdk, "tool", "count", "-a", "to=2", "-q")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("counted to 2") == 1, done.stdout
    (tmp_path / "crash.py").write_text(
        "from mcpgen import Server\n\nserver = Server('c')\n\n\n@server.resource('data://x')\n"
        "def x() -> str:\n    raise KeyError('hunter2')\n"
    )
    line = one_error_line(
        mcpgen("call", f"{sys.executable} -m mcpgen run crash.py", "read", "data://x", "-q", cwd=tmp_path)
    )
    assert "Resource data://x failed with an internal error (KeyError)" in line and "hunter2" not in line


def test_ctrl_c_during_a_call_says_cancelled(tmp_path: Path) -> None:
    (tmp_path / "slow.py").write_text(SLOW_SERVER + "\nif __name__ == '__main__':\n    server.run()\n")
    caller = subprocess.Popen(
        [sys.executable, "-m", "mcpgen", "call", f"{sys.executable} slow.py", "tool", "nap", "-a", "seconds=30"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60  # a client's start takes seconds on a loaded machine
    while not (tmp_path / "napping").exists():  # connected, the call in progress
        assert caller.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    caller.send_signal(signal.SIGINT)
    out, err = caller.communicate(timeout=30)
    assert caller.returncode == 130 and err.strip().endswith("cancelled"), err
    assert "Traceback" not in err and out == ""


def test_bare_generate_refuses_outside_a_checkout(tmp_path: Path) -> None:
    """An installed mcpgen (here: the package copied away from its pyproject.toml) refuses
    to rewrite its own bindings; --check alone (read-only) still works."""
    import shutil

    shutil.copytree(ROOT / "mcpgen", tmp_path / "mcpgen", ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "NO_COLOR": "1", "COLUMNS": "200"}
    done = subprocess.run(
        [sys.executable, "-m", "mcpgen", "generate"], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 2 and "give --out DIR" in done.stderr, done.stderr
    checked = subprocess.run(
        [sys.executable, "-m", "mcpgen", "generate", "--check"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert checked.returncode == 0, checked.stderr


def test_a_print_at_import_goes_to_stderr_under_python_server_py(tmp_path: Path) -> None:
    """`python server.py` whose module prints while it loads: on a pipe that text sits in
    sys.stdout's buffer until server.run() starts; it must land on stderr, not before the
    first frame on stdout (the client would read garbage)."""
    (tmp_path / "chatty.py").write_text(
        "print('loading the notes')\n"
        "from mcpgen import Server\n\nserver = Server('chatty')\n\n\n@server.tool()\n"
        "def ping() -> str:\n    return 'pong'\n\n\nif __name__ == '__main__':\n    server.run()\n"
    )
    # Buffered as a host starts it (PYTHONUNBUFFERED, as some shells set, writes the text at
    # once, before any server code runs: nothing can take it back then).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    done = subprocess.run(
        [sys.executable, "-m", "mcpgen", "call", f"{sys.executable} chatty.py", "tool", "ping"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "pong" and "loading the notes" in done.stderr


def test_array_arguments_say_they_take_json(tmp_path: Path) -> None:
    (tmp_path / "tags.py").write_text(
        "from mcpgen import Server\n\nserver = Server('t')\n\n\n@server.tool()\n"
        "def count(tags: list[str]) -> int:\n    return len(tags)\n\n\nif __name__ == '__main__':\n    server.run()\n"
    )
    target = f"{sys.executable} tags.py"
    line = one_error_line(mcpgen("call", target, "tool", "count", "-a", "tags=a,b", cwd=tmp_path))
    assert "--arg tags takes an array, written as JSON" in line
    done = mcpgen("call", target, "tool", "count", "-a", 'tags=["a","b"]', cwd=tmp_path)
    assert done.returncode == 0 and '"result": 2' in done.stdout, done.stdout + done.stderr
    assert "JSON for anything else" in mcpgen("call", "--help").stdout
