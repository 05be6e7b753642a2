"""An official-SDK server (``mcp`` 2.3, ``MCPServer``) for the mcpgen ``Client`` in its
automatic era (tests/interop/test_interop_client.py), pinned to one era or serving both.

The SDK 2.3 server is dual-era by itself: over stdio ``MCPServer.run("stdio")`` lets the
client's first request pick the era, and its Streamable HTTP app serves a POST whose
``MCP-Protocol-Version`` names 2026-07-28 statelessly and everything else through the
``initialize`` session. So an automatic client meets the 2026-07-28 era there. The SDK has
no switch that turns the modern era off; the handshake-era pins below use what it has:

* stdio: ``mcp.server.runner.serve_loop``, the SDK's handshake-only driver (the one its
  HTTP session manager runs per session). ``server/discover`` is refused there, as by a
  server older than 2026-07-28.
* HTTP: the app behind ``/handshake`` never sees a modern ``MCP-Protocol-Version`` header
  (it is dropped), so every POST takes the SDK's session path, as with a pre-2026 server:
  a ``server/discover`` without a session is answered 400.

The elicitation tool asks through the SDK's resolver (``Resolve``/``Elicit``), which the
SDK turns into an ``InputRequiredResult`` in the 2026-07-28 era and into an
``elicitation/create`` request in the handshake era: the same tool in both.

Run: python tests/interop/sdk_era_server.py stdio|stdio-handshake
     python tests/interop/sdk_era_server.py http PORT     (/mcp both eras, /handshake/mcp pinned)
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import AsyncIterator
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve
from mcp.server.mcpserver.prompts.base import Message, UserMessage
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel

# Roots and logging are deprecated by the SDK's 2026 draft; still the handshake era's spec.
warnings.simplefilter("ignore")

server = MCPServer("sdk-era-peer", version="2.3.0", instructions="The official SDK, both eras.", log_level="WARNING")


class Forecast(BaseModel):
    city: str
    celsius: float


class Contact(BaseModel):
    name: str
    age: int


@server.tool(title="City forecast")
def forecast(city: str, days: int = 1) -> Forecast:
    """A made-up forecast (structured output, an object)."""
    return Forecast(city=city, celsius=20.0 + days)


@server.tool(structured_output=False)
def primes(below: int, ctx: Context) -> CallToolResult:
    """The primes below ``below`` as structuredContent that is an array, which the
    2026-07-28 era allows (any JSON value); the handshake era gets them in an object."""
    found = [n for n in range(2, below) if all(n % d for d in range(2, int(n**0.5) + 1))]
    modern = ctx.request_context.protocol_version not in (None, "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
    return CallToolResult(
        content=[TextContent(text=",".join(map(str, found)))],
        structured_content=found if modern else {"primes": found},
    )


def ask_contact() -> Elicit[Contact]:
    return Elicit("Who are you?", Contact)


@server.tool(structured_output=False)
def greet(contact: Annotated[Contact, Resolve(ask_contact)]) -> str:
    """Asks the user who they are (elicitation), then greets them."""
    return f"hello {contact.name} ({contact.age})"


@server.tool(structured_output=False)
def era(ctx: Context) -> str:
    """The protocol version this request was served in, as the SDK saw it."""
    return str(ctx.request_context.protocol_version)


@server.resource("config://settings", mime_type="application/json", description="Settings")
def settings() -> str:
    return '{"theme": "dark"}'


@server.prompt(title="Summarize")
def summarize(text: str, style: str = "short") -> list[Message]:
    """Summarize a text."""
    return [UserMessage(f"Summarize ({style}): {text}")]


async def serve_stdio_handshake() -> None:
    from mcp.server.runner import serve_loop
    from mcp.server.stdio import stdio_server

    lowlevel: Any = server._lowlevel_server  # the SDK's own Server behind MCPServer
    async with stdio_server() as (read, write), lowlevel.lifespan(lowlevel) as state:
        await serve_loop(
            lowlevel, read, write, lifespan_state=state, init_options=lowlevel.create_initialization_options()
        )


def handshake_only(app: Any) -> Any:
    """The ASGI app with modern MCP-Protocol-Version headers dropped (see the module doc)."""
    handshake = {b"2024-11-05", b"2025-03-26", b"2025-06-18", b"2025-11-25"}

    async def pinned(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = [(k, v) for k, v in scope["headers"] if k != b"mcp-protocol-version" or v in handshake]
            scope = {**scope, "headers": headers}
        await app(scope, receive, send)

    return pinned


def serve_http(port: int) -> None:
    import logging

    import uvicorn
    from starlette.applications import Starlette
    from starlette.routing import Mount

    both = server.streamable_http_app(json_response=False)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s", force=True)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with both.router.lifespan_context(both):
            yield

    # One SDK app (one session manager) behind both paths: the pin changes only what it sees.
    app = Starlette(routes=[Mount("/handshake", app=handshake_only(both)), Mount("", app=both)], lifespan=lifespan)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if mode == "stdio":
        server.run("stdio")
    elif mode == "stdio-handshake":
        anyio.run(serve_stdio_handshake)
    elif mode == "http":
        serve_http(int(sys.argv[2]))
    else:
        sys.exit(f"unknown mode {mode!r}: stdio, stdio-handshake or http PORT")
