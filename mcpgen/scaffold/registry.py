"""A ``server.json`` for the official MCP Registry, from a Python project's ``pyproject.toml``.

The registry (``modelcontextprotocol/registry``) lists a server by a ``server.json``:
its name in reverse-DNS form (``io.github.alice/weather``), a description of at most
100 characters, its version, and how to get it: here the PyPI package, run over stdio
or serving Streamable HTTP at a URL, with the environment variables it reads. The
registry checks that the package is the server's by looking for ``mcp-name: NAME`` in
the package's README, so the README gets that line too (as an HTML comment).

What the project does not say goes in ``[tool.mcpgen.registry]`` of its pyproject.toml::

    [tool.mcpgen.registry]
    name = "io.github.alice/weather"
    transport = "streamable-http"           # default: stdio
    url = "http://127.0.0.1:8000/mcp"       # with streamable-http
    env = [{ name = "WEATHER_KEY", description = "API key", required = true, secret = true }]

Validation uses jsonschema-rs with our own copy of the schema's structure (the
project's file ``mcpgen/schema/registry-server-2025-12-11.json``).
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcpgen import schema as shipped

SCHEMA_VERSION = "2025-12-11"
SCHEMA_URL = f"https://static.modelcontextprotocol.io/schemas/{SCHEMA_VERSION}/server.schema.json"
SCHEMA_PATH = shipped.HERE / f"registry-server-{SCHEMA_VERSION}.json"
NAME_PATTERN = re.compile(r"^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$")
DESCRIPTION_LIMIT = 100
# The namespace a new project gets until its author names their own (the registry lets
# a GitHub user publish under io.github.<user>).
PLACEHOLDER_NAMESPACE = "io.github.YOUR-GITHUB-USER"
# A line naming the server to the registry, and the blank line after it.
_MCP_NAME = re.compile(r"^(?:<!--\s*mcp-name:\s*\S+\s*-->|mcp-name:\s*\S+)[ \t]*(?:\n\n?|\Z)", re.M)


class RegistryError(Exception):
    """A project or file that gives no server.json; ``str()`` is one line."""


@dataclass
class Project:
    """What server.json needs, read from pyproject.toml."""

    package: str
    version: str
    description: str
    name: str
    transport: str
    url: str | None
    env: list[dict[str, Any]]


def default_name(package: str) -> str:
    return f"{PLACEHOLDER_NAMESPACE}/{re.sub(r'[^a-zA-Z0-9._-]', '-', package)}"


def read_project(directory: Path, name: str | None = None) -> Project:
    path = directory / "pyproject.toml"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RegistryError(f"cannot read {path}: {exc.strerror or exc}") from None
    return parse_project(text, str(path), name)


def parse_project(text: str, path: str, name: str | None = None) -> Project:
    """The project described by a pyproject.toml's ``text`` (``path`` names it in errors)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RegistryError(f"{path}: {exc}") from None
    project = data.get("project")
    if not isinstance(project, dict) or not isinstance(project.get("name"), str):
        raise RegistryError(f"{path}: no [project] name")
    if not isinstance(project.get("version"), str):
        raise RegistryError(f"{path}: no static [project] version (a dynamic version is not supported)")
    settings = data.get("tool", {}).get("mcpgen", {}).get("registry", {})
    if not isinstance(settings, dict):
        raise RegistryError(f"{path}: [tool.mcpgen.registry] must be a table")
    transport = str(settings.get("transport", "stdio"))
    if transport not in ("stdio", "streamable-http"):
        raise RegistryError(f"{path}: [tool.mcpgen.registry] transport is stdio or streamable-http, not {transport!r}")
    url = settings.get("url")
    if transport == "streamable-http" and not isinstance(url, str):
        raise RegistryError(f"{path}: [tool.mcpgen.registry] transport streamable-http needs its url")
    env = settings.get("env", [])
    if not isinstance(env, list) or not all(isinstance(e, dict) and isinstance(e.get("name"), str) for e in env):
        raise RegistryError(f"{path}: [tool.mcpgen.registry] env is a list of tables with a name each")
    return Project(
        package=project["name"],
        version=project["version"],
        description=str(project.get("description") or project["name"]),
        name=name or str(settings.get("name") or default_name(project["name"])),
        transport=transport,
        url=url if transport == "streamable-http" else None,
        env=env,
    )


def server_json(project: Project) -> dict[str, Any]:
    """The server.json document (a longer description is cut at the registry's limit)."""
    description = " ".join(project.description.split())
    if len(description) > DESCRIPTION_LIMIT:
        description = description[: DESCRIPTION_LIMIT - 1].rstrip() + "…"
    transport: dict[str, Any] = {"type": project.transport}
    if project.url is not None:
        transport["url"] = project.url
    package: dict[str, Any] = {
        "registryType": "pypi",
        "registryBaseUrl": "https://pypi.org",
        "identifier": project.package,
        "version": project.version,
        "runtimeHint": "uvx",
        "transport": transport,
    }
    if project.env:
        package["environmentVariables"] = [_variable(e) for e in project.env]
    return {
        "$schema": SCHEMA_URL,
        "name": project.name,
        "description": description,
        "version": project.version,
        "packages": [package],
    }


def _variable(entry: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"name": entry["name"]}
    if isinstance(entry.get("description"), str):
        out["description"] = entry["description"]
    out["isRequired"] = bool(entry.get("required", False))
    out["isSecret"] = bool(entry.get("secret", False))
    if isinstance(entry.get("default"), str):
        out["default"] = entry["default"]
    return out


def dumps(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def mcp_name_line(name: str) -> str:
    """The README line the registry looks for (hidden from readers as an HTML comment)."""
    return f"<!-- mcp-name: {name} -->"


def with_mcp_name(readme: str, name: str) -> str:
    """``readme`` with exactly one mcp-name line, naming ``name``, after the title."""
    text = _MCP_NAME.sub("", readme)
    lines = text.split("\n", 1)
    if lines[0].startswith("# "):
        rest = lines[1] if len(lines) > 1 else ""
        return f"{lines[0]}\n\n{mcp_name_line(name)}\n" + ("" if rest.startswith("\n") else "\n") + rest
    return f"{mcp_name_line(name)}\n\n{text}"


def placeholder_problems(document: Any) -> list[str]:
    """The ways ``document`` is not ready to publish that the schema cannot see: the name
    still in the placeholder namespace ``mcpgen new`` writes."""
    name = document.get("name") if isinstance(document, dict) else None
    if isinstance(name, str) and name.startswith(PLACEHOLDER_NAMESPACE + "/"):
        rest = name.removeprefix(PLACEHOLDER_NAMESPACE + "/")
        return [
            f"$.name: {name!r} is the placeholder namespace mcpgen new writes: use yours "
            f"(mcpgen registry init --name io.github.<you>/{rest})"
        ]
    return []


_TABLE = re.compile(r"^\s*\[\s*tool\s*\.\s*mcpgen\s*\.\s*registry\s*\]\s*(?:#.*)?$")
_NAME_KEY = re.compile(r"^(\s*)name\s*=")


def with_registry_name(pyproject: str, name: str, path: str = "pyproject.toml") -> str:
    """``pyproject``'s text with ``[tool.mcpgen.registry] name`` set to ``name`` (the rest of
    the file as it was: comments, order); the table is added when it is missing."""
    line_of = f"name = {json.dumps(name)}"  # a JSON string is a TOML basic string
    lines = pyproject.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if _TABLE.match(line)), None)
    if start is None:
        text = pyproject + ("" if pyproject.endswith("\n") or not pyproject else "\n")
        text += f"\n[tool.mcpgen.registry]\n{line_of}\n"
    else:
        end = next((i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("[")), len(lines))
        found = next((i for i in range(start + 1, end) if _NAME_KEY.match(lines[i])), None)
        if found is None:
            lines.insert(start + 1, line_of + "\n")
        else:
            indent = _NAME_KEY.match(lines[found])
            lines[found] = (indent[1] if indent else "") + line_of + "\n"
        text = "".join(lines)
    try:
        written = tomllib.loads(text).get("tool", {}).get("mcpgen", {}).get("registry", {}).get("name")
    except tomllib.TOMLDecodeError as exc:
        raise RegistryError(f"{path}: cannot set [tool.mcpgen.registry] name: {exc}") from None
    if written != name:  # a multi-line value, a dotted key: not a file to edit by line
        raise RegistryError(f"{path}: cannot set [tool.mcpgen.registry] name; set it by hand to {name!r}")
    return text


def validate(document: Any) -> list[str]:
    """Every way ``document`` breaks the registry's server.json schema, one line each
    (``$.path: message``); empty when it is valid."""
    import jsonschema_rs

    validator = jsonschema_rs.Draft7Validator(json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))
    problems = []
    for error in validator.iter_errors(document):
        path = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.instance_path)
        problems.append(f"{path}: {error.message}")
    return sorted(problems)


__all__ = [
    "Project",
    "RegistryError",
    "SCHEMA_URL",
    "default_name",
    "dumps",
    "mcp_name_line",
    "parse_project",
    "placeholder_problems",
    "read_project",
    "server_json",
    "validate",
    "with_mcp_name",
    "with_registry_name",
]
