"""One worker of a DPoP-protected server sharing a Redis store with others, for the test of
DPoP across workers (issue 36, point 20): several processes serving one public resource URL
(as behind a load balancer), each on its own port so that a test can choose which one a
request reaches.

Its token verifier knows one opaque access token, bound to one key thumbprint; the proofs
are checked by mcpgen's own DpopVerifier, with nonces, through the shared store.

Run: python tests/servers/dpop_worker.py PORT RESOURCE REDIS_URL TOKEN JKT
"""

from __future__ import annotations

import sys

from mcpgen import Server
from mcpgen.runtime.auth.bearer import BearerAuth
from mcpgen.runtime.auth.info import AuthInfo
from mcpgen.runtime.auth.token_verify import InvalidToken
from mcpgen.runtime.stores.redis_store import RedisStore


class OneToken:
    """A TokenVerifier for one opaque token, DPoP-bound to ``jkt``."""

    def __init__(self, token: str, jkt: str) -> None:
        self.token = token
        self.jkt = jkt

    async def verify(self, token: str) -> AuthInfo:
        if token != self.token:
            raise InvalidToken("the token is not known")
        return AuthInfo(issuer="https://as.test", subject="alice", client_id="c", scopes=frozenset(), jkt=self.jkt)


def main() -> None:
    port, resource, redis_url, token, jkt = sys.argv[1:6]
    auth = BearerAuth("https://as.test", resource, verifier=OneToken(token, jkt), dpop="required", dpop_nonces=True)
    server = Server("dpop-worker", auth=auth)

    @server.tool()
    def echo(text: str) -> str:
        return text

    server.run("http", port=int(port), store=RedisStore(redis_url))


if __name__ == "__main__":
    main()
