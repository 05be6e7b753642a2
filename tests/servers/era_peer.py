"""An mcpgen server for the dual-era interop tests (tests/interop/test_interop_2026.py): the
official SDK's client drives it over stdio and Streamable HTTP, in each of its connect
modes, and its ``era`` tool tells the test which era the server itself believes it spoke.

Run: python tests/servers/era_peer.py [--http PORT]
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import msgspec

from mcpgen import Context, Server
from mcpgen.generated import PromptMessage, TextContent

# Read off a request's _meta in the stateless era (a fact of the 2026-07-28 revision).
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"

server = Server("era-peer", "2.0.0", instructions="Speaks both eras.")


class Name(msgspec.Struct):
    name: str


class Colour(msgspec.Struct):
    colour: str


@server.tool()
async def era(ctx: Context) -> dict[str, Any]:
    """What the server saw of this request: the era it served it in, the protocol
    version, the client's name and whether it may ask the client for a form."""
    stateless = getattr(ctx.session, "asks_inputs", False) is True
    if stateless:
        version = ctx.meta.get(META_VERSION)
        info = ctx.meta.get(META_CLIENT_INFO)
        client = info.get("name") if isinstance(info, dict) else None
    else:
        version = ctx.session.protocol_version
        client = ctx.session.client_info.name if ctx.session.client_info is not None else None
    return {
        "era": "stateless" if stateless else "handshake",
        "version": version,
        "client": client,
        "elicitation": "elicitation" in ctx.client_capabilities,
    }


@server.tool(title="Add two numbers")
def add(a: int, b: int) -> int:
    """Add a and b."""
    return a + b


@server.tool()
async def greet(ctx: Context, title: str = "") -> str:
    """Asks the user's name (one elicitation), then greets them; ``title`` goes into the
    question, so concurrent calls can be told apart by the client's callback."""
    answer = await ctx.elicit(f"What is your name{', ' + title if title else ''}?", Name, key="user_name")
    if answer.action != "accept" or not answer.content:
        return f"no name ({answer.action})"
    return f"Hello, {title + ' ' if title else ''}{answer.content['name']}!"


@server.tool()
async def profile(ctx: Context) -> str:
    """Asks two questions one after the other (two rounds in the stateless era)."""
    name = await ctx.elicit("Your name?", Name, key="name")
    colour = await ctx.elicit("Your favourite colour?", Colour, key="colour")
    if not name.content or not colour.content:
        return "incomplete"
    return f"{name.content['name']} likes {colour.content['colour']}"


@server.tool()
async def ask_model(question: str, ctx: Context) -> str:
    """Asks the client's model (sampling; an input request in the stateless era)."""
    result = await ctx.sample(question, max_tokens=20, key="model")
    return result.content.text if isinstance(result.content, TextContent) else repr(result.content)


@server.tool()
async def roots(ctx: Context) -> list[str]:
    """The client's roots (roots/list; an input request in the stateless era)."""
    return [root.uri for root in await ctx.list_roots(key="roots")]


@server.tool()
async def count(to: int, ctx: Context) -> str:
    """Reports progress from 1 to `to`, logging each step."""
    for i in range(1, to + 1):
        await ctx.report_progress(i, to, f"step {i}")
        await ctx.info(f"counted {i}", logger="counter")
    return f"counted to {to}"


@server.tool()
async def survey(ctx: Context) -> str:
    """Reports progress, asks a question, reports progress again (progress around an
    elicitation: in the stateless era the whole tool runs again on the retry)."""
    await ctx.report_progress(1, 2, "before the question")
    answer = await ctx.elicit("Your favourite colour?", Colour, key="colour")
    await ctx.report_progress(2, 2, "after the question")
    return f"colour: {answer.content['colour'] if answer.content else answer.action}"


@server.tool()
async def slow(seconds: float, ctx: Context) -> str:
    """Sleeps; says on stderr when it started and when it was cancelled."""
    print(f"slow started {ctx.request_id}", file=sys.stderr, flush=True)
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        print(f"slow cancelled {ctx.request_id}", file=sys.stderr, flush=True)
        raise
    return f"slept {seconds}"


@server.tool()
def add_tool(name: str) -> str:
    """Registers a new tool at run time (a tools list change)."""
    server.tool(name=name, description="added at run time")(lambda: "new")
    return "added"


REGION_SCHEMA = {
    "type": "object",
    "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
    "required": ["region"],
}


@server.tool(description="Its region argument travels in the Mcp-Param-Region header too.", input_schema=REGION_SCHEMA)
def region(region: str) -> str:
    return f"region={region}"


@server.resource("note://hello", mime_type="text/plain", description="A fixed note")
def hello_note() -> str:
    return "hello from the era peer"


@server.resource_template("note://{topic}/today", mime_type="text/plain", description="A note by topic")
def topic_note(topic: str) -> str:
    return f"today's note on {topic}"


@server.prompt(title="Review code")
def review(code: str, language: str = "python") -> str:
    """Ask for a code review."""
    return f"Review this {language} code:\n{code}"


@server.prompt()
async def briefing(ctx: Context) -> list[PromptMessage]:
    """A prompt that asks the user for its topic first (elicitation inside prompts/get)."""
    answer = await ctx.elicit("Briefing on what?", Colour, key="topic")
    topic = answer.content["colour"] if answer.action == "accept" and answer.content else "nothing"
    return [PromptMessage(role="user", content=TextContent(text=f"Brief me on {topic}"))]


if __name__ == "__main__":
    if "--http" in sys.argv:
        server.run("http", port=int(sys.argv[sys.argv.index("--http") + 1]))
    else:
        server.run()
