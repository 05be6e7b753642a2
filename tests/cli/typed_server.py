"""A server whose tool takes typed arguments of every shape `mcpgen call` must show and
check (an enum, an optional one, a struct behind a ``$ref``, a list of them), a prompt with
a required argument, a resource; and that prints while it is imported, as many servers do.
For tests/cli/test_cli_call_everyday.py.

Run: python tests/cli/typed_server.py
"""

from __future__ import annotations

import enum

import msgspec

from mcpgen import Server

print("loading the typed server")  # at import, before the server owns stdout

server = Server("typed")


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Point(msgspec.Struct):
    x: int
    y: int


@server.tool()
def place(count: int, point: Point, color: Color | None = None, path: list[Point] | None = None) -> str:
    """Place `count` markers at a point."""
    return f"placed {count} at {point.x},{point.y} in {color.value if color else 'no color'}"


@server.tool()
def add(a: int, b: int) -> int:
    return a + b


@server.resource("config://app")
def config() -> str:
    return "theme=dark"


@server.prompt()
def review(code: str, language: str = "python") -> str:
    return f"Review this {language} code: {code}"


if __name__ == "__main__":
    server.run()
