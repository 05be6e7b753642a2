"""What every command of the CLI prints through, and how it fails: the two consoles, one-line
errors (sanitized: they often quote a server), the --debug switch, a spinner for slow steps,
and a closed stdout that is no error. Below the commands, so that each command's module can
use it without importing the app that registers them."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console

from mcpgen.cli.sanitize import markup


class _Output(Console):
    def on_broken_pipe(self) -> None:
        # rich would exit 1; a reader that stopped reading (`| head`) is no error.
        stdout_closed()


# soft_wrap: a message stays one line however narrow the terminal. markup off: most of what we
# print holds text we did not write (names, paths, `pip install 'mcpgen[http]'`), and rich would
# read `[http]` as a style tag and drop it; a line that styles says so (markup=True, escape()).
err = Console(stderr=True, soft_wrap=True, markup=False)
out = _Output(soft_wrap=True, markup=False)
state = {"debug": False}


def fail(message: str, code: int = 2) -> NoReturn:
    # Messages often quote a server (its error, its stderr): sanitized, and on one line.
    err.print(f"[bold red]error:[/] {markup(message)}", highlight=False, markup=True)
    raise typer.Exit(code)


@contextmanager
def step(label: str) -> Iterator[None]:
    """Show a spinner for a step (visible on a terminal) and its time when it was slow."""
    started = time.perf_counter()
    with err.status(f"{label}…"):
        yield
    took = time.perf_counter() - started
    if took >= 1.0:
        err.print(f"{label}: {took:.1f} s", style="dim")


def stdout_closed() -> NoReturn:
    """The reader of our output went away (``mcpgen call ... | head``): not an error. Point
    stdout at /dev/null so that the flush at exit does not complain, and exit 0."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    raise typer.Exit(0)


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn expected failures into one line and exit code 2 (tracebacks with --debug)."""
    try:
        yield
    except typer.Exit:
        raise
    except BrokenPipeError:
        stdout_closed()
    except Exception as exc:
        if state["debug"]:
            raise
        from mcpgen.codegen.loader import SchemaError

        if isinstance(exc, (SchemaError, KeyError, OSError)):
            fail(str(exc).strip("'\""))
        fail(f"{type(exc).__name__}: {exc}")


def set_debug(value: bool) -> None:
    if value:
        state["debug"] = True


# Every command takes --debug too, so it works after the command's name as well.
Debug = Annotated[
    bool, typer.Option("--debug", help="Show tracebacks on errors.", callback=set_debug, expose_value=False)
]

__all__ = ["Debug", "err", "fail", "out", "set_debug", "state", "stdout_closed", "step", "user_errors"]


def http_serving_options(host: str, allowed_host: list[str] | None) -> dict[str, Any]:
    """What `mcpgen run` and `mcpgen gateway` add to ``server.run("http", ...)``: the
    allowed hosts (the local ones and each ``--allowed-host``), after checking the http
    extra is installed and noting when a non-local address will refuse other Host names."""
    try:
        import uvicorn  # noqa: F401
    except ModuleNotFoundError:
        from mcpgen.origin import install_command

        fail(f"the http transport needs the http extra: {install_command('http')}")
    options: dict[str, Any] = {}
    if allowed_host:
        from mcpgen.runtime.server.http_server import LOCAL_HOSTS

        options["allowed_hosts"] = (*LOCAL_HOSTS, *allowed_host)
    elif host not in ("127.0.0.1", "localhost", "::1"):
        err.print(
            f"note: listening on {host}, but only requests naming a local host are served (Host header); "
            "add --allowed-host NAME for each name clients use",
            style="dim",
            highlight=False,
        )
    return options
