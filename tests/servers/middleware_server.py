"""A server with middleware of every kind the API offers (tests/runtime/middleware/test_middleware.py):
one that records what it sees, one that answers itself, one that rewrites params, one that
fails, the built-in rate and response limits, and a notification hook. ``seen`` hands the
records to the test.

Run: python tests/servers/middleware_server.py [--http PORT]
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

import msgspec

from mcpgen import Call, CallNext, Context, McpError, Middleware, RateLimit, ResponseLimit, Server
from mcpgen.runtime.middleware.chain import Notification

SEEN: list[dict[str, Any]] = []
NOTES: list[str] = []


class Recorder(Middleware):
    """Outermost: sees every request and how it ended."""

    async def on_request(self, call: Call, call_next: CallNext) -> Any:
        entry: dict[str, Any] = {
            "method": call.method,
            "target": call.target,
            "request_id": call.request_id,
            "era": call.era,
            "version": call.protocol_version,
            "session": call.session_id,
            "principal": call.principal.subject if call.principal is not None else None,
            "params_type": type(call.params).__name__,
            "meta_probe": call.meta.get("probe"),
        }
        if call.target != "seen":
            SEEN.append(entry)
        started = time.monotonic()
        try:
            result = await call_next(call)
        except Exception as exc:
            entry["outcome"] = type(exc).__name__
            raise
        entry["outcome"] = type(result).__name__
        entry["task_id"] = call.task_id  # known once the call runs as a task
        entry["seconds"] = time.monotonic() - started
        return result

    async def on_notification(self, note: Notification) -> None:
        NOTES.append(note.method)


server = Server("middleware", middleware=[Recorder(), RateLimit(rate=0.5, burst=3, methods=frozenset({"prompts/get"}))])


@server.middleware
async def gatekeeper(call: Call, call_next: CallNext) -> Any:
    """Answers some tools itself, rewrites another's arguments, fails on one."""
    if call.target == "blocked":
        raise McpError(-32001, "blocked by policy")
    if call.target == "shortcut":
        from mcpgen.generated import CallToolResult, TextContent

        return CallToolResult(content=[TextContent(text="from the middleware")])
    if call.target == "shout":
        arguments = dict(call.params.arguments or {})
        arguments["text"] = str(arguments.get("text", "")).upper()
        call.params = msgspec.structs.replace(call.params, arguments=arguments)
    if call.target == "mw_fails":
        raise RuntimeError("the middleware broke at /srv/secret/key.pem")
    return await call_next(call)


server.middleware(ResponseLimit(max_bytes=8000))


@server.tool()
def echo(text: str) -> str:
    return text


@server.tool()
def shout(text: str) -> str:
    return text


@server.tool()
def blocked() -> str:
    return "never"


@server.tool()
def shortcut() -> str:
    return "never"


@server.tool()
def mw_fails() -> str:
    return "never"


@server.tool()
def big() -> str:
    return "x" * 20_000


@server.tool()
async def ask(ctx: Context) -> str:
    answer = await ctx.elicit("Name?", {"type": "object", "properties": {"name": {"type": "string"}}})
    return f"hello {answer.content['name'] if answer.content else '?'}"


@server.tool()
def meta(ctx: Context) -> dict[str, Any]:
    return {k: v for k, v in ctx.meta.items() if not k.startswith("io.modelcontextprotocol")}


@server.tool(task="optional")
async def slow_add(a: int, b: int) -> int:
    await asyncio.sleep(0.3)
    return a + b


@server.prompt()
def greet(who: str) -> str:
    return f"Hello {who}"


@server.resource("memo://big")
def big_memo() -> str:
    return "y" * 20_000


@server.tool()
def seen() -> dict[str, Any]:
    return {"requests": SEEN, "notifications": NOTES}


if __name__ == "__main__":
    if "--http" in sys.argv:
        server.run("http", port=int(sys.argv[sys.argv.index("--http") + 1]))
    else:
        server.run()
