"""The handshake era's ``initialize`` types with the ``extensions`` member of SEP-2133.

The 2025-11-25 schema does not name ``capabilities.extensions`` (its capabilities allow
members they do not name), so its bindings drop it on decoding; the stateless era's name
it. A side that declares an extension decodes the peer's ``initialize`` with these, so it
learns the peer's extensions in both eras. Loaded only by a side that declares one.
"""

from __future__ import annotations

from typing import Any

from msgspec import UNSET, UnsetType

from mcpgen.protocol.v2025_11_25 import (
    ClientCapabilities,
    InitializeRequestParams,
    InitializeResult,
    ServerCapabilities,
)


class ExtendedClientCapabilities(ClientCapabilities, kw_only=True):
    extensions: dict[str, dict[str, Any]] | UnsetType = UNSET


class ExtendedServerCapabilities(ServerCapabilities, kw_only=True):
    extensions: dict[str, dict[str, Any]] | UnsetType = UNSET


class ExtendedInitializeRequestParams(InitializeRequestParams, kw_only=True):
    capabilities: ExtendedClientCapabilities


class ExtendedInitializeResult(InitializeResult, kw_only=True):
    capabilities: ExtendedServerCapabilities
