"""Protocol revisions the runtime speaks, as data: the one module that knows which version
strings exist, their order and their era.

The facts come from the generated ``mcpgen.protocol.revision_facts`` (rendered by ``mcpgen
generate`` from ``mcpgen/schema/revisions.toml``: what no schema says; plain Python, so a
server's start parses no TOML) and the generated ``mcpgen.protocol.availability`` (which
method exists in which revision). Other modules ask these functions; none compares version
strings itself.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from functools import cache
from types import ModuleType
from typing import Literal

from mcpgen.protocol import availability
from mcpgen.protocol import revision_facts as _facts

Era = Literal["handshake", "stateless"]

_ERA: dict[str, Era] = _facts.ERA
HTTP_DEFAULT: str = _facts.HTTP_WITHOUT_HEADER
"""The version a Streamable HTTP server assumes when a request names none."""
HANDSHAKE: tuple[str, ...] = tuple(reversed([r for r in _facts.REVISIONS if _ERA[r] == "handshake"]))
"""Handshake-era versions, newest first."""
STATELESS: tuple[str, ...] = tuple(reversed([r for r in _facts.REVISIONS if _ERA[r] == "stateless"]))
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


def served(versions: Iterable[str] | None) -> tuple[str, ...]:
    """The versions a server limited to ``versions`` speaks (``Server(versions=...)``), in
    :data:`SUPPORTED`'s order; None: all of them. A ValueError names a version the runtime
    does not speak, and an empty list."""
    if versions is None:
        return SUPPORTED
    asked = [versions] if isinstance(versions, str) else list(versions)
    unknown = [v for v in asked if v not in SUPPORTED]
    if unknown:
        raise ValueError(
            f"unknown protocol version(s) {', '.join(map(repr, unknown))}: use some of {', '.join(SUPPORTED)}"
        )
    kept = tuple(v for v in SUPPORTED if v in asked)
    if not kept:
        raise ValueError("versions= names no protocol version: give at least one, or None for all")
    return kept


def negotiate_among(requested: str, versions: tuple[str, ...]) -> str | None:
    """The version an ``initialize`` answer names on a server speaking only ``versions``:
    the client's if it is among them, else the newest handshake-era one among them; None
    when they hold no handshake-era version (the handshake is refused)."""
    if requested in versions and _ERA[requested] == "handshake":
        return requested
    return next((v for v in versions if _ERA[v] == "handshake"), None)


def of_era(versions: Iterable[str], era: Era) -> tuple[str, ...]:
    """Those of ``versions`` (known ones) that belong to ``era``, in the order given."""
    return tuple(v for v in versions if _ERA.get(v) == era)


def era_of(version: str | None) -> Era | None:
    """The era of a version we speak, or None for one we do not."""
    return _ERA.get(version) if isinstance(version, str) else None


def primes_streams(version: str | None) -> bool:
    """Whether Streamable HTTP streams of this version open with a priming event."""
    return isinstance(version, str) and version in _facts.PRIMING


def method_exists(direction: str, method: str, version: str) -> bool:
    """Whether ``method`` is sent in ``direction`` ("c2s"/"s2c") in ``version``."""
    return availability.exists(direction, method, version)


@cache
def bindings(version: str) -> ModuleType:
    """The committed bindings package that decodes ``version`` (imported on first use: a
    handshake-era server never loads the stateless-era types)."""
    package = _facts.BINDINGS[version].replace("-", "_")
    return importlib.import_module(f"mcpgen.protocol.v{package}")
