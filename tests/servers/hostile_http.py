"""A hostile Streamable HTTP server (raw asyncio, HTTP/1.1 by hand, loopback only) for the
tests of the HTTP client's limits (issue 36, points 5 to 7), and the client that measures
itself against it.

The server answers ``initialize`` and ``notifications/initialized`` as any server would;
what it does to a ``tools/call`` depends on the URL's path:

* ``/bomb``: a gzip body (an encoding the client offers) of about 200 KB that inflates to
  200 MiB of valid JSON;
* ``/brotli``: a body in ``br``, an encoding the client did not offer;
* ``/huge``: 100 MiB of valid JSON, sent as fast as the client reads;
* ``/endless-line``: an event stream whose one line never ends;
* ``/endless-event``: an event stream whose one event never ends (short ``data:`` lines);
* ``/flood``: an event stream of progress notifications, ``FLOOD_MIB`` MiB of them as fast as
  the socket takes them, then the result; it records how far ahead of the client it got;
* ``/redirect``: every POST answered 307 to ``/mcp`` on another origin (``other``);
* ``/sse``: a legacy (2024-11-05) stream whose ``endpoint`` names another origin.

Every request it sees is recorded (method, path, headers), so a test can tell whether the
other origin was ever reached. Streams stop after ``STREAM_CAP`` bytes whatever happens.

Run the measuring client: ``python -m tests.servers.hostile_http client URL`` prints one
JSON line: the outcome of one tool call (or its error), the progress notifications it got,
and the client's peak resident memory (KiB) before and after.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import resource
import sys
import zlib
from dataclasses import dataclass, field
from typing import Any

FLOOD_MIB = 150
STREAM_CAP = 400 * 1024 * 1024  # no stream sends more, whatever the client does
INFLATED = 200 * 1024 * 1024
HUGE = 100 * 1024 * 1024


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]


@dataclass
class Hostile:
    """The server's state: what it saw, and how far the flood got."""

    other: str = ""  # the origin /redirect and /sse send clients to
    seen: list[Seen] = field(default_factory=list)
    flood_sent: int = 0  # bytes of progress written by the flood
    flood_done: asyncio.Event = field(default_factory=asyncio.Event)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while await self._one(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
        self.seen.append(Seen(method, target, headers))
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        path = target.split("?")[0]
        if method == "GET" and path == "/sse":
            await self._legacy(writer)
            return False
        if method == "DELETE":
            await _send(writer, 200, b"", "application/json")
            return True
        if method != "POST":
            await _send(writer, 405, b"", "text/plain")
            return True
        if path == "/redirect":
            await _send(writer, 307, b"", "text/plain", [("location", f"{self.other}/mcp")])
            return True
        message = json.loads(body)
        if "id" not in message:
            await _send(writer, 202, b"", "application/json")
            return True
        if message["method"] == "initialize":
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile", "version": "1"},
            }
            await _send(writer, 200, _answer(message["id"], result), "application/json")
            return True
        if message["method"] == "tools/call":
            await self._call(path, message, writer)
            return False  # what follows a hostile answer is not read
        await _send(writer, 200, _error(message["id"], f"no {message['method']}"), "application/json")
        return True

    async def _call(self, path: str, message: dict[str, Any], writer: asyncio.StreamWriter) -> None:
        rid = message["id"]
        if path == "/bomb":
            packed = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
            prefix, suffix = _text_answer(rid)
            body = packed.compress(prefix)
            zeros = b"a" * (1 << 20)
            for _ in range(INFLATED >> 20):
                body += packed.compress(zeros)
            body += packed.compress(suffix) + packed.flush()
            await _send(writer, 200, body, "application/json", [("content-encoding", "gzip")])
        elif path == "/brotli":
            await _send(writer, 200, b"\x1b\x00\x00", "application/json", [("content-encoding", "br")])
        elif path == "/huge":
            prefix, suffix = _text_answer(rid)
            length = len(prefix) + HUGE + len(suffix)
            writer.write(_head(200, "application/json", [("content-length", str(length))]) + prefix)
            chunk = b"a" * (1 << 20)
            for _ in range(HUGE >> 20):
                writer.write(chunk)
                await writer.drain()
            writer.write(suffix)
            await writer.drain()
        elif path in ("/endless-line", "/endless-event"):
            writer.write(_head(200, "text/event-stream", [("cache-control", "no-store")]))
            piece = b"data: " + b"x" * 1000 + b"\n" if path == "/endless-event" else b"x" * 65536
            if path == "/endless-line":
                writer.write(b"data: ")
            sent = 0
            while sent < STREAM_CAP:
                writer.write(piece)
                sent += len(piece)
                await writer.drain()
        elif path == "/flood":
            await self._flood(message, writer)
        else:
            await _send(writer, 200, _error(rid, "unknown path"), "application/json")

    async def _flood(self, message: dict[str, Any], writer: asyncio.StreamWriter) -> None:
        rid = message["id"]
        token = message["params"].get("_meta", {}).get("progressToken", "none")
        writer.write(_head(200, "text/event-stream", [("cache-control", "no-store")]))
        note = "n" * 900
        n = 0
        try:
            while self.flood_sent < FLOOD_MIB * 1024 * 1024:
                n += 1
                params = {"progressToken": token, "progress": n, "message": note}
                frame = json.dumps({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})
                event = b"event: message\ndata: " + frame.encode() + b"\n\n"
                writer.write(event)
                self.flood_sent += len(event)
                await writer.drain()  # blocks while the client does not read
            done = _answer(rid, {"content": [{"type": "text", "text": f"{n} notifications"}]})
            writer.write(b"event: message\ndata: " + done + b"\n\n")
            await writer.drain()
        finally:
            self.flood_done.set()

    async def _legacy(self, writer: asyncio.StreamWriter) -> None:
        writer.write(_head(200, "text/event-stream", [("cache-control", "no-store")]))
        writer.write(f"event: endpoint\ndata: {self.other}/messages?session=1\n\n".encode())
        await writer.drain()
        await asyncio.sleep(5)


def _head(status: int, kind: str, extra: list[tuple[str, str]]) -> bytes:
    lines = [f"HTTP/1.1 {status} X", f"content-type: {kind}", *(f"{k}: {v}" for k, v in extra)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def _send(
    writer: asyncio.StreamWriter, status: int, body: bytes, kind: str, extra: list[tuple[str, str]] | None = None
) -> None:
    writer.write(_head(status, kind, [*(extra or []), ("content-length", str(len(body)))]) + body)
    await writer.drain()


def _answer(rid: Any, result: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode()


def _error(rid: Any, why: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": why}}).encode()


def _text_answer(rid: Any) -> tuple[bytes, bytes]:
    """A result whose text goes between the two halves."""
    head = json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "@"}]}})
    before, after = head.split("@")
    return before.encode(), after.encode()


@contextlib.asynccontextmanager
async def serving(other: str = "") -> Any:
    """A hostile server on a free loopback port: (its origin, its state)."""
    state = Hostile(other=other)
    server = await asyncio.start_server(state.handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", state
    finally:
        server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 5)


# ---------------------------------------------------------------- the measuring client


async def measure(url: str) -> dict[str, Any]:
    from mcpgen import Client

    progress = 0

    def counted(value: float, total: float | None, message: str | None) -> None:
        nonlocal progress
        progress += 1

    async with Client.http(url, era="handshake", standalone_stream=False, request_timeout=120) as client:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        try:
            result = await client.call_tool("t", {}, on_progress=counted)
            first = result.content[0]
            outcome: dict[str, Any] = {"ok": True, "text": getattr(first, "text", repr(first))[:200]}
        except Exception as exc:  # the error is what the test looks at
            outcome = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:500]}
    outcome |= {"progress": progress, "rss_kib_before": before}
    outcome["rss_kib_peak"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return outcome


if __name__ == "__main__":
    if sys.argv[1:2] == ["client"] and len(sys.argv) == 3:
        print(json.dumps(asyncio.run(measure(sys.argv[2]))), flush=True)
    else:
        raise SystemExit("usage: python -m tests.servers.hostile_http client URL")
