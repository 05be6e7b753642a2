"""The ``mcpgen`` command line.

Exit codes: 0 success, 1 a check failed (``generate --check``), 2 bad usage or input.
Errors print as one line; ``--debug`` shows the traceback.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from mcpgen import __version__
from mcpgen import schema as shipped

app = typer.Typer(
    name="mcpgen",
    help="Typed, fast Python bindings for the Model Context Protocol, generated from its schema.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
# soft_wrap: a message stays one line however narrow the terminal.
err = Console(stderr=True, soft_wrap=True)
out = Console(soft_wrap=True)
F = TypeVar("F", bound=Callable[..., Any])
_state = {"debug": False}

GENERATED_DIR = Path(__file__).parent / "generated"


def fail(message: str, code: int = 2) -> NoReturn:
    err.print(f"[bold red]error:[/] {message}", highlight=False)
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


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn expected failures into one line and exit code 2 (tracebacks with --debug)."""
    try:
        yield
    except typer.Exit:
        raise
    except Exception as exc:
        if _state["debug"]:
            raise
        from mcpgen.codegen.loader import SchemaError

        if isinstance(exc, (SchemaError, KeyError, OSError)):
            fail(str(exc).strip("'\""))
        fail(f"{type(exc).__name__}: {exc}")


def _codegen() -> Any:
    try:
        from mcpgen.codegen import generate as gen
    except ModuleNotFoundError as exc:
        fail(f"the generator needs the codegen extra ({exc.name} is missing): pip install 'mcpgen[codegen]'")
    return gen


@app.callback()
def main_options(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.")] = False,
) -> None:
    _state["debug"] = debug
    if version:
        out.print(f"mcpgen {__version__}")
        raise typer.Exit(0)


@app.command()
def generate(
    schema: Annotated[
        str,
        typer.Option("--schema", "-s", help="A shipped revision (see `mcpgen revisions`), a path, or an http(s) URL."),
    ] = shipped.DEFAULT_REVISION,
    out_dir: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Package directory to write. Default: mcpgen's own bindings."),
    ] = None,
    check: Annotated[
        bool, typer.Option("--check", help="Write nothing; exit 1 with a diff if the package is stale.")
    ] = False,
    revision: Annotated[
        str | None, typer.Option("--revision", help="Revision name, when the path or URL does not contain it.")
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Also list informational notes.")] = False,
) -> None:
    """Generate typed bindings (msgspec structs, codec, method table, stubs) from a schema.

    Examples:

      mcpgen generate                                    # refresh mcpgen's own bindings

      mcpgen generate --schema 2025-06-18 --out mypkg/mcp

      mcpgen generate --schema ./schema.json --out mypkg/mcp --check   # in CI
    """
    gen = _codegen()
    target = out_dir or GENERATED_DIR
    with user_errors():
        with step(f"generating from {schema}"):
            generation = gen.generate(schema, revision)
        model = generation.model
        for report in model.reports:
            if report.level == "warning":
                err.print(f"[yellow]warning:[/] {report.message}", highlight=False)
            elif verbose:
                err.print(f"[dim]note: {report.message}[/]", highlight=False)
        if check:
            stale = gen.stale_files(generation, target)
            if stale:
                for diff in stale.values():
                    sys.stdout.write(diff)
                fail(f"{len(stale)} file(s) in {target} differ from a fresh generation; run `mcpgen generate`", 1)
            out.print(f"{target}: up to date with {model.revision} ({model.sha256[:12]})", highlight=False)
            return
        with step(f"writing {target}"):
            gen.write(generation, target)
        out.print(
            f"wrote {target}: {len(model.types)} types, {len(model.methods)} methods, "
            f"revision {model.revision} ({model.sha256[:12]})",
            highlight=False,
        )


@app.command()
def revisions() -> None:
    """List the schema revisions mcpgen ships.

    Example:

      mcpgen revisions
    """
    import hashlib
    import json

    table = Table("revision", "dialect", "definitions", "sha256", "")
    for rev in shipped.revisions():
        raw = shipped.path_for(rev).read_bytes()
        doc = json.loads(raw)
        key = "$defs" if "$defs" in doc else "definitions"
        table.add_row(
            rev,
            "2020-12" if key == "$defs" else "draft-07",
            str(len(doc[key])),
            hashlib.sha256(raw).hexdigest()[:16],
            "default" if rev == shipped.DEFAULT_REVISION else "",
        )
    out.print(table)


@app.command()
def new(
    name: Annotated[str, typer.Argument(help="The project's name: a Python package name (hyphens become underscores).")],
    directory: Annotated[Path | None, typer.Option("--dir", "-d", help="Where to create it. Default: ./NAME.")] = None,
    transport: Annotated[str, typer.Option(help="stdio, or http (Streamable HTTP on 127.0.0.1).")] = "stdio",
    force: Annotated[bool, typer.Option("--force", help="Write into a directory that is not empty.")] = False,
) -> None:
    """Create a complete MCP server project: a server showing a tool with structured
    output, a resource, a resource template, a prompt and a completion; its tests; a
    README with run and test commands; host configuration for Claude Desktop and VS Code.

    Examples:

      mcpgen new weather

      mcpgen new weather-tools --dir ~/src/weather --transport http
    """
    from mcpgen.scaffold import ScaffoldError, create_project, validate_name

    if transport not in ("stdio", "http"):
        fail(f"--transport is stdio or http, not {transport!r}")
    try:
        validate_name(name)
        target = directory or Path(name)
        written = create_project(
            name, target, transport=transport, force=force, mcpgen_requirement=_mcpgen_requirement()  # type: ignore[arg-type]
        )
    except ScaffoldError as exc:
        fail(str(exc))
    out.print(f"created {target} ({len(written)} files). Next:", highlight=False)
    out.print(f"  cd {target} && python -m venv .venv && . .venv/bin/activate && pip install -e '.[test]' && pytest",
              highlight=False, markup=False)  # fmt: skip


def _mcpgen_requirement() -> str:
    """How a new project should depend on mcpgen: on this checkout when mcpgen runs from one
    (it is not on an index), else on this version or newer."""
    checkout = Path(__file__).resolve().parent.parent
    pyproject = checkout / "pyproject.toml"
    if pyproject.is_file() and 'name = "mcpgen"' in pyproject.read_text(encoding="utf-8"):
        return f"mcpgen[http] @ {checkout.as_uri()}"
    return f"mcpgen[http]>={__version__}"


@app.command()
def diff(
    old: Annotated[str, typer.Argument(help="The older revision: a shipped name, a path or a URL.")],
    new: Annotated[str, typer.Argument(help="The newer revision: a shipped name, a path or a URL.")],
    json_output: Annotated[bool, typer.Option("--json", help="Print the changes as JSON.")] = False,
) -> None:
    """Show what changed between two schema revisions: definitions, fields, methods,
    capabilities, enum values and unions.

    Examples:

      mcpgen diff 2025-06-18 2025-11-25

      mcpgen diff ./old/schema.json https://host/new/schema.json --json
    """
    _codegen()
    from mcpgen.codegen.build import build_model
    from mcpgen.codegen.diff import diff_models, render_table
    from mcpgen.codegen.loader import load_schema

    with user_errors():
        with step(f"comparing {old} and {new}"):
            changes = diff_models(build_model(load_schema(old)), build_model(load_schema(new)))
        if json_output:
            out.print_json(data=changes.to_json())
        elif not changes.changes:
            out.print(f"no changes between {changes.old} and {changes.new}")
        else:
            out.print(render_table(changes))


@app.command()
def call(
    target: Annotated[str, typer.Argument(help="An http(s) URL, or the command that starts a stdio server.")],
    action: Annotated[
        list[str] | None,
        typer.Argument(help="Nothing (list everything), `tool NAME`, `read URI` or `prompt NAME`."),
    ] = None,
    arg: Annotated[
        list[str] | None, typer.Option("--arg", "-a", help="key=value (value parsed as JSON when it is JSON).")
    ] = None,
    header: Annotated[list[str] | None, typer.Option("--header", "-H", help="HTTP header `Name: value`.")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print raw JSON instead of tables.")] = False,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for each answer.")] = 30.0,
) -> None:
    """Call any MCP server: list what it offers, call a tool, read a resource, get a prompt.

    Examples:

      mcpgen call "python server.py"                         # list tools, resources, templates, prompts

      mcpgen call "python server.py" tool add -a a=1 -a b=2

      mcpgen call http://127.0.0.1:8000/mcp read config://app --json

      mcpgen call "npx -y @modelcontextprotocol/server-everything" prompt simple_prompt
    """
    import asyncio

    from mcpgen.cli_call import CallError, run_call

    with user_errors():
        try:
            code = asyncio.run(
                run_call(target, action or [], arg or [], header or [], json_output, timeout, out)
            )
        except CallError as exc:
            fail(str(exc))
    raise typer.Exit(code)


def main() -> None:
    try:
        app()
    except typer.Exit as exc:
        raise SystemExit(exc.exit_code) from None


if __name__ == "__main__":
    main()
