"""Access token verification for a protected MCP server: JWTs against the issuer's keys, or
RFC 7662 introspection.

PyJWT does the JOSE work (signature, ``exp``/``nbf``/``iat``, ``iss``, ``aud``); httpx
fetches the authorization server's metadata, its JWKS and introspection answers. What is
written here is the glue an MCP server needs and neither library gives: finding the JWKS
from the issuer's metadata, caching it, refetching once when a token names a key we do not
know (key rotation) without letting a stream of made-up key ids hammer the issuer, and
turning every failure into a fixed sentence: an error says why a token was refused, never
what it contained (no claim, no token text; PyJWT's own messages are not passed on)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol
from urllib.parse import urlsplit

import httpx

from mcpgen.runtime.auth.info import AuthInfo
from mcpgen.runtime.extras import require

log = logging.getLogger("mcpgen.auth")

# Asymmetric algorithms only: a shared-secret (HS*) or "none" token is never accepted.
DEFAULT_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")


class InvalidToken(Exception):
    """The token is refused; the message is one of the fixed sentences below, safe to send."""


class VerifierUnavailable(Exception):
    """The verifier could not reach the authorization server (its JWKS or introspection)."""


class TokenVerifier(Protocol):
    async def verify(self, token: str) -> AuthInfo:
        """The verified token's :class:`AuthInfo`, or :class:`InvalidToken`."""
        ...


def scopes_of(claims: Mapping[str, Any]) -> frozenset[str]:
    """``scope`` (RFC 9068, space separated) or ``scp`` (a list, as Entra ID and Okta send)."""
    scope = claims.get("scope")
    if isinstance(scope, str):
        return frozenset(scope.split())
    scp = claims.get("scp")
    if isinstance(scp, str):
        return frozenset(scp.split())
    if isinstance(scp, list):
        return frozenset(s for s in scp if isinstance(s, str))
    return frozenset()


def _info(issuer: str, claims: Mapping[str, Any]) -> AuthInfo:
    cnf = claims.get("cnf")
    jkt = cnf.get("jkt") if isinstance(cnf, dict) else None
    sub, client_id, exp = claims.get("sub"), claims.get("client_id", claims.get("azp")), claims.get("exp")
    return AuthInfo(
        issuer=issuer,
        subject=sub if isinstance(sub, str) else None,
        client_id=client_id if isinstance(client_id, str) else None,
        scopes=scopes_of(claims),
        claims=dict(claims),
        expires_at=exp if isinstance(exp, int) else None,
        jkt=jkt if isinstance(jkt, str) else None,
    )


def metadata_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata may be: RFC 8414 (path inserted), then OpenID Connect
    discovery (path inserted, then appended, as most OIDC providers serve it)."""
    parts = urlsplit(issuer)
    origin, path = f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")
    urls = [f"{origin}/.well-known/oauth-authorization-server{path}"]
    if path:
        urls.append(f"{origin}/.well-known/openid-configuration{path}")
    urls.append(f"{origin}{path}/.well-known/openid-configuration")
    return urls


async def issuer_metadata(http: httpx.AsyncClient, issuer: str) -> dict[str, Any]:
    """The issuer's metadata document; its ``issuer`` must be the one asked for (RFC 8414 §3.3)."""
    for url in metadata_urls(issuer):
        try:
            response = await http.get(url, headers={"accept": "application/json"})
        except httpx.HTTPError:
            continue
        if response.status_code != 200:
            continue
        try:
            data = response.json()
        except ValueError:
            continue
        if isinstance(data, dict) and data.get("issuer") == issuer:
            return data
    raise VerifierUnavailable(f"no metadata for issuer {issuer} at {', '.join(metadata_urls(issuer))}")


class JwtVerifier:
    """JWT access tokens (RFC 9068 or any OIDC provider's) checked against the issuer's JWKS.

    ``audience`` is this server's canonical resource URI (RFC 8707): a token minted for
    another resource is refused even when the issuer is the same. ``jwks_url`` defaults to
    the ``jwks_uri`` of the issuer's metadata. Keys are cached for ``jwks_ttl`` seconds; a
    token whose ``kid`` is unknown triggers one refetch (the issuer rotated its keys),
    at most once per ``refetch_interval`` seconds. When a refresh fails (the issuer is
    briefly down), the last good keys keep serving for up to ``jwks_grace`` seconds past
    their ``jwks_ttl``, while the refresh is retried with backoff (1 s, doubling, at most
    60 s); only then do requests get 503."""

    def __init__(
        self,
        issuer: str,
        audience: str | Sequence[str],
        *,
        jwks_url: str | None = None,
        algorithms: Iterable[str] = DEFAULT_ALGORITHMS,
        leeway: float = 30.0,
        jwks_ttl: float = 3600.0,
        refetch_interval: float = 10.0,
        jwks_grace: float = 3600.0,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.jwt: Any = require("jwt", "auth", "JWT access token verification")
        self.issuer = issuer
        self.audience = [audience] if isinstance(audience, str) else list(audience)
        self.jwks_url = jwks_url
        self.algorithms = tuple(a for a in algorithms if a != "none" and not a.startswith("HS"))
        self.leeway = leeway
        self.jwks_ttl = jwks_ttl
        self.refetch_interval = refetch_interval
        self.jwks_grace = jwks_grace
        self._http = http
        self._keys: dict[str, Any] = {}  # kid -> PyJWK ("" for a key without kid)
        self._fetched = 0.0
        self._lock = asyncio.Lock()
        self._failures = 0  # refreshes failed in a row
        self._next_try = 0.0  # no refresh before this (monotonic), after a failure

    async def verify(self, token: str) -> AuthInfo:
        jwt = self.jwt
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise InvalidToken("the token is not a well-formed JWT") from None
        alg, kid = header.get("alg"), header.get("kid")
        if alg not in self.algorithms:
            raise InvalidToken("the token is signed with an algorithm this server does not accept")
        key = await self._key(kid if isinstance(kid, str) else "")
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key.key,
                algorithms=[alg],
                audience=self.audience,
                issuer=self.issuer,
                leeway=self.leeway,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.PyJWTError as exc:
            raise InvalidToken(_jwt_reason(jwt, exc)) from None
        return _info(self.issuer, claims)

    async def _key(self, kid: str) -> Any:
        stale = time.monotonic() - self._fetched > self.jwks_ttl
        if not stale and kid in self._keys:
            return self._keys[kid]
        if not stale and not kid and len(self._keys) == 1:
            return next(iter(self._keys.values()))
        async with self._lock:
            now = time.monotonic()
            if now - self._fetched > self.jwks_ttl or (
                kid not in self._keys and now - self._fetched >= self.refetch_interval
            ):
                await self._refresh(now)
        found = self._keys.get(kid)
        if found is None and not kid and len(self._keys) == 1:
            found = next(iter(self._keys.values()))
        if found is None:
            raise InvalidToken("the token is signed with a key the issuer does not publish")
        return found

    async def _refresh(self, now: float) -> None:
        """Fetch the keys, unless a failed fetch asked to wait; on failure keep the last
        good keys while they are within their grace period, else raise."""
        usable = bool(self._keys) and now - self._fetched <= self.jwks_ttl + self.jwks_grace
        if now < self._next_try:
            if usable:
                return
            raise VerifierUnavailable(f"the signing keys of {self.issuer} cannot be fetched; retrying")
        try:
            await self._fetch()
        except VerifierUnavailable as exc:
            self._failures += 1
            wait = min(60.0, 2.0 ** (self._failures - 1))
            self._next_try = now + wait
            if not usable:
                raise
            log.warning(
                "mcpgen: %s; serving the last good keys (%.0f s old), next try in %.0f s",
                exc,
                now - self._fetched,
                wait,
            )
            return
        self._failures = 0
        self._next_try = 0.0

    async def _fetch(self) -> None:
        async with self._client() as http:
            if self.jwks_url is None:
                metadata = await issuer_metadata(http, self.issuer)
                jwks_uri = metadata.get("jwks_uri")
                if not isinstance(jwks_uri, str):
                    raise VerifierUnavailable(f"issuer {self.issuer} publishes no jwks_uri")
                self.jwks_url = jwks_uri
            try:
                response = await http.get(self.jwks_url, headers={"accept": "application/json"})
                response.raise_for_status()
                data = response.json()
            except (httpx.HTTPError, ValueError) as exc:
                raise VerifierUnavailable(f"cannot fetch the JWKS at {self.jwks_url}: {type(exc).__name__}") from None
        keys: dict[str, Any] = {}
        for jwk in data.get("keys", []) if isinstance(data, dict) else []:
            if not isinstance(jwk, dict) or jwk.get("use", "sig") != "sig":
                continue
            try:
                keys[str(jwk.get("kid", ""))] = self.jwt.PyJWK(jwk)
            except self.jwt.PyJWTError:
                continue  # a key type or curve PyJWT cannot use: skip it, keep the others
        self._keys = keys
        self._fetched = time.monotonic()
        log.debug("mcpgen: fetched %d signing keys of %s", len(keys), self.issuer)

    def _client(self) -> Any:
        return _Borrowed(self._http) if self._http is not None else httpx.AsyncClient(timeout=10.0)


class IntrospectionVerifier:
    """Opaque (or any) access tokens checked by RFC 7662 introspection at the issuer.

    The server authenticates to the introspection endpoint as a client of the issuer
    (``client_id``/``client_secret``, HTTP Basic). An inactive token, an expired one, or
    one whose ``aud`` does not name this server (``audience``) is refused; an answer without
    ``aud`` is refused too unless ``require_audience=False`` (some issuers leave it out;
    the binding to this server is then the issuer's business)."""

    def __init__(
        self,
        endpoint: str,
        *,
        issuer: str,
        audience: str | Sequence[str],
        client_id: str,
        client_secret: str,
        require_audience: bool = True,
        leeway: float = 30.0,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.issuer = issuer
        self.audience = {audience} if isinstance(audience, str) else set(audience)
        self.client_id = client_id
        self.client_secret = client_secret
        self.require_audience = require_audience
        self.leeway = leeway
        self._http = http

    async def verify(self, token: str) -> AuthInfo:
        client = _Borrowed(self._http) if self._http is not None else httpx.AsyncClient(timeout=10.0)
        async with client as http:
            try:
                response = await http.post(
                    self.endpoint,
                    data={"token": token, "token_type_hint": "access_token"},
                    auth=(self.client_id, self.client_secret),
                    headers={"accept": "application/json"},
                )
                response.raise_for_status()
                answer = response.json()
            except (httpx.HTTPError, ValueError) as exc:
                raise VerifierUnavailable(f"introspection at {self.endpoint} failed: {type(exc).__name__}") from None
        if not isinstance(answer, dict) or answer.get("active") is not True:
            raise InvalidToken("the token is not active")
        now = time.time()
        exp, nbf = answer.get("exp"), answer.get("nbf")
        if isinstance(exp, int | float) and exp <= now - self.leeway:
            raise InvalidToken("the token has expired")
        if isinstance(nbf, int | float) and nbf > now + self.leeway:
            raise InvalidToken("the token is not valid yet")
        iss = answer.get("iss")
        if iss is not None and iss != self.issuer:
            raise InvalidToken("the token is from another issuer")
        audiences = _audiences(answer.get("aud"))
        if (audiences and not audiences & self.audience) or (not audiences and self.require_audience):
            raise InvalidToken("the token is for another resource")
        return _info(self.issuer, answer)


class _Borrowed:
    """A caller's httpx client used as a context manager without closing it."""

    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http

    async def __aenter__(self) -> httpx.AsyncClient:
        return self.http

    async def __aexit__(self, *exc: object) -> None:
        return None


def _audiences(aud: Any) -> set[str]:
    if isinstance(aud, str):
        return {aud}
    return {a for a in aud if isinstance(a, str)} if isinstance(aud, list) else set()


def _jwt_reason(jwt: Any, exc: Exception) -> str:
    """A fixed sentence per PyJWT failure (its messages may quote the token's contents)."""
    reasons: list[tuple[Any, str]] = [
        (jwt.ExpiredSignatureError, "the token has expired"),
        (jwt.ImmatureSignatureError, "the token is not valid yet"),
        (jwt.InvalidAudienceError, "the token is for another resource"),
        (jwt.InvalidIssuerError, "the token is from another issuer"),
        (jwt.InvalidSignatureError, "the token's signature does not verify"),
        (jwt.MissingRequiredClaimError, "the token lacks a required claim"),
        (jwt.InvalidAlgorithmError, "the token is signed with an algorithm this server does not accept"),
    ]
    for kind, reason in reasons:
        if isinstance(exc, kind):
            return reason
    return "the token is malformed"
