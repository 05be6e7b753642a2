"""A trivial raw-ASGI app that fakes just enough MCP to satisfy ``bench/http.py``'s load
generator: ``initialize`` (with an ``Mcp-Session-Id``), notifications (202) and
``tools/call`` of ``echo`` (the text back). No validation, no sessions, no tasks. Served
by the same uvicorn setup as the real servers (1 worker, log level warning), it shows the
ceiling the load generator and uvicorn allow on this machine.

A request of the stateless era (``params._meta`` naming
``io.modelcontextprotocol/protocolVersion``) is answered in that era's shape: the result
carries ``resultType`` and the server's identity in ``_meta``, there is no session id, and
the answer is plain JSON whatever the mode (as the real servers answer when nothing comes
before the result).

Run: python bench/servers/raw_http.py PORT [--json-response]
"""

from __future__ import annotations

import sys

import msgspec
import uvicorn

SSE = "--json-response" not in sys.argv[2:]
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
SERVER_META = {"io.modelcontextprotocol/serverInfo": {"name": "raw", "version": "0"}}
decode = msgspec.json.decode
encode = msgspec.json.encode


async def app(scope, receive, send):  # type: ignore[no-untyped-def]
    if scope["type"] != "http":
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body", False):
            break
    msg = decode(body)
    if "id" not in msg:
        await send({"type": "http.response.start", "status": 202, "headers": [(b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})
        return
    if msg["method"] == "initialize":
        result = {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "raw", "version": "0"},
        }
    else:
        result = {"content": [{"type": "text", "text": msg["params"]["arguments"]["text"]}], "isError": False}
    stateless = VERSION_KEY in (msg["params"].get("_meta") or {})
    if stateless:
        result["resultType"] = "complete"
        result["_meta"] = SERVER_META
    out = encode({"jsonrpc": "2.0", "id": msg["id"], "result": result})
    if SSE and not stateless:
        out = b"event: message\ndata: " + out + b"\n\n"
        ctype = b"text/event-stream"
    else:
        ctype = b"application/json"
    headers = [(b"content-type", ctype), (b"content-length", str(len(out)).encode())]
    if not stateless:
        headers.append((b"mcp-session-id", b"raw-session"))
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": out})


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", workers=1)
