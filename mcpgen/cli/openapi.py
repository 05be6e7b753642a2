"""``mcpgen openapi SPEC -o DIR`` and ``mcpgen new NAME --from-openapi SPEC``: an OpenAPI
document made into an MCP server project (:mod:`mcpgen.openapi`).

``app.py`` registers the command made by :func:`make_command`, passing the function that
says how a project depends on mcpgen (the one ``mcpgen new`` uses), so that this module
needs nothing from ``app.py`` and the two never import each other.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

err = Console(stderr=True, soft_wrap=True, markup=False, highlight=False)
out = Console(soft_wrap=True, markup=False, highlight=False)
Requirement = Callable[[Path], str]


def _fail(message: str, code: int = 2) -> typer.Exit:
    err.print(f"[bold red]error:[/] {escape(message)}", markup=True)
    return typer.Exit(code)


def _with_auth(requirement: str) -> str:
    """The project needs the auth extra too (its server may be protected with BearerAuth)."""
    return requirement.replace("mcpgen[http]", "mcpgen[http,auth]", 1)


def run(
    spec: str,
    target: Path,
    name: str,
    requirement: Requirement,
    *,
    base_url: str | None = None,
    mode: str = "tools",
    check: bool = False,
    overlays: list[str] | None = None,
    remote_refs: bool = False,
    curation: dict[str, list[str]] | None = None,
    force: bool = False,
    command: str = "",
    debug: bool = False,
) -> int:
    """Generate (or, with ``check``, compare) the project; the exit code."""
    try:
        from mcpgen.openapi.loader import OpenApiError
        from mcpgen.openapi.operations import Curation
        from mcpgen.openapi.project import GenerationRefused, Options, generate, write
        from mcpgen.openapi.project import check as drift
        from mcpgen.scaffold import ScaffoldError, validate_name
    except ModuleNotFoundError as exc:
        hint = f"mcpgen openapi needs the openapi extra ({exc.name} is missing): pip install 'mcpgen[openapi]'"
        raise _fail(hint) from None
    try:
        validate_name(name)
    except ScaffoldError as exc:
        raise _fail(f"{exc} (give --name NAME)") from None
    if mode not in ("tools", "code"):
        raise _fail(f"--mode is tools or code, not {mode!r}")
    fresh_project = not (target / name.replace("-", "_") / "operations.json").exists()
    if not check and fresh_project and target.is_dir() and any(target.iterdir()) and not force:
        raise _fail(f"{target} is not empty and holds no project generated from OpenAPI; use --force to write into it")
    options = Options(
        spec=spec,
        name=name,
        base_url=base_url,
        mode=mode,
        curation=Curation(**(curation or {})),
        overlays=overlays or [],
        remote_refs=remote_refs,
        command=command or f"mcpgen openapi {spec} -o {target} --name {name}",
        requirement=_with_auth(requirement(target)),
    )
    started = time.perf_counter()
    try:
        generated = generate(options)
    except (OpenApiError, GenerationRefused, OSError) as exc:
        if debug:
            raise
        raise _fail(str(exc)) from None
    took = time.perf_counter() - started
    for note in generated.notes:
        err.print(f"note: {note}", style="dim")
    for skipped in generated.built.skipped:
        err.print(f"skipped: {skipped}", style="yellow")
    if check:
        found = drift(generated, target)
        if not found.clean:
            for line in found.lines():
                sys.stdout.write(line + "\n")
            err.print(f"{target}: out of date with {spec}; run `{options.command}`")
            return 1
        out.print(f"{target}: up to date with {spec} ({len(generated.tables.operations)} operations)")
        return 0
    written = write(generated, target)
    tools = len(generated.tables.operations)
    what = f"{tools} tools" if mode == "tools" else f"{tools} operations behind 3 tools (code mode)"
    out.print(f"wrote {target}: {what}, {len(generated.models.types)} types, {len(written)} files ({took:.1f} s)")
    if fresh_project:
        out.print(
            f"  cd {target} && python -m venv .venv && . .venv/bin/activate && pip install -e '.[test]' && pytest"
        )
    return 0


def make_command(requirement: Requirement) -> Callable[..., None]:
    """The ``openapi`` command, for ``app.py`` to register."""

    def openapi(
        spec: Annotated[str, typer.Argument(help="The OpenAPI document: a file (JSON or YAML) or an http(s) URL.")],
        out_dir: Annotated[Path, typer.Option("--out", "-o", help="The project's directory.")],
        name: Annotated[
            str | None, typer.Option(help="The project's name (a Python package name). Default: the directory's.")
        ] = None,
        base_url: Annotated[
            str | None, typer.Option("--base-url", help="The API's URL. Default: the document's first server.")
        ] = None,
        mode: Annotated[
            str, typer.Option(help="tools (one tool per operation) or code (search, describe, call: large APIs).")
        ] = "tools",
        check: Annotated[
            bool, typer.Option("--check", help="Write nothing; exit 1 naming operations added, removed or changed.")
        ] = False,
        overlay: Annotated[
            list[str] | None, typer.Option("--overlay", help="An OpenAPI Overlay to apply first (repeat).")
        ] = None,
        include_tag: Annotated[
            list[str] | None, typer.Option("--include-tag", help="Only operations with this tag (glob).")
        ] = None,
        exclude_tag: Annotated[
            list[str] | None, typer.Option("--exclude-tag", help="Leave out this tag (glob).")
        ] = None,
        include_path: Annotated[
            list[str] | None, typer.Option("--include-path", help="Only these paths (glob).")
        ] = None,
        exclude_path: Annotated[
            list[str] | None, typer.Option("--exclude-path", help="Leave out these paths (glob).")
        ] = None,
        include_op: Annotated[
            list[str] | None, typer.Option("--include-op", help="Only these operation ids (glob).")
        ] = None,
        exclude_op: Annotated[
            list[str] | None, typer.Option("--exclude-op", help="Leave out these operation ids (glob).")
        ] = None,
        remote_refs: Annotated[
            bool,
            typer.Option("--remote-refs", help="Fetch $refs to other http(s) documents (off: nothing is downloaded)."),
        ] = False,
        force: Annotated[bool, typer.Option("--force", help="Write into a directory that is not empty.")] = False,
        debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
    ) -> None:
        """Generate a typed MCP server project from an OpenAPI document.

        One tool per operation (or, with --mode code, three tools that search, describe and
        call them), with input and output schemas from the document, credentials from
        environment variables, and the project's own hooks kept across regeneration.

        Examples:
          mcpgen openapi petstore.yaml -o petstore
          mcpgen openapi https://host/openapi.json -o api --include-tag pets
          mcpgen openapi github.json -o github --mode code
          mcpgen openapi petstore.yaml -o petstore --check
        """
        curation = {
            "include_tags": include_tag or [],
            "exclude_tags": exclude_tag or [],
            "include_paths": include_path or [],
            "exclude_paths": exclude_path or [],
            "include_ops": include_op or [],
            "exclude_ops": exclude_op or [],
        }
        project = name or out_dir.resolve().name
        args: dict[str, Any] = {"base_url": base_url, "mode": mode, "check": check, "overlays": overlay}
        code = run(
            spec,
            out_dir,
            project,
            requirement,
            remote_refs=remote_refs,
            curation=curation,
            force=force,
            debug=debug,
            **args,
        )
        raise typer.Exit(code)

    return openapi


def new_project(name: str, target: Path, spec: str, requirement: Requirement, force: bool) -> None:
    """``mcpgen new NAME --from-openapi SPEC``."""
    raise typer.Exit(
        run(spec, target, name, requirement, force=force, command=f"mcpgen openapi {spec} -o {target} --name {name}")
    )


__all__ = ["make_command", "new_project", "run"]
