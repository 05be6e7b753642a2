"""`mcpgen gateway CONFIG`: serve the backends a configuration names, behind one endpoint."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from mcpgen.cli.console import Debug, fail, http_serving_options, user_errors


def gateway(
    config: Annotated[Path, typer.Argument(metavar="CONFIG", help="The mcpServers JSON file (host apps' format).")],
    transport: Annotated[str, typer.Option(help="stdio, or http (Streamable HTTP).")] = "stdio",
    host: Annotated[str, typer.Option(help="http: the address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="http: the port to listen on (0: any free one).")] = 8000,
    path: Annotated[str, typer.Option(help="http: the endpoint's path.")] = "/mcp",
    allowed_host: Annotated[
        list[str] | None,
        typer.Option("--allowed-host", help="http: a host name clients may use (repeat it); local names always are."),
    ] = None,
    check: Annotated[
        bool, typer.Option("--check", help="Check the configuration and connect to every backend, then exit.")
    ] = False,
    debug: Debug = False,
) -> None:
    """Serve many MCP servers behind one endpoint, the eras bridged.

    CONFIG is the mcpServers JSON host apps use (command/args/env, or url/headers), with,
    per backend: namespace, tools (allow/deny), era, timeout, max_concurrency,
    max_sessions and auth; and a gateway section (name, auth, store, tracing). One backend
    is served as it is; several are namespaced (ns_tool, scheme://ns/path). A client and a
    backend of different protocol eras are bridged (a 2026-07-28 client and a 2025-11-25
    server, or the other way round), questions included. ${NAME} in the file is the
    environment variable NAME. See docs/gateway.md.

    Examples:
      mcpgen gateway servers.json
      mcpgen gateway servers.json --transport http --port 8080
      mcpgen gateway servers.json --check
    """
    from mcpgen.runtime.gateway.config import ConfigError
    from mcpgen.runtime.gateway.gateway import Gateway

    if transport not in ("stdio", "http"):
        fail(f"--transport is stdio or http, not {transport!r}")
    with user_errors():
        try:
            front = Gateway(config).server()
        except ConfigError as exc:
            fail(str(exc))
        if check:
            _check(front)
            return
        if transport == "stdio":
            front.run("stdio")
            return
        options = http_serving_options(host, allowed_host)
        front.run("http", host=host, port=port, path=path, **options)


def _check(front: Any) -> None:
    """Connect to every backend as serving would, say what each speaks, and stop."""
    import asyncio

    from mcpgen.cli.console import out
    from mcpgen.cli.sanitize import clean_line

    async def probe() -> list[str]:
        lines = []
        proxies = [front] if hasattr(front, "link") else [m.child for m in front.features.mounts.mounted]
        for proxy in proxies:
            link = proxy.link
            try:
                await proxy.connect()
                tools = len(proxy.backend_tools)
                lines.append(f"ok   {link.describe()}: {link.era} era ({link.version}), {tools} tools")
            except Exception as exc:  # every backend is tried; each failure is one line
                lines.append(f"FAIL {link.describe()}: {exc}")
            finally:
                await proxy.close()
        return lines

    lines = asyncio.run(probe())
    for line in lines:
        out.print(clean_line(line), highlight=False, markup=False)
    if any(line.startswith("FAIL") for line in lines):
        raise typer.Exit(1)
