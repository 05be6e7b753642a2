"""`mcpgen registry init` and `mcpgen registry validate`: a server.json for the official MCP
Registry, written from a project's pyproject.toml and checked against the registry's
schema (see :mod:`mcpgen.scaffold.registry`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from mcpgen.cli.sanitize import markup

registry = typer.Typer(
    name="registry",
    help="A server.json for the official MCP Registry: write it (init) or check it (validate).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
_err = Console(stderr=True, soft_wrap=True)


def _fail(message: str, code: int = 2) -> typer.Exit:
    # markup(): messages quote [tool.mcpgen.registry], which rich would take for a style.
    _err.print(f"[bold red]error:[/] {markup(message)}", highlight=False, markup=True)
    return typer.Exit(code)


@registry.command("init")
def init(
    directory: Annotated[Path, typer.Argument(help="The project (its pyproject.toml). Default: here.")] = Path("."),
    name: Annotated[
        str | None,
        typer.Option(
            "--name",
            help="The server's registry name, reverse-DNS: io.github.USER/NAME or com.example/NAME. Default: "
            "[tool.mcpgen.registry] name, else the name in an existing server.json.",
        ),
    ] = None,
) -> None:
    """Write server.json for a project, and the mcp-name line into its README.

    The version and description come from pyproject.toml, the package is the project's
    PyPI package; transport, URL and environment variables from [tool.mcpgen.registry].

    Examples:
      mcpgen registry init --name io.github.alice/weather
      mcpgen registry init ./weather
    """
    from mcpgen.scaffold import registry as entry

    target = directory / "server.json"
    given = name is not None
    if name is None and target.is_file():
        try:
            existing = json.loads(target.read_text(encoding="utf-8")).get("name")
        except (ValueError, AttributeError):
            existing = None
        name = existing if isinstance(existing, str) else None
    try:
        project = entry.read_project(directory, name)
    except entry.RegistryError as exc:
        raise _fail(str(exc)) from None
    if not entry.NAME_PATTERN.match(project.name):
        raise _fail(f"--name {project.name!r} is not a registry name (reverse-DNS, one slash: io.github.USER/NAME)")
    document = entry.server_json(project)
    problems = entry.validate(document)
    if problems:
        raise _fail(f"the server.json would not validate: {'; '.join(problems)}")
    pyproject = directory / "pyproject.toml"
    text = updated = ""
    if given:
        # --name is the project's name from now on: pyproject.toml says so too, so that the
        # next init does not bring the old one back.
        try:
            text = pyproject.read_text(encoding="utf-8")
            updated = entry.with_registry_name(text, project.name, str(pyproject))
        except (OSError, entry.RegistryError) as exc:
            raise _fail(str(exc)) from None
    target.write_text(entry.dumps(document), encoding="utf-8")
    if updated != text:
        pyproject.write_text(updated, encoding="utf-8")
    readme = directory / "README.md"
    if readme.is_file():
        readme.write_text(entry.with_mcp_name(readme.read_text(encoding="utf-8"), project.name), encoding="utf-8")
    print(f"wrote {target}: {project.name} {project.version} ({project.transport})")
    if project.name.startswith(entry.PLACEHOLDER_NAMESPACE):
        _err.print(
            f"note: replace the placeholder namespace: mcpgen registry init --name io.github.<you>/{project.package}",
            highlight=False,
            markup=False,
        )


@registry.command("validate")
def validate(
    path: Annotated[Path, typer.Argument(help="The server.json to check.")] = Path("server.json"),
) -> None:
    """Check a server.json against the registry's schema (version 2025-12-11), and that it
    is ready to publish (its name not the placeholder mcpgen new writes).

    Exit codes: 0 valid, 1 invalid (each problem on a line), 2 unreadable.

    Example:
      mcpgen registry validate server.json
    """
    from mcpgen.scaffold import registry as entry

    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise _fail(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise _fail(f"{path}: not JSON ({exc})") from None
    problems = entry.validate(document) + entry.placeholder_problems(document)
    for problem in problems:
        print(problem)
    if problems:
        raise _fail(f"{path}: {len(problems)} problem(s) against the registry's server.json schema", 1)
    print(f"{path}: valid (server.json schema {entry.SCHEMA_VERSION})")


__all__ = ["registry"]
