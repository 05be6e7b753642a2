"""A server with tools annotated ``x-mcp-header`` (one valid, two invalid) and lists cached
for a minute, for the client's stateless-era tests.
Run: python tests/servers/headers_server.py [PORT] (no port: stdio)"""

from __future__ import annotations

import sys

from mcpgen import Server
from mcpgen.runtime.server.caching import CacheHint

server = Server("headers", "1.0", list_cache={"tools/list": CacheHint(ttl_ms=60_000)})

REGION = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "count": {"type": "integer", "x-mcp-header": "Count"},
    },
}
ON_NUMBER = {"type": "object", "properties": {"ratio": {"type": "number", "x-mcp-header": "Ratio"}}}
NESTED = {
    "type": "object",
    "properties": {"items": {"type": "array", "items": {"type": "string", "x-mcp-header": "Item"}}},
}


@server.tool(description="Echoes its region (the server checks Mcp-Param-Region).", input_schema=REGION)
def regional(region: str, count: int = 0) -> str:
    return f"{region}:{count}"


@server.tool(description="An annotation on a number: invalid.", input_schema=ON_NUMBER)
def on_number(ratio: float) -> str:
    return "never"


@server.tool(description="An annotation below items: invalid.", input_schema=NESTED)
def nested(items: list[str]) -> str:
    return "never"


@server.tool()
def add_tool(name: str) -> str:
    """Registers a new tool (list_changed)."""
    server.tool(name=name, description="added at run time")(lambda: "new")
    return "added"


if __name__ == "__main__":
    if len(sys.argv) > 1:
        server.run("http", port=int(sys.argv[1]))
    else:
        server.run()
