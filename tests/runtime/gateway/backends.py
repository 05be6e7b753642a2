"""The backend the gateway's tests put behind a proxy: every feature, and the tools that ask
their client (elicitation, sampling, roots, several at once, in two rounds), report
progress and log; ``backend(versions)`` pins it to some protocol revisions. Run as a
script it serves over stdio (``--versions``) or HTTP (``--port``)."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from mcpgen import Context, Server
from mcpgen.generated import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    Root,
    TextContent,
)

NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"


def backend(versions: list[str] | None = None, name: str = "backend") -> Server:
    server = Server(name, "2.0.0", instructions="A backend for the gateway's tests.", versions=versions)

    @server.tool()
    async def echo(text: str) -> str:
        """Echo the text back."""
        return text

    @server.tool(blocking=False)
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool()
    async def ask(ctx: Context) -> str:
        answer = await ctx.elicit("What is your name?", NAME_FORM, key="user_name")
        return f"Hello, {(answer.content or {}).get('name', 'stranger')}!"

    @server.tool()
    async def sample(ctx: Context) -> str:
        result = await ctx.sample("Capital of France?", max_tokens=10, key="capital")
        text = result.content.text if isinstance(result.content, TextContent) else "?"
        return f"model said {text}"

    @server.tool()
    async def roots(ctx: Context) -> str:
        found = await ctx.list_roots(key="client_roots")
        return "roots: " + ", ".join(root.uri for root in found)

    @server.tool()
    async def everything_at_once(ctx: Context) -> str:
        answer, sampled, found = await asyncio.gather(
            ctx.elicit("Name?", NAME_FORM, key="user_name"),
            ctx.sample("Hi?", max_tokens=5, key="greeting"),
            ctx.list_roots(key="client_roots"),
        )
        return f"{answer.action}/{sampled.model}/{len(found)}"

    @server.tool()
    async def two_rounds(ctx: Context) -> str:
        first = await ctx.elicit("Step 1?", NAME_FORM, key="step1")
        second = await ctx.elicit("Step 2?", NAME_FORM, key="step2")
        return f"{(first.content or {}).get('name')} then {(second.content or {}).get('name')}"

    @server.tool()
    async def progress(ctx: Context) -> str:
        for step in (1, 2, 3):
            await ctx.report_progress(step, 3, f"step {step}")
        return "progressed"

    @server.tool()
    async def logs(ctx: Context) -> str:
        await ctx.info("one")
        await ctx.warning("two")
        return "logged"

    @server.tool()
    async def slow(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return "slept"

    @server.tool()
    async def fails() -> str:
        from mcpgen import ToolError

        raise ToolError("it failed, as it should")

    @server.tool(
        input_schema={
            "type": "object",
            "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
            "required": ["region"],
        }
    )
    def region(region: str) -> str:
        return f"region={region}"

    @server.resource("data://greeting", mime_type="text/plain")
    def greeting() -> str:
        return "hello, resource"

    @server.resource_template("data://items/{item}")
    def item(item: str) -> str:
        return f"item {item}"

    @server.prompt()
    def brief(topic: str) -> str:
        return f"Brief me on {topic}"

    @server.completion(prompt="brief", argument="topic")
    def topics(value: str, arguments: dict[str, str]) -> list[str]:
        return [t for t in ("tea", "tides", "trains") if t.startswith(value)]

    return server


# ------------------------------------------------------------ what the front's client answers


async def answer_form(params: ElicitRequestParams) -> ElicitResult:
    message = getattr(params, "message", "")
    return ElicitResult(action="accept", content={"name": "Ada" if "2" not in message else "Grace"})


async def answer_sampling(params: CreateMessageRequestParams) -> CreateMessageResult:
    return CreateMessageResult(role="assistant", content=TextContent(text="Paris"), model="fake-model")


ROOTS = [Root(uri="file:///work", name="work")]


def client_options(**extra: Any) -> dict[str, Any]:
    """A front client answering every kind of question."""
    return {"elicitation": answer_form, "sampling": answer_sampling, "roots": ROOTS, **extra}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--versions", default="")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--name", default="backend")
    args = parser.parse_args()
    versions = [v for v in args.versions.split(",") if v] or None
    server = backend(versions, args.name)
    if args.port:
        server.run("http", port=args.port)
    else:
        server.run()


if __name__ == "__main__":
    main()
