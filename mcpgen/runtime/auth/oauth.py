"""OAuth 2.1 authorization for the Streamable HTTP client (MCP 2025-11-25, "Authorization").

    auth = OAuthClient(authorize=open_browser_and_wait_for_the_redirect)
    async with Client.http("https://example.com/mcp", auth=auth) as client:
        ...

:class:`OAuthClient` is an ``httpx.Auth``. It sends the stored access token on every
request; when the server answers 401, or 403 with ``insufficient_scope``, it discovers the
authorization server (RFC 9728 protected resource metadata, then RFC 8414 / OpenID
discovery, with the 2025-03-26 fallbacks), identifies the client (pre-registered, a Client
ID Metadata Document, or RFC 7591 dynamic registration), gets a token and retries.

The 2026-07-28 rules: the authorization server metadata's ``issuer`` must equal the issuer
it was fetched for; the authorization response's RFC 9207 ``iss`` is checked before the
code is spent (required when the server advertises it, compared whenever present, never
normalized); dynamic registration says its ``application_type``; client credentials and
tokens are bound to the issuer that issued them, so when the protected resource names a
new authorization server the client registers there afresh instead of presenting the old
server's client id; ``offline_access`` is asked for only when the server lists it.

Grants: the authorization code with PKCE S256, ``state`` and the RFC 8707 ``resource``
(the default); ``client_credentials`` with a client secret or an ES256 ``private_key_jwt``
assertion (RFC 7523, needs PyJWT); cross-app access (SEP-990: an enterprise IdP's ID
token exchanged for an ID-JAG, then the JWT-bearer grant); and workload identity
federation (SEP-1933: a JWT the workload's platform issued, presented in the RFC 7523
JWT-bearer grant, never retried nor replaced by another grant when refused).

DPoP (RFC 9449, SEP-1932, mcpgen.runtime.auth.dpop): when the authorization server lists ES256
in ``dpop_signing_alg_values_supported`` (or ``dpop="always"``), every token request
carries a proof, and a ``DPoP`` token is presented with the ``DPoP`` scheme and a fresh
proof (with ``ath``) on every request; a server's ``use_dpop_nonce`` answer is retried
once with its nonce. Access and refresh tokens, authorization codes, assertions, client
secrets, PKCE verifiers and proofs are never logged.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import logging
import secrets
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Generator, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol
from urllib.parse import parse_qs, quote, urlencode, urlsplit, urlunsplit

import httpx

from mcpgen.runtime.auth.discovery import (
    Challenge,
    Discovery,
    OAuthError,
    canonical_resource,
    checked_endpoint,
    discover_from_prm,
    discover_legacy,
    get_json,
    prm_urls,
)
from mcpgen.runtime.auth.dpop import ALGORITHM as DPOP_ALGORITHM
from mcpgen.runtime.auth.dpop import DPoP, DPoPKey, nonce_challenge

log = logging.getLogger("mcpgen.auth")

AuthorizeHook = Callable[[str], Awaitable[str | tuple[str, str | None]]]
"""Sends the user to an authorization URL; returns the URL the authorization server
redirected back to (its query is checked here: ``state``, RFC 9207 ``iss``, ``error``,
``code``), or the bare ``(code, state)`` pair (which carries no ``iss``, so an
authorization server that advertises ``iss`` in its responses refuses it)."""

DEFAULT_REDIRECT_URI = "http://localhost:3000/callback"
OFFLINE_ACCESS = "offline_access"
_JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
_TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
_ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
_ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
_JSON = {"accept": "application/json"}


# ---------------------------------------------------------------- client, tokens, storage


@dataclass
class ClientInfo:
    """An OAuth client identity: pre-registered, or what dynamic registration returned.

    ``auth_method`` is the token endpoint auth method (``client_secret_basic``,
    ``client_secret_post``, ``none`` or ``private_key_jwt``); ``None`` picks one from the
    secret or key given and the methods the authorization server lists.
    """

    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    auth_method: str | None = None
    private_key_pem: str | None = field(default=None, repr=False)
    signing_algorithm: str = "ES256"
    issuer: str | None = None
    """The authorization server the credentials belong to (SEP-2352). A pre-registered
    client without one is bound to the first issuer it is used with; either way, a server
    that moves to another authorization server gets an error, not these credentials."""


@dataclass
class Token:
    access_token: str = field(repr=False)
    refresh_token: str | None = field(default=None, repr=False)
    expires_at: float | None = None  # time.time() seconds
    scope: str | None = None
    issuer: str | None = None  # the authorization server that issued it (refreshed only there)
    token_type: str = "Bearer"  # or "DPoP": bound to the client's DPoP key (RFC 9449)

    def expired(self, leeway: float = 30.0) -> bool:
        return self.expires_at is not None and time.time() + leeway >= self.expires_at


class TokenStorage(Protocol):
    """Where an :class:`OAuthClient` keeps its token (one MCP server each) and its dynamic
    registrations, one per authorization server ``issuer``: credentials one server issued
    are never presented to another (SEP-2352)."""

    async def load_token(self) -> Token | None: ...
    async def save_token(self, token: Token) -> None: ...
    async def load_client(self, issuer: str) -> ClientInfo | None: ...
    async def save_client(self, issuer: str, client: ClientInfo) -> None: ...


class MemoryStorage:
    """Keeps everything for the life of the process."""

    def __init__(self) -> None:
        self.token: Token | None = None
        self.clients: dict[str, ClientInfo] = {}  # issuer -> its registration

    async def load_token(self) -> Token | None:
        return self.token

    async def save_token(self, token: Token) -> None:
        self.token = token

    async def load_client(self, issuer: str) -> ClientInfo | None:
        return self.clients.get(issuer)

    async def save_client(self, issuer: str, client: ClientInfo) -> None:
        self.clients[issuer] = client


@dataclass(frozen=True)
class CrossAppAccess:
    """SEP-990: trade the user's enterprise ID token for an ID-JAG at the IdP, then the
    ID-JAG for an access token at the MCP server's authorization server."""

    idp_token_endpoint: str
    idp_client_id: str
    id_token: str = field(repr=False)
    idp_client_secret: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class WorkloadIdentity:
    """SEP-1933: the workload's own identity JWT (issued by its platform: a Kubernetes
    service account token, a cloud instance identity, a CI job's OIDC token) presented in
    the RFC 7523 JWT-bearer grant; no user, no registration. ``assertion`` is the JWT, or a
    function returning a current one (platforms rotate them), called for each grant."""

    assertion: str | Callable[[], str | Awaitable[str]] = field(repr=False)


Grant = Literal["authorization_code", "client_credentials"] | CrossAppAccess | WorkloadIdentity
DPoPMode = Literal["auto", "always", "never"]


def _s256(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _union(*scope_lists: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(scope for scopes in scope_lists for scope in scopes))


def _with_query(url: str, params: dict[str, str]) -> str:
    parts = urlsplit(url)
    query = f"{parts.query}&{urlencode(params)}" if parts.query else urlencode(params)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))


def _json_result(response: httpx.Response, what: str) -> dict[str, Any]:
    """The JSON body of a successful OAuth endpoint reply, else OAuthError with its error."""
    try:
        data = response.json()
    except ValueError:
        data = None
    if response.status_code // 100 != 2 or not isinstance(data, dict):
        detail = ""
        if isinstance(data, dict) and "error" in data:
            detail = f": {data['error']} {data.get('error_description', '')}".rstrip()
        raise OAuthError(f"{what} failed (HTTP {response.status_code}){detail}")
    return data


def _token_from(data: dict[str, Any], previous: Token | None = None, dpop: bool = False) -> Token:
    """The token of a token response; ``dpop``: the request carried a DPoP proof, so a
    ``DPoP`` token (bound to our key) may come back, or a plain Bearer one (RFC 9449
    section 5: a server that does not bind tokens ignores the proof)."""
    access = data.get("access_token")
    if not isinstance(access, str) or not access:
        raise OAuthError("the token response has no access_token")
    kind = data.get("token_type", "Bearer")
    kinds = {"bearer": "Bearer", "dpop": "DPoP"} if dpop else {"bearer": "Bearer"}
    if not isinstance(kind, str) or kind.lower() not in kinds:
        raise OAuthError(f"unsupported token_type {kind!r}")
    expires_in = data.get("expires_in")
    refresh = data.get("refresh_token")
    scope = data.get("scope")
    return Token(
        access_token=access,
        refresh_token=refresh if isinstance(refresh, str) else previous.refresh_token if previous else None,
        expires_at=time.time() + expires_in if isinstance(expires_in, int | float) else None,
        scope=scope if isinstance(scope, str) else None,
        token_type=kinds[kind.lower()],
    )


def client_assertion(client: ClientInfo, audience: str) -> str:
    """An RFC 7523 client assertion: a JWT signed with the client's private key."""
    try:
        import jwt
    except ImportError as exc:
        raise OAuthError("private_key_jwt needs PyJWT with cryptography: pip install 'pyjwt[crypto]'") from exc
    if client.private_key_pem is None:
        raise OAuthError("private_key_jwt needs the client's private key")
    now = int(time.time())
    claims = {
        "iss": client.client_id,
        "sub": client.client_id,
        "aud": audience,
        "iat": now,
        "exp": now + 300,
        "jti": uuid.uuid4().hex,
    }
    return jwt.encode(claims, client.private_key_pem, algorithm=client.signing_algorithm)


# ---------------------------------------------------------------- the httpx.Auth


class OAuthClient(httpx.Auth):
    """OAuth 2.1 for MCP: discovery, registration and token handling, as an ``httpx.Auth``.

    ``server_url`` defaults to the URL of the first request. ``client`` is a pre-registered
    identity; without one, ``client_metadata_url`` (an https URL serving this client's
    metadata document) is used when the authorization server supports Client ID Metadata
    Documents, else the client registers dynamically. ``authorize`` shows the user the
    authorization URL and returns the redirect's ``code`` and ``state``; the default fetches
    the URL without following its redirect, which only suits servers that need no user.
    ``application_type`` (sent when registering dynamically) defaults to ``native`` for a
    redirect to this machine (loopback or a private scheme) and ``web`` otherwise.
    ``dpop``: ``auto`` asks for DPoP-bound tokens when the authorization server lists ES256
    in ``dpop_signing_alg_values_supported``, ``always`` whatever it lists, ``never`` not at
    all; ``dpop_key`` is the key to bind them to, or a function giving it when first needed
    (a new one per client otherwise: tokens kept beyond the process need their key kept
    with them).
    """

    def __init__(
        self,
        server_url: str | None = None,
        *,
        grant: Grant = "authorization_code",
        client: ClientInfo | None = None,
        client_metadata_url: str | None = None,
        client_name: str = "mcpgen",
        redirect_uri: str = DEFAULT_REDIRECT_URI,
        authorize: AuthorizeHook | None = None,
        storage: TokenStorage | None = None,
        http_client: httpx.AsyncClient | None = None,
        max_authorizations: int = 3,
        offline_access: bool = True,
        application_type: Literal["native", "web"] | None = None,
        dpop: DPoPMode = "auto",
        dpop_key: DPoPKey | Callable[[], DPoPKey] | None = None,
    ) -> None:
        self.server_url = canonical_resource(server_url) if server_url else None
        self.grant = grant
        self.client = client
        self.client_metadata_url = client_metadata_url
        self.client_name = client_name
        self.redirect_uri = redirect_uri
        self.authorize = authorize
        self.storage: TokenStorage = storage if storage is not None else MemoryStorage()
        self.max_authorizations = max_authorizations
        self.offline_access = offline_access
        self.application_type = application_type or _application_type(redirect_uri)
        self._http_client = http_client
        self._discovery: Discovery | None = None
        self._identity: ClientInfo | None = None
        self._scopes: list[str] = []  # what the last grant asked for
        self._lock = asyncio.Lock()
        self.dpop_mode: DPoPMode = dpop
        # The key is made when first needed (a P-256 key pair costs about a millisecond);
        # one per client, so every token it obtains is bound to the same key.
        self._dpop: DPoP | None = DPoP(dpop_key) if isinstance(dpop_key, DPoPKey) else None
        self._dpop_key_source = dpop_key if callable(dpop_key) else None

    # ------------------------------------------------------------ httpx.Auth

    def sync_auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        raise RuntimeError("OAuthClient works with httpx.AsyncClient only")

    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        if self.server_url is None:
            self.server_url = canonical_resource(str(request.url))
        token = await self._usable_token()
        self._present(request, token)
        response = yield request
        self._note_nonce(response)
        renewals, nonce_retried = 0, False
        while True:
            if token is not None and token.token_type == "DPoP" and nonce_challenge(response):
                # RFC 9449 section 9: the same request again, its fresh proof with the
                # nonce just handed out (noted above); once: a server that refuses its own
                # nonce has its 401 go to the caller (the token is fine: no renewal).
                if nonce_retried:
                    return
                nonce_retried = True
                await response.aread()
                self._present(request, token)
                response = yield request
                self._note_nonce(response)
                continue
            challenge = Challenge.of(response)
            if challenge is None:
                return
            if renewals == self.max_authorizations:
                raise OAuthError(
                    f"{request.url} still answers HTTP {response.status_code} after "
                    f"{self.max_authorizations} authorizations (scope {' '.join(self._scopes) or 'unspecified'})"
                )
            renewals, nonce_retried = renewals + 1, False
            await response.aread()
            token = await self._renew(challenge, token)
            self._present(request, token)
            response = yield request
            self._note_nonce(response)

    def _present(self, request: httpx.Request, token: Token | None) -> None:
        """Put the token on the request: ``Bearer``, or ``DPoP`` with a fresh proof."""
        request.headers.pop("DPoP", None)
        if token is None:
            return
        if token.token_type == "DPoP":
            proof = self._dpop_signer().proof(request.method, request.url, token.access_token)
            request.headers["Authorization"] = f"DPoP {token.access_token}"
            request.headers["DPoP"] = proof
        else:
            request.headers["Authorization"] = f"Bearer {token.access_token}"

    def _note_nonce(self, response: httpx.Response) -> None:
        if self._dpop is not None:
            self._dpop.note(response)

    def _dpop_signer(self) -> DPoP:
        if self._dpop is None:
            self._dpop = DPoP(self._dpop_key_source() if self._dpop_key_source is not None else None)
        return self._dpop

    def _uses_dpop(self, discovery: Discovery) -> bool:
        if self.dpop_mode != "auto":
            return self.dpop_mode == "always"
        algorithms = discovery.metadata.get("dpop_signing_alg_values_supported")
        return isinstance(algorithms, list) and DPOP_ALGORITHM in algorithms

    # ------------------------------------------------------------ token lifecycle

    async def _usable_token(self) -> Token | None:
        token = await self.storage.load_token()
        if token is None or not token.expired() or token.refresh_token is None:
            return token
        async with self._lock, self._http() as http:
            current = await self.storage.load_token()
            if current is None or current.access_token != token.access_token:
                return current  # another request renewed it meanwhile
            if self._discovery is None:
                # A token kept from an earlier run (a file storage): find its authorization
                # server now, so it is refreshed before use rather than after a 401.
                try:
                    await self._discover(http, Challenge(401, [], None), fresh=True)
                except (OAuthError, httpx.HTTPError) as exc:
                    log.info("mcpgen: cannot refresh the stored token yet (%s)", exc)
                    return token
            return await self._refresh(http, token) or token

    async def _renew(self, challenge: Challenge, sent: Token | None) -> Token:
        """A token for a challenged request: someone else's fresh one, a refresh, or a new grant.

        A 401 looks at the protected resource metadata afresh: the resource may have moved
        to another authorization server (SEP-2352), whose client credentials and tokens are
        its own, so the old server's refresh token is not spent there."""
        async with self._lock, self._http() as http:
            current = await self.storage.load_token()
            if current is not None and (sent is None or current.access_token != sent.access_token):
                return current
            try:
                discovery = await self._discover(http, challenge, fresh=challenge.status == 401)
                if (
                    challenge.status == 401
                    and current is not None
                    and current.refresh_token is not None
                    and current.issuer in (None, discovery.issuer)
                ):
                    refreshed = await self._refresh(http, current)
                    if refreshed is not None:
                        return refreshed
                elif current is not None and current.issuer not in (None, discovery.issuer):
                    log.info(
                        "mcpgen: %s now uses the authorization server %s (was %s)",
                        self.server_url,
                        discovery.issuer,
                        current.issuer,
                    )
                token = await self._obtain(http, discovery, self._choose_scope(challenge, discovery))
            except httpx.HTTPError as exc:
                raise OAuthError(f"an OAuth endpoint failed: {exc}") from exc
            await self.storage.save_token(token)
            return token

    def _choose_scope(self, challenge: Challenge, discovery: Discovery) -> str | None:
        """The challenge's scope, else the resource's scopes_supported, else none; a 403
        step-up keeps what was asked before; offline_access only if the AS lists it."""
        wanted = challenge.scope or discovery.scopes_supported
        if challenge.status == 403:
            wanted = _union(self._scopes, wanted)
        offered = discovery.metadata.get("scopes_supported")
        refreshable = (
            self.offline_access
            and self.grant == "authorization_code"
            and isinstance(offered, list)
            and OFFLINE_ACCESS in offered
        )
        if not refreshable:
            # SEP-2207: never ask an authorization server for offline_access it does not
            # list, even when the resource (which should not) names it.
            wanted = [scope for scope in wanted if scope != OFFLINE_ACCESS]
        elif wanted:
            wanted = _union(wanted, [OFFLINE_ACCESS])
        self._scopes = list(wanted)
        return " ".join(wanted) or None

    async def _refresh(self, http: httpx.AsyncClient, token: Token) -> Token | None:
        discovery = self._discovery
        if discovery is None or token.refresh_token is None or token.issuer not in (None, discovery.issuer):
            return None
        form = {
            "grant_type": "refresh_token",
            "refresh_token": token.refresh_token,
            "resource": discovery.resource,
        }
        try:
            # The client the token was issued to: this run's, else the one kept for that
            # issuer (a token kept from an earlier run).
            identity = self._identity or await self._known_identity(discovery)
            if identity is None:
                return None
            fresh = await self._token_request(http, discovery, identity, form, previous=token)
        except (OAuthError, httpx.HTTPError) as exc:
            log.info("mcpgen: refreshing the access token failed (%s); authorizing again", exc)
            return None
        fresh.issuer = token.issuer or discovery.issuer
        self._identity = identity
        await self.storage.save_token(fresh)
        return fresh

    # ------------------------------------------------------------ discovery

    async def _discover(self, http: httpx.AsyncClient, challenge: Challenge, fresh: bool = False) -> Discovery:
        """The resource's authorization server; ``fresh`` reads its metadata again rather
        than trusting what was found before (a 401: the resource may have moved)."""
        cached = self._discovery
        if not fresh and cached is not None and challenge.resource_metadata in (None, cached.prm_url):
            return cached
        assert self.server_url is not None
        prm, prm_url = None, None
        if challenge.resource_metadata is not None:
            # The challenge's URL is the server's word: https (or loopback) before any request.
            checked_endpoint("resource_metadata", challenge.resource_metadata, "the server's challenge")
        for url in prm_urls(self.server_url, challenge.resource_metadata):
            prm = await get_json(http, url)
            if prm is not None:
                prm_url = url
                break
        if prm is None:
            discovery = await discover_legacy(http, self.server_url)
        else:
            discovery = await discover_from_prm(http, self.server_url, prm, prm_url)
        self._discovery = discovery
        return discovery

    # ------------------------------------------------------------ client identity

    async def _identify(self, http: httpx.AsyncClient, discovery: Discovery) -> ClientInfo:
        """Pre-registered, else a Client ID Metadata Document, else stored, else registered."""
        identity = await self._known_identity(discovery)
        if identity is None:
            identity = await self._register(http, discovery)
            await self.storage.save_client(discovery.issuer, identity)
        self._identity = identity
        return identity

    async def _known_identity(self, discovery: Discovery) -> ClientInfo | None:
        """The identity this client already has at ``discovery``'s authorization server.
        A Client ID Metadata Document's URL serves at any server; pre-registered and
        registered credentials only at the one that issued them (SEP-2352)."""
        if self.client is not None:
            bound = self.client.issuer
            if bound is None:
                self.client.issuer = bound = discovery.issuer
            if bound != discovery.issuer:
                raise OAuthError(
                    f"the client credentials given are for the authorization server {bound}, "
                    f"but {self.server_url} now uses {discovery.issuer}: register there"
                )
            return self.client
        cimd = discovery.metadata.get("client_id_metadata_document_supported") is True
        if self.client_metadata_url and cimd:
            return ClientInfo(self.client_metadata_url, auth_method="none")
        stored = await self.storage.load_client(discovery.issuer)
        if stored is not None and stored.issuer not in (None, discovery.issuer):
            return None  # a storage that ignored the issuer: never hand it to another server
        return stored

    async def _register(self, http: httpx.AsyncClient, discovery: Discovery) -> ClientInfo:
        endpoint = discovery.metadata.get("registration_endpoint")
        if not isinstance(endpoint, str):
            raise OAuthError("no client identity: pass client=ClientInfo(...); the server offers no registration")
        method = _registration_auth_method(discovery.metadata)
        body: dict[str, Any] = {
            "client_name": self.client_name,
            "grant_types": self._grant_types(discovery),
            "token_endpoint_auth_method": method,
            "application_type": self.application_type,
        }
        if self.grant == "authorization_code":
            body |= {"redirect_uris": [self.redirect_uri], "response_types": ["code"]}
        data = _json_result(await http.post(endpoint, json=body, headers=_JSON), "client registration")
        client_id, secret = data.get("client_id"), data.get("client_secret")
        if not isinstance(client_id, str):
            raise OAuthError("the registration response has no client_id")
        secret = secret if isinstance(secret, str) and secret else None
        registered = data.get("token_endpoint_auth_method")
        if not isinstance(registered, str):
            registered = method if secret is not None or method == "none" else "none"
        log.info("mcpgen: registered as an OAuth client at %s", endpoint)
        return ClientInfo(client_id, secret, registered, issuer=discovery.issuer)

    def _grant_types(self, discovery: Discovery) -> list[str]:
        if self.grant == "client_credentials":
            return ["client_credentials"]
        if isinstance(self.grant, CrossAppAccess | WorkloadIdentity):
            return [_JWT_BEARER]
        supported = discovery.metadata.get("grant_types_supported")
        refresh = not isinstance(supported, list) or "refresh_token" in supported
        return ["authorization_code", "refresh_token"] if refresh else ["authorization_code"]

    # ------------------------------------------------------------ grants

    async def _obtain(self, http: httpx.AsyncClient, discovery: Discovery, scope: str | None) -> Token:
        identity: ClientInfo | None
        if isinstance(self.grant, WorkloadIdentity) and self.client is None:
            # SEP-1933: the assertion identifies the workload; no client to register
            # (RFC 7523 section 3.1: client authentication is optional for this grant).
            identity = None
        else:
            identity = await self._identify(http, discovery)
        extra = {"scope": scope} if scope else {}
        if isinstance(self.grant, WorkloadIdentity):
            assertion = self.grant.assertion
            value = assertion() if callable(assertion) else assertion
            if not isinstance(value, str):
                value = await value
            form = {"grant_type": _JWT_BEARER, "assertion": value, "resource": discovery.resource, **extra}
        elif self.grant == "client_credentials":
            form = {"grant_type": "client_credentials", "resource": discovery.resource, **extra}
        elif isinstance(self.grant, CrossAppAccess):
            assertion = await self._id_jag(http, self.grant, discovery, scope)
            form = {"grant_type": _JWT_BEARER, "assertion": assertion, "resource": discovery.resource, **extra}
        else:
            assert identity is not None
            form = await self._authorization_code(http, discovery, identity, scope)
        log.info("mcpgen: token request (%s) to %s", form["grant_type"], discovery.endpoint("token_endpoint"))
        token = await self._token_request(http, discovery, identity, form)
        token.issuer = discovery.issuer
        return token

    async def _authorization_code(
        self, http: httpx.AsyncClient, discovery: Discovery, identity: ClientInfo, scope: str | None
    ) -> dict[str, str]:
        """Send the user to the authorization endpoint; the token request's form."""
        verifier, state = secrets.token_urlsafe(64), secrets.token_urlsafe(32)
        params = {
            "response_type": "code",
            "client_id": identity.client_id,
            "redirect_uri": self.redirect_uri,
            "state": state,
            "code_challenge": _s256(verifier),
            "code_challenge_method": "S256",
            "resource": discovery.resource,
        }
        if scope:
            params["scope"] = scope
        endpoint = discovery.endpoint("authorization_endpoint")
        log.info("mcpgen: authorization request to %s (scope %s)", endpoint, scope or "unspecified")
        authorize = self.authorize or (lambda url: _follow_without_user(http, url))
        code = _authorization_response(await authorize(_with_query(endpoint, params)), state, discovery)
        return {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": self.redirect_uri,
            "code_verifier": verifier,
            "resource": discovery.resource,
        }

    async def _id_jag(
        self, http: httpx.AsyncClient, grant: CrossAppAccess, discovery: Discovery, scope: str | None
    ) -> str:
        """RFC 8693 token exchange at the IdP: the user's ID token for an ID-JAG."""
        form = {
            "grant_type": _TOKEN_EXCHANGE,
            "requested_token_type": _ID_JAG,
            "audience": discovery.issuer,
            "resource": discovery.resource,
            "subject_token": grant.id_token,
            "subject_token_type": _ID_TOKEN,
            "client_id": grant.idp_client_id,
        }
        if scope:
            form["scope"] = scope
        headers = dict(_JSON)
        if grant.idp_client_secret is not None:
            headers["authorization"] = _basic(grant.idp_client_id, grant.idp_client_secret)
        log.info("mcpgen: exchanging the ID token for an ID-JAG at %s", grant.idp_token_endpoint)
        data = _json_result(await http.post(grant.idp_token_endpoint, data=form, headers=headers), "token exchange")
        jag, kind = data.get("access_token"), data.get("issued_token_type", _ID_JAG)
        if not isinstance(jag, str) or kind != _ID_JAG:
            raise OAuthError("the token exchange did not issue an ID-JAG")
        return jag

    async def _token_request(
        self,
        http: httpx.AsyncClient,
        discovery: Discovery,
        identity: ClientInfo | None,
        form: dict[str, str],
        previous: Token | None = None,
    ) -> Token:
        form, headers = dict(form), dict(_JSON)
        if identity is not None:
            self._client_authentication(discovery, identity, form, headers)
        endpoint = discovery.endpoint("token_endpoint")
        dpop = self._dpop_signer() if self._uses_dpop(discovery) else None
        if dpop is None:
            response = await http.post(endpoint, data=form, headers=headers)
            return _token_from(_json_result(response, "the token request"), previous)
        for attempt in range(2):
            headers["DPoP"] = dpop.proof("POST", endpoint)
            response = await http.post(endpoint, data=form, headers=headers)
            dpop.note(response)
            if attempt == 0 and nonce_challenge(response):
                log.info("mcpgen: the token endpoint asks for a DPoP nonce; asking again with it")
                continue
            break
        return _token_from(_json_result(response, "the token request"), previous, dpop=True)

    def _client_authentication(
        self, discovery: Discovery, identity: ClientInfo, form: dict[str, str], headers: dict[str, str]
    ) -> None:
        """Authenticate the client at the token endpoint as it registered to."""
        method = _auth_method(identity, discovery.metadata)
        if method in ("client_secret_basic", "client_secret_post") and identity.client_secret is None:
            raise OAuthError(f"{method} needs a client secret")
        if method == "client_secret_basic":
            headers["authorization"] = _basic(identity.client_id, identity.client_secret or "")
        elif method == "client_secret_post":
            form |= {"client_id": identity.client_id, "client_secret": identity.client_secret or ""}
        elif method == "private_key_jwt":
            form |= {
                "client_id": identity.client_id,
                "client_assertion_type": _ASSERTION_TYPE,
                "client_assertion": client_assertion(identity, discovery.issuer),
            }
        else:
            form["client_id"] = identity.client_id

    @contextlib.asynccontextmanager
    async def _http(self) -> AsyncIterator[httpx.AsyncClient]:
        """The client for OAuth endpoints: never the MCP one (its requests come back here)."""
        if self._http_client is not None:
            yield self._http_client
            return
        async with httpx.AsyncClient(timeout=30.0) as http:
            yield http


def _application_type(redirect_uri: str) -> Literal["native", "web"]:
    """SEP-837: "native" for apps on the user's machine (a loopback or private-scheme
    redirect), "web" for a browser app hosted elsewhere."""
    parts = urlsplit(redirect_uri)
    if parts.scheme not in ("http", "https"):
        return "native"
    return "native" if parts.hostname in ("localhost", "127.0.0.1", "::1") else "web"


def _basic(client_id: str, secret: str) -> str:
    """RFC 6749 section 2.3.1: both parts form-encoded, then Basic."""
    pair = f"{quote(client_id, safe='')}:{quote(secret, safe='')}"
    return "Basic " + base64.b64encode(pair.encode()).decode()


def _auth_method(identity: ClientInfo, metadata: dict[str, Any]) -> str:
    if identity.auth_method:
        return identity.auth_method
    if identity.private_key_pem is not None:
        return "private_key_jwt"
    if identity.client_secret is None:
        return "none"
    supported = metadata.get("token_endpoint_auth_methods_supported") or ["client_secret_basic"]
    if "client_secret_basic" not in supported and "client_secret_post" in supported:
        return "client_secret_post"
    return "client_secret_basic"


def _registration_auth_method(metadata: dict[str, Any]) -> str:
    supported = metadata.get("token_endpoint_auth_methods_supported") or ["client_secret_basic"]
    for method in ("client_secret_basic", "client_secret_post", "none"):
        if method in supported:
            return method
    return "none"


async def _follow_without_user(http: httpx.AsyncClient, url: str) -> str:
    """The headless authorize hook: GET the URL and return where it redirects, unfollowed."""
    response = await http.get(url, follow_redirects=False)
    location: str | None = response.headers.get("location")
    if not response.is_redirect or not location:
        raise OAuthError(
            f"the authorization endpoint answered HTTP {response.status_code}, not a redirect; "
            "it needs a user: pass authorize=..."
        )
    return location


def _authorization_response(answer: str | tuple[str, str | None], state: str, discovery: Discovery) -> str:
    """The code of an authorization response, once it has proven to answer our request
    from the authorization server we sent the user to.

    RFC 9207 comes first, before ``error`` is read (an error from a mix-up attacker is not
    to be shown either): ``iss`` must be present when the server advertises it, and when
    present is compared with the metadata ``issuer`` by plain string equality, after form
    decoding only (no case folding, default ports or trailing slashes)."""
    if isinstance(answer, tuple):
        query: dict[str, list[str]] = {"code": [answer[0]]}
        if answer[1] is not None:
            query["state"] = [answer[1]]
    else:
        query = parse_qs(urlsplit(answer).query, keep_blank_values=True)
    iss = query.get("iss")
    if iss is None and discovery.iss_supported:
        raise OAuthError(
            f"the authorization response carries no iss, which {discovery.issuer} promises (RFC 9207): refusing it"
        )
    if iss is not None and iss != [discovery.issuer]:
        raise OAuthError(
            f"the authorization response comes from issuer {iss[0]!r}, not {discovery.issuer} (RFC 9207): refusing it"
        )
    if query.get("state") != [state]:
        raise OAuthError("the authorization response's state does not match the request's")
    if "error" in query:
        why = query.get("error_description", [""])[0]
        raise OAuthError(f"authorization denied: {query['error'][0]} {why}".rstrip())
    if "code" not in query:
        raise OAuthError("the authorization redirect carries no code")
    return query["code"][0]


__all__ = [
    "AuthorizeHook",
    "ClientInfo",
    "CrossAppAccess",
    "MemoryStorage",
    "OAuthClient",
    "OAuthError",
    "Token",
    "TokenStorage",
    "WorkloadIdentity",
]
