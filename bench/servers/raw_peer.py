"""A hand-written minimal MCP server for ``bench/client.py``: the fastest peer a client can
meet, so that what the benchmark measures is the client. It fakes just enough MCP for a
client's public API in either protocol era, over stdio or Streamable HTTP:

* the handshake era: ``initialize`` (over HTTP with an ``Mcp-Session-Id``),
  ``notifications/initialized`` and other notifications (ignored; 202 over HTTP), ``ping``;
* the stateless era (a request whose ``params._meta`` names
  ``io.modelcontextprotocol/protocolVersion``): ``server/discover`` (2026-07-28, tools), and
  every result carries ``resultType: "complete"`` and the server's identity in ``_meta``
  (list and discover results also ``ttlMs: 0`` and ``cacheScope``);
* both: ``tools/list`` (one tool, ``echo(text: str)``, no output schema) and
  ``tools/call`` of ``echo`` (the text back). Any other request gets -32601.

No validation and no concurrency beyond the event loop. Over stdio a ``tools/call`` of
``echo`` (nearly every request a benchmark sends) is answered on a fast path: one typed
decode and the answer's bytes put together around its id and text (the same bytes the
general path gives), about half the peer's work per call in the stateless era. Over HTTP every answer is plain
JSON (no SSE framing: the cheapest answer a client must accept), a GET is refused with 405
(there is no standalone stream to hold open) and a DELETE is answered 200. Served by uvicorn
(1 worker, loopback), as the HTTP benchmark's servers are.

Run: python bench/servers/raw_peer.py stdio
     python bench/servers/raw_peer.py http PORT
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import msgspec

decode = msgspec.json.decode
encode = msgspec.json.encode
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
MODERN = "2026-07-28"
IDENTITY = {"name": "raw-peer", "version": "0"}
SERVER_META = {"io.modelcontextprotocol/serverInfo": IDENTITY}
# The stateless era's required caching hints on list and discover results: stale at once,
# so a client's cache never answers for the server.
CACHEABLE = frozenset({"tools/list", "server/discover"})
NO_CACHING = {"ttlMs": 0, "cacheScope": "private"}
ECHO = {
    "name": "echo",
    "description": "The text back.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
}


def result_of(method: str, params: dict[str, Any]) -> dict[str, Any] | None:
    """The result of one request, or None for a method this server does not know."""
    if method == "tools/call":
        return {"content": [{"type": "text", "text": params["arguments"]["text"]}], "isError": False}
    if method == "tools/list":
        return {"tools": [ECHO]}
    if method == "initialize":
        return {"protocolVersion": params["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": IDENTITY}
    if method == "server/discover":
        return {"supportedVersions": [MODERN], "capabilities": {"tools": {}}}
    if method == "ping":
        return {}
    return None


def answer(msg: dict[str, Any]) -> bytes | None:
    """The response frame to one message (None for a notification or a response)."""
    if "id" not in msg or "method" not in msg:
        return None
    params: dict[str, Any] = msg.get("params") or {}
    meta = params.get("_meta")
    result = result_of(msg["method"], params)
    if result is None:
        error = {"code": -32601, "message": f"Method not found: {msg['method']}"}
        return encode({"jsonrpc": "2.0", "id": msg["id"], "error": error})
    if isinstance(meta, dict) and VERSION_KEY in meta:  # the stateless era
        result["resultType"] = "complete"
        result["_meta"] = SERVER_META
        if msg["method"] in CACHEABLE:
            result.update(NO_CACHING)
    return encode({"jsonrpc": "2.0", "id": msg["id"], "result": result})


# --- The fast path: tools/call of echo --------------------------------------------------------
# What nearly every request of the benchmark is, answered without building the message as
# dicts: one typed decode and the answer's bytes put together around the encoded id and
# text (the same JSON answer() gives, members in the same order). Anything else, or
# anything unexpected, goes through answer().


class _Meta(msgspec.Struct):
    version: Any = msgspec.field(default=None, name=VERSION_KEY)


class _Arguments(msgspec.Struct):
    text: Any = None


class _Params(msgspec.Struct):
    name: Any = None
    arguments: _Arguments | None = None
    meta: _Meta | None = msgspec.field(default=None, name="_meta")


class _Request(msgspec.Struct):
    id: Any = None
    method: Any = None
    params: _Params | None = None


_read_request = msgspec.json.Decoder(_Request).decode
_ECHO_ANSWER = b'{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%s}],"isError":false%s}}'
_MODERN_TAIL = b',"resultType":"complete","_meta":' + encode(SERVER_META)


def reply(line: bytes) -> bytes | None:
    """The response frame to one line (None for a notification or a response)."""
    try:
        request = _read_request(line)
    except msgspec.ValidationError:
        request = None
    params = request.params if request is not None else None
    if (
        request is None
        or request.method != "tools/call"
        or not isinstance(request.id, (int, str))
        or isinstance(request.id, bool)
        or params is None
        or params.name != "echo"
        or params.arguments is None
        or not isinstance(params.arguments.text, str)
    ):
        return answer(decode(line))
    modern = params.meta is not None and params.meta.version is not None
    return _ECHO_ANSWER % (encode(request.id), encode(params.arguments.text), _MODERN_TAIL if modern else b"")


# --- stdio ---------------------------------------------------------------------------------


class Stdin(asyncio.Protocol):
    """Every complete line of a chunk answered at once, the answers written in one call."""

    def __init__(self, out: asyncio.WriteTransport, done: asyncio.Future[None]) -> None:
        self.out = out
        self.done = done
        self.buffer = b""

    def data_received(self, data: bytes) -> None:
        *lines, self.buffer = (self.buffer + data).split(b"\n")
        frames = [frame for line in lines if line.strip() and (frame := reply(line)) is not None]
        if frames:
            self.out.write(b"\n".join(frames) + b"\n")

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_result(None)


async def serve_stdio() -> None:
    loop = asyncio.get_running_loop()
    out, _ = await loop.connect_write_pipe(asyncio.Protocol, sys.stdout.buffer)
    done: asyncio.Future[None] = loop.create_future()
    await loop.connect_read_pipe(lambda: Stdin(out, done), sys.stdin.buffer)  # type: ignore[arg-type]
    await done
    out.close()


# --- Streamable HTTP -------------------------------------------------------------------------


async def respond(send: Any, status: int, body: bytes = b"", headers: list[tuple[bytes, bytes]] | None = None) -> None:
    head = [(b"content-length", str(len(body)).encode()), *(headers or [])]
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": body})


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    if scope["method"] == "GET":
        await respond(send, 405, headers=[(b"allow", b"POST, DELETE")])
        return
    if scope["method"] != "POST":
        await respond(send, 200)
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body", False):
            break
    msg = decode(body)
    frame = answer(msg)
    if frame is None:
        await respond(send, 202)
        return
    headers = [(b"content-type", b"application/json")]
    if msg.get("method") == "initialize":
        headers.append((b"mcp-session-id", b"raw-peer-session"))
    await respond(send, 200, frame, headers)


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if mode == "stdio":
        asyncio.run(serve_stdio())
    elif mode == "http":
        import uvicorn

        uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning", workers=1)
    else:
        sys.exit(f"unknown mode {mode!r}: stdio or http PORT")
