"""`mcpgen call`: connect to any MCP server (a stdio command, a Streamable HTTP URL or a
legacy HTTP+SSE URL), list what it offers or use one thing, and print it for a person."""

from __future__ import annotations

import asyncio
import contextlib
import http
import re
import shlex
import sys
import urllib.parse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

import msgspec
from rich.console import Console

from mcpgen.cli import show
from mcpgen.cli.arguments import check, closest, did_you_mean, parse_args, read_args, signature, summary
from mcpgen.cli.elicit import terminal_elicitation
from mcpgen.cli.endpoint import LOOK_AFTER, not_an_endpoint
from mcpgen.cli.errors import CallError
from mcpgen.cli.process import ServerProcess, stderr_line, stray_line
from mcpgen.cli.sanitize import clean_line
from mcpgen.generated import LoggingMessageNotificationParams, Tool
from mcpgen.runtime.client.client import Client
from mcpgen.runtime.client.tasks import TaskRequired
from mcpgen.runtime.errors import McpError
from mcpgen.runtime.jsonrpc.transport import Transport
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

    def __init__(self, client: Client, process: list[ServerProcess]) -> None:
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


def _to_stderr(text: str) -> None:  # elicitation and server lines: already sanitized
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
    apps: bool = False,
) -> Connection:
    # on_log: the user sees logs, so the client asks for them (stateless era: a level
    # named in each request's _meta; without one the server sends none).
    options: dict[str, Any] = {
        "request_timeout": timeout,
        "on_log": on_log,
        "era": era,
        # A server's questions are asked in the terminal (form fields, or a URL to open).
        "elicitation": terminal_elicitation(_to_stderr),
        "apps": apps,  # a host that renders MCP Apps interfaces (`mcpgen apps preview`)
    }
    if transport == "http":
        return Connection(Client.http(target, headers=_headers(headers), auth=auth, **options), [])
    if transport == "sse":
        return Connection(Client.sse(target, headers=_headers(headers), **options), [])
    words = shlex.split(target)
    if not words:
        raise CallError("no server command given")
    spawned: list[ServerProcess] = []

    async def start() -> Transport:
        process = await ServerProcess.start(
            words, on_stderr=stderr_line(quiet, _to_stderr), on_stray=stray_line(_to_stderr)
        )
        spawned.append(process)
        return process

    return Connection(Client(connect=start, **options), spawned)


def one_line(message: str) -> str:
    """An error as one line (sanitized: it is the server's text): an HTTP error page
    becomes its status and reason."""
    found = _HTTP_ERROR.search(message)
    if found is not None:
        status, url, body = int(found.group(1)), found.group(2), found.group(3).strip()
        try:
            reason = http.HTTPStatus(status).phrase
        except ValueError:
            reason = ""
        detail = "" if not body or body.startswith("<") or "\n" in body else f": {body[:200]}"
        return clean_line(f"HTTP {status} {reason} from {url}{detail}".replace("  ", " "))
    first = message.strip().splitlines()[0] if message.strip() else message
    return clean_line(first[:300])


def error_line(exc: McpError) -> str:
    """What an error answering a request says: the server's error, or, when the client made
    it because no answer came (a stream that ended, a connection lost), that no answer came."""
    if not exc.answered:
        return f"no answer from the server: {one_line(exc.message)}"
    return f"the server answered with error {exc.code}: {one_line(exc.message)}"


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
    apps: bool = False,
) -> Connection:
    chosen = pick_transport(target, transport)
    oauth = signin.oauth if signin is not None and chosen == "http" else None
    connection = connect(target, chosen, headers, timeout, quiet, on_log, era, oauth, apps)
    try:
        try:
            await _open(connection.client, target, chosen, headers, timeout)
        except _sign_in_required() as needed:
            # The server answered 401 and no stored token could be refreshed: the user
            # signs in (outside the requests' timeouts), then the client starts afresh.
            if signin is None:
                raise needed
            await signin.sign_in(timeout)
            connection = connect(target, chosen, headers, timeout, quiet, on_log, era, oauth, apps)
            await connection.client.open()
        return connection
    except _oauth_error() as exc:
        raise CallError(f"cannot sign in to {target}: {one_line(str(exc))}") from None
    except (OSError, McpError, ConnectionError) as exc:
        if chosen == "http" and transport == "auto" and _http_status(exc) in _SSE_FALLBACK:
            legacy = connect(target, "sse", headers, timeout, quiet, on_log, era, apps=apps)
            try:
                await legacy.client.open()
                return legacy
            except (OSError, McpError, ConnectionError):
                pass  # not a legacy endpoint either: report the first failure
        raise CallError(f"cannot connect to {target}: {await connection.explain(exc)}") from None


async def _open(client: Client, target: str, chosen: str, headers: list[str], timeout: float) -> None:
    """Open the client; an HTTP connection that takes more than a moment has its URL
    asked what it is, so that a web page is named at once (:mod:`mcpgen.cli.endpoint`)."""
    if chosen != "http":
        await client.open()
        return
    opening: asyncio.Future[Any] = asyncio.ensure_future(client.open())
    looking: asyncio.Future[Any] | None = None
    try:
        done, _ = await asyncio.wait({opening}, timeout=LOOK_AFTER)
        if not done:
            looking = asyncio.ensure_future(not_an_endpoint(target, _headers(headers), timeout))
            await asyncio.wait({opening, looking}, return_when=asyncio.FIRST_COMPLETED)
            answer = None if opening.done() else await looking
            if answer is not None:
                opening.cancel()
                await asyncio.wait({opening})  # its end, without raising its cancellation here
                with contextlib.suppress(Exception):
                    await client.close()
                raise CallError(f"{target} is not an MCP endpoint: {answer}")
        await opening
    finally:
        # Cancelled from outside (Ctrl-C), or done: nothing is left running.
        for task in (opening, looking):
            if task is not None and not task.done():
                task.cancel()


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
    # The lines name the authorization server's sign-in URL, which the server chose: sanitized.
    return CliAuth(target, lambda line: err.print(clean_line(line), markup=False, highlight=False, soft_wrap=True))


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
            target, transport, headers, timeout, quiet, lambda p: show.log(p, err), era, signin
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
        raise CallError(error_line(exc)) from None
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
        listed = await listing(client)
        if as_json:
            show.print_json(out, msgspec.to_builtins(listed))
        else:
            show.listing(listed, out)
        return 0
    verb, name = action
    result: Any
    if verb == "tool":
        result = await _call_tool(client, name, args, err, task)
        if result is None:
            return 130  # stopped with Ctrl-C (the task was cancelled), as a shell reports SIGINT
    elif verb == "read":
        result = await _unknown_named("resource", name, client, client.read_resource(name))
    else:
        result = await _get_prompt(client, name, args)
    data = msgspec.to_builtins(result)
    if as_json:
        show.print_json(out, data)
    else:
        show.result(data, out, err)
    return 1 if data.get("isError") else 0


def _progress(err: Console) -> Callable[[float, float | None, str | None], None]:
    return lambda amount, total, message: show.progress(err, amount, total, message)


def task_only(tool: Tool) -> bool:
    """Whether a listed tool runs only as a task (``execution.taskSupport: "required"``)."""
    execution = msgspec.to_builtins(tool).get("execution")
    return isinstance(execution, dict) and execution.get("taskSupport") == "required"


async def _call_tool(client: Client, name: str, args: list[str], err: Console, task: bool) -> Any:
    """Check the arguments against the listed tool (every problem at once), then call it;
    None when a task was stopped with Ctrl-C."""
    tools = {tool.name: tool for tool in await client.list_tools()} if client.session.peer_caps.has("tools") else {}
    tool = tools.get(name)
    schema = msgspec.to_builtins(tool.input_schema) if tool is not None else None
    arguments, problems, wrong = read_args(args, schema)
    if tool is not None:
        problems += check(arguments, schema, wrong)
        if problems:
            takes = signature(schema) or "no arguments"
            raise CallError(f"tool {name}: {summary(problems)} (it takes: {clean_line(takes)})")
        if task_only(tool) and not task:
            raise CallError(f"tool {name} runs only as a task: add --task")
    elif problems:
        raise CallError(summary(problems))
    if task:
        from mcpgen.cli.task import TaskError, run_task

        try:
            return await run_task(client, name, arguments, err, _progress(err))
        except TaskError as exc:
            raise CallError(str(exc)) from None
    try:
        result = await _unknown_named(
            "tool", name, tools, client.call_tool(name, arguments, on_progress=_progress(err))
        )
    except TaskRequired:
        raise CallError(f"tool {name} runs only as a task: add --task") from None
    if tool is None and tools and result.is_error:
        err.print(f"no tool {clean_line(name)!r} is listed{did_you_mean(name, tools)}", markup=False, highlight=False)
    return result


async def _get_prompt(client: Client, name: str, args: list[str]) -> Any:
    arguments = text_args(args)
    prompts = {p.name: p for p in await client.list_prompts()} if client.session.peer_caps.has("prompts") else {}
    prompt = prompts.get(name)
    if prompt is not None:
        declared = {a.name: a for a in prompt.arguments or []}
        problems = [f"{key}: no such argument{_suggested(key, declared)}" for key in arguments if key not in declared]
        problems += [
            f"{a}: missing (required)" for a, d in declared.items() if d.required is True and a not in arguments
        ]
        if problems:
            takes = show.prompt_signature(msgspec.to_builtins(prompt.arguments or []))
            raise CallError(f"prompt {name}: {summary(problems)} (it takes: {clean_line(takes) or 'no arguments'})")
    return await _unknown_named("prompt", name, prompts, client.get_prompt(name, arguments))


def _suggested(word: str, options: Any) -> str:
    match = closest(word, options)
    return f" (did you mean {match!r}?)" if match is not None else ""


async def _unknown_named(kind: str, name: str, known: Any, request: Any) -> Any:
    """Await ``request``; when the server refuses it, add the listed name ``name`` likely
    misspells (``known``: the names, or the client, to list resources only when needed)."""
    try:
        return await request
    except TaskRequired:
        raise
    except McpError as exc:
        if isinstance(known, Client):
            known = await _resource_uris(known)
        if name in known:
            raise
        hint = did_you_mean(name, known)
        raise CallError(
            error_line(exc) + (f" (no {kind} {clean_line(name)!r} is listed{clean_line(hint)})" if hint else "")
        ) from None


async def _resource_uris(client: Client) -> list[str]:
    if not client.session.peer_caps.has("resources"):
        return []
    try:
        return [r.uri for r in await client.list_resources()]
    except (McpError, ConnectionError, TimeoutError):
        return []


def text_args(pairs: list[str]) -> dict[str, str]:
    """Prompt arguments: always text, taken as written."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise CallError(f"--arg takes key=value, got {pair!r}")
        out[key] = value
    return out


async def listing(client: Client) -> dict[str, Any]:
    """What the server offers: its info, tools, resources and templates, prompts."""
    caps = client.session.peer_caps
    info = client.initialize_result
    listed: dict[str, Any] = {"server": info.server_info if info else None}
    if caps.has("tools"):
        listed["tools"] = await client.list_tools()
    if caps.has("resources"):
        listed["resources"] = await client.list_resources()
        listed["resourceTemplates"] = await client.list_resource_templates()
    if caps.has("prompts"):
        listed["prompts"] = await client.list_prompts()
    return listed


def spoken(client: Client) -> str:
    """One line for --verbose: the server, the era and the protocol version spoken."""
    info = client.initialize_result
    server = f"{info.server_info.name} {info.server_info.version}" if info is not None else "the server"
    era = "stateless era (no handshake)" if client.spoken_era == "stateless" else "handshake era (initialize)"
    return clean_line(f"connected to {server}: {era}, protocol version {client.session.protocol_version}")


__all__ = [
    "CallError",
    "check_era",
    "cli_auth",
    "listing",
    "one_line",
    "open_connection",
    "parse_args",
    "run_call",
    "spoken",
    "task_only",
    "text_args",
]
