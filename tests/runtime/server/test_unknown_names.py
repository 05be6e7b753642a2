"""A flood of made-up tool names over stateless HTTP leaves the server's memory flat (issue
36.9): what the server caches per tool (its ``x-mcp-header`` annotations) is kept for
registered tools only. A real server process (the demo under ``server.run("http")``), its
resident memory read from ``/proc``, before and after 1,000 calls naming 40 KiB names."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from tests.era import CAPABILITIES, MODERN
from tests.http_server import demo_http

META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": CAPABILITIES}
NAME_BYTES = 40 * 1024
CALLS = 1000  # 40 MB of names, were they kept


def resident_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def server_pid(url: str) -> int:
    port = url.split(":")[2].split("/")[0]
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"--http" in command and port.encode() in command and any(b"demo.py" in c for c in command):
                return int(entry.name)
    raise AssertionError(f"no server process for {url}")


def unknown_call(client: httpx.Client, url: str, index: int) -> httpx.Response:
    name = f"{index:06d}" + "x" * (NAME_BYTES - 6)  # valid characters, no tool by that name
    message = {
        "jsonrpc": "2.0",
        "id": index,
        "method": "tools/call",
        "params": {"_meta": META, "name": name, "arguments": {}},
    }
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": name,
    }
    return client.post(url, content=json.dumps(message), headers=headers)


@pytest.mark.slow  # 1,100 calls of 80 KB each to a real server process: about 10 s
def test_made_up_tool_names_leave_memory_flat() -> None:
    with demo_http() as url, httpx.Client(timeout=10) as client:
        pid = server_pid(url)
        for index in range(100):  # warm up: allocator pools, the plans of the method
            unknown_call(client, url, index)
        before = resident_kib(pid)
        for index in range(CALLS):
            reply = unknown_call(client, url, 1000 + index)
            assert "unknown tool" in reply.text.lower() or "error" in reply.json(), reply.text[:200]
        grown = resident_kib(pid) - before
    # Kept, the names alone would be 40 MB; allocator noise stays well under a fifth of that.
    assert grown < 8 * 1024, f"the server grew {grown} KiB over {CALLS} calls naming unknown tools"
