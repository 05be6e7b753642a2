"""A server built with the official MCP Python SDK (``mcp`` 2.x, high-level ``MCPServer``).

tests/interop/test_interop.py starts it over stdio and drives it with ``mcpgen.Client``.
Run: python tests/interop/sdk_server.py
"""

from __future__ import annotations

import sys
import warnings

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import AssistantMessage, Message, UserMessage
from mcp.types import (
    Completion,
    CompletionArgument,
    CompletionContext,
    PromptReference,
    ResourceTemplateReference,
    SamplingMessage,
    TextContent,
)
from pydantic import BaseModel, Field

# Logging, sampling and roots are deprecated in the SDK as of the 2026-07-28 draft; they
# are still the spec for the 2025-11-25 revision this test negotiates.
warnings.simplefilter("ignore")

server = MCPServer(
    "sdk-peer", version="9.9.9", instructions="An official-SDK server for interop tests.", log_level="WARNING"
)
BOOKS = {"dune": "Frank Herbert", "emma": "Jane Austen"}


class Forecast(BaseModel):
    city: str
    celsius: float
    tags: list[str] = Field(default_factory=list)


class Contact(BaseModel):
    name: str
    age: int


@server.tool(title="City forecast")
def forecast(city: str, days: int = 1) -> Forecast:
    """A made-up forecast (structured output)."""
    return Forecast(city=city, celsius=20.0 + days, tags=["sunny"])


@server.tool(structured_output=False)
def shout(text: str) -> str:
    """Upper-cases the text (plain text, no output schema)."""
    return text.upper()


@server.tool()
async def count(to: int, ctx: Context) -> str:
    """Reports progress 1..to and logs each step."""
    for i in range(1, to + 1):
        await ctx.report_progress(i, to, f"step {i}")
        await ctx.info(f"counted {i}", logger_name="counter")
    return f"counted to {to}"


@server.tool(structured_output=False)
async def ask_model(question: str, ctx: Context) -> str:
    """Asks the client's model (sampling)."""
    result = await ctx.session.create_message(
        [SamplingMessage(role="user", content=TextContent(text=question))],
        max_tokens=20,
        related_request_id=ctx.request_id,
    )
    content = result.content
    return f"{result.model}: {content.text}" if isinstance(content, TextContent) else repr(content)


@server.tool(structured_output=False)
async def ask_user(ctx: Context) -> str:
    """Asks the user for a contact (elicitation)."""
    answer = await ctx.elicit("Who are you?", Contact)
    if answer.action == "accept":
        return f"accept: {answer.data.name} ({answer.data.age})"
    return answer.action


@server.tool(structured_output=False)
async def list_roots(ctx: Context) -> str:
    """The client's roots, comma-separated."""
    result = await ctx.session.list_roots()
    return ",".join(str(root.uri) for root in result.roots)


@server.tool(structured_output=False)
async def sleep(seconds: float) -> str:
    """Sleeps; logs to stderr when cancelled."""
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        print("sleep cancelled", file=sys.stderr, flush=True)
        raise
    return f"slept {seconds}"


@server.resource("config://settings", mime_type="application/json", description="Settings")
def settings() -> str:
    return '{"theme": "dark"}'


@server.resource("book://{title}", mime_type="text/plain", description="A book's author")
def book(title: str) -> str:
    return BOOKS.get(title, "unknown")


@server.prompt(title="Summarize")
def summarize(text: str, style: str = "short") -> list[Message]:
    """Summarize a text."""
    return [UserMessage(f"Summarize ({style}): {text}"), AssistantMessage("Sure.")]


@server.completion()  # type: ignore[untyped-decorator, no-untyped-call]
async def complete(
    ref: PromptReference | ResourceTemplateReference, argument: CompletionArgument, context: CompletionContext | None
) -> Completion | None:
    if isinstance(ref, PromptReference) and ref.name == "summarize" and argument.name == "style":
        return Completion(values=[s for s in ("short", "long", "silly") if s.startswith(argument.value)])
    if isinstance(ref, ResourceTemplateReference) and argument.name == "title":
        return Completion(values=sorted(t for t in BOOKS if t.startswith(argument.value)))
    return None


if __name__ == "__main__":
    server.run("stdio")
