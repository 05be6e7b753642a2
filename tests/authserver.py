"""The test authorization server: authlib on loopback (see :mod:`mcpgen.testing.authserver`,
where it lives so that projects made with ``mcpgen new --auth`` test against it too)."""

from __future__ import annotations

from mcpgen.testing.authserver import DPOP_ALGS, SCOPES, AuthServer, Client

__all__ = ["DPOP_ALGS", "SCOPES", "AuthServer", "Client"]
