"""`mcpgen inspect`: what a server offers, in either era: who it is, the era and protocol
version spoken, its instructions, capabilities and extensions, whether tool calls may run
as tasks, and its tools, resources, resource templates and prompts. Reached as `mcpgen call`
reaches a server (a stdio command or a URL, with its sign-in); everything the server said is
shown through :mod:`mcpgen.cli.sanitize`."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import msgspec
import typer
from rich.console import Console

from mcpgen.cli import show
from mcpgen.cli.console import Debug
from mcpgen.cli.sanitize import clean_line, markup


async def report(client: Any) -> dict[str, Any]:
    """Everything :func:`inspect_server` shows, as plain JSON data."""
    from mcpgen.cli.call import listing

    listed = await listing(client)
    info = client.initialize_result
    tree = dict(client.session.peer_caps.tree)
    extensions = tree.pop("extensions", None) or {}
    return {
        "server": msgspec.to_builtins(info.server_info) if info is not None else None,
        "era": client.spoken_era,
        "protocolVersion": client.session.protocol_version,
        "instructions": info.instructions if info is not None and isinstance(info.instructions, str) else None,
        "capabilities": msgspec.to_builtins(tree),
        "extensions": msgspec.to_builtins(extensions),
        "tasks": bool(client.tasks_offered),
        **{key: msgspec.to_builtins(value) for key, value in listed.items() if key != "server"},
    }


def _capability(name: str, settings: Any) -> str:
    flags = [key for key, value in settings.items() if value is True] if isinstance(settings, dict) else []
    return f"{name} ({', '.join(flags)})" if flags else name


def print_report(data: dict[str, Any], out: Console) -> None:
    server = data.get("server") or {}
    title = f"{server.get('name', '?')} {server.get('version', '')}".strip()
    out.print(f"[bold]{markup(title)}[/]", markup=True, highlight=False)
    era = "stateless era (no handshake)" if data["era"] == "stateless" else "handshake era (initialize)"
    lines = [f"era: {era}, protocol version {data['protocolVersion']}"]
    if data.get("instructions"):
        lines.append(f"instructions: {data['instructions']}")
    capabilities = [_capability(name, value) for name, value in (data.get("capabilities") or {}).items()]
    lines.append(f"capabilities: {', '.join(capabilities) or 'none'}")
    lines.append(f"extensions: {', '.join(data.get('extensions') or {}) or 'none'}")
    lines.append(f"tasks: {'offered for tools/call' if data['tasks'] else 'not offered'}")
    for line in lines:
        out.print(f"  {clean_line(line)}", markup=False, highlight=False)
    show.listing({key: data[key] for key in ("tools", "resources", "resourceTemplates", "prompts") if key in data}, out)


async def inspect_server(
    target: str,
    *,
    transport: str,
    headers: list[str],
    timeout: float,
    era: str,
    no_auth: bool,
    quiet: bool,
    err: Console,
) -> dict[str, Any]:
    from mcpgen.cli.call import CallError, check_era, cli_auth, error_line, open_connection
    from mcpgen.runtime.errors import McpError

    check_era(era)
    signin = cli_auth(target, transport, headers, no_auth, err)
    try:
        connection = await open_connection(
            target, transport, headers, timeout, quiet, lambda params: show.log(params, err), era, signin
        )
    finally:
        if signin is not None:
            signin.close()
    try:
        return await report(connection.client)
    except McpError as exc:
        raise CallError(error_line(exc)) from None
    except ConnectionError as exc:
        raise CallError(await connection.explain(exc)) from None
    finally:
        await connection.client.close()


def inspect(
    target: Annotated[
        str, typer.Argument(metavar="TARGET", help="The command that starts a stdio server, or an http(s) URL.")
    ],
    json_output: Annotated[bool, typer.Option("--json", help="Print it all as JSON.")] = False,
    era: Annotated[str, typer.Option(help="auto, handshake, stateless, or a protocol version.")] = "auto",
    transport: Annotated[str, typer.Option(help="auto, stdio, http or sse, as for `mcpgen call`.")] = "auto",
    header: Annotated[list[str] | None, typer.Option("--header", "-H", help="HTTP header `Name: value`.")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for each answer.")] = 30.0,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Hide the stdio server's stderr.")] = False,
    no_auth: Annotated[bool, typer.Option("--no-auth", help="Never sign in (see `mcpgen call`).")] = False,
    debug: Debug = False,
) -> None:
    """Show what a server offers, in either protocol era.

    Who it is, the protocol era and version spoken, its instructions, capabilities and
    extensions, whether tools can run as tasks, and its tools, resources, templates and
    prompts.

    Examples:
      mcpgen inspect "python server.py"
      mcpgen inspect http://127.0.0.1:8000/mcp --json
      mcpgen inspect "python server.py" --era handshake
    """
    from mcpgen.cli.call import CallError
    from mcpgen.cli.console import err, fail, out, user_errors

    with user_errors():
        try:
            data = asyncio.run(
                inspect_server(
                    target,
                    transport=transport,
                    headers=header or [],
                    timeout=timeout,
                    era=era,
                    no_auth=no_auth,
                    quiet=quiet,
                    err=err,
                )
            )
        except CallError as exc:
            fail(str(exc))
        if json_output:
            show.print_json(out, data)
        else:
            print_report(data, out)


__all__ = ["inspect", "inspect_server", "print_report", "report"]
