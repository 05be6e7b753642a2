"""`mcpgen call`: connect to any MCP server (a stdio command, a Streamable HTTP URL or a
legacy HTTP+SSE URL), list what it offers or use one thing, and print it for a person."""

from __future__ import annotations

import http
import json
import re
import shlex
import sys
import textwrap
import urllib.parse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

import msgspec
from rich.console import Console
from rich.markup import escape

from mcpgen.cli.elicit import terminal_elicitation
from mcpgen.generated import LoggingMessageNotificationParams
from mcpgen.runtime.client.client import Client
from mcpgen.runtime.client.tasks import TaskRequired
from mcpgen.runtime.errors import McpError
from mcpgen.runtime.jsonrpc.transport import Transport
from mcpgen.runtime.transports.stdio import ProcessTransport
from mcpgen.runtime.versions import era_of

if TYPE_CHECKING:
    import httpx

    from mcpgen.cli.signin import CliAuth

TransportName = Literal["auto", "stdio", "http", "sse"]
TRANSPORTS = ("auto", "stdio", "http", "sse")
ERAS = ("auto", "handshake", "stateless")
# Statuses after which a Streamable HTTP attempt is retried as legacy HTTP+SSE (the
# fallback the specification describes for clients); 401/403 are answers, not misses.
_SSE_FALLBACK = {400, 404, 405}
_HTTP_ERROR = re.compile(r"HTTP (\d{3}) from (\S+?):? (.*)", re.S)


class CallError(Exception):
    """A usage or connection problem: one line, exit code 2."""


# ---------------------------------------------------------------- arguments


def parse_args(pairs: list[str], schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """``key=value`` pairs, typed by the tool's ``inputSchema``: a parameter that takes a
    string keeps the text as it is (``zip=02134`` stays "02134"); any other is parsed as
    JSON (``n=3`` is 3, ``tags=["a"]`` a list). A parameter the schema does not describe
    is JSON when it parses as JSON, else text."""
    properties = (schema or {}).get("properties")
    properties = properties if isinstance(properties, dict) else {}
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise CallError(f"--arg takes key=value, got {pair!r}")
        types = _types(properties.get(key))
        if "string" in types and not (value == "null" and "null" in types):
            out[key] = value
            continue
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            if "array" in types or "object" in types:
                example = """'tags=["a", "b"]'""" if "array" in types else """'point={"x": 1}'"""
                kind = "an array" if "array" in types else "an object"
                raise CallError(f"--arg {key} takes {kind}, written as JSON: e.g. -a {example}") from None
            out[key] = value  # the server says what it expected
    return out


def text_args(pairs: list[str]) -> dict[str, str]:
    """Prompt arguments: always text, taken as written."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise CallError(f"--arg takes key=value, got {pair!r}")
        out[key] = value
    return out


def _types(schema: Any) -> set[str]:
    """The JSON types a (sub)schema admits, as far as can be told without resolving $ref."""
    if not isinstance(schema, dict):
        return set()
    found: set[str] = set()
    kind = schema.get("type")
    if isinstance(kind, str):
        found.add(kind)
    elif isinstance(kind, list):
        found.update(k for k in kind if isinstance(k, str))
    for values in (schema.get("enum"), [schema["const"]] if "const" in schema else None):
        if isinstance(values, list):
            found.update("string" if isinstance(v, str) else "other" for v in values)
    for combinator in ("anyOf", "oneOf", "allOf"):
        for sub in schema.get(combinator) or []:
            found |= _types(sub)
    return found


# ---------------------------------------------------------------- connecting


def _headers(headers: list[str]) -> dict[str, str]:
    parsed = {}
    for header in headers:
        name, sep, value = header.partition(":")
        if not sep or not name.strip():
            raise CallError(f"--header takes `Name: value`, got {header!r}")
        parsed[name.strip()] = value.strip()
    return parsed


def check_era(era: str) -> str:
    """``--era``: auto (probe, then speak what the server proves it speaks), handshake,
    stateless, or one protocol version."""
    if era not in ERAS and era_of(era) is None:
        raise CallError(f"--era is one of {', '.join(ERAS)} or a protocol version (e.g. 2025-11-25), not {era!r}")
    return era


_HOST_PORT = re.compile(r"[\w.-]+:\d{1,5}(/\S*)?")


def pick_transport(target: str, transport: str) -> str:
    if transport not in TRANSPORTS:
        raise CallError(f"--transport is one of {', '.join(TRANSPORTS)}, not {transport!r}")
    is_url = target.startswith(("http://", "https://"))
    if is_url and not urllib.parse.urlsplit(target).hostname:
        raise CallError(f"{target!r} names no host: give the server's URL, e.g. http://127.0.0.1:8000/mcp")
    if not is_url and _HOST_PORT.fullmatch(target.strip()):
        # `localhost:8000` would be run as a command: surely an HTTP server was meant.
        raise CallError(f"{target!r} is not a command: for a server over HTTP give its URL, e.g. http://{target}/mcp")
    if transport == "auto":
        if not is_url:
            return "stdio"
        return "sse" if target.split("?")[0].rstrip("/").endswith("/sse") else "http"
    if (transport == "stdio") == is_url:
        raise CallError(f"--transport {transport} needs {'a command' if transport == 'stdio' else 'an http(s) URL'}")
    return transport


class Connection:
    """A client plus what is needed to explain its end: the stdio transport, whose exit
    status and last stderr lines say why a server went away."""

    def __init__(self, client: Client, process: list[ProcessTransport]) -> None:
        self.client = client
        self._process = process

    async def explain(self, exc: BaseException) -> str:
        # The server's own answer says more than how its process ended (it may have exited
        # since, its stdin closed): only a lost connection is explained by the exit.
        if not self._process and isinstance(exc, FileNotFoundError | PermissionError) and exc.filename:
            why = "not found on PATH" if isinstance(exc, FileNotFoundError) else "not allowed to run it"
            return f"no such command: {exc.filename} ({why})"
        if self._process and not isinstance(exc, McpError):
            return (await self._process[0].exit_error()).summary()
        return one_line(exc.message if isinstance(exc, McpError) else str(exc))


def _to_stderr(text: str) -> None:
    sys.stderr.write(text)
    sys.stderr.flush()


def connect(
    target: str,
    transport: str,
    headers: list[str],
    timeout: float,
    quiet: bool,
    on_log: Callable[[LoggingMessageNotificationParams], None],
    era: str = "auto",
    auth: httpx.Auth | None = None,
) -> Connection:
    # on_log: the user sees logs, so the client asks for them (stateless era: a level
    # named in each request's _meta; without one the server sends none).
    options: dict[str, Any] = {
        "request_timeout": timeout,
        "on_log": on_log,
        "era": era,
        # A server's questions are asked in the terminal (form fields, or a URL to open).
        "elicitation": terminal_elicitation(_to_stderr),
    }
    if transport == "http":
        return Connection(Client.http(target, headers=_headers(headers), auth=auth, **options), [])
    if transport == "sse":
        return Connection(Client.sse(target, headers=_headers(headers), **options), [])
    words = shlex.split(target)
    if not words:
        raise CallError("no server command given")
    spawned: list[ProcessTransport] = []

    async def start() -> Transport:
        process = await ProcessTransport.spawn(words[0], words[1:], on_stderr=(lambda line: None) if quiet else None)
        spawned.append(process)
        return process

    return Connection(Client(connect=start, **options), spawned)


def one_line(message: str) -> str:
    """An error as one line: an HTTP error page becomes its status and reason."""
    found = _HTTP_ERROR.search(message)
    if found is not None:
        status, url, body = int(found.group(1)), found.group(2), found.group(3).strip()
        try:
            reason = http.HTTPStatus(status).phrase
        except ValueError:
            reason = ""
        detail = "" if not body or body.startswith("<") or "\n" in body else f": {body[:200]}"
        return f"HTTP {status} {reason} from {url}{detail}".replace("  ", " ")
    first = message.strip().splitlines()[0] if message.strip() else message
    return first[:300]


def _http_status(exc: BaseException) -> int | None:
    found = _HTTP_ERROR.search(str(exc))
    if found is not None:
        return int(found.group(1))
    status = re.search(r"HTTP (\d{3})", str(exc))
    return int(status.group(1)) if status else None


async def open_connection(
    target: str,
    transport: str,
    headers: list[str],
    timeout: float,
    quiet: bool,
    on_log: Callable[[LoggingMessageNotificationParams], None],
    era: str = "auto",
    signin: CliAuth | None = None,
) -> Connection:
    chosen = pick_transport(target, transport)
    oauth = signin.oauth if signin is not None and chosen == "http" else None
    connection = connect(target, chosen, headers, timeout, quiet, on_log, era, oauth)
    try:
        try:
            await connection.client.open()
        except _sign_in_required() as needed:
            # The server answered 401 and no stored token could be refreshed: the user
            # signs in (outside the requests' timeouts), then the client starts afresh.
            if signin is None:
                raise needed
            await signin.sign_in(timeout)
            connection = connect(target, chosen, headers, timeout, quiet, on_log, era, oauth)
            await connection.client.open()
        return connection
    except _oauth_error() as exc:
        raise CallError(f"cannot sign in to {target}: {one_line(str(exc))}") from None
    except (OSError, McpError, ConnectionError) as exc:
        if chosen == "http" and transport == "auto" and _http_status(exc) in _SSE_FALLBACK:
            legacy = connect(target, "sse", headers, timeout, quiet, on_log, era)
            try:
                await legacy.client.open()
                return legacy
            except (OSError, McpError, ConnectionError):
                pass  # not a legacy endpoint either: report the first failure
        raise CallError(f"cannot connect to {target}: {await connection.explain(exc)}") from None


def _sign_in_required() -> type[Exception]:
    """SignInRequired, or an exception nothing raises without the auth extra."""
    try:
        from mcpgen.cli.signin import SignInRequired
    except ImportError:
        return _NeverRaised
    return SignInRequired


def _oauth_error() -> type[Exception]:
    try:
        from mcpgen.runtime.auth.oauth import OAuthError
    except ImportError:
        return _NeverRaised
    return OAuthError


class _NeverRaised(Exception):
    pass


def cli_auth(target: str, transport: str, headers: list[str], no_auth: bool, err: Console) -> CliAuth | None:
    """Sign-in for a Streamable HTTP URL, unless told not to (``--no-auth``), given a token
    (``-H "Authorization: Bearer ..."``), or without the auth extra (a 401 is then
    reported as such)."""
    if no_auth or pick_transport(target, transport) != "http":
        return None
    if any(name.strip().lower() == "authorization" for name in _headers(headers)):
        return None
    try:
        from mcpgen.cli.signin import CliAuth
    except ImportError:
        return None
    return CliAuth(target, lambda line: err.print(line, markup=False, highlight=False, soft_wrap=True))


# ---------------------------------------------------------------- running


async def run_call(
    target: str,
    action: list[str],
    args: list[str],
    headers: list[str],
    as_json: bool,
    timeout: float,
    out: Console,
    err: Console,
    transport: str = "auto",
    quiet: bool = False,
    task: bool = False,
    era: str = "auto",
    verbose: bool = False,
    no_auth: bool = False,
) -> int:
    """List, or do one thing; the exit code (0 done, 1 the tool reported an error)."""
    if action and (len(action) != 2 or action[0] not in ("tool", "read", "prompt")):
        raise CallError("say `tool NAME`, `read URI` or `prompt NAME` (or nothing, to list)")
    if task and (not action or action[0] != "tool"):
        raise CallError("--task goes with `tool NAME`")
    check_era(era)
    signin = cli_auth(target, transport, headers, no_auth, err)
    try:
        connection = await open_connection(
            target, transport, headers, timeout, quiet, lambda p: _show_log(p, err), era, signin
        )
    finally:
        if signin is not None:
            signin.close()  # the loopback listener: a sign-in happens only while connecting
    client = connection.client
    if verbose:
        err.print(spoken(client), markup=False, highlight=False)
    try:
        return await _act(client, action, args, as_json, out, err, task)
    except McpError as exc:
        raise CallError(f"the server answered with error {exc.code}: {one_line(exc.message)}") from None
    except ConnectionError as exc:
        raise CallError(await connection.explain(exc)) from None
    except _oauth_error() as exc:  # the token ran out mid-way and could not be refreshed
        raise CallError(f"authorization failed: {one_line(str(exc))}; run the command again to sign in") from None
    finally:
        await client.close()


async def _act(
    client: Client, action: list[str], args: list[str], as_json: bool, out: Console, err: Console, task: bool = False
) -> int:
    if not action:
        listing = await _listing(client)
        if as_json:
            out.print_json(data=msgspec.to_builtins(listing))
        else:
            _print_listing(listing, out)
        return 0
    verb, name = action
    result: Any
    if verb == "tool":
        tools = {tool.name: tool for tool in await client.list_tools()} if client.session.peer_caps.has("tools") else {}
        schema = msgspec.to_builtins(tools[name].input_schema) if name in tools else None
        arguments = parse_args(args, schema)
        if task:
            from mcpgen.cli.task import TaskError, run_task

            try:
                result = await run_task(client, name, arguments, err, lambda *p: _show_progress(err, *p))
            except TaskError as exc:
                raise CallError(str(exc)) from None
            if result is None:
                return 130  # stopped with Ctrl-C (the task was cancelled), as a shell reports SIGINT
        else:
            try:
                result = await client.call_tool(name, arguments, on_progress=lambda *p: _show_progress(err, *p))
            except TaskRequired:
                raise CallError(f"tool {name} runs only as a task: add --task") from None
    elif verb == "read":
        result = await client.read_resource(name)
    else:
        result = await client.get_prompt(name, text_args(args))
    data = msgspec.to_builtins(result)
    if as_json:
        out.print_json(data=data)
    else:
        _print_result(data, out, err)
    return 1 if data.get("isError") else 0


def spoken(client: Client) -> str:
    """One line for --verbose: the server, the era and the protocol version spoken."""
    info = client.initialize_result
    server = f"{info.server_info.name} {info.server_info.version}" if info is not None else "the server"
    era = "stateless era (no handshake)" if client.spoken_era == "stateless" else "handshake era (initialize)"
    return f"connected to {server}: {era}, protocol version {client.session.protocol_version}"


def _show_progress(err: Console, progress: float, total: float | None, message: str | None) -> None:
    amount = f"{progress:g}/{total:g}" if total is not None else f"{progress:g}"
    err.print(f"progress {amount}{f' {message}' if message else ''}", markup=False, highlight=False)


def _show_log(params: LoggingMessageNotificationParams, err: Console) -> None:
    data = params.data if isinstance(params.data, str) else json.dumps(msgspec.to_builtins(params.data))
    logger = params.logger if isinstance(params.logger, str) else ""
    err.print(f"log {params.level}{f' {logger}' if logger else ''}: {data}", markup=False, highlight=False)


# ---------------------------------------------------------------- listing


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


def _tool_signature(schema: dict[str, Any]) -> str:
    """``a: integer, [b: string]``: the parameters, optional ones in brackets."""
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    parts = []
    for key, sub in properties.items():
        kinds = sorted(_types(sub) - {"other"}) or ["any"]
        part = f"{key}: {'|'.join(kinds)}"
        parts.append(part if key in required else f"[{part}]")
    return ", ".join(parts)


def _prompt_signature(arguments: list[dict[str, Any]]) -> str:
    return ", ".join(a["name"] if a.get("required") else f"[{a['name']}]" for a in arguments)


def _print_listing(listing: dict[str, Any], out: Console) -> None:
    """Plain lines, not a table: names and URIs are printed whole however long (a table
    would cut them), each description indented below."""
    server = listing.get("server")
    if server is not None:
        out.print(f"[bold]{escape(server.name)}[/] {escape(server.version)}", highlight=False, markup=True)
    rows: dict[str, Callable[[dict[str, Any]], tuple[str, str, str]]] = {
        "tools": lambda t: (t["name"], _tool_signature(t.get("inputSchema") or {}), t.get("description", "")),
        "resources": lambda r: (r["uri"], r.get("mimeType", ""), r.get("description") or r.get("name", "")),
        "resourceTemplates": lambda r: (
            r["uriTemplate"],
            r.get("mimeType", ""),
            r.get("description") or r.get("name", ""),
        ),
        "prompts": lambda p: (p["name"], _prompt_signature(p.get("arguments") or []), p.get("description", "")),
    }
    width = max(out.width, 40)
    for key, row in rows.items():
        items = listing.get(key)
        if items is None:
            continue
        out.print(f"[bold]{key}[/] ({len(items)})", highlight=False, markup=True)
        for item in items:
            name, detail, description = row(msgspec.to_builtins(item))
            out.print(
                f"  [bold]{escape(name)}[/]" + (f"  {escape(detail)}" if detail else ""), highlight=False, markup=True
            )
            for line in textwrap.wrap(" ".join(description.split()), width - 6):
                out.print(f"      {line}", markup=False, highlight=False)


# ---------------------------------------------------------------- results


def _binary(kind: str, mime: str | None, data: str) -> str:
    """A summary of base64 data instead of the data: images, audio and blobs alike."""
    size = len(data) * 3 // 4 - data[-2:].count("=") if data else 0
    return f"<{kind} {mime or 'application/octet-stream'}, {size} bytes>"


def _print_block(block: dict[str, Any], out: Console, skip_text: Callable[[str], bool]) -> None:
    kind = block.get("type")
    if kind == "text":
        if not skip_text(block["text"]):
            out.print(block["text"], markup=False, highlight=False)
    elif kind in ("image", "audio"):
        out.print(_binary(str(kind), block.get("mimeType"), block.get("data", "")), markup=False, highlight=False)
    elif kind == "resource_link":
        label = f" ({block['name']})" if block.get("name") else ""
        out.print(f"<link {block.get('uri')}{label}>", markup=False, highlight=False)
    elif kind == "resource":
        _print_contents(block.get("resource") or {}, out)
    else:
        out.print_json(data=block)


def _print_contents(item: dict[str, Any], out: Console) -> None:
    if "text" in item:
        out.print(item["text"], markup=False, highlight=False)
    else:
        out.print(
            _binary("blob", item.get("mimeType"), item.get("blob", "")) + f" {item.get('uri', '')}".rstrip(),
            markup=False,
            highlight=False,
        )


def _print_result(data: dict[str, Any], out: Console, err: Console) -> None:
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
        _print_block(block, out, duplicates_structured)
    if structured is not msgspec.UNSET:
        out.print_json(data=structured)
    for item in data.get("contents", []):
        _print_contents(item, out)
    for message in data.get("messages", []):
        out.print(f"[bold]{escape(message['role'])}:[/]", highlight=False, markup=True)
        _print_block(message["content"], out, lambda text: False)
    if data.get("isError"):
        err.print("[red]the tool reported an error[/]", markup=True)


__all__ = ["CallError", "check_era", "one_line", "parse_args", "run_call", "spoken"]
