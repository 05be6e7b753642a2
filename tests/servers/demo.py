"""An mcpgen server exercising every feature; the runtime tests drive it over stdio and
Streamable HTTP.

Run: python tests/servers/demo.py [--page-size N]
         [--http PORT [--stateless] [--json-response] [--max-body N] [--keepalive SECONDS]]
"""

from __future__ import annotations

import asyncio
import os
import sys
from dataclasses import dataclass
from typing import Annotated

import msgspec

from mcpgen import Context, Server, ToolError
from mcpgen.generated import ImageContent, PromptMessage, TextContent


def option(name: str, default: str | None = None) -> str | None:
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


server = Server(
    "demo",
    "1.2.3",
    instructions="A server for tests.",
    page_size=int(option("--page-size") or 100),
    max_message=int(option("--max-message") or 16 * 1024 * 1024),
    handler_timeout=float(option("--handler-timeout") or 0) or None,
    max_concurrency=int(option("--max-concurrency") or 1024),
)
BUSY = {"now": 0, "max": 0}
FILES = {"notes.txt": "remember the milk", "todo.md": "- write tests"}


class Sum(msgspec.Struct):
    total: int
    terms: list[int]


@dataclass
class Forecast:
    city: str
    celsius: float


@server.tool(title="Add two numbers")
def add(a: int, b: int) -> int:
    """Add a and b."""
    return a + b


@server.tool()
def sum_all(numbers: list[int]) -> Sum:
    """Sum a list of integers (structured output)."""
    return Sum(total=sum(numbers), terms=numbers)


@server.tool()
def weather(city: Annotated[str, msgspec.Meta(min_length=1)], days: int = 1) -> Forecast:
    """A made-up forecast."""
    return Forecast(city=city, celsius=21.5 + days)


@server.tool(blocking=False)  # answered on the spot: the load tests put 10,000 of these in flight
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@server.tool()
def pixel() -> ImageContent:
    """A 1x1 PNG."""
    return ImageContent(
        data="iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
        mime_type="image/png",
    )


@server.tool()
def noisy() -> str:
    """Prints to stdout, which must not reach the protocol stream."""
    print("this line must go to stderr")
    return "done"


@server.tool()
def fail(kind: str = "tool") -> str:
    """Fails: kind=tool reports isError, kind=crash raises."""
    if kind == "tool":
        raise ToolError("it went wrong on purpose")
    raise RuntimeError("secret internals /etc/passwd")


@server.tool()
async def slow(seconds: float, ctx: Context) -> str:
    """Sleeps; records whether it was cancelled."""
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        print(f"slow cancelled {ctx.request_id}", file=sys.stderr, flush=True)
        raise
    return f"slept {seconds}"


@server.tool()
async def count(to: int, ctx: Context) -> str:
    """Reports progress from 1 to `to`, logging each step."""
    for i in range(1, to + 1):
        await ctx.report_progress(i, to, f"step {i}")
        await ctx.info(f"counted {i}", logger="counter")
    return f"counted to {to}"


@server.tool()
async def ask_model(question: str, ctx: Context) -> str:
    """Asks the client's model (sampling)."""
    result = await ctx.sample(question, max_tokens=50)
    content = result.content
    return content.text if isinstance(content, TextContent) else repr(content)


class Contact(msgspec.Struct):
    name: str
    age: int = 0


@server.tool()
async def ask_user(ctx: Context) -> str:
    """Asks the user for a contact (elicitation)."""
    answer = await ctx.elicit("Who?", Contact)
    return f"{answer.action}: {msgspec.json.encode(answer.content).decode() if answer.content else ''}"


@server.tool()
async def roots(ctx: Context) -> list[str]:
    """The client's roots."""
    return [r.uri for r in await ctx.list_roots()]


@server.tool()
async def touch(name: str) -> str:
    """Changes a file and notifies subscribers."""
    FILES[name] = FILES.get(name, "") + "!"
    await server.notify_resource_updated(f"file:///{name}")
    return "touched"


@server.tool()
def add_tool(name: str) -> str:
    """Registers a new tool (list_changed)."""
    server.tool(name=name, description="added at run time")(lambda: "new")
    return "added"


@server.tool()
async def poll(ctx: Context) -> str:
    """Closes its HTTP stream at once and answers later (the client must resume)."""
    from mcpgen.runtime.server.http_server import close_current_stream

    await close_current_stream()
    await asyncio.sleep(0.3)
    return "answered after the reconnect"


@server.tool()
def pid() -> int:
    """The serving process (to see load spread over workers)."""
    return os.getpid()


@server.tool()
async def busy(seconds: float) -> int:
    """Sleeps, counting how many calls run at once."""
    BUSY["now"] += 1
    BUSY["max"] = max(BUSY["max"], BUSY["now"])
    try:
        await asyncio.sleep(seconds)
    finally:
        BUSY["now"] -= 1
    return BUSY["max"]


@server.tool()
def max_busy() -> int:
    """The most `busy` calls that ever ran at once."""
    return BUSY["max"]


@server.resource("config://app", mime_type="application/json", description="App settings")
def config() -> dict[str, object]:
    return {"debug": False, "level": 3}


@server.resource("bin://logo", mime_type="image/png", description="Raw bytes")
def logo() -> bytes:
    return b"\x89PNG\r\n\x1a\nfake"


@server.resource_template("file:///{name}", mime_type="text/plain", description="A file by name")
def file(name: str) -> str:
    from mcpgen import ResourceNotFound

    if name not in FILES:
        raise ResourceNotFound(f"file:///{name}")
    return FILES[name]


@server.prompt(title="Review code")
def review(code: str, language: str = "python") -> str:
    """Ask for a code review."""
    return f"Review this {language} code:\n{code}"


@server.prompt()
def chat(topic: str) -> list[PromptMessage]:
    """A two-message conversation."""
    return [
        PromptMessage(role="user", content=TextContent(text=f"Tell me about {topic}")),
        PromptMessage(role="assistant", content=TextContent(text="Gladly.")),
    ]


@server.completion(prompt="review", argument="language")
def languages(value: str, arguments: dict[str, str]) -> list[str]:
    return [lang for lang in ("python", "perl", "php", "rust") if lang.startswith(value)]


@server.completion(template="file:///{name}", argument="name")
async def file_names(value: str, arguments: dict[str, str]) -> list[str]:
    return sorted(n for n in FILES if n.startswith(value))


if __name__ == "__main__":
    if "--http" in sys.argv:
        server.run(
            "http",
            port=int(option("--http") or 0),
            sessionless="--stateless" in sys.argv,
            json_response="--json-response" in sys.argv,
            max_body=int(option("--max-body") or 16 * 1024 * 1024),
            keepalive=float(option("--keepalive") or 15.0),
            retry_ms=200,
        )
    else:
        server.run()
