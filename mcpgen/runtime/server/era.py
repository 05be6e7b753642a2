"""Which protocol era a server serves a request in: the one rule every transport asks.

A stateless-era (2026-07-28 on) request names its protocol version in its own ``_meta``
(a key no handshake-era client sends), and over HTTP in the ``MCP-Protocol-Version`` header
too. The header alone is not proof: handshake-era clients send it as well, after
``initialize``, naming a handshake-era version."""

from __future__ import annotations

from typing import Any

from mcpgen.runtime.shared.meta import META_VERSION
from mcpgen.runtime.versions import Era, era_of


def request_era(*, header: str | None = None, meta: Any = None) -> Era:
    """The era of a request, from what it names: ``meta``, its ``params._meta`` (stdio's
    first frame: the version key makes it stateless, whatever its value; the stateless
    checks then answer a version they do not speak with -32022), or ``header``, its
    ``MCP-Protocol-Version`` (HTTP: stateless unless absent or a handshake-era version; an
    unknown version is stateless too, answered -32022 by the same checks)."""
    if isinstance(meta, dict) and META_VERSION in meta:
        return "stateless"
    if header is not None and era_of(header.strip(" \t")) != "handshake":
        return "stateless"
    return "handshake"
