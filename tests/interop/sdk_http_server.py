"""The official-SDK server of sdk_server.py, served over HTTP instead of stdio.

tests/test_interop_http.py starts it under uvicorn (the SDK's own ``run``) and drives it with
``mcpgen.Client.http`` / ``mcpgen.Client.sse``. The server object is imported unchanged; this
script only picks the transport and its options.

Run: python tests/interop/sdk_http_server.py PORT [--json-response] [--stateless] [--resumable] [--sse]

--json-response  answer each POST with one JSON body (no request-scoped SSE stream)
--stateless      no Mcp-Session-Id, a fresh transport per request
--resumable      an in-memory event store and a 200 ms retry hint (priming events, replay on
                 GET with Last-Event-ID), plus a ``poll`` tool that closes its own SSE stream
--sse            the legacy 2024-11-05 HTTP+SSE transport (GET /sse, POST /messages/)
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
from mcp.server.mcpserver import Context
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp_types import JSONRPCMessage

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sdk_server import server  # noqa: E402  (the stdio peer's server object, unchanged)


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


def add_poll_tool() -> None:
    @server.tool(structured_output=False)
    async def poll(ctx: Context) -> str:
        """Closes its SSE stream at once and answers later (the client must resume)."""
        await ctx.close_sse_stream()
        await anyio.sleep(0.3)
        return "answered after the reconnect"


def main(argv: list[str]) -> None:
    port = int(argv[0])
    if "--sse" in argv:
        server.run("sse", host="127.0.0.1", port=port)
        return
    resumable = "--resumable" in argv
    if resumable:
        add_poll_tool()
    server.run(
        "streamable-http",
        host="127.0.0.1",
        port=port,
        json_response="--json-response" in argv,
        stateless_http="--stateless" in argv,
        event_store=MemoryEventStore() if resumable else None,
        retry_interval=200 if resumable else None,
    )


if __name__ == "__main__":
    main(sys.argv[1:])
