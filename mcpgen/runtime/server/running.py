"""Running a server: one client over a transport, stdio until stdin closes or a signal, an
ASGI app for Streamable HTTP, and uvicorn serving that app (``Server.run("http")``)."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from mcpgen.runtime.extras import MissingExtra, require
from mcpgen.runtime.server.session import ServerSession

if TYPE_CHECKING:
    from mcpgen.runtime.jsonrpc.transport import Transport
    from mcpgen.runtime.server.host import Host
    from mcpgen.runtime.server.http_server import McpHttpApp


async def serve(host: Host, transport: Transport) -> None:
    """Serve one client over ``transport`` until it closes."""
    session = ServerSession(transport, host, **host.session_options)
    host.sessions.add(session)
    try:
        await session.run()
    finally:
        host.sessions.discard(session)


async def serve_stdio(host: Host) -> None:
    """Serve the client on this process's stdin/stdout, then stop the server's tasks."""
    from mcpgen.runtime.transports.stdio import server_stdio

    transport = await server_stdio(max_message=host.max_message)
    try:
        await serve(host, transport)
    finally:
        await host.stop_tasks()


def http_app(host: Host, path: str, options: dict[str, Any]) -> McpHttpApp:
    """The ASGI app serving ``host`` over Streamable HTTP at ``path``."""
    from mcpgen.runtime.server.http_server import HttpOptions, McpHttpApp

    return McpHttpApp(host, HttpOptions(path=path, **options))


def run(host: Host, transport: str, address: str, port: int, path: str, options: dict[str, Any]) -> None:
    """``Server.run``: stdio until stdin closes or SIGTERM, or HTTP under uvicorn."""
    if transport not in ("stdio", "http"):
        raise ValueError(f"unknown transport {transport!r}: use 'stdio' or 'http'")
    try:
        if transport == "stdio":
            asyncio.run(until_signal(serve_stdio(host)))
        else:
            run_http(host, address, port, path, options)
    finally:
        host.threads.shutdown()


def run_http(host: Host, address: str, port: int, path: str, options: dict[str, Any]) -> None:
    try:
        uvicorn: Any = require("uvicorn", "http", "server.run('http')")
    except MissingExtra as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    from mcpgen.runtime.transports import http_protocol

    # The connection's own guards (not the app's options): slow heads and bodies, and how
    # many connections are open at once.
    guards = {
        "header_timeout": options.pop("header_timeout", http_protocol.HEADER_TIMEOUT),
        "body_timeout": options.pop("body_timeout", http_protocol.BODY_TIMEOUT),
        "max_connections": options.pop("max_connections", http_protocol.MAX_CONNECTIONS),
    }
    config = uvicorn.Config(
        http_app(host, path, options),
        host=address,
        port=port,
        log_level="warning",
        http=http_protocol.protocol_class(**guards),
    )
    # Bound (and listening) here rather than by uvicorn, so that the URL printed has
    # the real port (port=0) and a client that reads it may connect at once.
    sock = config.bind_socket()
    sock.listen(config.backlog)
    bound_port = sock.getsockname()[1]
    shown = f"[{address}]" if ":" in address else address
    print(
        f"mcpgen: serving {host.info.name} over Streamable HTTP at http://{shown}:{bound_port}{path}",
        file=sys.stderr,
        flush=True,
    )
    http_server = uvicorn.Server(config)
    try:
        http_server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()


async def until_signal(main: Awaitable[None]) -> None:
    """Run ``main``; SIGTERM or SIGINT cancel it, which closes sessions in order."""
    task = asyncio.ensure_future(main)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, task.cancel)
        except (NotImplementedError, RuntimeError):
            pass
    try:
        await task
    except asyncio.CancelledError:
        pass
