"""`mcpgen call` against a server whose response stream ends before the response (issue 35,
point 13): the error is the client's own, and says no answer came, never that the server
answered with one. A real HTTP server under uvicorn over loopback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from tests.http_server import serving_in_thread
from tests.paths import ROOT

TOOL = {"name": "slow", "description": "Never answers.", "inputSchema": {"type": "object", "properties": {}}}


async def ends_early(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Handshake era only; a tools/call's stream ends with no event at all."""
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    if scope["method"] != "POST":
        await send({"type": "http.response.start", "status": 405, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    request = json.loads(body)
    if "id" not in request:
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    method, rid = request["method"], request["id"]
    if method == "tools/call":
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b""})  # the stream ends: no event, no id
        return
    if method == "initialize":
        info = {"name": "ends-early", "version": "1"}
        result: Any = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": info}
        answer: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "result": result}
    elif method == "tools/list":
        answer = {"jsonrpc": "2.0", "id": rid, "result": {"tools": [TOOL]}}
    else:  # server/discover among them: this server is of the handshake era
        answer = {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"Method not found: {method}"}}
    payload = json.dumps(answer).encode()
    headers = [(b"content-type", b"application/json"), (b"mcp-session-id", b"s1")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


def test_a_stream_that_ends_before_the_response_is_no_answer_from_the_server() -> None:
    with serving_in_thread(ends_early) as port:
        done = subprocess.run(
            [sys.executable, "-m", "mcpgen", "call", f"http://127.0.0.1:{port}/mcp", "tool", "slow"],
            capture_output=True,
            text=True,
            env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1"},
            cwd=ROOT,
            timeout=120,
        )
    assert done.returncode != 0
    assert "no answer from the server: the response stream ended before the response" in done.stderr, done.stderr
    assert "the server answered" not in done.stderr
