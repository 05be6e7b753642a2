"""Protocol revisions the runtime speaks, as data: the one module that knows which version
strings exist, their order and their era.

The facts come from ``mcpgen/schema/revisions.toml`` (what no schema says) and the
generated ``mcpgen.protocol.availability`` (which method exists in which revision). Other
modules ask these functions; none compares version strings itself.
"""

from __future__ import annotations

import importlib
import tomllib
from dataclasses import dataclass
from functools import cache
from types import ModuleType
from typing import Literal

from mcpgen import schema as _schema
from mcpgen.protocol import availability

Era = Literal["handshake", "stateless"]


@dataclass(frozen=True)
class Revision:
    name: str
    era: Era
    bindings: str  # the revision whose committed bindings package decodes this one
    priming: bool = False  # Streamable HTTP streams open with an id-only event


def _load() -> tuple[dict[str, Revision], str]:
    table = tomllib.loads((_schema.HERE / "revisions.toml").read_text(encoding="utf-8"))
    rows = {
        name: Revision(name, row["era"], row["bindings"], bool(row.get("priming", False)))
        for name, row in table["revisions"].items()
    }
    # Oldest first, in the order the generated availability table lists them.
    ordered = {name: rows[name] for name in availability.REVISIONS}
    return ordered, table["defaults"]["http_without_header"]


REVISIONS, HTTP_DEFAULT = _load()
HANDSHAKE: tuple[str, ...] = tuple(reversed([r.name for r in REVISIONS.values() if r.era == "handshake"]))
"""Handshake-era versions, newest first."""
STATELESS: tuple[str, ...] = tuple(reversed([r.name for r in REVISIONS.values() if r.era == "stateless"]))
"""Stateless-era versions, newest first."""
SUPPORTED: tuple[str, ...] = (*STATELESS, *HANDSHAKE)
"""Every version the runtime speaks, newest first within each era."""
LATEST = HANDSHAKE[0]
"""The version a handshake answers with when the client's is unknown."""
LATEST_STATELESS = STATELESS[0]


def negotiate(requested: str) -> str:
    """The version an ``initialize`` answer names: the client's if it is a handshake-era
    version we speak, else our latest handshake-era one."""
    return requested if requested in HANDSHAKE else LATEST


def era_of(version: str | None) -> Era | None:
    """The era of a version we speak, or None for one we do not."""
    revision = REVISIONS.get(version) if isinstance(version, str) else None
    return revision.era if revision is not None else None


def primes_streams(version: str | None) -> bool:
    """Whether Streamable HTTP streams of this version open with a priming event."""
    revision = REVISIONS.get(version) if isinstance(version, str) else None
    return revision is not None and revision.priming


def method_exists(direction: str, method: str, version: str) -> bool:
    """Whether ``method`` is sent in ``direction`` ("c2s"/"s2c") in ``version``."""
    return availability.exists(direction, method, version)


@cache
def bindings(version: str) -> ModuleType:
    """The committed bindings package that decodes ``version`` (imported on first use: a
    handshake-era server never loads the stateless-era types)."""
    package = REVISIONS[version].bindings.replace("-", "_")
    return importlib.import_module(f"mcpgen.protocol.v{package}")
