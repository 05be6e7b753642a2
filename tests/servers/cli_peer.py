"""A server for the tests of `mcpgen call` and `mcpgen run`: typed arguments, a long
URI, an image, a structured result, and a tool that reports progress and logs, then waits
for the test to let it finish (which shows the notifications arrived before the result).

Run: python tests/servers/cli_peer.py [--http PORT [--legacy-at /events]]
  --legacy-at PATH   also serve the legacy HTTP+SSE stream at PATH (a path not ending in
                     /sse, so that only `mcpgen call`'s fallback can find it)
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import msgspec

from mcpgen import Context, Server
from mcpgen.generated import ImageContent

LONG_URI = "data://cli-peer/" + "/".join(f"segment-{i:02d}" for i in range(12)) + "/end-of-the-long-uri.txt"
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

server = Server("cli-peer", "0.2")


class Shape(msgspec.Struct):
    sides: int
    name: str


@server.tool()
def label(code: str, count: int, ratio: float = 1.0, tags: list[str] | None = None) -> str:
    """Say what types the arguments arrived as."""
    return f"code={code!r} count={count!r} ratio={ratio!r} tags={tags!r}"


@server.tool()
def shape() -> Shape:
    """A structured result (sent as structuredContent and again as JSON text)."""
    return Shape(sides=3, name="triangle-unique-marker")


@server.tool()
def picture() -> ImageContent:
    """A 1x1 PNG."""
    return ImageContent(data=PIXEL, mime_type="image/png")


@server.tool()
async def wait_for(path: str, ctx: Context) -> str:
    """Report progress and log, then wait (20 s at most) until `path` exists."""
    await ctx.report_progress(1, 2, "waiting")
    await ctx.info("waiting for the file", logger="peer")
    for _ in range(200):
        if Path(path).exists():
            await ctx.report_progress(2, 2, "done")
            return "arrived"
        await asyncio.sleep(0.1)
    return "gave up"


@server.resource(LONG_URI, mime_type="text/plain", description="A resource whose URI is longer than a terminal line")
def long_one() -> str:
    return "the far end"


@server.prompt()
def greet(name: str, style: str = "plain") -> str:
    """Greet someone."""
    return f"Hello {name} ({style})"


def _legacy_at(inner: Any, path: str) -> Any:
    """The app, with the legacy SSE stream also reachable at ``path``."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == path:
            scope = {**scope, "path": "/sse", "raw_path": b"/sse"}
        await inner(scope, receive, send)

    return app


if __name__ == "__main__":
    if "--http" in sys.argv:
        import uvicorn

        port = int(sys.argv[sys.argv.index("--http") + 1])
        app = server.http_app()
        if "--legacy-at" in sys.argv:
            app = _legacy_at(app, sys.argv[sys.argv.index("--legacy-at") + 1])
        uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
    else:
        server.run()
