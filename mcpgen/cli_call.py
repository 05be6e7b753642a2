"""`mcpgen call`: connect to any MCP server (stdio command or HTTP URL) and use it."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from typing import Any

import msgspec
from rich.console import Console
from rich.table import Table

from mcpgen.runtime.client import Client
from mcpgen.runtime.errors import McpError


class CallError(Exception):
    """A usage or connection problem: one line, exit code 2."""


def parse_args(pairs: list[str]) -> dict[str, Any]:
    """``key=value`` pairs; a value that parses as JSON is taken as JSON (``n=3`` is 3)."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise CallError(f"--arg takes key=value, got {pair!r}")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def make_client(target: str, headers: list[str], timeout: float) -> Client:
    if target.startswith(("http://", "https://")):
        parsed = {}
        for header in headers:
            name, sep, value = header.partition(":")
            if not sep:
                raise CallError(f"--header takes `Name: value`, got {header!r}")
            parsed[name.strip()] = value.strip()
        return Client.http(target, headers=parsed, request_timeout=timeout)
    words = shlex.split(target)
    if not words:
        raise CallError("no server command given")
    return Client.stdio(words[0], *words[1:], request_timeout=timeout, on_stderr=lambda line: None)


async def run_call(
    target: str, action: list[str], args: list[str], headers: list[str], as_json: bool, timeout: float, out: Console
) -> int:
    client = make_client(target, headers, timeout)
    try:
        await client.open()
    except (OSError, McpError, ConnectionError) as exc:
        raise CallError(f"cannot connect to {target}: {exc}") from None
    try:
        return await _act(client, action, parse_args(args), as_json, out)
    except McpError as exc:
        raise CallError(f"the server answered with error {exc.code}: {exc.message}") from None
    finally:
        await client.close()


async def _act(client: Client, action: list[str], args: dict[str, Any], as_json: bool, out: Console) -> int:
    if not action:
        listing = await _listing(client)
        if as_json:
            out.print_json(data=msgspec.to_builtins(listing))
        else:
            _print_listing(listing, out)
        return 0
    if len(action) != 2 or action[0] not in ("tool", "read", "prompt"):
        raise CallError("say `tool NAME`, `read URI` or `prompt NAME` (or nothing, to list)")
    verb, name = action
    if verb == "tool":
        result: Any = await client.call_tool(name, args)
        failed = bool(result.is_error)
    elif verb == "read":
        result = await client.read_resource(name)
        failed = False
    else:
        result = await client.get_prompt(name, {k: str(v) for k, v in args.items()})
        failed = False
    if as_json:
        out.print_json(data=msgspec.to_builtins(result))
    else:
        _print_result(result, out)
    return 1 if failed else 0


async def _listing(client: Client) -> dict[str, Any]:
    caps = client.session.peer_caps
    info = client.initialize_result
    listing: dict[str, Any] = {"server": info.server_info if info else None}
    if caps.has("tools"):
        listing["tools"] = await client.list_tools()
    if caps.has("resources"):
        listing["resources"] = await client.list_resources()
        listing["resourceTemplates"] = await client.list_resource_templates()
    if caps.has("prompts"):
        listing["prompts"] = await client.list_prompts()
    return listing


def _text(value: Any) -> str:
    return "" if value is msgspec.UNSET or value is None else str(value)


def _print_listing(listing: dict[str, Any], out: Console) -> None:
    server = listing.get("server")
    if server is not None:
        out.print(f"[bold]{server.name}[/] {server.version}", highlight=False)
    sections: list[tuple[str, str, Callable[[Any], tuple[str, str]]]] = [
        ("tools", "tool", lambda t: (t.name, _text(t.description))),
        ("resources", "resource", lambda r: (r.uri, _text(r.description) or r.name)),
        ("resourceTemplates", "template", lambda r: (r.uri_template, _text(r.description) or r.name)),
        ("prompts", "prompt", lambda p: (p.name, _text(p.description))),
    ]
    for key, label, row in sections:
        items = listing.get(key)
        if items is None:
            continue
        table = Table(title=f"{key} ({len(items)})", title_justify="left")
        table.add_column(label)
        table.add_column("description")
        for item in items:
            table.add_row(*row(item))
        out.print(table)


def _print_result(result: Any, out: Console) -> None:
    data = msgspec.to_builtins(result)
    for block in data.get("content", []) if isinstance(data.get("content"), list) else []:
        if block.get("type") == "text":
            out.print(block["text"], highlight=False)
        else:
            out.print_json(data=block)
    if "structuredContent" in data:
        out.print_json(data=data["structuredContent"])
    for item in data.get("contents", []):
        if "text" in item:
            out.print(item["text"], highlight=False)
        else:
            out.print(f"<{len(item.get('blob', ''))} base64 characters of {item.get('mimeType', 'binary')}>")
    for message in data.get("messages", []):
        content = message["content"]
        text = content.get("text") if content.get("type") == "text" else json.dumps(content)
        out.print(f"[bold]{message['role']}:[/] {text}", highlight=False)
    if data.get("isError"):
        out.print("[red]the tool reported an error[/]")
