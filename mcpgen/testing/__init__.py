"""Helpers for testing MCP servers built with mcpgen (needs the ``testing`` extra).

:class:`AuthServer` is a real OAuth 2.1 authorization server (authlib) that a test starts
on loopback, so that a protected server (``Server(auth=BearerAuth(...))``) is tested with
real tokens from a real token endpoint: mcpgen's own tests use it, and so do the tests of a
project made with ``mcpgen new --auth``. It lives in the package rather than in each
project so that a project's tests need no copy of it to keep up to date."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcpgen.testing.authserver import AuthServer

__all__ = ["AuthServer"]


def __getattr__(name: str) -> Any:
    # Imported on first use: authlib and starlette are test-time dependencies only.
    if name == "AuthServer":
        from mcpgen.testing.authserver import AuthServer

        return AuthServer
    raise AttributeError(name)
