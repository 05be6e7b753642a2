"""The official-SDK server of sdk_server.py, served over HTTP instead of stdio.

tests/interop/test_interop_http.py starts it once and drives it with ``mcpgen.Client.http`` /
``mcpgen.Client.sse``. The server objects are sdk_server.py's, unchanged; this script only
builds the SDK's own ASGI apps for them (``MCPServer.streamable_http_app`` / ``sse_app``) and
serves them side by side under uvicorn, because importing the SDK takes seconds and one
process per transport variant would dominate the test run.

Run: python tests/interop/sdk_http_server.py PORT

    /mcp                Streamable HTTP, SSE responses (the SDK's default)
    /json/mcp           Streamable HTTP, json_response=True
    /stateless/mcp      Streamable HTTP, stateless_http=True
    /resumable/mcp      Streamable HTTP with an event store and a 200 ms retry hint (priming
                        events, replay on GET with Last-Event-ID); its server is a second copy
                        of sdk_server.py with one more tool, ``poll``, that closes its own SSE
                        stream and answers after the client reconnected
    /legacy/sse         the 2024-11-05 HTTP+SSE transport (POSTs go to /legacy/messages/)
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType

import anyio
import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp_types import JSONRPCMessage
from starlette.applications import Starlette
from starlette.routing import Mount

SDK_SERVER = Path(__file__).resolve().parent / "sdk_server.py"


def load_sdk_server(name: str) -> MCPServer:
    """A fresh import of sdk_server.py: its own MCPServer with its own tools."""
    spec = importlib.util.spec_from_file_location(name, SDK_SERVER)
    assert spec is not None and spec.loader is not None
    module: ModuleType = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # pydantic resolves the tools' annotations through it
    spec.loader.exec_module(module)
    server: MCPServer = module.server
    return server


class MemoryEventStore(EventStore):
    """Every event in one list; ids are ``<stream>/<index>``."""

    def __init__(self) -> None:
        self.events: list[tuple[str, JSONRPCMessage | None]] = []

    async def store_event(self, stream_id: str, message: JSONRPCMessage | None) -> str:
        self.events.append((stream_id, message))
        return f"{stream_id}/{len(self.events) - 1}"

    async def replay_events_after(self, last_event_id: str, send_callback: EventCallback) -> str | None:
        stream_id, _, index = last_event_id.rpartition("/")
        if not index.isdigit() or int(index) >= len(self.events) or self.events[int(index)][0] != stream_id:
            return None
        for position in range(int(index) + 1, len(self.events)):
            owner, message = self.events[position]
            if owner == stream_id and message is not None:
                await send_callback(EventMessage(message, f"{owner}/{position}"))
        return stream_id


def add_poll_tool(server: MCPServer) -> None:
    @server.tool(structured_output=False)
    async def poll(ctx: Context) -> str:
        """Closes its SSE stream at once and answers later (the client must resume)."""
        await ctx.close_sse_stream()
        await anyio.sleep(0.3)
        return "answered after the reconnect"


def build_app() -> Starlette:
    server = load_sdk_server("sdk_server")
    resumable = load_sdk_server("sdk_server_resumable")
    add_poll_tool(resumable)
    # MCPServer logs through a rich handler; rendering its boxed tracebacks (every handler error,
    # e.g. a prompt's missing argument) takes seconds on a busy machine. Plain lines will do.
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s", force=True)
    apps: dict[str, Starlette] = {
        "/json": server.streamable_http_app(json_response=True),
        "/stateless": server.streamable_http_app(stateless_http=True),
        "/resumable": resumable.streamable_http_app(event_store=MemoryEventStore(), retry_interval=200),
        "/legacy": server.sse_app(),
        "": server.streamable_http_app(),  # last: Mount("") matches every path
    }

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # Mounted apps' lifespans do not run by themselves; each runs its session manager.
        async with contextlib.AsyncExitStack() as stack:
            for sub in apps.values():
                await stack.enter_async_context(sub.router.lifespan_context(sub))
            yield

    return Starlette(routes=[Mount(prefix, app=sub) for prefix, sub in apps.items()], lifespan=lifespan)


if __name__ == "__main__":
    uvicorn.run(build_app(), host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
