"""A FastMCP server (FastMCP 4.x, from PyPI) for the gateway's interop tests: a plain tool,
one that asks the user (elicitation) and a resource. Serves over stdio."""

from __future__ import annotations

from fastmcp import Context, FastMCP

mcp = FastMCP("fastmcp-peer")


@mcp.tool
def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


@mcp.tool
async def whoami(ctx: Context) -> str:
    """Ask the user their name."""
    answer = await ctx.elicit("What is your name?", response_type=str)
    return f"you are {getattr(answer, 'data', None) or answer.action}"


@mcp.resource("fastmcp://motto")
def motto() -> str:
    return "fast, they said"


if __name__ == "__main__":
    mcp.run(show_banner=False)
