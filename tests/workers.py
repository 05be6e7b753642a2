"""Several uvicorn workers behind one loopback port, for the scale-out tests: started as
one process group, handed out once every worker has answered (a worker still importing
takes no connections, and a load must not start on fewer), and ended whole (supervisor
and workers) whatever happened."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import ROOT
from tests.http_server import free_port


@contextlib.contextmanager
def uvicorn_workers(
    app: str, workers: int, env: dict[str, str], log: Path, whoami: dict[str, Any] | None = None
) -> Iterator[str]:
    """Serve ``app`` (``module:attribute``) with ``workers`` processes and ``env`` added to
    ours; yields the endpoint once as many distinct pids answered the app's ``whoami`` tool
    (called with ``whoami`` as its arguments; it must return ``{"pid": ...}``)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    command = [sys.executable, "-m", "uvicorn", app, "--host", "127.0.0.1", "--port", str(port)]
    command += ["--log-level", "warning", "--no-access-log"]
    if workers > 1:
        command += ["--workers", str(workers)]
    with log.open("wb") as errors:
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env={**os.environ, **env},
            stdout=subprocess.DEVNULL,
            stderr=errors,
            start_new_session=True,
        )
        try:
            _wait_for_workers(url, process, workers, log, whoami or {})
            yield url
        finally:
            _end_group(process)


def _wait_for_workers(
    url: str, process: subprocess.Popen[bytes], workers: int, log: Path, arguments: dict[str, Any]
) -> None:
    deadline = time.monotonic() + 60
    seen: set[int] = set()
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "whoami", "arguments": arguments, "_meta": meta},
    }
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "whoami",
    }
    while len(seen) < workers:
        if process.poll() is not None:
            raise RuntimeError(f"uvicorn exited with {process.returncode}: {log.read_text()[-2000:]}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"only {len(seen)} of {workers} workers answered at {url}: {log.read_text()[-2000:]}")
        try:
            reply = httpx.post(url, content=json.dumps(body), headers=headers, timeout=2)  # a fresh connection
            seen.add(reply.json()["result"]["structuredContent"]["pid"])
        except (httpx.HTTPError, ValueError, KeyError):
            time.sleep(0.1)


def _end_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        pass
    # Whatever is left of the group (a worker the supervisor did not reap) goes too.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
