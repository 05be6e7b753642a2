"""Running a server: one client over a transport, stdio until stdin closes or a signal, an
ASGI app for Streamable HTTP, and uvicorn serving that app over TCP or a Unix domain socket
(``Server.run``). ``Server.run`` takes a name ("stdio", "http") or a :class:`Runner`: an
object that serves a server its own way."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import signal
import socket
import stat
import sys
from collections.abc import Awaitable, Callable, Iterator
from types import FrameType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from mcpgen.runtime.extras import MissingExtra, require
from mcpgen.runtime.server.lifespan import LifespanRunner
from mcpgen.runtime.server.session import ServerSession

T = TypeVar("T")

# How long a stopping HTTP server waits for the requests in progress before cancelling them.
SHUTDOWN_TIMEOUT = 10.0

if TYPE_CHECKING:
    from mcpgen.runtime.jsonrpc.transport import Transport
    from mcpgen.runtime.server.host import Host
    from mcpgen.runtime.server.http_server import McpHttpApp


class Runner(Protocol):
    """A way of serving a server, for ``Server.run(runner)``: :class:`Stdio` and
    :class:`Http` are the two built in; a runner of your own serves the server's
    :meth:`~mcpgen.runtime.server.server.Server.serve` (one client over a transport) or its
    :meth:`~mcpgen.runtime.server.server.Server.http_app` (an ASGI app) as it likes."""

    def run(self, server: Any) -> None: ...


class Stdio:
    """Serve one client on this process's stdin/stdout until stdin closes or SIGTERM. Calls
    still running then get ``grace`` seconds (10 by default) to finish; those that do not are
    answered with an error, and the process exits with status 1. ``tune_gc``: first tune
    Python's garbage collector for serving (see :mod:`~mcpgen.runtime.server.collector`; the
    process serves this one client)."""

    def __init__(self, grace: float = SHUTDOWN_TIMEOUT, tune_gc: bool = True) -> None:
        self.grace = grace
        self.tune_gc = tune_gc

    def run(self, server: Any) -> None:
        if self.tune_gc:
            from mcpgen.runtime.server.collector import tune_for_serving

            tune_for_serving(collect=False)  # no full collection: a stdio server's start stays quick
        cut = asyncio.run(until_signal(serve_stdio(server.features, server.lifespan_runner, grace=self.grace)))
        if cut:
            print(
                f"mcpgen: stopped with {cut} call(s) unfinished (each answered with an error)",
                file=sys.stderr,
                flush=True,
            )
            raise SystemExit(1)


class Http:
    """Serve Streamable HTTP with uvicorn, at ``http://host:port/path`` or, with ``uds``, on
    that Unix domain socket (``curl --unix-socket PATH http://localhost/mcp``)."""

    def __init__(
        self, host: str = "127.0.0.1", port: int = 8000, path: str = "/mcp", uds: str | None = None, **options: Any
    ) -> None:
        self.host, self.port, self.path, self.uds, self.options = host, port, path, uds, options

    def run(self, server: Any) -> None:
        run_http(server, self.host, self.port, self.path, dict(self.options), self.uds)


async def serve(
    host: Host,
    transport: Transport,
    lifespan: LifespanRunner | None = None,
    started: Callable[[ServerSession], None] | None = None,
    **options: Any,
) -> int:
    """Serve one client over ``transport`` until it closes (inside the server's lifespan);
    the number of requests cut short at the end (answered with an error). ``options`` go to
    the session (``drain_timeout``: how long requests may still run once the client has
    closed its side); ``started`` is told the session once it exists."""
    async with lifespan if lifespan is not None else contextlib.nullcontext():
        session = ServerSession(transport, host, **{**host.session_options, **options})
        host.sessions.add(session)
        if started is not None:
            started(session)
        try:
            await session.run()
        finally:
            host.sessions.discard(session)
        return session.cut


async def serve_stdio(host: Host, lifespan: LifespanRunner | None = None, grace: float = SHUTDOWN_TIMEOUT) -> int:
    """Serve the client on this process's stdin/stdout, inside the server's lifespan, then
    stop the server's tasks; the number of calls cut short.

    When stdin closes, or at SIGTERM or SIGINT (which stop the reading of stdin), the calls
    in flight get ``grace`` seconds to finish and answer; then each still running is
    answered with an error. A second signal, or a client that no longer reads stdout, cuts
    them at once."""
    from mcpgen.runtime.transports.stdio import server_stdio

    transport = await server_stdio(max_message=host.max_message)
    sessions: list[ServerSession] = []

    def hurry() -> None:
        for session in sessions:
            session.hurry()

    def stop() -> None:
        if transport.stopping:
            hurry()  # asked twice: no more waiting
        transport.stopping = True
        transport.stop_reading()

    transport.on_output_lost = hurry  # nobody reads the answers: no point waiting for them
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop)
    try:
        return await serve(host, transport, lifespan, sessions.append, drain_timeout=grace)
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)
        await host.stop_tasks()
        await _flushed(transport)


async def _flushed(transport: Any) -> None:
    """Write out what is queued for the client (the last answers) before the process ends."""
    transport.flush()
    with contextlib.suppress(Exception):
        await asyncio.wait_for(transport.drain(), 2.0)


def http_app(host: Host, path: str, options: dict[str, Any], lifespan: LifespanRunner | None = None) -> McpHttpApp:
    """The ASGI app serving ``host`` over Streamable HTTP at ``path`` (the server's lifespan
    entered at the app's startup, left at its shutdown)."""
    from mcpgen.runtime.server.http_server import HttpOptions, McpHttpApp

    if "stateless" in options:  # the old name of sessionless (the stateless era is another thing)
        options = dict(options)
        options["sessionless"] = options.pop("stateless")
    return McpHttpApp(host, HttpOptions(path=path, **options), lifespan)


def run(
    server: Any,
    transport: str | Runner,
    address: str,
    port: int,
    path: str,
    uds: str | None,
    options: dict[str, Any],
) -> None:
    """``Server.run``: stdio until stdin closes or SIGTERM, HTTP under uvicorn, or a runner."""
    if isinstance(transport, str):
        if transport not in ("stdio", "http"):
            raise ValueError(f"unknown transport {transport!r}: use 'stdio', 'http' or a Runner")
        runner: Runner
        if transport == "stdio":
            both = ("tune_gc", "shutdown_timeout")  # the options stdio shares with HTTP
            http_only = ["uds"] * (uds is not None) + [name for name in options if name not in both]
            if http_only:
                raise ValueError(f"stdio takes no HTTP options ({', '.join(http_only)})")
            grace = float(options.get("shutdown_timeout", SHUTDOWN_TIMEOUT))
            runner = Stdio(grace, tune_gc=bool(options.get("tune_gc", True)))
        else:
            runner = Http(address, port, path, uds, **options)
    elif callable(getattr(transport, "run", None)):
        runner = transport
    else:
        raise TypeError(f"Server.run takes 'stdio', 'http' or a Runner (an object with run(server)), not {transport!r}")
    try:
        runner.run(server)
    finally:
        server.features.threads.shutdown()


def run_http(server: Any, address: str, port: int, path: str, options: dict[str, Any], uds: str | None = None) -> None:
    try:
        uvicorn: Any = require("uvicorn", "http", "server.run('http')")
    except MissingExtra as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    from mcpgen.runtime.transports import http_protocol

    host = server.features
    # The connection's own guards (not the app's options): slow heads and bodies, and how
    # many connections are open at once.
    guards = {
        "header_timeout": options.pop("header_timeout", http_protocol.HEADER_TIMEOUT),
        "body_timeout": options.pop("body_timeout", http_protocol.BODY_TIMEOUT),
        "max_connections": options.pop("max_connections", http_protocol.MAX_CONNECTIONS),
        "max_head": options.pop("max_head", http_protocol.MAX_HEAD),
    }
    grace = float(options.pop("shutdown_timeout", SHUTDOWN_TIMEOUT))
    config = uvicorn.Config(
        server.http_app(path, **options),
        host=address,
        port=port,
        log_level="warning",
        http=http_protocol.protocol_class(**guards),
        timeout_graceful_shutdown=grace,
    )
    # Bound (and listening) here rather than by uvicorn, so that the URL printed has
    # the real port (port=0) and a client that reads it may connect at once; and so that a
    # port in use is one line that says what to do (uvicorn logs and exits 1).
    try:
        sock = listen_on_unix(uds, config.backlog) if uds is not None else listen_on(address, port, config.backlog)
    except BindError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    if uds is not None:
        where = f"on the Unix socket {uds} (http://localhost{path})"
    else:
        shown = f"[{address}]" if ":" in address else address
        where = f"at http://{shown}:{sock.getsockname()[1]}{path}"
    print(f"mcpgen: serving {host.info.name} over Streamable HTTP {where}", file=sys.stderr, flush=True)
    http_server = announcing_server(uvicorn.Server, grace)(config)
    quiet = _QuietCancel()
    logging.getLogger("uvicorn.error").addFilter(quiet)
    try:
        http_server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        logging.getLogger("uvicorn.error").removeFilter(quiet)
        sock.close()
        if uds is not None:
            with contextlib.suppress(OSError):
                os.unlink(uds)


class BindError(Exception):
    """The HTTP server cannot listen where asked: one line that says what to do."""


def listen_on(address: str, port: int, backlog: int) -> socket.socket:
    """A listening TCP socket on ``address``:``port`` (0: any free port)."""
    if not 0 <= port <= 65535:
        raise BindError(f"the port is a number from 0 to 65535, not {port}")
    try:
        infos = socket.getaddrinfo(address, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror:
        raise BindError(f"cannot listen on {address!r}: no such address or host name") from None
    family, kind, proto, _, where = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(where)
        sock.listen(backlog)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise BindError(
                f"port {port} on {address} is in use (another server is listening there): stop it, or pick "
                "another port (port= in server.run, --port with mcpgen run)"
            ) from None
        if exc.errno == errno.EACCES:
            raise BindError(f"port {port} needs privileges this user lacks: pick one above 1023") from None
        if exc.errno == errno.EADDRNOTAVAIL:
            raise BindError(f"cannot listen on {address}: this machine has no such address") from None
        raise BindError(f"cannot listen on {address}:{port}: {exc.strerror or exc}") from None
    return sock


def listen_on_unix(path: str, backlog: int) -> socket.socket:
    """A listening Unix domain socket at ``path``, readable and writable by this user only
    (a stale socket left by a server that died is replaced; any other file is not)."""
    try:
        if stat.S_ISSOCK(os.stat(path).st_mode):
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(path)
            except OSError:
                os.unlink(path)  # nobody listens there: a leftover
            else:
                raise BindError(f"{path} is in use (another server is listening there): stop it, or pick another path")
            finally:
                probe.close()
        else:
            raise BindError(f"{path} exists and is not a socket: pick another path")
    except FileNotFoundError:
        pass
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        previous = os.umask(0o177)
        try:
            sock.bind(path)
        finally:
            os.umask(previous)
        sock.listen(backlog)
    except OSError as exc:
        sock.close()
        raise BindError(f"cannot listen on {path}: {exc.strerror or exc}") from None
    return sock


def announcing_server(base: Any, grace: float) -> Any:
    """uvicorn's Server, saying what a stop does: the first Ctrl-C (or SIGTERM) waits up to
    ``grace`` seconds for the requests in progress, then cancels them; a second Ctrl-C
    stops at once. uvicorn itself says nothing until the wait is over."""

    class AnnouncingServer(base):  # type: ignore[misc]
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            if not self.should_exit:
                busy = len(self.server_state.tasks)
                if busy:
                    print(
                        f"mcpgen: shutting down, waiting up to {grace:g} s for {busy} request(s) in progress "
                        "(Ctrl-C again to stop now)",
                        file=sys.stderr,
                        flush=True,
                    )
                else:
                    print("mcpgen: shutting down", file=sys.stderr, flush=True)
            elif sig == signal.SIGINT:
                print("mcpgen: stopping now, cancelling the requests in progress", file=sys.stderr, flush=True)
            super().handle_exit(sig, frame)

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            with super().capture_signals():
                yield
                # uvicorn raises the signals it caught once it has stopped, so that the
                # program ends as if it never handled them: a KeyboardInterrupt through
                # asyncio.run and a traceback, for a stop that was asked for and is done.
                self._captured_signals.clear()

    return AnnouncingServer


class _QuietCancel(logging.Filter):
    """Drops uvicorn's "Exception in ASGI application" for a request cancelled because the
    server is stopping: the stop was announced; the traceback says nothing more."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, asyncio.CancelledError | KeyboardInterrupt)


async def until_signal(main: Awaitable[T]) -> T | None:
    """Run ``main`` (its value, or None when cancelled); SIGTERM or SIGINT cancel it, which
    closes sessions in order (unless ``main`` handles the signals itself)."""
    task = asyncio.ensure_future(main)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, task.cancel)
        except (NotImplementedError, RuntimeError):
            pass
    try:
        return await task
    except asyncio.CancelledError:
        return None
