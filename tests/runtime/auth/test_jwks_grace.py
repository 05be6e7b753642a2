"""Signing keys while the issuer is briefly down (security issue, point 15): a JwtVerifier
whose key cache has expired keeps accepting valid tokens with the last good keys for a
bounded grace period, retrying the JWKS with backoff instead of on every request; past the
grace period it answers "unavailable" (503 at the HTTP layer), and it recovers when the
issuer is back. Against the real test authorization server on loopback."""

from __future__ import annotations

import time

import httpx
import pytest

from mcpgen.runtime.auth.token_verify import JwtVerifier, VerifierUnavailable
from mcpgen.testing import AuthServer

pytestmark = pytest.mark.anyio
AUDIENCE = "http://127.0.0.1:1/mcp"


def token(issuer: AuthServer) -> str:
    reply = httpx.post(
        f"{issuer.issuer}/token",
        data={"grant_type": "client_credentials", "scope": "mcp", "resource": AUDIENCE},
        auth=("svc", "svc-secret"),
    )
    assert reply.status_code == 200, reply.text
    return str(reply.json()["access_token"])


async def test_the_last_good_keys_serve_through_an_outage_then_expire() -> None:
    issuer = AuthServer(scopes=["mcp"])
    issuer.add_client("svc", "svc-secret", scope="mcp")
    with issuer:
        good = token(issuer)
        verifier = JwtVerifier(issuer.issuer, AUDIENCE, jwks_ttl=0.2, jwks_grace=1.5)
        assert (await verifier.verify(good)).subject == "svc"
    # The issuer is down now; the cached keys go stale.
    time.sleep(0.3)
    assert (await verifier.verify(good)).subject == "svc"  # within the grace period
    tries = verifier._failures
    for _ in range(20):  # backoff: not a fetch per request
        assert (await verifier.verify(good)).subject == "svc"
    assert verifier._failures == tries
    time.sleep(1.6)  # past ttl + grace
    with pytest.raises(VerifierUnavailable):
        await verifier.verify(good)


async def test_a_verifier_with_no_keys_yet_is_unavailable_and_backs_off() -> None:
    issuer = AuthServer(scopes=["mcp"])
    issuer.add_client("svc", "svc-secret", scope="mcp")
    with issuer:
        good = token(issuer)
    verifier = JwtVerifier(issuer.issuer, AUDIENCE, jwks_url=f"{issuer.issuer}/jwks")
    for _ in range(5):
        with pytest.raises(VerifierUnavailable):
            await verifier.verify(good)
    assert verifier._failures == 1  # the others waited for the backoff instead of fetching


async def test_keys_are_fetched_again_once_the_issuer_is_back() -> None:
    issuer = AuthServer(scopes=["mcp"])
    issuer.add_client("svc", "svc-secret", scope="mcp")
    with issuer:
        good = token(issuer)
        verifier = JwtVerifier(issuer.issuer, AUDIENCE, jwks_ttl=0.2, jwks_grace=30)
        assert (await verifier.verify(good)).subject == "svc"
        fetched = issuer.requests.count("GET /jwks")
        time.sleep(0.3)
        assert (await verifier.verify(good)).subject == "svc"
        assert issuer.requests.count("GET /jwks") == fetched + 1  # refreshed as usual
