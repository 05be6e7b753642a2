"""Start the demo server (or another ASGI app) under uvicorn on a free loopback port."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from mcpgen import Context, Server
from tests.wire import DEMO


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until_up(url: str, process: subprocess.Popen[bytes], timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"the server exited with {process.returncode}: {process.stderr.read() if process.stderr else ''}"
            )
        try:
            httpx.get(url, timeout=0.5)
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise TimeoutError(f"nothing answered at {url}")


@contextlib.contextmanager
def running(command: list[str], url: str, cwd: Path | None = None) -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=cwd)
    try:
        wait_until_up(url, process)
        yield process
    finally:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.contextmanager
def demo_http(*args: str) -> Iterator[str]:
    """The demo server over Streamable HTTP; yields its MCP endpoint URL."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with running([sys.executable, str(DEMO), "--http", str(port), *args], url):
        yield url


def echo_server(name: str = "http11") -> Server:
    """A server with ``echo`` (plain JSON answers) and ``streamed`` (progress first, so
    its answer comes as SSE)."""
    server = Server(name)

    @server.tool()
    def echo(text: str) -> str:
        return text

    @server.tool()
    async def streamed(text: str, ctx: Context) -> str:
        await ctx.report_progress(1, 2)  # a notification first: the answer comes as SSE
        return text

    return server


@contextlib.contextmanager
def serving_in_thread(app: Any, port: int | None = None, **options: Any) -> Iterator[int]:
    """``app`` under uvicorn in a thread (its own event loop) on ``port`` (a free one by
    default); yields the port. ``options`` go to ``uvicorn.Config``."""
    import uvicorn

    port = port if port is not None else free_port()
    runner = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", **options))
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not runner.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield port
    finally:
        runner.should_exit = True
        thread.join(5)
