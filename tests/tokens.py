"""A token verifier of the tests' own (``BearerAuth(verifier=...)``, the public extension
point): each token string stands for exactly the claims a case needs, with no issuer to run."""

from __future__ import annotations

from collections.abc import Mapping

from mcpgen.runtime.auth.info import AuthInfo
from mcpgen.runtime.auth.token_verify import InvalidToken

ISSUER = "https://issuer.example"


def principal(subject: str) -> AuthInfo:
    """A token of ``ISSUER`` for ``subject`` (client ``app``, scope ``mcp``)."""
    return AuthInfo(ISSUER, subject, "app", frozenset({"mcp"}))


class Tokens:
    """Verifies a token by looking it up (default: ``alice`` and ``bob``); others are invalid."""

    def __init__(self, table: Mapping[str, AuthInfo] | None = None) -> None:
        self.table = dict(table) if table is not None else {"alice": principal("alice"), "bob": principal("bob")}

    async def verify(self, token: str) -> AuthInfo:
        found = self.table.get(token)
        if found is None:
            raise InvalidToken("unknown token")
        return found
