"""Scale-out: the stateless app under uvicorn with two worker processes, loaded by
concurrent clients; every call must succeed, and both workers must serve."""

from __future__ import annotations

import asyncio
import json
import sys

import httpx
import pytest

from tests.conftest import ROOT
from tests.http_server import free_port, running

pytestmark = pytest.mark.anyio


async def test_two_workers_serve_stateless_load() -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    command = [
        sys.executable,
        "-m",
        "uvicorn",
        "tests.servers.demo_asgi:app",
        "--workers",
        "2",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "warning",
    ]
    with running(command, url, cwd=ROOT):
        pids: set[int] = set()
        errors: list[str] = []
        headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}

        async def call(client: httpx.AsyncClient, n: int) -> None:
            tool = "pid" if n % 2 else "echo"
            arguments = {} if tool == "pid" else {"text": f"m{n}"}
            body = {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
            reply = await client.post(url, content=json.dumps(body), headers=headers)
            data = reply.json()
            if reply.status_code != 200 or data.get("id") != n or "result" not in data:
                errors.append(f"{n}: {reply.status_code} {reply.text[:200]}")
            elif tool == "pid":
                pids.add(data["result"]["structuredContent"]["result"])
            elif data["result"]["content"][0]["text"] != f"m{n}":
                errors.append(f"{n}: crossed response {data}")

        limits = httpx.Limits(max_connections=32, max_keepalive_connections=0)  # new connections spread
        async with httpx.AsyncClient(limits=limits, timeout=30) as client:
            for start in range(0, 1000, 50):
                await asyncio.gather(*(call(client, n) for n in range(start, start + 50)))
                if len(pids) > 1 and start >= 400:
                    break
        assert errors == []
        assert len(pids) == 2, pids
