"""What ``mcpgen call`` prints for a person: a server's listing, a result, progress and log
lines. Every string in them came from the server, so each goes through
:mod:`mcpgen.cli.sanitize` on its way to the terminal."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from typing import Any

import msgspec
from rich.console import Console
from rich.highlighter import JSONHighlighter
from rich.text import Text

from mcpgen.cli.arguments import signature
from mcpgen.cli.sanitize import clean, clean_line, json_text, markup
from mcpgen.generated import LoggingMessageNotificationParams


def print_json(console: Console, data: Any) -> None:
    """``data`` as indented JSON (coloured on a terminal), its strings inert there
    (:func:`~mcpgen.cli.sanitize.json_text`)."""
    text = Text(json_text(data))
    JSONHighlighter().highlight(text)
    console.print(text, soft_wrap=True)


def progress(err: Console, amount: float, total: float | None, message: str | None) -> None:
    shown = f"{amount:g}/{total:g}" if total is not None else f"{amount:g}"
    err.print(f"progress {shown}{f' {clean_line(message)}' if message else ''}", markup=False, highlight=False)


def log(params: LoggingMessageNotificationParams, err: Console) -> None:
    data = params.data if isinstance(params.data, str) else json.dumps(msgspec.to_builtins(params.data))
    logger = params.logger if isinstance(params.logger, str) else ""
    err.print(
        f"log {clean_line(params.level)}{f' {clean_line(logger)}' if logger else ''}: {clean_line(data)}",
        markup=False,
        highlight=False,
    )


# ---------------------------------------------------------------- listing


def prompt_signature(arguments: list[dict[str, Any]]) -> str:
    return ", ".join(str(a["name"]) if a.get("required") else f"[{a['name']}]" for a in arguments)


def listing(listed: dict[str, Any], out: Console) -> None:
    """Plain lines, not a table: names and URIs are printed whole however long (a table
    would cut them), each description indented below."""
    server = listed.get("server")
    if server is not None:
        out.print(f"[bold]{markup(server.name)}[/] {markup(server.version)}", highlight=False, markup=True)
    rows: dict[str, Callable[[dict[str, Any]], tuple[str, str, str]]] = {
        "tools": lambda t: (t["name"], signature(t.get("inputSchema") or {}), t.get("description", "")),
        "resources": lambda r: (r["uri"], r.get("mimeType", ""), r.get("description") or r.get("name", "")),
        "resourceTemplates": lambda r: (
            r["uriTemplate"],
            r.get("mimeType", ""),
            r.get("description") or r.get("name", ""),
        ),
        "prompts": lambda p: (p["name"], prompt_signature(p.get("arguments") or []), p.get("description", "")),
    }
    width = max(out.width, 40)
    for key, row in rows.items():
        items = listed.get(key)
        if items is None:
            continue
        out.print(f"[bold]{key}[/] ({len(items)})", highlight=False, markup=True)
        for item in items:
            name, detail, description = row(msgspec.to_builtins(item))
            out.print(
                f"  [bold]{markup(name)}[/]" + (f"  {markup(detail)}" if detail else ""), highlight=False, markup=True
            )
            for line in textwrap.wrap(" ".join(clean_line(description).split()), width - 6):
                out.print(f"      {line}", markup=False, highlight=False)


# ---------------------------------------------------------------- results


def _binary(kind: str, mime: str | None, data: str) -> str:
    """A summary of base64 data instead of the data: images, audio and blobs alike."""
    size = len(data) * 3 // 4 - data[-2:].count("=") if data else 0
    return f"<{kind} {clean_line(mime or 'application/octet-stream')}, {size} bytes>"


def _block(block: dict[str, Any], out: Console, skip_text: Callable[[str], bool]) -> None:
    kind = block.get("type")
    if kind == "text":
        if not skip_text(block["text"]):
            out.print(clean(block["text"]), markup=False, highlight=False)
    elif kind in ("image", "audio"):
        out.print(_binary(str(kind), block.get("mimeType"), block.get("data", "")), markup=False, highlight=False)
    elif kind == "resource_link":
        label = f" ({clean_line(block['name'])})" if block.get("name") else ""
        out.print(f"<link {clean_line(block.get('uri'))}{label}>", markup=False, highlight=False)
    elif kind == "resource":
        _contents(block.get("resource") or {}, out)
    else:
        print_json(out, block)


def _contents(item: dict[str, Any], out: Console) -> None:
    if "text" in item:
        out.print(clean(item["text"]), markup=False, highlight=False)
    else:
        out.print(
            _binary("blob", item.get("mimeType"), item.get("blob", ""))
            + f" {clean_line(item.get('uri', ''))}".rstrip(),
            markup=False,
            highlight=False,
        )


def result(data: dict[str, Any], out: Console, err: Console) -> None:
    """A tool's, resource's or prompt's result, as builtins (``msgspec.to_builtins``)."""
    structured = data.get("structuredContent", msgspec.UNSET)

    def duplicates_structured(text: str) -> bool:
        # Servers send structured results a second time as JSON text, for older
        # clients (as the specification advises); print them once.
        if structured is msgspec.UNSET:
            return False
        # A primitive result is boxed as {"result": value}; its text is the value alone
        # (FastMCP and the official SDK send "3" beside {"result": 3}).
        boxed = isinstance(structured, dict) and set(structured) == {"result"}
        if boxed and text == structured["result"]:
            return True
        try:
            parsed = json.loads(text)
        except ValueError:
            return False
        return bool(parsed == structured or (boxed and parsed == structured["result"]))

    content = data.get("content")
    for block in content if isinstance(content, list) else []:
        _block(block, out, duplicates_structured)
    if structured is not msgspec.UNSET:
        print_json(out, structured)
    for item in data.get("contents", []):
        _contents(item, out)
    for message in data.get("messages", []):
        out.print(f"[bold]{markup(message['role'])}:[/]", highlight=False, markup=True)
        _block(message["content"], out, lambda text: False)
    if data.get("isError"):
        err.print("[red]the tool reported an error[/]", markup=True)


__all__ = ["listing", "log", "print_json", "progress", "prompt_signature", "result"]
