"""DPoP (RFC 9449) and the workload-identity JWT-bearer grant (RFC 7523, SEP-1933) in the
OAuth client, against a real authorization server (mcpgen.testing.AuthServer, authlib) and
a protected mcpgen server on loopback (tests/oauth_parties.py), whose proof checks are
PyJWT's, not the client's nor the authorization server's."""

from __future__ import annotations

import time
from typing import Any

import httpx
import jwt
import pytest

from mcpgen import Client
from mcpgen.generated import TextContent
from mcpgen.runtime.auth.challenge import challenge_params
from mcpgen.runtime.auth.dpop import DPoP, DPoPKey, nonce_challenge
from mcpgen.runtime.auth.oauth import ClientInfo, OAuthClient, OAuthError, WorkloadIdentity
from tests.oauth_parties import WORKLOAD_CLIENT, Parties, check_proof, thumbprint

pytestmark = pytest.mark.anyio
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"


async def echo_twice(parties: Parties, auth: OAuthClient, **options: Any) -> None:
    async with Client.http(parties.mcp_url, auth=auth, **options) as client:
        for text in ("one", "two"):
            assert (await client.call_tool("echo", {"text": text})).content == [TextContent(text=text)]


def proofs(parties: Parties) -> list[dict[str, Any]]:
    return [r["proof"] for r in parties.mcp_requests if r.get("proof") is not None]


# ---------------------------------------------------------------- proofs on their own


def test_proof_claims_verified_by_pyjwt() -> None:
    dpop = DPoP()
    proof = dpop.proof("post", "https://rs.example/mcp?x=1#f", access_token="tok")
    checked = check_proof(proof, "POST", "https://rs.example/mcp", "tok")  # htu without query/fragment, ath
    assert checked["jkt"] == dpop.key.thumbprint == thumbprint(dpop.key.public_jwk)  # RFC 7638 by hand
    assert "d" not in checked["header"]["jwk"] and "nonce" not in checked["claims"]
    assert abs(checked["claims"]["iat"] - time.time()) < 5
    other = check_proof(
        dpop.proof("POST", "https://rs.example/mcp", access_token="tok"), "POST", "https://rs.example/mcp", "tok"
    )
    assert other["claims"]["jti"] != checked["claims"]["jti"]  # fresh every time
    token_request = check_proof(dpop.proof("POST", "https://as.example/token"), "POST", "https://as.example/token")
    assert "ath" not in token_request["claims"]


def test_nonce_is_kept_per_origin_and_challenges_are_recognised() -> None:
    dpop = DPoP()
    rs = httpx.Request("POST", "https://rs.example/mcp")
    refused = httpx.Response(
        401, headers={"www-authenticate": 'DPoP error="use_dpop_nonce"', "dpop-nonce": "n1"}, request=rs
    )
    assert nonce_challenge(refused) and dpop.note(refused) and not dpop.note(refused)
    as_refused = httpx.Response(
        400,
        json={"error": "use_dpop_nonce"},
        headers={"dpop-nonce": "n2"},
        request=httpx.Request("POST", "https://as.example/token"),
    )
    assert nonce_challenge(as_refused) and dpop.note(as_refused)
    assert not nonce_challenge(httpx.Response(401, headers={"www-authenticate": "DPoP"}, request=rs))
    claims = jwt.decode(dpop.proof("GET", "https://rs.example/other"), options={"verify_signature": False})
    assert claims["nonce"] == "n1"
    claims = jwt.decode(dpop.proof("POST", "https://as.example/token"), options={"verify_signature": False})
    assert claims["nonce"] == "n2"
    assert "nonce" not in jwt.decode(dpop.proof("POST", "https://third.example/"), options={"verify_signature": False})


def test_key_round_trips_through_pem() -> None:
    key = DPoPKey()
    again = DPoPKey.from_pem(key.to_pem())
    assert again.thumbprint == key.thumbprint and again.public_jwk == key.public_jwk


def test_challenge_params_per_scheme() -> None:
    header = 'DPoP error="use_dpop_nonce", algs="ES256", Bearer realm="r", scope="a b"'
    assert challenge_params(header, "dpop") == {"error": "use_dpop_nonce", "algs": "ES256"}
    assert challenge_params(header, "bearer") == {"realm": "r", "scope": "a b"}


# ---------------------------------------------------------------- against the real parties


async def test_dpop_bound_token_presented_with_a_fresh_proof_per_request() -> None:
    async with Parties().running() as parties:
        await echo_twice(parties, OAuthClient())
    token_proofs = [r["proof"] for r in parties.token_requests]
    assert len(token_proofs) == 1 and token_proofs[0] is not None  # the token request carried a proof
    bound = token_proofs[0]["jkt"]
    presented = [r for r in parties.mcp_requests if r["authorization"]]
    assert presented and all(r["scheme"] == "DPoP" and "error" not in r for r in presented)
    seen = proofs(parties)
    assert len(seen) == len(presented) >= 3  # discover and two calls, at least
    assert len({p["claims"]["jti"] for p in seen}) == len(seen)
    assert {p["jkt"] for p in seen} == {bound}


async def test_nonces_from_the_authorization_and_resource_servers() -> None:
    async with Parties(as_nonce="as-nonce-1", rs_nonce="rs-nonce-1").running() as parties:
        await echo_twice(parties, OAuthClient())
    # token endpoint: refused without the nonce, then asked again with it (once)
    statuses = [(r["status"], r["proof"]["claims"].get("nonce")) for r in parties.token_requests]
    assert statuses == [(400, None), (200, "as-nonce-1")]
    # MCP server: the first DPoP request refused for its nonce, retried with it; from then on
    # every proof carries it
    presented = [r for r in parties.mcp_requests if r.get("proof") is not None]
    assert presented[0].get("error") == "nonce" and "nonce" not in presented[0]["proof"]["claims"]
    assert all(r["proof"]["claims"].get("nonce") == "rs-nonce-1" and "error" not in r for r in presented[1:])
    assert len(presented) >= 4


async def test_no_dpop_unless_offered_or_asked_for() -> None:
    async with Parties(dpop=False).running() as parties:
        await echo_twice(parties, OAuthClient())
    assert all(r["proof"] is None for r in parties.token_requests)
    presented = [r for r in parties.mcp_requests if r["authorization"]]
    assert presented and all(r["scheme"] == "Bearer" for r in presented)
    async with Parties(dpop=False).running() as parties:  # dpop="always": a proof anyway; AS binds
        await echo_twice(parties, OAuthClient(dpop="always"))
    assert parties.token_requests[0]["proof"] is not None
    assert {r["scheme"] for r in parties.mcp_requests if r["authorization"]} == {"DPoP"}
    async with Parties().running() as parties:  # dpop="never": Bearer although offered
        await echo_twice(parties, OAuthClient(dpop="never"))
    assert {r["scheme"] for r in parties.mcp_requests if r["authorization"]} == {"Bearer"}


async def test_nonce_retry_happens_once() -> None:
    """A resource server that never accepts the nonce it hands out: one retry with it, then
    its 401 reaches the caller; the token is not renewed for it."""
    async with Parties(rs_nonce="required", rs_nonce_given="not-it").running() as parties:
        with pytest.raises(Exception, match="401"):
            await echo_twice(parties, OAuthClient(), era="stateless")  # one request: server/discover
    refused = [r["proof"]["claims"].get("nonce") for r in parties.mcp_requests if r.get("error") == "nonce"]
    assert refused == [None, "not-it"]
    assert len(parties.token_requests) == 1


# ---------------------------------------------------------------- the workload's JWT-bearer grant


async def test_workload_identity_grant() -> None:
    async with Parties(dpop=False).running() as parties:
        grant = WorkloadIdentity(parties.workload_jwt())
        await echo_twice(parties, OAuthClient(grant=grant, client=ClientInfo(WORKLOAD_CLIENT, auth_method="none")))
        issued = parties.token_requests[-1]
        assert issued["form"]["grant_type"] == JWT_BEARER and issued["status"] == 200
        assert issued["form"]["assertion"] == grant.assertion
        assert issued["form"]["resource"] == parties.mcp_url
        # no registration, no client: the assertion alone (RFC 7523 section 3.1)
        calls: list[int] = []

        async def fresh_jwt() -> str:
            calls.append(1)
            return parties.workload_jwt()

        await echo_twice(parties, OAuthClient(grant=WorkloadIdentity(fresh_jwt)))
        assert calls == [1] and "client_id" not in parties.token_requests[-1]["form"]
        assert len(parties.clients) == 1  # nobody registered


async def test_workload_identity_refused_assertion_is_not_retried() -> None:
    async with Parties(dpop=False).running() as parties:
        for assertion in (parties.workload_jwt(expires_in=-120), parties.workload_jwt(audience="https://elsewhere")):
            parties.token_requests.clear()
            auth = OAuthClient(
                grant=WorkloadIdentity(assertion), client=ClientInfo(WORKLOAD_CLIENT, auth_method="none")
            )
            with pytest.raises(OAuthError, match="invalid_grant"):
                await echo_twice(parties, auth)
            # one token request: no retry, no other grant tried
            assert [(r["form"]["grant_type"], r["status"]) for r in parties.token_requests] == [(JWT_BEARER, 400)]


async def test_workload_identity_with_dpop() -> None:
    async with Parties(as_nonce="n").running() as parties:
        grant = WorkloadIdentity(parties.workload_jwt())
        await echo_twice(parties, OAuthClient(grant=grant))
    assert [(r["status"], r["form"]["grant_type"]) for r in parties.token_requests] == [
        (400, JWT_BEARER),
        (200, JWT_BEARER),
    ]
    assert {r["scheme"] for r in parties.mcp_requests if r["authorization"]} == {"DPoP"}
