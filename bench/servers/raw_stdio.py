"""A hand-written minimal stdio server that fakes just enough MCP for ``bench/stdio.py``:
``initialize`` (the handshake era), notifications (ignored) and ``tools/call`` of ``echo``
(and ``echo_threaded``, answered the same way): the text back. No validation, no tool
table, no concurrency beyond the event loop. In the stateless era (a request whose
``params._meta`` names ``io.modelcontextprotocol/protocolVersion``) each result also
carries what that era asks of every result: ``resultType`` and the server's identity in
``_meta``.

It is what an asyncio server in Python cannot do much better than, the practical limit the
real servers are measured against: one protocol object on stdin and one on stdout (plain
asyncio, as mcpgen uses), every complete line in a chunk answered at once, and all the
answers to one chunk written in one call. Its imports are what any such server needs
(asyncio and a JSON codec, msgspec), so its cold start is the floor for one too.

Run: python bench/servers/raw_stdio.py
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import msgspec

decode = msgspec.json.decode
encode = msgspec.json.encode
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
SERVER_META = {"io.modelcontextprotocol/serverInfo": {"name": "raw-stdio", "version": "0"}}


def answer(line: bytes) -> bytes | None:
    """The response frame to one request line, or None for a notification."""
    msg = decode(line)
    if "id" not in msg:
        return None
    params: dict[str, Any] = msg.get("params") or {}
    if msg["method"] == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": params["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "raw-stdio", "version": "0"},
        }
    else:
        result = {"content": [{"type": "text", "text": params["arguments"]["text"]}], "isError": False}
        if VERSION_KEY in (params.get("_meta") or {}):
            result["resultType"] = "complete"
            result["_meta"] = SERVER_META
    return encode({"jsonrpc": "2.0", "id": msg["id"], "result": result})


class Stdin(asyncio.Protocol):
    def __init__(self, out: asyncio.WriteTransport, done: asyncio.Future[None]) -> None:
        self.out = out
        self.done = done
        self.buffer = b""

    def data_received(self, data: bytes) -> None:
        *lines, self.buffer = (self.buffer + data).split(b"\n")
        frames = [frame for line in lines if line.strip() and (frame := answer(line)) is not None]
        if frames:
            self.out.write(b"\n".join(frames) + b"\n")

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_result(None)


async def main() -> None:
    loop = asyncio.get_running_loop()
    out, _ = await loop.connect_write_pipe(asyncio.Protocol, sys.stdout.buffer)
    done: asyncio.Future[None] = loop.create_future()
    await loop.connect_read_pipe(lambda: Stdin(out, done), sys.stdin.buffer)  # type: ignore[arg-type]
    await done
    out.close()


if __name__ == "__main__":
    asyncio.run(main())
