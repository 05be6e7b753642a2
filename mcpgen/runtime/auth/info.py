"""Who the request being served acts for: the verified access token's subject, scopes and claims.

A module of its own with no dependencies, so that :mod:`mcpgen.runtime.server.context` can read
it without importing the JOSE and HTTP machinery of :mod:`mcpgen.runtime.auth.bearer`.
The HTTP transport sets :data:`current_auth` for the whole handling of a request; tasks
and worker threads started for it copy the context, so the handler sees it as
``ctx.auth``."""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any

import msgspec


# A frozen msgspec Struct rather than a frozen dataclass (the same construction, equality
# and repr): every server imports this module, and a frozen dataclass takes ~0.7 ms to
# create at import.
class AuthInfo(msgspec.Struct, frozen=True):
    """A verified access token: never the token itself, only what it says.

    ``subject`` is the ``sub`` claim (for a client credentials grant, usually the client
    id), ``client_id`` the OAuth client it was issued to, ``scopes`` what it grants,
    ``claims`` every claim of a JWT (or every member of an introspection answer),
    ``expires_at`` its ``exp`` (seconds since the epoch), and ``jkt`` the thumbprint of
    the key a DPoP-bound token is bound to (None for a plain bearer token)."""

    issuer: str
    subject: str | None
    client_id: str | None
    scopes: frozenset[str]
    claims: Mapping[str, Any] = msgspec.field(default_factory=dict)
    expires_at: int | None = None
    jkt: str | None = None

    def has_scopes(self, required: tuple[str, ...] | list[str] | frozenset[str]) -> bool:
        return self.scopes.issuperset(required)

    @property
    def owner(self) -> tuple[str, str]:
        """Whom a session or task opened with this token belongs to: later requests must
        come from the same one (a stolen session id alone is worth nothing). The issuer and
        the subject, else the client id, each named by its kind: ``sub=bob`` and
        ``client_id=bob`` are two principals. A token naming neither is refused before it
        gets here (:meth:`~mcpgen.runtime.auth.bearer.BearerAuth.authenticate`)."""
        if self.subject:
            return (self.issuer, f"sub:{self.subject}")
        if self.client_id:
            return (self.issuer, f"client:{self.client_id}")
        return (self.issuer, "")


current_auth: ContextVar[AuthInfo | None] = ContextVar("mcpgen_auth", default=None)


def current_owner() -> tuple[str, str] | None:
    """The owner of the request being served (None on an unprotected server)."""
    info = current_auth.get()
    return info.owner if info is not None else None
