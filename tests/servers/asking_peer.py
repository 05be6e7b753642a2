"""A server whose tools ask the client: a form (every kind of field), a URL, and an LLM
sample. Used by tests/cli/test_cli_elicit.py through `mcpgen call` (both eras)."""

from __future__ import annotations

import json
from typing import Any

from mcpgen import Context, Server

server = Server("asking")

FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Your name", "description": "as you like to be called"},
        "age": {"type": "integer", "minimum": 0, "maximum": 150, "default": 30},
        "color": {"type": "string", "enum": ["red", "green", "blue"]},
        "subscribe": {"type": "boolean", "default": False},
        "tags": {
            "type": "array",
            "items": {"anyOf": [{"const": "a", "title": "Alpha"}, {"const": "b", "title": "Beta"}]},
        },
        "note": {"type": "string"},
    },
    "required": ["name", "color"],
}


@server.tool()
async def signup(ctx: Context) -> str:
    answer = await ctx.elicit("Tell us about you", FORM)
    return json.dumps({"action": answer.action, "content": answer.content or None}, sort_keys=True)


@server.tool()
async def login(ctx: Context) -> str:
    answer = await ctx.elicit_url("Sign in to continue", "https://example.com/login", "e-1")
    return answer.action


@server.tool()
async def summarize(ctx: Context) -> str:
    result = await ctx.sample("Summarize the weather")
    return str(result.content)


if __name__ == "__main__":
    server.run()
