"""A real OAuth authorization server and a protected MCP server, on loopback, for the OAuth
client's tests (tests/runtime/auth/test_auth_dpop.py, tests/cli/test_cli_auth.py).

The authorization server is the project's one test authorization server,
:class:`mcpgen.testing.AuthServer` (authlib: code + PKCE, refresh, the RFC 7523 JWT-bearer
grant for the workload, DPoP-bound tokens and its optional nonce), served here in the test's
event loop behind a layer that records every token request and checks its DPoP proof a
second time, with the checker below rather than the AS's.

The resource server is mcpgen's Streamable HTTP app behind an ASGI layer that checks the
access token (PyJWT against the authorization server's key: issuer, audience, expiry) and,
for a DPoP token, the proof. Proofs are checked here with PyJWT, independently of the
client's joserfc, and the RFC 7638 thumbprint is computed by hand: a client bug in either
would not be mirrored by the verifier. Every proof seen is kept for the tests to inspect.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

import jwt
import uvicorn
from cryptography.hazmat.primitives.asymmetric import ec
from joserfc.jwk import ECKey
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mcpgen import Server
from mcpgen.testing.authserver import JWT_BEARER, AuthServer, Client
from tests.http_server import free_port

WORKLOAD_ISSUER = "https://workload-platform.test"
WORKLOAD_CLIENT = "workload"
PRM_PATH = "/.well-known/oauth-protected-resource/mcp"
SCOPE = "mcp"
PROOF_WINDOW = 300  # seconds either side of now a proof's iat may be


# ---------------------------------------------------------------- DPoP, checked independently


def thumbprint(jwk: dict[str, Any]) -> str:
    """RFC 7638 section 3.2: SHA-256 over the required members, sorted, no whitespace."""
    members = {k: jwk[k] for k in ("crv", "kty", "x", "y")}
    digest = hashlib.sha256(json.dumps(members, separators=(",", ":"), sort_keys=True).encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


class ProofError(Exception):
    pass


def check_proof(proof: str | None, method: str, url: str, access_token: str | None = None) -> dict[str, Any]:
    """RFC 9449 section 4.3 with PyJWT; the proof's header and claims."""
    if not proof or "," in proof:
        raise ProofError("missing or several DPoP proofs")
    header = jwt.get_unverified_header(proof)
    jwk = header.get("jwk")
    if header.get("typ") != "dpop+jwt" or header.get("alg") != "ES256" or not isinstance(jwk, dict) or "d" in jwk:
        raise ProofError(f"bad proof header {header}")
    key = jwt.PyJWK(jwk, algorithm="ES256")
    claims = jwt.decode(proof, key.key, algorithms=["ES256"], options={"verify_aud": False})
    if claims.get("htm") != method or claims.get("htu") != url:
        raise ProofError(f"proof for {claims.get('htm')} {claims.get('htu')}, not {method} {url}")
    if not isinstance(claims.get("jti"), str) or abs(time.time() - claims.get("iat", 0)) > PROOF_WINDOW:
        raise ProofError("proof without jti or out of its time window")
    if access_token is not None:
        digest = base64.urlsafe_b64encode(hashlib.sha256(access_token.encode()).digest()).rstrip(b"=").decode()
        if claims.get("ath") != digest:
            raise ProofError("ath does not match the access token")
    elif "ath" in claims:
        raise ProofError("ath in a token request's proof")
    return {"header": header, "claims": claims, "jkt": thumbprint(jwk)}


# ---------------------------------------------------------------- both parties


@dataclass
class Parties:
    """The authorization server (mcpgen.testing.AuthServer) and the protected MCP server,
    each on its own port (its own origin: DPoP nonces are per origin)."""

    as_nonce: str | None = None  # the nonce the token endpoint insists on, if any
    rs_nonce: str | None = None  # the nonce the MCP server insists on, if any
    rs_nonce_given: str | None = None  # the nonce it hands out (rs_nonce unless set: a broken server)
    dpop: bool = True  # the AS offers DPoP (lists it in its metadata)
    rs_port: int = field(default_factory=free_port)
    token_requests: list[dict[str, Any]] = field(default_factory=list)  # form, proof (checked), answer status
    mcp_requests: list[dict[str, Any]] = field(default_factory=list)  # scheme, proof (checked) or error
    workload_key: ec.EllipticCurvePrivateKey = field(default_factory=lambda: ec.generate_private_key(ec.SECP256R1()))
    jtis: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        # offline_access listed: the client asks for it and registers for refresh tokens
        self.auth = AuthServer(
            scopes=[SCOPE, "offline_access"],
            default_resource=self.mcp_url,
            dpop_nonce=self.as_nonce,
            offer_dpop=self.dpop,
        )
        self.auth.add_client(WORKLOAD_CLIENT, None, grant_types=[JWT_BEARER])
        self.auth.trust_assertions(WORKLOAD_ISSUER, ECKey.import_key(self.workload_key.public_key()), WORKLOAD_CLIENT)
        # the MCP server checks tokens with PyJWT against the AS's key, not with the AS's code
        self.token_key = jwt.PyJWK(self.auth.signing_key.as_dict(private=False), algorithm="ES256").key

    @property
    def issuer(self) -> str:
        return self.auth.issuer

    @property
    def clients(self) -> dict[str, Client]:
        return self.auth.clients

    @property
    def token_endpoint(self) -> str:
        return f"{self.issuer}/token"

    @property
    def mcp_url(self) -> str:
        return f"http://127.0.0.1:{self.rs_port}/mcp"

    @property
    def prm_url(self) -> str:
        return f"http://127.0.0.1:{self.rs_port}{PRM_PATH}"

    def workload_jwt(self, audience: str | None = None, expires_in: int = 300) -> str:
        now = int(time.time())
        claims = {
            "iss": WORKLOAD_ISSUER,
            "sub": "system:serviceaccount:ci:deployer",
            "aud": audience or self.token_endpoint,
            "iat": now,
            "exp": now + expires_in,
            "jti": secrets.token_hex(8),
        }
        return jwt.encode(claims, self.workload_key, algorithm="ES256")

    # ------------------------------------------------------------ in front of the AS

    def watch_tokens(self, app: Any) -> Any:
        """An ASGI layer in front of the AS: every token request is recorded (its form, its
        DPoP proof as check_proof sees it, the answer's status), and a proof check_proof
        refuses is answered 400 here, whatever the AS would make of it: a second opinion."""

        async def watched(scope: dict[str, Any], receive: Any, send: Any) -> None:
            if scope["type"] != "http" or scope["path"] != "/token":
                await app(scope, receive, send)
                return
            body, more = b"", True
            while more:
                message = await receive()
                body += message.get("body", b"")
                more = message.get("more_body", False)
            record: dict[str, Any] = {"form": dict(parse_qsl(body.decode(), keep_blank_values=True)), "proof": None}
            self.token_requests.append(record)
            headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
            if "dpop" in headers:
                try:
                    record["proof"] = check_proof(headers["dpop"], "POST", self.token_endpoint)
                except (ProofError, jwt.PyJWTError) as exc:
                    record["status"] = 400
                    refusal = JSONResponse({"error": "invalid_dpop_proof", "error_description": str(exc)}, 400)
                    await refusal(scope, receive, send)
                    return
            replayed = False

            async def replay() -> dict[str, Any]:
                nonlocal replayed
                if replayed:
                    return await receive()  # type: ignore[no-any-return]
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}

            async def status(message: dict[str, Any]) -> None:
                if message["type"] == "http.response.start":
                    record["status"] = message["status"]
                await send(message)

            await app(scope, replay, status)

        return watched

    # ------------------------------------------------------------ RS routes

    def prm(self, request: Request) -> JSONResponse:
        return JSONResponse(
            {"resource": self.mcp_url, "authorization_servers": [self.issuer], "scopes_supported": [SCOPE]}
        )

    def protect(self, app: Any) -> Any:
        """The ASGI layer in front of the MCP server's app."""

        async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
            if scope["type"] != "http":
                await app(scope, receive, send)
                return
            headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
            refusal = self.refuse(scope["method"], headers)
            if refusal is None:
                await app(scope, receive, send)
                return
            await refusal(scope, receive, send)

        return guarded

    def refuse(self, method: str, headers: dict[str, str]) -> Response | None:
        record: dict[str, Any] = {"method": method, "authorization": headers.get("authorization", "")}
        self.mcp_requests.append(record)
        scheme, _, token = record["authorization"].partition(" ")
        challenge = f'resource_metadata="{self.prm_url}", scope="{SCOPE}"'
        if not token:
            return self.challenge(401, challenge)
        try:
            claims = jwt.decode(token, self.token_key, algorithms=["ES256"], audience=self.mcp_url, issuer=self.issuer)
        except jwt.PyJWTError:
            record["error"] = "invalid token"
            return self.challenge(401, f'error="invalid_token", {challenge}')
        bound = claims.get("cnf", {}).get("jkt")
        if bound is None:
            record["scheme"] = scheme
            return None if scheme.lower() == "bearer" else self.challenge(401, f'error="invalid_token", {challenge}')
        record["scheme"] = scheme
        if scheme.lower() != "dpop":
            record["error"] = "a DPoP-bound token presented as Bearer"
            return self.challenge(401, f'error="invalid_token", {challenge}')
        try:
            checked = check_proof(headers.get("dpop"), method, self.mcp_url, token)
        except (ProofError, jwt.PyJWTError) as exc:
            record["error"] = str(exc)
            return self.challenge(401, f'error="invalid_dpop_proof", {challenge}')
        record["proof"] = checked
        jti = checked["claims"]["jti"]
        if checked["jkt"] != bound or jti in self.jtis:
            record["error"] = "replayed or foreign proof"
            return self.challenge(401, f'error="invalid_dpop_proof", {challenge}')
        self.jtis.add(jti)
        if self.rs_nonce is not None and checked["claims"].get("nonce") != self.rs_nonce:
            record["error"] = "nonce"
            return Response(
                status_code=401,
                headers={
                    "WWW-Authenticate": f'DPoP error="use_dpop_nonce", {challenge}',
                    "DPoP-Nonce": self.rs_nonce_given or self.rs_nonce,
                },
            )
        return None

    def challenge(self, status: int, params: str) -> Response:
        scheme = "DPoP" if self.dpop else "Bearer"
        return Response(status_code=status, headers={"WWW-Authenticate": f"{scheme} {params}"})

    # ------------------------------------------------------------ running

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Parties]:
        server = Server("protected")

        @server.tool()
        def echo(text: str) -> str:
            """Say it back."""
            return text

        authorization = self.watch_tokens(self.auth.app())
        mcp = self.protect(server.http_app())
        metadata = Starlette(routes=[Route(PRM_PATH, self.prm)])

        async def resource(scope: dict[str, Any], receive: Any, send: Any) -> None:
            routed = metadata if scope["type"] == "http" and scope["path"] == PRM_PATH else mcp
            await routed(scope, receive, send)

        servers = [
            uvicorn.Server(
                uvicorn.Config(
                    authorization, host="127.0.0.1", port=self.auth.port, log_level="warning", lifespan="off"
                )
            ),
            uvicorn.Server(uvicorn.Config(resource, host="127.0.0.1", port=self.rs_port, log_level="warning")),
        ]
        tasks = [asyncio.ensure_future(web.serve()) for web in servers]
        try:
            while not all(web.started for web in servers):
                await asyncio.sleep(0.01)
            yield self
        finally:
            for web in servers:
                web.should_exit = True
            await asyncio.gather(*tasks)
