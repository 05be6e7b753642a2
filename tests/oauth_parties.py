"""A real OAuth authorization server and a protected MCP server, on loopback, for the OAuth
client's tests (tests/test_auth_dpop.py, tests/test_cli_auth.py).

The authorization server is authlib's (its AuthorizationServer with the authorization code
grant and PKCE, refresh tokens and the RFC 7523 JWT-bearer grant) behind a few Starlette
routes; what authlib does not do is added around it: the DPoP proof check at the token
endpoint (with its optional nonce) and DPoP-bound JWT access tokens (``cnf.jkt``).

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
import contextvars
import hashlib
import json
import os
import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import jwt
import uvicorn
from authlib.oauth2 import AuthorizationServer
from authlib.oauth2.rfc6749 import ClientMixin, OAuth2Request, grants
from authlib.oauth2.rfc6749.requests import BasicOAuth2Payload
from authlib.oauth2.rfc7523 import JWTBearerGrant
from authlib.oauth2.rfc7636 import CodeChallenge
from cryptography.hazmat.primitives.asymmetric import ec
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from mcpgen import Server
from tests.http_server import free_port

os.environ.setdefault("AUTHLIB_INSECURE_TRANSPORT", "1")  # loopback http, in tests only

USER = "alice"
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


# ---------------------------------------------------------------- the authorization server


@dataclass
class RegisteredClient(ClientMixin):  # type: ignore[misc]
    client_id: str
    redirect_uris: list[str] = field(default_factory=list)
    grant_types: list[str] = field(default_factory=lambda: ["authorization_code", "refresh_token"])

    def get_client_id(self) -> str:
        return self.client_id

    def get_default_redirect_uri(self) -> str:
        return self.redirect_uris[0]

    def get_allowed_scope(self, scope: str) -> str:
        return scope

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return redirect_uri in self.redirect_uris

    def check_client_secret(self, client_secret: str) -> bool:
        return False

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return method == "none"

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code"

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in self.grant_types


@dataclass
class Code:
    code: str
    client_id: str
    redirect_uri: str
    scope: str
    code_challenge: str
    code_challenge_method: str

    def get_redirect_uri(self) -> str:
        return self.redirect_uri

    def get_scope(self) -> str:
        return self.scope


@dataclass
class Issued:
    """A refresh token as authlib's refresh grant wants to see it."""

    refresh_token: str
    client_id: str
    scope: str
    revoked: bool = False

    def check_client(self, client: RegisteredClient) -> bool:
        return client.client_id == self.client_id

    def get_scope(self) -> str:
        return self.scope

    def is_revoked(self) -> bool:
        return self.revoked

    def is_expired(self) -> bool:
        return False


class _Request(OAuth2Request):  # type: ignore[misc]
    """An authlib request from a Starlette one whose form was read already (authlib is
    synchronous; Starlette reads bodies asynchronously)."""

    def __init__(self, request: Request, form: dict[str, str]) -> None:
        super().__init__(request.method, str(request.url), headers=dict(request.headers))
        self._args = dict(request.query_params)
        self._form = form
        self.payload = BasicOAuth2Payload({**self._args, **form})

    @property
    def args(self) -> dict[str, str]:
        return self._args

    @property
    def form(self) -> dict[str, str]:
        return self._form


_bound_to: contextvars.ContextVar[str | None] = contextvars.ContextVar("bound_to", default=None)


class AuthServer(AuthorizationServer):  # type: ignore[misc]
    def __init__(self, parties: Parties) -> None:
        super().__init__(scopes_supported=[SCOPE, "offline_access"])
        self.parties = parties

    def query_client(self, client_id: str) -> RegisteredClient | None:
        return self.parties.clients.get(client_id)

    def save_token(self, token: dict[str, Any], request: Any) -> None:
        if "refresh_token" in token:
            client = request.client.client_id
            self.parties.refresh_tokens[token["refresh_token"]] = Issued(token["refresh_token"], client, token["scope"])

    def create_oauth2_request(self, request: _Request) -> _Request:
        return request

    def handle_response(self, status: int, body: Any, headers: list[tuple[str, str]]) -> Response:
        if isinstance(body, dict):
            return JSONResponse(body, status, dict(headers))
        return Response(body, status, dict(headers))

    def send_signal(self, name: str, *args: Any, **kwargs: Any) -> None:
        pass


class CodeGrant(grants.AuthorizationCodeGrant):  # type: ignore[misc]
    TOKEN_ENDPOINT_AUTH_METHODS = ["none"]

    def save_authorization_code(self, code: str, request: _Request) -> None:
        args = request.args
        self.server.parties.codes[code] = Code(
            code,
            request.client.client_id,
            args["redirect_uri"],
            args.get("scope", ""),
            args["code_challenge"],
            args["code_challenge_method"],
        )

    def query_authorization_code(self, code: str, client: RegisteredClient) -> Code | None:
        found: Code | None = self.server.parties.codes.get(code)
        return found if found is not None and found.client_id == client.client_id else None

    def delete_authorization_code(self, authorization_code: Code) -> None:
        self.server.parties.codes.pop(authorization_code.code, None)

    def authenticate_user(self, authorization_code: Code) -> str:
        return USER


class RefreshGrant(grants.RefreshTokenGrant):  # type: ignore[misc]
    TOKEN_ENDPOINT_AUTH_METHODS = ["none"]
    INCLUDE_NEW_REFRESH_TOKEN = True

    def authenticate_refresh_token(self, refresh_token: str) -> Issued | None:
        found: Issued | None = self.server.parties.refresh_tokens.get(refresh_token)
        return found if found is not None and not found.revoked else None

    def authenticate_user(self, refresh_token: Issued) -> str:
        return USER

    def revoke_old_credential(self, refresh_token: Issued) -> None:
        refresh_token.revoked = True


class WorkloadGrant(JWTBearerGrant):  # type: ignore[misc]
    """RFC 7523 section 2.1, authlib's: the workload's JWT, issued by its platform
    (WORKLOAD_ISSUER) for this authorization server's token endpoint, signature, audience
    and expiry checked by authlib."""

    TOKEN_ENDPOINT_AUTH_METHODS = ["none"]

    def get_audiences(self) -> list[str]:
        return [self.server.parties.token_endpoint]

    def resolve_issuer_client(self, issuer: str) -> RegisteredClient | None:
        return self.server.parties.clients.get(WORKLOAD_CLIENT) if issuer == WORKLOAD_ISSUER else None

    def resolve_client_public_key(self, client: RegisteredClient) -> Any:
        from joserfc.jwk import ECKey

        return ECKey.import_key(self.server.parties.workload_key.public_key())

    def authenticate_user(self, subject: str) -> str:
        return subject

    def has_granted_permission(self, client: RegisteredClient, user: str) -> bool:
        return True


WORKLOAD_ISSUER = "https://workload-platform.test"
WORKLOAD_CLIENT = "workload"


# ---------------------------------------------------------------- both parties


@dataclass
class Parties:
    """The authorization server and the protected MCP server, each on its own port (its own
    origin: DPoP nonces are per origin)."""

    as_nonce: str | None = None  # the nonce the token endpoint insists on, if any
    rs_nonce: str | None = None  # the nonce the MCP server insists on, if any
    rs_nonce_given: str | None = None  # the nonce it hands out (rs_nonce unless set: a broken server)
    dpop: bool = True  # the AS offers DPoP (lists ES256 in its metadata)
    expires_in: int = 3600
    as_port: int = field(default_factory=free_port)
    rs_port: int = field(default_factory=free_port)
    clients: dict[str, RegisteredClient] = field(default_factory=dict)
    codes: dict[str, Code] = field(default_factory=dict)
    refresh_tokens: dict[str, Issued] = field(default_factory=dict)
    token_requests: list[dict[str, Any]] = field(default_factory=list)  # form, proof (checked), answer status
    mcp_requests: list[dict[str, Any]] = field(default_factory=list)  # scheme, proof (checked) or error
    signing_key: ec.EllipticCurvePrivateKey = field(default_factory=lambda: ec.generate_private_key(ec.SECP256R1()))
    workload_key: ec.EllipticCurvePrivateKey = field(default_factory=lambda: ec.generate_private_key(ec.SECP256R1()))
    jtis: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.clients[WORKLOAD_CLIENT] = RegisteredClient(WORKLOAD_CLIENT, grant_types=[JWTBearerGrant.GRANT_TYPE])
        self.server = AuthServer(self)
        self.server.register_grant(CodeGrant, [CodeChallenge(required=True)])
        self.server.register_grant(RefreshGrant)
        self.server.register_grant(WorkloadGrant)
        self.server.register_token_generator("default", self.generate_token)

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.as_port}"

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

    def generate_token(
        self,
        grant_type: str,
        client: RegisteredClient,
        user: str | None = None,
        scope: str | None = None,
        expires_in: int | None = None,
        include_refresh_token: bool = True,
    ) -> dict[str, Any]:
        """A JWT access token for the MCP server; bound to the proof's key when the token
        request carried one (the contextvar the token route set)."""
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "sub": user or client.client_id,
            "aud": self.mcp_url,
            "client_id": client.client_id,
            "scope": scope or "",
            "iat": now,
            "exp": now + self.expires_in,
            "jti": secrets.token_hex(8),
        }
        jkt = _bound_to.get()
        if jkt is not None:
            claims["cnf"] = {"jkt": jkt}
        token: dict[str, Any] = {
            "access_token": jwt.encode(claims, self.signing_key, algorithm="ES256"),
            "token_type": "DPoP" if jkt is not None else "Bearer",
            "expires_in": self.expires_in,
            "scope": scope or "",
        }
        if include_refresh_token and grant_type != JWTBearerGrant.GRANT_TYPE:
            token["refresh_token"] = secrets.token_urlsafe(24)
        return token

    # ------------------------------------------------------------ AS routes

    def metadata(self, request: Request) -> JSONResponse:
        body: dict[str, Any] = {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": self.token_endpoint,
            "registration_endpoint": f"{self.issuer}/register",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", JWTBearerGrant.GRANT_TYPE],
            "token_endpoint_auth_methods_supported": ["none"],
            "code_challenge_methods_supported": ["S256"],
            "scopes_supported": [SCOPE, "offline_access"],
        }
        if self.dpop:
            body["dpop_signing_alg_values_supported"] = ["ES256"]
        return JSONResponse(body)

    async def register(self, request: Request) -> JSONResponse:
        """RFC 7591, as little as a public client needs."""
        body = await request.json()
        client = RegisteredClient(f"client-{len(self.clients)}", list(body.get("redirect_uris", [])))
        self.clients[client.client_id] = client
        return JSONResponse(
            {"client_id": client.client_id, "token_endpoint_auth_method": "none", **body}, status_code=201
        )

    async def authorize(self, request: Request) -> Response:
        """The user (alice) is signed in already and consents to everything."""
        authlib_request = _Request(request, {})
        grant = self.server.get_authorization_grant(authlib_request)
        answer: Response = self.server.create_authorization_response(authlib_request, USER, grant)
        location = answer.headers.get("location")
        if answer.status_code != 302 or location is None:
            return answer
        # RFC 9207: say who answers (the client checks it when present)
        return RedirectResponse(f"{location}&{urlencode({'iss': self.issuer})}", status_code=302)

    async def token(self, request: Request) -> Response:
        form = {key: str(value) for key, value in (await request.form()).items()}
        record: dict[str, Any] = {"form": form, "proof": None}
        self.token_requests.append(record)
        proof = request.headers.get("dpop")
        jkt = None
        if proof is not None:
            try:
                checked = check_proof(proof, "POST", self.token_endpoint)
            except (ProofError, jwt.PyJWTError) as exc:
                record["status"] = 400
                return JSONResponse({"error": "invalid_dpop_proof", "error_description": str(exc)}, 400)
            record["proof"] = checked
            if self.as_nonce is not None and checked["claims"].get("nonce") != self.as_nonce:
                record["status"] = 400
                return JSONResponse({"error": "use_dpop_nonce"}, 400, {"DPoP-Nonce": self.as_nonce})
            jkt = checked["jkt"]
        reset = _bound_to.set(jkt)
        try:
            answer: Response = self.server.create_token_response(_Request(request, form))
        finally:
            _bound_to.reset(reset)
        record["status"] = answer.status_code
        return answer

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
            claims = jwt.decode(
                token, self.signing_key.public_key(), algorithms=["ES256"], audience=self.mcp_url, issuer=self.issuer
            )
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

        authorization = Starlette(
            routes=[
                Route("/.well-known/oauth-authorization-server", self.metadata),
                Route("/register", self.register, methods=["POST"]),
                Route("/authorize", self.authorize),
                Route("/token", self.token, methods=["POST"]),
            ]
        )
        mcp = self.protect(server.http_app())
        metadata = Starlette(routes=[Route(PRM_PATH, self.prm)])

        async def resource(scope: dict[str, Any], receive: Any, send: Any) -> None:
            routed = metadata if scope["type"] == "http" and scope["path"] == PRM_PATH else mcp
            await routed(scope, receive, send)

        servers = [
            uvicorn.Server(uvicorn.Config(authorization, host="127.0.0.1", port=self.as_port, log_level="warning")),
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
