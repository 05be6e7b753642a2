"""The ``mcpgen`` command line.

Exit codes (also in ``mcpgen --help``): 0 success; 1 a check failed (``generate --check``)
or the tool called reported an error (``call``); 2 bad usage or input, or a server that
could not be reached, went away or answered with an error. Errors print as one line;
``--debug`` (before or after the command) shows the traceback. A closed stdout (``| head``)
ends the command quietly.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.table import Table

from mcpgen import schema as shipped
from mcpgen.cli import openapi as openapi_cli
from mcpgen.cli.apps import apps
from mcpgen.cli.console import Debug, err, fail, http_serving_options, out, state, stdout_closed, step, user_errors
from mcpgen.cli.dev import dev
from mcpgen.cli.gateway import gateway
from mcpgen.cli.inspect import inspect as inspect_server_command
from mcpgen.cli.registry import registry
from mcpgen.cli.sanitize import clean_line, markup
from mcpgen.cli.stubs import stubs
from mcpgen.origin import install_command
from mcpgen.version import __version__

EXIT_CODES = """Exit codes:
0  success
1  generate --check found stale files; call: the tool reported an error
2  bad usage or input; call: server unreachable, exited, or answered an error"""

app = typer.Typer(
    name="mcpgen",
    help="Typed, fast Python bindings for the Model Context Protocol, generated from its schema.",
    epilog=EXIT_CODES.replace("\n", "\n\n"),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


F = TypeVar("F", bound=Callable[..., Any])


def _reflow(doc: str) -> str:
    """A docstring as typer's rich help should get it: that keeps every line break in the
    paragraphs after the first, so prose paragraphs are joined into one line each (the
    terminal's width decides where they wrap); a paragraph opening with a heading that
    ends in ':' (examples, exit codes) keeps its lines as written."""
    paragraphs = inspect.cleandoc(doc).split("\n\n")
    return "\n\n".join(
        p if p.splitlines()[0].rstrip().endswith(":") else " ".join(p.split()) for p in paragraphs if p.strip()
    )


def command(fn: F, name: str | None = None) -> F:
    """Register ``fn`` as a command (named after it, or ``name``), with its docstring
    reflowed (see :func:`_reflow`)."""
    decorated: F = app.command(name, help=_reflow(fn.__doc__ or ""))(fn)
    return decorated


def _codegen() -> Any:
    try:
        from mcpgen.codegen import generate as gen
    except ModuleNotFoundError as exc:
        fail(f"the generator needs the codegen extra ({exc.name} is missing): {install_command('codegen')}")
    return gen


def _print_version(value: bool) -> None:
    if value:
        out.print(f"mcpgen {__version__}", highlight=False)
        raise typer.Exit(0)


@app.callback()
def main_options(
    debug: Debug = False,
    version: Annotated[
        bool, typer.Option("--version", help="Print the version and exit.", callback=_print_version, is_eager=True)
    ] = False,
) -> None:
    pass


@command
def generate(
    schema: Annotated[
        str | None,
        typer.Option(
            "--schema",
            "-s",
            help="A shipped revision (see `mcpgen revisions`), a path, or an http(s) URL. Default with --out: "
            + shipped.DEFAULT_REVISION,
        ),
    ] = None,
    out_dir: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Package directory to write. Without it: mcpgen's own bindings, all of them."),
    ] = None,
    check: Annotated[
        bool, typer.Option("--check", help="Write nothing; exit 1 with a diff if the package is stale.")
    ] = False,
    revision: Annotated[
        str | None, typer.Option("--revision", help="Revision name, when the path or URL does not contain it.")
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Also list informational notes.")] = False,
    debug: Debug = False,
) -> None:
    """Generate typed bindings from a schema.

    Writes msgspec structs, a codec, the method table and stubs.

    Examples:
      mcpgen generate               # a checkout of mcpgen: its own bindings
      mcpgen generate --schema 2025-06-18 --out mypkg/mcp
      mcpgen generate --schema ./schema.json --out mypkg/mcp --check
    """
    gen = _codegen()
    if out_dir is None:
        if schema is not None or revision is not None:
            fail("--schema and --revision go with --out; `mcpgen generate` alone refreshes mcpgen's own bindings")
        if not check and not _in_checkout():
            fail(
                "give --out DIR (and --schema REVISION) to generate bindings for your project; without --out, "
                "`mcpgen generate` rewrites mcpgen's own bindings, which only a checkout of mcpgen does"
            )
        with user_errors():
            _generate_committed(check, verbose)
        return
    spec = schema or shipped.DEFAULT_REVISION
    command = " ".join(
        ["mcpgen generate", f"--schema {spec}", f"--out {out_dir}"] + ([f"--revision {revision}"] if revision else [])
    )
    with user_errors():
        with step(f"generating from {spec}"):
            generation = gen.generate(spec, revision, command=command)
        model = generation.model
        _print_reports(model, verbose)
        if check:
            stale = gen.stale_files(generation, out_dir)
            if stale:
                for diff in stale.values():
                    sys.stdout.write(diff)
                fail(f"{len(stale)} file(s) in {out_dir} differ from a fresh generation; run `{command}`", 1)
            out.print(f"{out_dir}: up to date with {model.revision} ({model.sha256[:12]})", highlight=False)
            return
        with step(f"writing {out_dir}"):
            gen.write(generation, out_dir)
        out.print(
            f"wrote {out_dir}: {len(model.types)} types, {len(model.methods)} methods, "
            f"revision {model.revision} ({model.sha256[:12]})",
            highlight=False,
        )


def _in_checkout() -> bool:
    """Whether mcpgen runs from its own source checkout (a pyproject.toml naming it beside
    the package), where its committed bindings are regenerated; not an installed copy."""
    project = Path(__file__).resolve().parents[2] / "pyproject.toml"
    try:
        return 'name = "mcpgen"' in project.read_text(encoding="utf-8")
    except OSError:
        return False


def _print_reports(model: Any, verbose: bool) -> None:
    for report in model.reports:
        if report.level == "warning":
            err.print(f"[yellow]warning:[/] {markup(report.message)}", highlight=False, markup=True)
        elif verbose:
            err.print(f"note: {clean_line(report.message)}", style="dim", highlight=False)


def _generate_committed(check: bool, verbose: bool) -> None:
    """Every committed bindings package and the availability table (mcpgen's own)."""
    from mcpgen.codegen import committed as own

    with step("generating mcpgen's own bindings"):
        fresh = own.generate_committed()
    for directory, generation in fresh.packages.items():
        warned = sum(r.level == "warning" for r in generation.model.reports)
        if own.is_extension(directory) and warned and not verbose:
            # A published extension schema's known quirks: counted, listed with --verbose.
            err.print(f"[dim]{directory.name}: {warned} schema warning(s); --verbose lists them[/]", highlight=False)
        else:
            _print_reports(generation.model, verbose)
    if check:
        stale = own.stale(fresh)
        if stale:
            for diff in stale.values():
                sys.stdout.write(diff)
            fail(f"{len(stale)} generated file(s) differ from a fresh generation; run `{own.COMMAND}`", 1)
        out.print(f"{own.PROTOCOL_DIR}: up to date", highlight=False)
        return
    own.write_committed(fresh)
    for directory, generation in fresh.packages.items():
        model = generation.model
        out.print(
            f"wrote {directory}: {len(model.types)} types, {len(model.methods)} methods, "
            f"revision {model.revision} ({model.sha256[:12]})",
            highlight=False,
        )


@command
def revisions(debug: Debug = False) -> None:
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
    with user_errors():
        out.print(table)


@command
def new(
    name: Annotated[
        str, typer.Argument(help="The project's name: a Python package name (hyphens become underscores).")
    ],
    directory: Annotated[Path | None, typer.Option("--dir", "-d", help="Where to create it. Default: ./NAME.")] = None,
    transport: Annotated[str, typer.Option(help="stdio, or http (Streamable HTTP on 127.0.0.1).")] = "stdio",
    force: Annotated[bool, typer.Option("--force", help="Write into a directory that is not empty.")] = False,
    auth: Annotated[
        bool,
        typer.Option(
            "--auth",
            help="Protect it with OAuth (implies --transport http): tokens from any OIDC issuer, "
            "tests against a test authorization server.",
        ),
    ] = False,
    from_openapi: Annotated[
        str | None, typer.Option("--from-openapi", help="Make it a server for the API this OpenAPI document describes.")
    ] = None,
    debug: Debug = False,
) -> None:
    """Create a complete MCP server project.

    The project has a server showing a tool with structured output, a resource, a
    resource template, a prompt and a completion; its tests; a README with run and test
    commands; host configuration for Claude Desktop and VS Code.

    Examples:
      mcpgen new weather
      mcpgen new weather-tools --dir ~/src/weather --transport http
      mcpgen new notes --auth
      mcpgen new petstore --from-openapi petstore.yaml
    """
    from mcpgen.scaffold import ScaffoldError, create_project, validate_name

    if from_openapi is not None:  # mcpgen/cli/openapi.py
        openapi_cli.new_project(name, directory or Path(name), from_openapi, _mcpgen_requirement, force)

    if auth:
        transport = "http"
    if transport not in ("stdio", "http"):
        fail(f"--transport is stdio or http, not {transport!r}")
    try:
        validate_name(name)
        target = directory or Path(name)
        written = create_project(
            name,
            target,
            transport=transport,  # type: ignore[arg-type]
            force=force,
            mcpgen_requirement=_mcpgen_requirement(target),
            auth=auth,
        )
    except ScaffoldError as exc:
        fail(str(exc))
    out.print(f"created {target} ({len(written)} files). Next:", highlight=False)
    out.print(
        f"  cd {target} && python -m venv .venv && . .venv/bin/activate && pip install -e '.[test]' && pytest",
        highlight=False,
        markup=False,
    )


def _mcpgen_requirement(target: Path) -> str:
    """How a new project in ``target`` depends on mcpgen: installed from where this mcpgen
    came from (it is not on an index): the checkout it runs from, by its path relative to the
    project where there is one, so the project installs on another machine too; the wheel or
    git URL it was installed from; else this version or newer, from an index. (Also for the
    other commands that write a project.)"""
    from mcpgen.scaffold import project_requirement

    return project_requirement(target)


@command
def diff(
    old: Annotated[str, typer.Argument(help="The older revision: a shipped name, a path or a URL.")],
    new: Annotated[str, typer.Argument(help="The newer revision: a shipped name, a path or a URL.")],
    json_output: Annotated[bool, typer.Option("--json", help="Print the changes as JSON.")] = False,
    debug: Debug = False,
) -> None:
    """Show what changed between two schema revisions.

    Lists changed definitions, fields, methods, capabilities, enum values and unions.

    On a terminal the changes are a table; piped or redirected, one tab-separated line per
    change (kind, change, where, detail).

    Examples:
      mcpgen diff 2025-06-18 2025-11-25
      mcpgen diff ./old/schema.json https://host/new/schema.json --json
    """
    _codegen()
    from mcpgen.codegen.build import build_model
    from mcpgen.codegen.diff import diff_models, render_lines, render_table
    from mcpgen.codegen.loader import load_schema

    with user_errors():
        with step(f"comparing {old} and {new}"):
            changes = diff_models(build_model(load_schema(old)), build_model(load_schema(new)))
        if json_output:
            out.print_json(data=changes.to_json())
        elif not changes.changes:
            out.print(f"no changes between {changes.old} and {changes.new}")
        elif out.is_terminal:
            out.print(render_table(changes))
        else:  # a pipe or a file: one line per change, names whole (grep, sort, cut)
            sys.stdout.write(render_lines(changes))


@command
def call(
    target: Annotated[
        str, typer.Argument(metavar="TARGET", help="The command that starts a stdio server, or an http(s) URL.")
    ],
    action: Annotated[
        list[str] | None,
        typer.Argument(metavar="[ACTION NAME]", help="Nothing (list everything), tool NAME, read URI or prompt NAME."),
    ] = None,
    arg: Annotated[
        list[str] | None,
        typer.Option(
            "--arg",
            "-a",
            help="key=value, typed by the tool's inputSchema: text for a string, JSON for anything else "
            """(arrays and objects too: -a 'tags=["a","b"]' -a 'point={"x":1}').""",
        ),
    ] = None,
    header: Annotated[list[str] | None, typer.Option("--header", "-H", help="HTTP header `Name: value`.")] = None,
    transport: Annotated[
        str,
        typer.Option(
            help="auto, stdio, http (Streamable HTTP) or sse (legacy HTTP+SSE). auto: a URL ending in /sse "
            "is sse; other URLs are tried as http, then as sse."
        ),
    ] = "auto",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Hide the stdio server's stderr.")] = False,
    json_output: Annotated[bool, typer.Option("--json", help="Print raw JSON instead of text.")] = False,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for each answer.")] = 30.0,
    task: Annotated[
        bool,
        typer.Option(
            "--task",
            help="Let the server run the tool as a task (the tasks extension): its status and progress show "
            "while it runs, Ctrl-C cancels it.",
        ),
    ] = False,
    era: Annotated[
        str,
        typer.Option(
            help="auto (probe with server/discover, else initialize), handshake, stateless, "
            "or a protocol version such as 2025-11-25."
        ),
    ] = "auto",
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Say which protocol era and version were spoken (stderr).")
    ] = False,
    no_auth: Annotated[
        bool,
        typer.Option(
            "--no-auth",
            help="Never sign in: a server answering 401 is reported as such. (-H 'Authorization: Bearer TOKEN' "
            "sends a token of your own instead.)",
        ),
    ] = False,
    debug: Debug = False,
) -> None:
    """Call any MCP server: list it, or use a tool, resource or prompt.

    Progress and log notifications go to stderr as they arrive, and so does a stdio
    server's stderr (--quiet hides it). Exit codes: 0 done, 1 the tool reported an
    error, 2 bad usage, or the server could not be reached, went away or answered
    with an error.

    A Streamable HTTP server that answers 401 gets you signed in: the OAuth sign-in
    page opens in your browser (its URL is printed too), and the tokens are kept,
    per authorization server and readable only by you, in mcpgen's config directory
    (oauth.json), refreshed when they expire.

    Examples:
      mcpgen call "python server.py"            # list tools, resources, prompts
      mcpgen call "python server.py" tool add -a a=1 -a b=2
      mcpgen call http://127.0.0.1:8000/mcp tool build --task
      mcpgen call http://127.0.0.1:8000/mcp read config://app --json
      mcpgen call "npx -y @modelcontextprotocol/server-everything" \\
          prompt args-prompt -a city=Paris
    """
    import asyncio

    from mcpgen.cli.call import CallError, run_call

    with user_errors():
        try:
            code = asyncio.run(
                run_call(
                    target,
                    action or [],
                    arg or [],
                    header or [],
                    json_output,
                    timeout,
                    out,
                    err,
                    transport,
                    quiet,
                    task=task,
                    era=era,
                    verbose=verbose,
                    no_auth=no_auth,
                )
            )
        except CallError as exc:
            fail(str(exc))
        except KeyboardInterrupt:
            # asyncio.run cancelled the call (the client told the server) and re-raised.
            err.print("cancelled", highlight=False)
            raise typer.Exit(130) from None
    raise typer.Exit(code)


@command
def run(
    target: Annotated[
        str, typer.Argument(metavar="FILE", help="A Python file or module, with :NAME to pick the Server in it.")
    ],
    transport: Annotated[str, typer.Option(help="stdio, or http (Streamable HTTP).")] = "stdio",
    host: Annotated[str, typer.Option(help="http: the address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="http: the port to listen on.")] = 8000,
    path: Annotated[str, typer.Option(help="http: the endpoint's path.")] = "/mcp",
    uds: Annotated[
        str | None,
        typer.Option(help="http: listen on this Unix domain socket instead of a TCP port (this user only)."),
    ] = None,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allowed-host",
            help="http: a host name clients may use (the Host header; repeat it; * for any). Local names are "
            "always allowed; others are refused with 403 (DNS rebinding).",
        ),
    ] = None,
    debug: Debug = False,
) -> None:
    """Run the MCP server defined in a Python file or module.

    The server is the module-level variable holding an mcpgen.Server; when the
    module has several, name one: FILE:NAME or package.module:NAME. The module is
    imported under its own name, so its `if __name__ == "__main__"` block does not run.

    Examples:
      mcpgen run server.py
      mcpgen run server.py:weather --transport http --port 8001
      mcpgen run server.py --transport http --allowed-host mcp.example.com
      mcpgen run server.py --transport http --uds /tmp/weather.sock
      mcpgen run mypkg.server
    """
    from mcpgen.cli.run import LoadError, load_server

    if transport not in ("stdio", "http"):
        fail(f"--transport is stdio or http, not {transport!r}")
    if uds is not None and transport != "http":
        fail("--uds serves Streamable HTTP on a Unix socket: add --transport http")
    with user_errors():
        try:
            server = load_server(target, quiet_stdout=transport == "stdio", debug=state["debug"])
        except LoadError as exc:
            fail(str(exc))
        if transport == "http":
            options = http_serving_options(host, allowed_host)
            server.run("http", host=host, port=port, path=path, uds=uds, **options)
        else:
            server.run("stdio")


@command
def install(
    host_app: Annotated[
        str,
        typer.Argument(
            metavar="HOST", help="claude-desktop, claude-code, cursor, vscode, gemini-cli, goose or mcp-json."
        ),
    ],
    target: Annotated[
        str, typer.Argument(metavar="FILE", help="The server's Python file or module (FILE:NAME as for `mcpgen run`).")
    ],
    name: Annotated[
        str | None, typer.Option(help="The server's name in the host. Default: its Server's name (else the file's).")
    ] = None,
    env: Annotated[
        list[str] | None, typer.Option("--env", "-e", help="KEY=VALUE for the server's environment.")
    ] = None,
    config: Annotated[Path | None, typer.Option(help="The config file to write. Default: the host's own.")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the new config; write nothing.")] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Replace an entry of the same name that runs another server.")
    ] = False,
    debug: Debug = False,
) -> None:
    """Add a server to a host app (Claude, Cursor, VS Code, Goose...).

    The entry runs `mcpgen run FILE` with this Python, so the host finds mcpgen and the
    server's dependencies. The entry is named after the Server (Server("weather")) unless
    --name says otherwise. Other servers in the file are kept; an entry of the same name is
    updated when it runs this same server, and one that runs another server is left alone
    unless --force. Files: claude-desktop writes claude_desktop_config.json in Claude's
    settings folder, claude-code ~/.claude.json (--config .mcp.json for one project),
    cursor ~/.cursor/mcp.json, vscode .vscode/mcp.json in the current folder, gemini-cli
    ~/.gemini/settings.json, goose ~/.config/goose/config.yaml (the goose extra), mcp-json
    mcp.json in the current folder.

    Examples:
      mcpgen install claude-desktop server.py --env API_KEY=secret
      mcpgen install claude-code server.py --config .mcp.json
      mcpgen install vscode server.py --name weather --dry-run
      mcpgen install goose server.py
    """
    from mcpgen.cli.install import HOSTS, InstallError, install_server

    if host_app not in HOSTS:
        fail(f"HOST is one of {', '.join(HOSTS)}, not {host_app!r}")
    with user_errors():
        try:
            written = install_server(
                host_app, target, name=name, env=env or [], config=config, dry_run=dry_run, force=force
            )
        except InstallError as exc:
            fail(str(exc))
        if dry_run:
            sys.stdout.write(written.text)
        else:
            verb = "replaced" if written.replaced else "added"
            out.print(
                f"{verb} {written.name!r} in {written.path}; restart {written.host_label} to use it",
                highlight=False,
                markup=False,
            )


command(stubs)  # mcpgen/cli/stubs.py
command(inspect_server_command, "inspect")  # mcpgen/cli/inspect.py
command(dev)  # mcpgen/cli/dev.py
command(gateway)  # mcpgen/cli/gateway.py
command(openapi_cli.make_command(_mcpgen_requirement))  # mcpgen/cli/openapi.py
app.add_typer(registry)  # mcpgen/cli/registry.py
app.add_typer(apps)  # mcpgen/cli/apps.py


def main() -> None:
    try:
        app()
    except typer.Exit as exc:
        raise SystemExit(exc.exit_code) from None
    except BrokenPipeError:  # stdout closed outside a command's own handling
        try:
            stdout_closed()
        except typer.Exit as exc:
            raise SystemExit(exc.exit_code) from None


if __name__ == "__main__":
    main()
