"""Raw HTTP helpers for the shared-store tests: stateless-era JSON-RPC posts (tasks), the
handshake era's session and SSE streams, and an in-process uvicorn server per app (one
app per "worker")."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.http_server import free_port

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
TASKS = "io.modelcontextprotocol/tasks"
CAPABILITIES: dict[str, Any] = {"elicitation": {}, "extensions": {TASKS: {}}}


def meta() -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": CAPABILITIES,
        "io.modelcontextprotocol/clientInfo": {"name": "redis-test", "version": "0"},
    }


async def rpc(
    client: httpx.AsyncClient, url: str, method: str, params: dict[str, Any], rid: int = 1
) -> tuple[int, dict[str, Any]]:
    """One stateless-era request; (HTTP status, the JSON-RPC answer)."""
    name = params.get("name") if method == "tools/call" else params.get("taskId")
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": MODERN,
        "mcp-method": method,
    }
    if isinstance(name, str):
        headers["mcp-name"] = name
    body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": {**params, "_meta": meta()}}
    reply = await client.post(url, content=json.dumps(body), headers=headers)
    return reply.status_code, reply.json()


async def call(client: httpx.AsyncClient, url: str, tool: str, arguments: dict[str, Any], rid: int = 1) -> Any:
    status, answer = await rpc(client, url, "tools/call", {"name": tool, "arguments": arguments}, rid)
    assert status == 200 and "result" in answer, (status, answer)
    return answer["result"]


async def whoami(client: httpx.AsyncClient, url: str) -> int:
    """The pid of the worker this client's (single, kept-alive) connection reached."""
    pid: int = (await call(client, url, "whoami", {}))["structuredContent"]["pid"]
    return pid


# ---------------------------------------------------------------- the handshake era


def legacy_headers(session: str | None = None, **extra: str) -> dict[str, str]:
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": LEGACY,
        **extra,
    }
    if session is not None:
        headers["mcp-session-id"] = session
    return headers


async def open_session(client: httpx.AsyncClient, url: str) -> str:
    """initialize + notifications/initialized; the session id."""
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
    }
    reply = await client.post(url, content=json.dumps(init), headers=legacy_headers())
    assert reply.status_code == 200, reply.text
    session = reply.headers["mcp-session-id"]
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await client.post(url, content=json.dumps(done), headers=legacy_headers(session))).status_code == 202
    return session


@dataclass
class Event:
    id: str | None
    data: dict[str, Any] | None


@dataclass
class SseReader:
    """Reads SSE events off a streaming httpx response."""

    response: httpx.Response
    lines: AsyncIterator[str] = field(init=False)

    def __post_init__(self) -> None:
        self.lines = self.response.aiter_lines()

    async def next(self) -> Event | None:
        """The next event with data or an id (None at the end of the body)."""
        event_id: str | None = None
        data: list[str] = []
        async for line in self.lines:
            if line == "":
                if event_id is not None or data:
                    return Event(event_id, json.loads("\n".join(data)) if any(data) else None)
                continue
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "id":
                event_id = value
            elif name == "data":
                data.append(value)
        return None


def progress_of(event: Event) -> int | None:
    data = event.data or {}
    if data.get("method") == "notifications/progress":
        value: int = data["params"]["progress"]
        return value
    return None


# ---------------------------------------------------------------- a worker in this process


@contextlib.asynccontextmanager
async def serving(app: Any) -> AsyncIterator[str]:
    """``app`` under uvicorn on a free loopback port, in this event loop; yields its URL."""
    import uvicorn

    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", timeout_graceful_shutdown=2)
    web = uvicorn.Server(config)
    task = asyncio.ensure_future(web.serve())
    try:
        while not web.started:
            if task.done():
                task.result()
                raise RuntimeError("uvicorn stopped before it started")
            await asyncio.sleep(0.01)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        web.should_exit = True
        await task
