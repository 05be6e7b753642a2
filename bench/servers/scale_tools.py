"""What the Python servers of ``bench/scale.py`` share (``scale_mcpgen.py``, ``scale_sdk.py``;
``ts/scale.mjs`` builds the same for the TypeScript SDK): the command line, the numbered
tools of a server with many tools, and the text of a large result.

Command line of each server::

    SCRIPT stdio [--tools N]
    SCRIPT http PORT [--tools N] [--json-response]

Every server has ``echo_async(text: str) -> str`` (an ``async def``: the text back) and
``blob(megabytes: int) -> str`` (a text of that many MiB, made once per size and kept), and
with ``--tools N`` also N numbered tools ``tool_00000`` ... : ``(query: str, limit: int = 10)
-> str``, each with a description of its own, answering ``"<number>:<query>:<limit>"``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

MAX_MEGABYTES = 64  # the largest result blob makes (the benchmark asks for at most 32)
_PIECE = "The quick brown fox jumps over the lazy dog, then naps in the sun. "
_texts: dict[int, str] = {}


@dataclass
class Options:
    transport: str  # "stdio" or "http"
    port: int = 0
    tools: int = 0
    json_response: bool = False


def options(argv: list[str]) -> Options:
    """The command line above, or exit with a usage line."""
    usage = f"usage: {argv[0]} stdio|http PORT [--tools N] [--json-response]"
    args = argv[1:]
    if not args or args[0] not in ("stdio", "http"):
        sys.exit(usage)
    found = Options(args.pop(0))
    if found.transport == "http":
        if not args or not args[0].isdigit():
            sys.exit(usage)
        found.port = int(args.pop(0))
    while args:
        flag = args.pop(0)
        if flag == "--tools" and args and args[0].isdigit():
            found.tools = int(args.pop(0))
        elif flag == "--json-response":
            found.json_response = True
        else:
            sys.exit(usage)
    return found


def tool_name(number: int) -> str:
    return f"tool_{number:05d}"


def tool_description(number: int) -> str:
    return f"Tool {number}: look the query up in collection {number} and return at most limit matches."


def blob_text(megabytes: int) -> str:
    """A text of ``megabytes`` MiB (ASCII: one byte a character, nothing JSON escapes)."""
    if not 0 < megabytes <= MAX_MEGABYTES:
        raise ValueError(f"megabytes must be 1 to {MAX_MEGABYTES}")
    text = _texts.get(megabytes)
    if text is None:
        size = megabytes << 20
        text = _texts[megabytes] = (_PIECE * (size // len(_PIECE) + 1))[:size]
    return text
