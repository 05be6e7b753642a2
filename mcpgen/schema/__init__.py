"""The MCP schema revisions mcpgen ships, as the project's own files.

Each ``<revision>.json`` has the structure of the official schema of that revision
(definitions, properties, types, required lists, enums, consts, bounds, formats) with
descriptions written by this project. ``facts.toml`` holds what the schema does not say.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).parent
DEFAULT_REVISION = "2025-11-25"


def revisions() -> list[str]:
    """Shipped revisions, oldest first."""
    return sorted(p.stem for p in HERE.glob("????-??-??.json"))


def path_for(revision: str) -> Path:
    path = HERE / f"{revision}.json"
    if not path.is_file():
        raise KeyError(f"mcpgen ships no schema revision {revision!r}; known: {', '.join(revisions())}")
    return path


def facts_path() -> Path:
    return HERE / "facts.toml"
