"""mcpgen.testing.AuthServer's own behaviour where the client tests reach it only indirectly:
a public client's refresh token is bound to its DPoP key and rotated, the token endpoint's
DPoP nonce, and proofs with claims of the wrong type refused (400), never a crash. Real
server on loopback, plain httpx requests."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from joserfc import jws
from joserfc.jwk import ECKey

from mcpgen.runtime.auth.dpop import DPoP
from mcpgen.testing.authserver import AuthServer

REDIRECT = "http://127.0.0.1:9/callback"  # never visited: the code is read off the redirect


@pytest.fixture(scope="module")
def auth_server() -> Iterator[AuthServer]:
    with AuthServer(default_resource="https://rs.example/mcp") as server:
        server.add_client("pub", None, redirect_uris=[REDIRECT], grant_types=["authorization_code", "refresh_token"])
        yield server


def code_grant(auth_server: AuthServer, dpop: DPoP) -> httpx.Response:
    """Code + PKCE for the public client ``pub``; the token endpoint's answer."""
    verifier = secrets.token_urlsafe(32)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    authorized = httpx.get(
        f"{auth_server.issuer}/authorize",
        params={
            "response_type": "code",
            "client_id": "pub",
            "redirect_uri": REDIRECT,
            "scope": "mcp",
            "state": "s",
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        },
    )
    assert authorized.status_code == 302, authorized.text
    code = parse_qs(urlsplit(authorized.headers["location"]).query)["code"][0]
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT, "code_verifier": verifier}
    return token(auth_server, dpop, {**form, "client_id": "pub"})


def token(auth_server: AuthServer, dpop: DPoP | None, form: dict[str, str], proof: str | None = None) -> httpx.Response:
    url = f"{auth_server.issuer}/token"
    headers = {}
    if proof is not None or dpop is not None:
        headers["DPoP"] = proof if proof is not None else dpop.proof("POST", url)  # type: ignore[union-attr]
    return httpx.post(url, data=form, headers=headers)


def refresh(auth_server: AuthServer, dpop: DPoP, refresh_token: str) -> httpx.Response:
    return token(auth_server, dpop, {"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": "pub"})


def test_public_client_refresh_token_is_bound_to_its_key_and_rotated(auth_server: AuthServer) -> None:
    dpop = DPoP()
    issued = code_grant(auth_server, dpop)
    assert issued.status_code == 200, issued.text
    first = issued.json()
    assert first["token_type"] == "DPoP" and "refresh_token" in first
    stolen = refresh(auth_server, DPoP(), first["refresh_token"])  # another key: RFC 9449 section 5
    assert (stolen.status_code, stolen.json()["error"]) == (400, "invalid_grant")
    renewed = refresh(auth_server, dpop, first["refresh_token"])
    assert renewed.status_code == 200, renewed.text
    again = renewed.json()
    assert again["token_type"] == "DPoP" and again["refresh_token"] != first["refresh_token"]
    claims = auth_server.tokens[again["access_token"]].claims
    assert claims["aud"] == "https://rs.example/mcp" and claims["cnf"]["jkt"] == dpop.key.thumbprint
    reused = refresh(auth_server, dpop, first["refresh_token"])  # rotated: the old one is spent
    assert (reused.status_code, reused.json()["error"]) == (400, "invalid_grant")


def test_token_endpoint_nonce(auth_server: AuthServer) -> None:
    auth_server.dpop_nonce = "n-1"
    try:
        dpop = DPoP()
        refused = code_grant(auth_server, dpop)  # the proof has no nonce yet
        assert (refused.status_code, refused.json()["error"]) == (400, "use_dpop_nonce")
        assert refused.headers["dpop-nonce"] == "n-1"
        dpop.note(refused)
        issued = code_grant(auth_server, dpop)  # the nonce in its proof now
        assert issued.status_code == 200 and issued.json()["token_type"] == "DPoP", issued.text
    finally:
        auth_server.dpop_nonce = None


@pytest.mark.parametrize(
    "claims",
    [
        {"iat": "now", "jti": "a"},
        {"iat": None, "jti": "b"},
        {"jti": ["c"]},
        {"jti": {"d": 1}},
    ],
)
def test_proof_with_claims_of_the_wrong_type_is_refused(auth_server: AuthServer, claims: dict[str, Any]) -> None:
    key = ECKey.generate_key("P-256")
    url = f"{auth_server.issuer}/token"
    body = {"htm": "POST", "htu": url, "iat": int(time.time()), "jti": uuid.uuid4().hex, **claims}
    body = {k: v for k, v in body.items() if v is not None}
    header = {"typ": "dpop+jwt", "alg": "ES256", "jwk": key.as_dict(private=False)}
    proof = jws.serialize_compact(header, json.dumps(body).encode(), key)
    answer = token(auth_server, None, {"grant_type": "client_credentials"}, proof=proof)
    assert (answer.status_code, answer.json()["error"]) == (400, "invalid_dpop_proof")
