"""A real OAuth 2.1 authorization server for tests, built on authlib, served on loopback.

    from mcpgen.testing import AuthServer     # needs the testing extra: pip install 'mcpgen[testing]'

    with AuthServer() as auth_server:          # uvicorn in a thread, a free 127.0.0.1 port
        auth_server.issuer                     # http://127.0.0.1:PORT
        auth_server.add_client("svc", "secret", scope="mcp")

authlib does the OAuth work: the authorization endpoint (code + PKCE S256, RFC 9207 ``iss``
in the response), the token endpoint (authorization code, refresh with rotation, client
credentials, the RFC 7523 JWT-bearer grant for workloads; client authentication basic, post
or none), dynamic client registration (RFC 7591), token introspection (RFC 7662) and the JWT
access tokens (RFC 9068, signed ES256 by joserfc).
What is written here is the framework glue authlib leaves to an integration (it ships
Flask and Django ones, not Starlette), the in-memory client, code and token stores, the
metadata documents, and three things authlib does not do:

- RFC 8707: the ``resource`` of the authorization or token request becomes the token's
  ``aud`` (authlib's RFC 9068 generator leaves this as a TODO);
- RFC 9449 at the token endpoint: a request carrying a DPoP proof (checked here with
  joserfc: signature, ``typ``, ``htm``/``htu``, ``iat``, one-time ``jti``) gets a
  DPoP-bound token (``cnf.jkt`` = the proof key's thumbprint, ``token_type`` DPoP); a
  public client's refresh token is bound to that key too (section 5); with ``dpop_nonce``
  set, a proof without that nonce is refused with ``use_dpop_nonce`` (section 8);
- per-client token lifetime and ``nbf``, so that tests can be issued an expired token or
  one not valid yet by the very same token endpoint.

The authorization endpoint approves at once as the user ``user`` (no login page): tests
drive it with a client that follows the redirect without a browser. Keys rotate with
:meth:`AuthServer.rotate_key`; :meth:`AuthServer.twin` starts a second server with the same
signing key under another issuer (for a "wrong issuer" token whose signature verifies).
"""

from __future__ import annotations

import contextvars
import json
import socket
import threading
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from itertools import count
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import uvicorn
from authlib.common.security import generate_token  # type: ignore[import-untyped]
from authlib.oauth2 import AuthorizationServer as _AuthorizationServer  # type: ignore[import-untyped]
from authlib.oauth2 import OAuth2Error
from authlib.oauth2.rfc6749 import (  # type: ignore[import-untyped]
    ClientMixin,
    JsonPayload,
    JsonRequest,
    OAuth2Payload,
    OAuth2Request,
    grants,
)
from authlib.oauth2.rfc7523 import JWTBearerGrant  # type: ignore[import-untyped]
from authlib.oauth2.rfc7591 import ClientRegistrationEndpoint  # type: ignore[import-untyped]
from authlib.oauth2.rfc7636 import CodeChallenge  # type: ignore[import-untyped]
from authlib.oauth2.rfc7662 import IntrospectionEndpoint  # type: ignore[import-untyped]
from authlib.oauth2.rfc9068 import JWTBearerTokenGenerator  # type: ignore[import-untyped]
from authlib.oauth2.rfc9207 import IssuerParameter  # type: ignore[import-untyped]
from joserfc import jws
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, KeySet, import_key
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

SCOPES = ["mcp", "notes:read", "notes:write", "admin"]
DPOP_ALGS = ["ES256", "RS256", "PS256", "EdDSA"]
JWT_BEARER = JWTBearerGrant.GRANT_TYPE  # RFC 7523 section 2.1

# What the token request being answered asked for, read by the token generator (authlib
# calls it without the request).
_resource: contextvars.ContextVar[str | None] = contextvars.ContextVar("resource", default=None)
_jkt: contextvars.ContextVar[str | None] = contextvars.ContextVar("jkt", default=None)


# ---------------------------------------------------------------- models


@dataclass
class Client(ClientMixin):  # type: ignore[misc]
    client_id: str
    client_secret: str | None = None
    redirect_uris: list[str] = field(default_factory=list)
    scope: str = " ".join(SCOPES)
    grant_types: list[str] = field(default_factory=lambda: ["authorization_code", "client_credentials"])
    response_types: list[str] = field(default_factory=lambda: ["code"])
    token_endpoint_auth_method: str = "client_secret_basic"
    lifetime: int = 3600  # seconds; negative issues tokens already expired
    not_before: int = 0  # seconds from now the token becomes valid (nbf), when not 0

    def get_client_id(self) -> str:
        return self.client_id

    def get_default_redirect_uri(self) -> str | None:
        return self.redirect_uris[0] if self.redirect_uris else None

    def get_allowed_scope(self, scope: str) -> str:
        allowed = set(self.scope.split())
        return " ".join(s for s in (scope or "").split() if s in allowed)

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return redirect_uri in self.redirect_uris

    def check_client_secret(self, client_secret: str) -> bool:
        return self.client_secret is not None and client_secret == self.client_secret

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        if endpoint == "token":
            return method == self.token_endpoint_auth_method
        return method in ("client_secret_basic", "client_secret_post")

    def check_response_type(self, response_type: str) -> bool:
        return response_type in self.response_types

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in self.grant_types


@dataclass
class Code:
    code: str
    client_id: str
    redirect_uri: str
    scope: str
    user: str
    code_challenge: str | None
    code_challenge_method: str | None
    resource: str | None
    issued: float = field(default_factory=time.time)

    def get_redirect_uri(self) -> str:
        return self.redirect_uri

    def get_scope(self) -> str:
        return self.scope

    def get_nonce(self) -> None:
        return None

    def get_auth_time(self) -> int:
        return int(self.issued)


@dataclass
class User:
    name: str

    def get_user_id(self) -> str:
        return self.name


@dataclass
class Issued:
    """A token the server handed out, for introspection."""

    access_token: str
    client_id: str
    scope: str
    claims: dict[str, Any]

    def get_client_id(self) -> str:
        return self.client_id

    def get_scope(self) -> str:
        return self.scope

    def get_expires_in(self) -> int:
        return int(self.claims["exp"] - self.claims["iat"])

    def is_expired(self) -> bool:
        return bool(self.claims["exp"] < time.time())

    def is_revoked(self) -> bool:
        return False


@dataclass
class RefreshToken:
    """A refresh token the server handed out, and what a refresh with it gets again."""

    refresh_token: str
    client_id: str
    scope: str
    user: str
    resource: str | None  # the RFC 8707 resource of the grant: the refreshed token's aud
    jkt: str | None  # the DPoP key a public client's refresh token is bound to (RFC 9449 §5)
    revoked: bool = False

    def check_client(self, client: Client) -> bool:
        return client.get_client_id() == self.client_id

    def get_scope(self) -> str:
        return self.scope

    def is_revoked(self) -> bool:
        return self.revoked

    def is_expired(self) -> bool:
        return False


# ---------------------------------------------------------------- authlib's framework glue


class _Payload(OAuth2Payload):  # type: ignore[misc]
    def __init__(self, values: dict[str, list[str]]) -> None:
        self._values = values

    @property
    def data(self) -> dict[str, str]:
        return {k: v[0] for k, v in self._values.items()}

    @property
    def datalist(self) -> defaultdict[str, list[str]]:
        return defaultdict(list, self._values)


class _Request(OAuth2Request):  # type: ignore[misc]
    def __init__(
        self, method: str, uri: str, headers: dict[str, str], args: dict[str, list[str]], form: dict[str, list[str]]
    ) -> None:
        super().__init__(method=method, uri=uri, headers=headers)
        self._args, self._form = args, form
        values: dict[str, list[str]] = defaultdict(list)
        for source in (args, form):
            for k, v in source.items():
                values[k].extend(v)
        self.payload = _Payload(dict(values))

    @property
    def args(self) -> dict[str, str]:
        return {k: v[0] for k, v in self._args.items()}

    @property
    def form(self) -> dict[str, str]:
        return {k: v[0] for k, v in self._form.items()}


class _Json(JsonPayload):  # type: ignore[misc]
    def __init__(self, data: Any) -> None:
        self._data = data

    @property
    def data(self) -> Any:
        return self._data


class _Answer:
    """What authlib's handle_response returns here (its hooks read ``location``)."""

    def __init__(self, status: int, body: Any, headers: list[tuple[str, str]]) -> None:
        self.status, self.body, self.headers = status, body, dict(headers)

    @property
    def location(self) -> str | None:
        return self.headers.get("Location")

    @location.setter
    def location(self, value: str) -> None:
        self.headers["Location"] = value

    def starlette(self) -> Response:
        if isinstance(self.body, dict):
            return JSONResponse(
                self.body,
                status_code=self.status,
                headers={k: v for k, v in self.headers.items() if k.lower() != "content-type"},
            )
        return Response(self.body or b"", status_code=self.status, headers=self.headers)


class _Server(_AuthorizationServer):  # type: ignore[misc]
    def __init__(self, owner: AuthServer) -> None:
        super().__init__(scopes_supported=owner.scopes)
        self.owner = owner

    def query_client(self, client_id: str) -> Client | None:
        return self.owner.clients.get(client_id)

    def save_token(self, token: dict[str, Any], request: Any) -> None:
        self.owner.remember(token, request)

    def send_signal(self, name: str, *args: Any, **kwargs: Any) -> None:
        pass

    def create_oauth2_request(self, request: Any) -> Any:
        return request

    def create_json_request(self, request: Any) -> Any:
        return request

    def handle_response(self, status: int, body: Any, headers: list[tuple[str, str]]) -> _Answer:
        return _Answer(status, body, headers)


class _AuthorizationCode(grants.AuthorizationCodeGrant):  # type: ignore[misc]
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none"]

    def save_authorization_code(self, code: str, request: Any) -> None:
        data = request.payload.data
        self.server.owner.codes[code] = Code(
            code=code,
            client_id=request.client.get_client_id(),
            redirect_uri=data.get("redirect_uri", ""),
            scope=request.scope or "",
            user=request.user.get_user_id(),
            code_challenge=data.get("code_challenge"),
            code_challenge_method=data.get("code_challenge_method"),
            resource=data.get("resource"),
        )

    def query_authorization_code(self, code: str, client: Client) -> Code | None:
        found = self.server.owner.codes.get(code)
        return found if found is not None and found.client_id == client.get_client_id() else None

    def delete_authorization_code(self, authorization_code: Code) -> None:
        self.server.owner.codes.pop(authorization_code.code, None)

    def authenticate_user(self, authorization_code: Code) -> User:
        if _resource.get() is None and authorization_code.resource:
            _resource.set(authorization_code.resource)
        return User(authorization_code.user)


class _ClientCredentials(grants.ClientCredentialsGrant):  # type: ignore[misc]
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post"]


class _Refresh(grants.RefreshTokenGrant):  # type: ignore[misc]
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none"]
    INCLUDE_NEW_REFRESH_TOKEN = True  # rotation: each refresh token serves once

    def authenticate_refresh_token(self, refresh_token: str) -> RefreshToken | None:
        found: RefreshToken | None = self.server.owner.refresh_tokens.get(refresh_token)
        if found is None or found.revoked or (found.jkt is not None and found.jkt != _jkt.get()):
            return None  # unknown, used, or a bound token without its key's proof: invalid_grant
        if _resource.get() is None:
            _resource.set(found.resource)
        return found

    def authenticate_user(self, refresh_token: RefreshToken) -> User:
        return User(refresh_token.user)

    def revoke_old_credential(self, refresh_token: RefreshToken) -> None:
        refresh_token.revoked = True


class _Assertion(JWTBearerGrant):  # type: ignore[misc]
    """RFC 7523 section 2.1 (a workload's JWT from its platform): authlib checks the
    signature with the key :meth:`AuthServer.trust_assertions` was given for the
    assertion's ``iss``, its ``exp`` and its ``aud`` (this server's issuer or token
    endpoint). No client authentication: the assertion names the client (section 3.1)."""

    def get_audiences(self) -> list[str]:
        issuer: str = self.server.owner.issuer
        return [issuer, f"{issuer}/token"]

    def resolve_issuer_client(self, issuer: str) -> Client | None:
        trusted = self.server.owner.assertion_issuers.get(issuer)
        return None if trusted is None else self.server.owner.clients.get(trusted[1])

    def resolve_client_public_key(self, client: Client) -> Any:
        for key, client_id in self.server.owner.assertion_issuers.values():
            if client_id == client.client_id:
                return key
        return None

    def authenticate_user(self, subject: str) -> User:
        return User(subject)

    def has_granted_permission(self, client: Client, user: User) -> bool:
        return True


class _Registration(ClientRegistrationEndpoint):  # type: ignore[misc]
    def authenticate_token(self, request: Any) -> bool:
        return True  # open registration, as MCP clients expect

    def generate_client_id(self, request: Any) -> str:
        # client-1, client-2, ...: readable in a test's assertions and failures
        owner = self.server.owner
        while (client_id := f"client-{next(owner.registered)}") in owner.clients:
            pass
        return client_id

    def get_server_metadata(self) -> dict[str, Any]:
        metadata: dict[str, Any] = self.server.owner.metadata()
        return metadata

    def save_client(self, client_info: dict[str, Any], client_metadata: dict[str, Any], request: Any) -> Client:
        method = client_metadata.get("token_endpoint_auth_method", "client_secret_basic")
        client = Client(
            client_id=client_info["client_id"],
            client_secret=client_info["client_secret"] if method != "none" else None,
            redirect_uris=list(client_metadata.get("redirect_uris", [])),
            scope=client_metadata.get("scope") or " ".join(self.server.owner.scopes),
            grant_types=list(client_metadata.get("grant_types", ["authorization_code"])),
            response_types=list(client_metadata.get("response_types", ["code"])),
            token_endpoint_auth_method=method,
        )
        self.server.owner.clients[client.client_id] = client
        return client


class _Introspection(IntrospectionEndpoint):  # type: ignore[misc]
    CLIENT_AUTH_METHODS = ["client_secret_basic", "client_secret_post"]

    def query_token(self, token_string: str, token_type_hint: str | None) -> Issued | None:
        issued: Issued | None = self.server.owner.tokens.get(token_string)
        return issued

    def check_permission(self, token: Issued, client: Client, request: Any) -> bool:
        return True  # any registered client (the resource server is one) may introspect

    def introspect_token(self, token: Issued) -> dict[str, Any]:
        claims = token.claims
        answer = {"active": True, "token_type": "Bearer", **{k: claims[k] for k in claims if k != "jti"}}
        if "cnf" in claims:
            answer["token_type"] = "DPoP"
        return answer


class _Tokens(JWTBearerTokenGenerator):  # type: ignore[misc]
    def __init__(self, owner: AuthServer) -> None:
        super().__init__(
            issuer=owner.issuer, alg="ES256", refresh_token_generator=_refresh_token, expires_generator=owner.lifetime
        )
        self.owner = owner

    def get_jwks(self) -> Any:
        # A key set of one: joserfc then names the key's kid in the token's header.
        return KeySet([self.owner.signing_key])

    def get_audiences(self, client: Client, user: Any, scope: str) -> str:
        return _resource.get() or self.owner.default_resource

    def get_extra_claims(self, client: Client, grant_type: str, user: Any, scope: str) -> dict[str, Any]:
        extra: dict[str, Any] = {}
        jkt = _jkt.get()
        if jkt is not None:
            extra["cnf"] = {"jkt": jkt}
        if client.not_before:
            extra["nbf"] = int(time.time()) + client.not_before
        return extra


# ---------------------------------------------------------------- the server


class AuthServer:
    """The test authorization server; use as a context manager (starts and stops it)."""

    def __init__(
        self,
        *,
        scopes: list[str] | None = None,
        key: ECKey | None = None,
        default_resource: str = "urn:mcpgen:no-resource",
        dpop_nonce: str | None = None,
        offer_dpop: bool = True,
    ) -> None:
        """``scopes``: what it grants (default :data:`SCOPES`); ``key``: its signing key
        (default: a new P-256 key); ``default_resource``: the ``aud`` of tokens requested
        without an RFC 8707 ``resource``; ``dpop_nonce``: the nonce the token endpoint
        insists on in DPoP proofs (RFC 9449 section 8; None: no nonce); ``offer_dpop``:
        list DPoP in the metadata (a proof sent anyway still gets a bound token, as RFC 9449
        lets a server bind a token whether or not it advertised DPoP)."""
        self.scopes = list(scopes or SCOPES)
        self.port = _free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.default_resource = default_resource
        self.signing_key = key if key is not None else _new_key()
        self.public_keys: list[ECKey] = [self.signing_key]
        self.clients: dict[str, Client] = {}
        self.codes: dict[str, Code] = {}
        self.tokens: dict[str, Issued] = {}
        self.refresh_tokens: dict[str, RefreshToken] = {}
        self.assertion_issuers: dict[str, tuple[ECKey, str]] = {}  # iss -> (its key, the client)
        self.registered = count(1)  # numbers the clients that register themselves
        self.dpop_jtis: set[str] = set()
        self.dpop_nonce = dpop_nonce
        self.offer_dpop = offer_dpop
        self.user = "alice"
        self.requests: list[str] = []  # "METHOD path" of every request, for tests to look at
        self.oauth = _Server(self)
        self.oauth.register_token_generator("default", _Tokens(self))
        self.oauth.register_grant(_AuthorizationCode, [CodeChallenge(required=True)])
        self.oauth.register_grant(_ClientCredentials)
        self.oauth.register_grant(_Refresh)
        self.oauth.register_grant(_Assertion)
        self.oauth.register_endpoint(_Registration)
        self.oauth.register_endpoint(_Introspection)
        self.oauth.register_extension(_Iss(self.issuer))
        self._thread: threading.Thread | None = None
        self._uvicorn: uvicorn.Server | None = None

    # ------------------------------------------------------------ set-up for tests

    def add_client(
        self,
        client_id: str,
        secret: str | None,
        *,
        scope: str | None = None,
        redirect_uris: list[str] | None = None,
        lifetime: int = 3600,
        not_before: int = 0,
        auth_method: str = "client_secret_basic",
        grant_types: list[str] | None = None,
    ) -> Client:
        client = Client(
            client_id,
            secret,
            redirect_uris=redirect_uris or [],
            scope=scope if scope is not None else " ".join(self.scopes),
            lifetime=lifetime,
            not_before=not_before,
            token_endpoint_auth_method=auth_method if secret is not None else "none",
        )
        if grant_types is not None:
            client.grant_types = list(grant_types)
        self.clients[client_id] = client
        return client

    def trust_assertions(self, issuer: str, key: ECKey, client_id: str) -> None:
        """Accept RFC 7523 JWT-bearer assertions that ``issuer`` signs with ``key`` (a
        workload platform's), as grants for the client ``client_id`` (which needs
        :data:`JWT_BEARER` in its grant types)."""
        self.assertion_issuers[issuer] = (key, client_id)

    def rotate_key(self) -> None:
        """Sign with a new key from now on; the JWKS publishes it next to the old one."""
        self.signing_key = _new_key()
        self.public_keys.append(self.signing_key)

    def twin(self) -> AuthServer:
        """Another server (another issuer) signing with this one's current key."""
        other = AuthServer(scopes=self.scopes, key=self.signing_key, default_resource=self.default_resource)
        other.clients = self.clients
        return other

    def lifetime(self, client: Client, grant_type: str) -> int:
        return client.lifetime

    def remember(self, token: dict[str, Any], request: Any) -> None:
        access = token["access_token"]
        claims = jws.extract_compact(access.encode()).payload
        client: Client = request.client
        self.tokens[access] = Issued(access, client.get_client_id(), token.get("scope", ""), json.loads(claims))
        jkt = _jkt.get()
        if jkt is not None:
            token["token_type"] = "DPoP"
        if "refresh_token" in token:
            user = request.user.get_user_id() if request.user is not None else client.get_client_id()
            public = client.token_endpoint_auth_method == "none"
            self.refresh_tokens[token["refresh_token"]] = RefreshToken(
                token["refresh_token"],
                client.get_client_id(),
                token.get("scope", ""),
                user,
                _resource.get(),
                jkt if public else None,
            )

    def metadata(self) -> dict[str, Any]:
        base = self.issuer
        document: dict[str, Any] = {
            "issuer": base,
            "authorization_endpoint": f"{base}/authorize",
            "token_endpoint": f"{base}/token",
            "registration_endpoint": f"{base}/register",
            "introspection_endpoint": f"{base}/introspect",
            "jwks_uri": f"{base}/jwks",
            "scopes_supported": self.scopes,
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials", JWT_BEARER],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
            "introspection_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
            "code_challenge_methods_supported": ["S256"],
            "authorization_response_iss_parameter_supported": True,
        }
        if self.offer_dpop:
            document["dpop_signing_alg_values_supported"] = DPOP_ALGS
        return document

    # ------------------------------------------------------------ HTTP

    def app(self) -> Starlette:
        async def well_known(request: Request) -> Response:
            return JSONResponse(self.metadata())

        async def jwks(request: Request) -> Response:
            keys = KeySet(list(self.public_keys))
            return JSONResponse(keys.as_dict(private=False))

        async def authorize(request: Request) -> Response:
            oauth_request = await self._oauth_request(request)
            try:
                grant = self.oauth.get_consent_grant(oauth_request, end_user=User(self.user))
            except OAuth2Error as error:
                return JSONResponse(dict(error.get_body()), status_code=error.status_code)
            answer = self.oauth.create_authorization_response(oauth_request, grant_user=User(self.user), grant=grant)
            return _redirect(answer)

        async def token(request: Request) -> Response:
            oauth_request = await self._oauth_request(request)
            proof = request.headers.get("dpop")
            jkt = None
            if proof is not None:
                checked = self._check_proof(proof, str(request.url))
                if checked is None:
                    return JSONResponse({"error": "invalid_dpop_proof"}, status_code=400)
                jkt, nonce = checked
                if self.dpop_nonce is not None and nonce != self.dpop_nonce:
                    return JSONResponse(
                        {"error": "use_dpop_nonce", "error_description": "the DPoP proof needs the server's nonce"},
                        status_code=400,
                        headers={"DPoP-Nonce": self.dpop_nonce, "Cache-Control": "no-store"},
                    )
            _jkt.set(jkt)
            _resource.set(oauth_request.payload.data.get("resource"))
            return self.oauth.create_token_response(oauth_request).starlette()  # type: ignore[no-any-return]

        async def register(request: Request) -> Response:
            json_request = JsonRequest(request.method, str(request.url), request.headers)
            json_request.payload = _Json(await request.json())
            answer = self.oauth.create_endpoint_response("client_registration", json_request)
            return answer.starlette()  # type: ignore[no-any-return]

        async def introspect(request: Request) -> Response:
            answer = self.oauth.create_endpoint_response("introspection", await self._oauth_request(request))
            return answer.starlette()  # type: ignore[no-any-return]

        routes = [
            Route("/.well-known/oauth-authorization-server", well_known),
            Route("/.well-known/openid-configuration", well_known),
            Route("/jwks", jwks),
            Route("/authorize", authorize),
            Route("/token", token, methods=["POST"]),
            Route("/register", register, methods=["POST"]),
            Route("/introspect", introspect, methods=["POST"]),
        ]
        app = Starlette(routes=routes)

        async def logged(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                self.requests.append(f"{scope['method']} {scope['path']}")
            await app(scope, receive, send)

        return logged  # type: ignore[return-value]

    async def _oauth_request(self, request: Request) -> _Request:
        args: dict[str, list[str]] = defaultdict(list)
        for k, v in request.query_params.multi_items():
            args[k].append(v)
        form: dict[str, list[str]] = defaultdict(list)
        if request.method == "POST":
            for k, value in (await request.form()).multi_items():
                form[k].append(str(value))
        return _Request(request.method, str(request.url), request.headers, dict(args), dict(form))  # type: ignore[arg-type]

    def _check_proof(self, proof: str, url: str) -> tuple[str, str | None] | None:
        """RFC 9449 §4.3 at the token endpoint (joserfc; independent of mcpgen's own
        checker): the thumbprint of the proof's key and the proof's nonce, or None for a
        bad proof."""
        try:
            header = jws.extract_compact(proof.encode()).protected
            if header.get("typ") != "dpop+jwt" or header.get("alg") not in DPOP_ALGS:
                return None
            key = import_key(header["jwk"])
            claims = json.loads(jws.deserialize_compact(proof, key, algorithms=DPOP_ALGS).payload)
        except (JoseError, KeyError, ValueError, TypeError):
            return None
        if not isinstance(claims, dict):
            return None
        parts = urlsplit(url)
        if claims.get("htm") != "POST" or claims.get("htu") != urlunsplit(
            (parts.scheme, parts.netloc, parts.path, "", "")
        ):
            return None
        iat, jti = claims.get("iat"), claims.get("jti")
        if not isinstance(iat, int | float) or abs(time.time() - iat) > 60:
            return None
        if not isinstance(jti, str) or jti in self.dpop_jtis:
            return None
        self.dpop_jtis.add(jti)
        nonce = claims.get("nonce")
        return str(key.thumbprint()), nonce if isinstance(nonce, str) else None

    def __enter__(self) -> AuthServer:
        config = uvicorn.Config(self.app(), host="127.0.0.1", port=self.port, log_level="warning", lifespan="off")
        self._uvicorn = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._uvicorn.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._uvicorn.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the test authorization server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._uvicorn is not None:
            self._uvicorn.should_exit = True
        if self._thread is not None:
            self._thread.join(5)


class _Iss(IssuerParameter):  # type: ignore[misc]
    def __init__(self, issuer: str) -> None:
        self.issuer = issuer

    def get_issuer(self) -> str:
        return self.issuer


def _redirect(answer: _Answer) -> Response:
    if answer.location:
        return RedirectResponse(answer.location, status_code=302)
    return answer.starlette()


def _refresh_token(**_: Any) -> str:
    return str(generate_token(42))


def _new_key() -> ECKey:
    key = ECKey.generate_key("P-256", parameters={"kid": uuid.uuid4().hex[:12], "use": "sig", "alg": "ES256"})
    return key


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
