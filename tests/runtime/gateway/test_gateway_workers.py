"""Several gateway workers behind one endpoint: a stateless-era client's call through to a
handshake-era backend waits on the worker that started it (the backend's connection and its
waiting request live there), and its retry may land on another worker, which reaches the
round through the shared store. Two ``mcpgen gateway`` processes (HTTP) with the same
configuration and key, a real ``redis-server``, a real backend process under each, and a
client that alternates between them, round after round; raw HTTP, so that which worker gets
which request is the test's choice."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.http_server import free_port, wait_until_up
from tests.paths import ROOT
from tests.redis_server import redis_server

BACKEND = ROOT / "tests" / "runtime" / "gateway" / "backends.py"
MODERN = "2026-07-28"
CAPS = {"elicitation": {}}
FORM = {"action": "accept", "content": {"name": "Ada"}}


@contextlib.contextmanager
def worker(config: Path, env: dict[str, str], log: Path) -> Iterator[str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    command = [sys.executable, "-m", "mcpgen", "gateway", str(config), "--transport", "http", "--port", str(port)]
    with log.open("wb") as errors:
        process = subprocess.Popen(command, env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=errors)
        try:
            wait_until_up(url, process, timeout=30)
            yield url
        finally:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def call(url: str, name: str, ident: int, **extra: Any) -> dict[str, Any]:
    """A stateless-era tools/call over HTTP; its result (or error) as JSON."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": CAPS,
        "io.modelcontextprotocol/clientInfo": {"name": "workers-test", "version": "1"},
    }
    body = {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": {"name": name, "_meta": meta, **extra}}
    headers = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": name,
    }
    reply = httpx.post(url, json=body, headers=headers, timeout=30)
    text = reply.text
    if reply.headers.get("content-type", "").startswith("text/event-stream"):
        frames = [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:") and line[5:].strip()]
        return frames[-1]
    return dict(reply.json())


@pytest.mark.slow  # three gateways, three backends and a redis-server, as processes (~10 s)
def test_a_retry_on_another_worker_reaches_the_round_through_redis(tmp_path: Path) -> None:
    with redis_server() as redis:
        config = tmp_path / "gateway.json"
        backend = {"command": sys.executable, "args": [str(BACKEND), "--versions", "2025-11-25"]}
        config.write_text(
            json.dumps(
                {
                    "mcpServers": {"handshake": backend},
                    "gateway": {"store": redis.url, "state_key": "${GATEWAY_TEST_KEY}", "round_timeout": 30},
                }
            )
        )
        env = {"GATEWAY_TEST_KEY": secrets.token_hex(32)}
        with worker(config, env, tmp_path / "a.log") as a, worker(config, env, tmp_path / "b.log") as b:
            # One question: asked through A, answered through B.
            first = call(a, "ask", 1)["result"]
            assert first["resultType"] == "input_required", first
            assert list(first["inputRequests"]) == ["user_name"]  # the backend's own key
            done = call(b, "ask", 2, inputResponses={"user_name": FORM}, requestState=first["requestState"])
            assert done["result"]["resultType"] == "complete", done
            assert done["result"]["content"] == [{"type": "text", "text": "Hello, Ada!"}]

            # Two rounds: started on B, the first answer through A, the second through B.
            one = call(b, "two_rounds", 3)["result"]
            assert list(one["inputRequests"]) == ["step1"]
            two = call(a, "two_rounds", 4, inputResponses={"step1": FORM}, requestState=one["requestState"])["result"]
            assert two["resultType"] == "input_required" and list(two["inputRequests"]) == ["step2"], two
            grace = {"action": "accept", "content": {"name": "Grace"}}
            three = call(b, "two_rounds", 5, inputResponses={"step2": grace}, requestState=two["requestState"])
            assert three["result"]["content"] == [{"type": "text", "text": "Ada then Grace"}], three

            # A round answered once is over: its state, replayed on either worker, is refused.
            for url in (a, b):
                again = call(url, "ask", 6, inputResponses={"user_name": FORM}, requestState=first["requestState"])
                assert again["error"]["code"] == -32602, again

            # A worker without the others' key cannot open their state (another deployment).
            stranger_env = {"GATEWAY_TEST_KEY": secrets.token_hex(32)}
            with worker(config, stranger_env, tmp_path / "c.log") as c:
                fresh = call(a, "ask", 7)["result"]
                refused = call(c, "ask", 8, inputResponses={"user_name": FORM}, requestState=fresh["requestState"])
                assert refused["error"]["code"] == -32602, refused
