"""A real ``redis-server`` for the tests of the Redis-backed stores.

:func:`redis_server` starts Debian's ``redis-server`` on a free 127.0.0.1 port with no
persistence (no RDB snapshots, no append-only file, its working directory a temporary
one), waits until it answers PING, and stops it afterwards. Without the binary the calling
test skips with the one reason :data:`REDIS_MISSING`; under ``CI=true`` the missing binary
fails the test instead, since CI installs it (.ci/run), as tests/conftest.py treats a
missing ../shared.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.http_server import free_port

REDIS_MISSING = "needs redis-server (Debian package redis-server) on PATH or at /usr/bin/redis-server"


def redis_binary() -> str | None:
    found = shutil.which("redis-server")
    if found is None and os.access("/usr/bin/redis-server", os.X_OK):
        found = "/usr/bin/redis-server"
    return found


def require_redis() -> str:
    """The binary's path; else skip (fail under CI=true) with :data:`REDIS_MISSING`."""
    binary = redis_binary()
    if binary is None:
        if os.environ.get("CI", "").lower() in ("true", "1"):
            pytest.fail(f"CI=true: {REDIS_MISSING} (.ci/run installs it)")
        pytest.skip(REDIS_MISSING)
    return binary


@dataclass
class RedisServer:
    """One running redis-server: its URL, and ways to stop, freeze and restart it mid-test."""

    url: str
    port: int
    process: subprocess.Popen[bytes]
    command: list[str] | None = None
    workdir: str = ""

    def stop(self) -> None:
        """Stop the server now (SIGTERM, then SIGKILL if it lingers)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def restart(self, *, keep_data: bool, down: float = 1.0) -> float:
        """Stop the server and start it again on the same port after ``down`` seconds:
        with its data (saved to disk on the way down, loaded on the way up) or empty.
        Returns how long it was unreachable."""
        assert self.command is not None
        dump = os.path.join(self.workdir, "dump.rdb")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(dump)
        started = time.monotonic()
        if keep_data:
            with socket.create_connection(("127.0.0.1", self.port), timeout=5) as sock:
                sock.sendall(b"SHUTDOWN SAVE\r\n")
                with contextlib.suppress(OSError):
                    sock.recv(64)
            self.process.wait(10)
            assert os.path.exists(dump), "redis-server saved no data on its way down"
        else:
            self.process.kill()
            self.process.wait()
        time.sleep(max(0.0, down - (time.monotonic() - started)))
        self.process = subprocess.Popen(
            self.command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=self.workdir
        )
        _wait_for(self.port, self.process)
        return time.monotonic() - started


def _pings(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@contextlib.contextmanager
def redis_server() -> Iterator[RedisServer]:
    """A fresh redis-server on a free loopback port, stopped on the way out."""
    binary = require_redis()
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="mcpgen-redis-") as workdir:
        command = [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            workdir,
            "--daemonize",
            "no",
            "--loglevel",
            "warning",
        ]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=workdir)
        server = RedisServer(f"redis://127.0.0.1:{port}/0", port, process, command, workdir)
        try:
            _wait_for(port, process)
            yield server
        finally:
            server.stop()


def _wait_for(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 15
    while not _pings(port):
        if process.poll() is not None:
            errors = process.stderr.read().decode(errors="replace") if process.stderr else ""
            raise RuntimeError(f"redis-server exited with {process.returncode}: {errors[-2000:]}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"redis-server did not answer on port {port}")
        time.sleep(0.05)
