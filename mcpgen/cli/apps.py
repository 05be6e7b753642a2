"""`mcpgen apps`: MCP Apps from the command line. `mcpgen apps preview SERVER` renders a
server's interfaces in a browser, on a host page built on the official app-bridge (see
:mod:`mcpgen.cli.preview`)."""

from __future__ import annotations

import asyncio
import threading
import webbrowser
from typing import Annotated, Any

import typer

from mcpgen.cli.console import Debug

apps = typer.Typer(
    name="apps",
    help="MCP Apps (interactive interfaces): preview a server's in a browser.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


async def serve_preview(target: str, port: int, open_browser: bool, how: dict[str, Any]) -> None:
    """Connect to the server (declaring MCP Apps), then serve the host page until stopped."""
    import uvicorn

    from mcpgen.cli import show
    from mcpgen.cli.call import check_era, cli_auth, open_connection
    from mcpgen.cli.console import err
    from mcpgen.cli.preview import PreviewHost, host_bundle, listening_socket

    def say(line: str) -> None:
        err.print(line, markup=False, highlight=False)

    bundle, page = host_bundle(say)
    sock = listening_socket(port)
    check_era(how["era"])
    signin = cli_auth(target, how["transport"], how["headers"], how["no_auth"], err)
    try:
        connection = await open_connection(
            target,
            how["transport"],
            how["headers"],
            how["timeout"],
            how["quiet"],
            lambda params: show.log(params, err),
            how["era"],
            signin,
            apps=True,
        )
    except BaseException:
        sock.close()
        raise
    finally:
        if signin is not None:
            signin.close()
    actual = sock.getsockname()[1]
    url = f"http://127.0.0.1:{actual}/"
    host = PreviewHost(connection.client, bundle.read_bytes(), page, actual)
    server = uvicorn.Server(uvicorn.Config(host, lifespan="off", log_level="warning"))
    say(f"previewing the interfaces of {target} at {url} (Ctrl-C stops)")
    if open_browser:
        # webbrowser may wait for the browser it starts: not on the event loop.
        threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()
    try:
        await server.serve(sockets=[sock])
    finally:
        await connection.client.close()
        sock.close()


@apps.command("preview")
def preview(
    target: Annotated[
        str, typer.Argument(metavar="TARGET", help="The command that starts a stdio server, or an http(s) URL.")
    ],
    port: Annotated[int, typer.Option(help="The page's port on 127.0.0.1. Default: a free one.")] = 0,
    no_open: Annotated[bool, typer.Option("--no-open", help="Print the page's address; open no browser.")] = False,
    header: Annotated[list[str] | None, typer.Option("--header", "-H", help="HTTP header `Name: value`.")] = None,
    transport: Annotated[str, typer.Option(help="auto, stdio, http or sse, as for `mcpgen call`.")] = "auto",
    era: Annotated[str, typer.Option(help="auto, handshake, stateless, or a protocol version.")] = "auto",
    timeout: Annotated[float, typer.Option(help="Seconds to wait for each answer.")] = 30.0,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Hide the stdio server's stderr.")] = False,
    no_auth: Annotated[bool, typer.Option("--no-auth", help="Never sign in (see `mcpgen call`).")] = False,
    debug: Debug = False,
) -> None:
    """Preview a server's MCP Apps interfaces in your browser.

    A page on this machine lists the server's tools that link an interface. Calling one (as
    a model would, with the arguments you give) renders its interface in a sandboxed frame,
    with the official app-bridge (npm @modelcontextprotocol/ext-apps), under the Content
    Security Policy it declares; what the app asks of the host (calling the server's tools,
    reading resources, updating the model's context) goes to the server through mcpgen's
    client, and shows in the page's log. The page is built once from a pinned lockfile:
    that first time needs Node.js and npm.

    Examples:
      mcpgen apps preview "python server.py"
      mcpgen apps preview http://127.0.0.1:8000/mcp --port 8765 --no-open
    """
    from mcpgen.cli.call import CallError
    from mcpgen.cli.console import fail, user_errors
    from mcpgen.cli.preview import PreviewError

    try:
        import uvicorn  # noqa: F401
    except ModuleNotFoundError:
        from mcpgen.origin import install_command

        fail(f"the preview serves its page with the http extra (uvicorn is missing): {install_command('http')}")
    if not 0 <= port <= 65535:
        fail(f"--port is 0 to 65535, not {port}")
    how = {
        "headers": header or [],
        "transport": transport,
        "era": era,
        "timeout": timeout,
        "quiet": quiet,
        "no_auth": no_auth,
    }
    with user_errors():
        try:
            asyncio.run(serve_preview(target, port, not no_open, how))
        except (CallError, PreviewError) as exc:
            fail(str(exc))
        except KeyboardInterrupt:
            pass


__all__ = ["apps", "preview", "serve_preview"]
