"""Project scaffolding behind ``mcpgen new``: a ready-to-run MCP server project.

The project's files are rendered from ``template/`` with :class:`string.Template`
(``$name``-style placeholders; ``$$`` is a literal dollar sign):

* ``template/project/`` is rendered for every project;
* ``template/http/`` adds files to it, or replaces them, for ``--transport http``;
* ``template/auth/`` then does the same for ``--auth`` (an HTTP server protected with OAuth,
  whose tests run against ``mcpgen.testing.AuthServer``);
* ``template/snippets/<transport>/NAME.md`` is rendered too and fills the placeholder ``$NAME``;
  so is ``template/snippets/auth/NAME.md`` with ``--auth`` (without it, those placeholders are empty).

In template paths a ``package`` directory becomes the package name, a ``dot-`` prefix
becomes ``.`` (dotfiles would escape package-data globs) and the ``.tmpl`` suffix is dropped.
The host configurations (``claude_desktop_config.json``, ``.vscode/mcp.json``) are built as
data and written with :mod:`json`, so paths are escaped correctly; the README quotes them.

The project's dependency on mcpgen must install from where this mcpgen came from
(:mod:`mcpgen.origin`; it is not on PyPI). From an index it is a plain requirement. From a
checkout (or another directory) the project names it by its path *relative to the project*,
which hatchling (the project's build backend) turns into a ``file:`` URL where it is
installed (``{root:parent:uri}/mcpgen``), so the two can move to another machine together;
when the two share no folder but ``/`` that would be ``file:////...``, which pip 23 refuses
("Invalid URL given"), so it is then the checkout's absolute ``file:`` URL. From a wheel, an
sdist or a git URL it is that direct reference.
"""

from __future__ import annotations

import json
import keyword
import os
import re
import string
import sys
import textwrap
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path, PurePosixPath
from typing import Any, Literal
from urllib.parse import quote, unquote

from mcpgen.origin import Origin, origin
from mcpgen.scaffold import registry
from mcpgen.version import __version__

__all__ = [
    "DEFAULT_PORT",
    "ScaffoldError",
    "Transport",
    "create_project",
    "mcpgen_checkout",
    "mcpgen_requirement",
    "project_requirement",
    "render_project",
    "validate_name",
]

Transport = Literal["stdio", "http"]
TRANSPORTS: tuple[Transport, ...] = ("stdio", "http")
DEFAULT_PORT = 8000

# Package names a project must not take: they would shadow what the project imports.
RESERVED = frozenset({"mcpgen", "mcp", "test", "tests", "msgspec", "pytest", "anyio", "httpx", "uvicorn"})
# Lowercase words of letters and digits joined by single '-' or '_': a valid distribution
# name (PEP 508) that maps to a valid package name.
_NAME = re.compile(r"[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*")


class ScaffoldError(Exception):
    """A reason the project cannot be created, as a one-line message for the user."""


def validate_name(name: str) -> str:
    """Check a project name and return its package name (``-`` becomes ``_``)."""
    if not name:
        raise ScaffoldError("the project name is empty")
    if name != name.lower():
        raise ScaffoldError(f"{name!r} has uppercase letters; project names are lowercase, e.g. {name.lower()!r}")
    if name[0].isdigit():
        raise ScaffoldError(f"{name!r} starts with a digit; a Python package name must start with a letter")
    if not _NAME.fullmatch(name):
        raise ScaffoldError(
            f"{name!r} is not a valid project name: use lowercase letters and digits, starting with a letter, "
            "with single '-' or '_' between words"
        )
    package = name.replace("-", "_")
    if keyword.iskeyword(package):
        raise ScaffoldError(f"{name!r} is a Python keyword; choose another name, e.g. '{name}-server'")
    if package in RESERVED:
        raise ScaffoldError(
            f"{name!r} is reserved (it would shadow a package the project imports); choose another name"
        )
    if package in sys.stdlib_module_names:
        raise ScaffoldError(f"{name!r} is a standard library module; choose another name, e.g. '{name}-server'")
    return package


def mcpgen_checkout() -> Path | None:
    """The checkout this mcpgen runs from (a directory whose pyproject.toml is mcpgen's),
    or None when mcpgen was installed from an index, an archive or a git URL."""
    source = origin()
    return Path(source.where) if source.kind == "checkout" else None


def mcpgen_requirement(target: Path, checkout: Path | None = None) -> str:
    """How a project in ``target`` depends on mcpgen: this version or newer from an index,
    or, given the mcpgen ``checkout`` to use, that checkout by its path relative to the
    project, e.g. ``mcpgen[http] @ {root:parent:uri}/mcpgen`` for a checkout beside it.
    Where the two share no folder but the root (or are on two drives, on Windows) it is the
    checkout's absolute URL: a relative one would climb to ``/`` and read ``file:////src``."""
    if checkout is None:
        return f"mcpgen[http]>={__version__}"
    source, project = checkout.resolve(), target.resolve()
    try:
        shared = Path(os.path.commonpath([source, project]))
        relative = PurePosixPath(Path(os.path.relpath(source, project)).as_posix())
    except ValueError:
        return f"mcpgen[http] @ {source.as_uri()}"
    if shared == Path(shared.anchor):
        return f"mcpgen[http] @ {source.as_uri()}"
    ups = relative.parts.count("..")  # relpath puts them first
    rest = "/".join(quote(part) for part in relative.parts[ups:])  # quote() also escapes { and }
    return "mcpgen[http] @ {root" + ":parent" * ups + ":uri}" + (f"/{rest}" if rest else "")


def project_requirement(target: Path, source: Origin | None = None) -> str:
    """How a project in ``target`` depends on the mcpgen ``source`` (default: the running
    one, :func:`mcpgen.origin.origin`): see :func:`mcpgen_requirement` for a checkout or a
    directory; a wheel, sdist or git URL by its direct reference; else this version or newer."""
    source = source or origin()
    if source.kind in ("checkout", "directory"):
        return mcpgen_requirement(target, Path(source.where))
    return source.requirement("http")


def create_project(
    name: str,
    target: Path,
    *,
    transport: Transport = "stdio",
    force: bool = False,
    mcpgen_requirement: str = "mcpgen[http]",
    auth: bool = False,
) -> list[Path]:
    """Write a new server project named ``name`` into the directory ``target`` (created if
    missing) and return the files written, sorted. A non-empty ``target`` is refused unless
    ``force``, which overwrites the project's files and leaves any others alone.
    ``mcpgen_requirement`` is the project's dependency on mcpgen (see :func:`mcpgen_requirement`).
    ``auth`` protects the (HTTP) server with OAuth; see ``template/auth/``."""
    if target.exists() and not target.is_dir():
        raise ScaffoldError(f"{target} exists and is not a directory")
    if target.is_dir() and any(target.iterdir()) and not force:
        raise ScaffoldError(f"{target} is not empty; use --force to write into it")
    rendered = render_project(name, target, transport=transport, mcpgen_requirement=mcpgen_requirement, auth=auth)
    written = []
    for relative, text in rendered.items():
        path = target.joinpath(*relative.parts)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        except OSError as error:
            raise ScaffoldError(f"cannot write {path}: {error.strerror or error}") from error
        written.append(path)
    return sorted(written)


def render_project(
    name: str,
    target: Path,
    *,
    transport: Transport = "stdio",
    mcpgen_requirement: str = "mcpgen[http]",
    auth: bool = False,
) -> dict[PurePosixPath, str]:
    """The project's files, by path relative to its directory ``target``, without writing them."""
    package = validate_name(name)
    if transport not in TRANSPORTS:
        raise ScaffoldError(f"unknown transport {transport!r}: use 'stdio' or 'http'")
    if auth and transport != "http":
        raise ScaffoldError("--auth protects a server served over HTTP: use it with --transport http")
    claude, vscode = host_configs(name, package, target, transport)
    values = {
        "name": name,
        "package": package,
        "transport": transport,
        "default_port": str(DEFAULT_PORT),
        # A JSON string is a valid TOML basic string.
        # A protected server verifies tokens: the auth extra (PyJWT, joserfc) comes along.
        "mcpgen_requirement": json.dumps(_with_auth(mcpgen_requirement) if auth else mcpgen_requirement),
        "install_note": _install_note(mcpgen_requirement),
        "claude_config": _json(claude).rstrip("\n"),
        "vscode_config": _json(vscode).rstrip("\n"),
    }
    root = files(__name__) / "template"
    for snippet in (root / "snippets" / transport).iterdir():
        values[snippet.name.removesuffix(".md")] = _render(snippet, values).rstrip("\n")
    for snippet in (root / "snippets" / "auth").iterdir():
        values[snippet.name.removesuffix(".md")] = _render(snippet, values).rstrip("\n") if auth else ""
    templates = {
        **_tree(root / "project"),
        **(_tree(root / "http") if transport == "http" else {}),
        **(_tree(root / "auth") if auth else {}),
    }
    project = {_output_path(path, package): _render(source, values) for path, source in templates.items()}
    project[PurePosixPath("claude_desktop_config.json")] = _json(claude)
    project[PurePosixPath(".vscode/mcp.json")] = _json(vscode)
    # The registry entry, from the pyproject just rendered (as `mcpgen registry init` would).
    listing = registry.parse_project(project[PurePosixPath("pyproject.toml")], "pyproject.toml")
    project[PurePosixPath("server.json")] = registry.dumps(registry.server_json(listing))
    project[PurePosixPath("README.md")] = registry.with_mcp_name(project[PurePosixPath("README.md")], listing.name)
    return project


def _with_auth(requirement: str) -> str:
    """``mcpgen[http]...`` as ``mcpgen[http,auth]...``."""
    return requirement.replace("mcpgen[http]", "mcpgen[http,auth]", 1)


def _install_note(requirement: str) -> str:
    """What the README says about where mcpgen comes from, when not from an index."""
    relative = re.fullmatch(r"mcpgen\[http\] @ \{root((?::parent)*):uri\}(?:/(.*))?", requirement)
    if relative:
        path = "/".join([".."] * relative[1].count(":parent") + ([unquote(relative[2])] if relative[2] else [])) or "."
        note = (
            "mcpgen is not on PyPI: `pyproject.toml` takes it from the mcpgen checkout at "
            f"`{path}`, a path relative to this folder that is resolved where the project is "
            "installed (hatchling's `{root:parent:uri}`). On another machine, put a clone of "
            "mcpgen there, or point the `mcpgen` line of `dependencies` at yours: another "
            "relative path, or a git URL (`mcpgen[http] @ git+https://...`)."
        )
    elif " @ " in requirement:
        note = f"`pyproject.toml` takes mcpgen from `{requirement.split(' @ ', 1)[1]}`."
    else:
        return ""
    return "\n\n" + textwrap.fill(note, width=90, break_long_words=False, break_on_hyphens=False)


def host_configs(name: str, package: str, target: Path, transport: Transport) -> tuple[dict[str, Any], dict[str, Any]]:
    """Claude Desktop's and VS Code's configuration for the project's server, run by the
    Python of the project's ``.venv`` (absolutely for Claude, relative to the workspace for VS Code)."""
    venv_python = ".venv/Scripts/python.exe" if os.name == "nt" else ".venv/bin/python"
    args = ["-m", f"{package}.server", *(["--stdio"] if transport == "http" else [])]
    claude = {"mcpServers": {name: {"command": str(target.resolve() / venv_python), "args": args}}}
    servers: dict[str, Any] = {name: {"type": "stdio", "command": f"${{workspaceFolder}}/{venv_python}", "args": args}}
    if transport == "http":
        servers[f"{name}-http"] = {"type": "http", "url": f"http://127.0.0.1:{DEFAULT_PORT}/mcp"}
    return claude, {"servers": servers}


def _tree(directory: Traversable, prefix: PurePosixPath = PurePosixPath()) -> dict[PurePosixPath, Traversable]:
    """Every file under ``directory``, by its path relative to it."""
    found: dict[PurePosixPath, Traversable] = {}
    for entry in directory.iterdir():
        if entry.is_dir():
            found.update(_tree(entry, prefix / entry.name))
        elif entry.name.endswith(".tmpl"):
            found[prefix / entry.name] = entry
    return found


def _output_path(template_path: PurePosixPath, package: str) -> PurePosixPath:
    """``package/dot-name.tmpl`` -> ``<package>/.name``."""

    def rename(part: str) -> str:
        if part == "package":
            return package
        return "." + part.removeprefix("dot-") if part.startswith("dot-") else part

    return PurePosixPath(*map(rename, template_path.with_suffix("").parts))


def _render(source: Traversable, values: dict[str, str]) -> str:
    try:
        return string.Template(source.read_text(encoding="utf-8")).substitute(values)
    except (KeyError, ValueError) as error:  # a bug in the templates, not the user's input
        raise RuntimeError(f"template {source.name}: bad placeholder {error}") from error


def _json(data: dict[str, Any]) -> str:
    """``data`` as JSON, one key a line, lists on one line: ``"args": ["-m", "pkg.server"]``."""

    def dump(value: Any, indent: str) -> str:
        if not isinstance(value, dict) or not value:
            return json.dumps(value, ensure_ascii=False)
        inner = indent + "  "
        items = [f"{inner}{json.dumps(key, ensure_ascii=False)}: {dump(item, inner)}" for key, item in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"

    return dump(data, "") + "\n"
