"""Credentials for the upstream API, from the ``securitySchemes`` the operation names.

The operator's credentials come from environment variables (named in the project's README
and ``server.json``), read when a request needs them: API keys (header, query, cookie),
HTTP bearer and basic, OAuth 2 client credentials (the token is fetched, cached until a
minute before it expires, and fetched again once when the API answers 401).

Per user (``<PREFIX>_USER_AUTH``): ``passthrough`` sends the MCP caller's own access token
upstream, ``exchange`` trades it at an authorization server for one meant for the API
(RFC 8693 token exchange). Either works only on a server protected with ``BearerAuth``
whose verifier is wrapped in :class:`CallerToken` (the generated ``auth.py`` does that):
the token is taken from the request being served, never stored past it, and a request
without one (stdio, an unprotected server) is refused rather than sent with the operator's
credentials.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import time
from collections.abc import Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol

from mcpgen.openapi.runtime.spec import SecurityScheme

if TYPE_CHECKING:
    import httpx

    from mcpgen.runtime.auth.info import AuthInfo

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
MAX_EXCHANGED = 1000  # exchanged tokens kept; past that, each call exchanges afresh
caller_token: ContextVar[str | None] = ContextVar("mcpgen_openapi_caller_token", default=None)


class MissingCredentials(Exception):
    """No alternative of the operation's security can be met; says which variables to set."""


class _Verifier(Protocol):
    async def verify(self, token: str) -> AuthInfo: ...


class CallerToken:
    """A token verifier that also keeps the verified token for this request only, so that
    the upstream call can pass it on or exchange it: ``BearerAuth(..., verifier=CallerToken(JwtVerifier(...)))``.
    The token is kept in a context variable of the request being served (as the runtime
    keeps ``ctx.auth``), never in a log or an answer."""

    def __init__(self, inner: _Verifier) -> None:
        self.inner = inner

    async def verify(self, token: str) -> AuthInfo:
        info = await self.inner.verify(token)
        caller_token.set(token)
        return info

    def __getattr__(self, name: str) -> Any:  # the rest of the verifier's interface
        return getattr(self.inner, name)


class Credentials:
    """Applies one operation's security to a request being built."""

    def __init__(self, schemes: Mapping[str, SecurityScheme], prefix: str, environ: Mapping[str, str] | None = None):
        self.schemes = schemes
        self.prefix = prefix
        self.environ = environ if environ is not None else os.environ
        self.user_mode = self.environ.get(f"{prefix}_USER_AUTH", "off").strip().lower()
        if self.user_mode not in ("off", "passthrough", "exchange"):
            raise ValueError(f"{prefix}_USER_AUTH is off, passthrough or exchange, not {self.user_mode!r}")
        self._tokens: dict[str, tuple[str, float]] = {}  # scheme -> (token, expires at)
        self._exchanged: dict[str, tuple[str, float]] = {}  # sha256 of the caller's token -> token
        self._locks: dict[str, asyncio.Lock] = {}

    def _env(self, name: str | None) -> str | None:
        value = self.environ.get(name) if name else None
        return value if value else None

    def available(self, name: str) -> bool:
        scheme = self.schemes[name]
        env = scheme.env
        if self.per_user(scheme):
            return True  # checked when the request is made: refused without a caller token
        if scheme.kind == "http" and scheme.scheme == "basic":
            return self._env(env.get("username")) is not None
        if scheme.kind == "oauth2":
            if self._env(env.get("token")):
                return True
            url = scheme.token_url or self._env(env.get("token_url"))
            return bool(url and self._env(env.get("client_id")) and self._env(env.get("client_secret")))
        return self._env(env.get("value") or env.get("token")) is not None

    def per_user(self, scheme: SecurityScheme) -> bool:
        bearer = scheme.kind in ("oauth2", "openIdConnect") or (scheme.kind == "http" and scheme.scheme == "bearer")
        return bearer and self.user_mode != "off"

    def choose(self, security: tuple[dict[str, list[str]], ...]) -> dict[str, list[str]] | None:
        """The first alternative whose credentials are all set (None: send none)."""
        if not security:
            return None
        for alternative in security:
            if all(name in self.schemes and self.available(name) for name in alternative):
                return alternative
        wanted = sorted(
            {
                v
                for alt in security
                for n in alt
                if n in self.schemes
                for k, v in self.schemes[n].env.items()
                if k != "token_url"
            }
        )
        raise MissingCredentials(f"this operation needs credentials: set {' or '.join(wanted) or 'them'}")

    async def apply(
        self,
        alternative: dict[str, list[str]],
        headers: dict[str, str],
        query: list[str],
        cookies: list[str],
        http: httpx.AsyncClient,
        refresh: bool = False,
    ) -> None:
        from urllib.parse import quote

        for name in alternative:
            scheme = self.schemes[name]
            env = scheme.env
            if scheme.kind == "apiKey":
                value = self._env(env.get("value")) or ""
                if scheme.location == "header":
                    headers[scheme.name or name] = value
                elif scheme.location == "query":
                    query.append(f"{quote(scheme.name or name, safe='')}={quote(value, safe='')}")
                else:
                    cookies.append(f"{quote(scheme.name or name, safe='')}={quote(value, safe='')}")
            elif scheme.kind == "http" and scheme.scheme == "basic":
                pair = f"{self._env(env.get('username')) or ''}:{self._env(env.get('password')) or ''}"
                headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
            else:
                token = await self.bearer(name, scheme, http, refresh)
                headers["Authorization"] = f"Bearer {token}"

    async def bearer(self, name: str, scheme: SecurityScheme, http: httpx.AsyncClient, refresh: bool) -> str:
        if self.per_user(scheme):
            token = caller_token.get()
            if token is None:
                raise MissingCredentials(
                    "this operation acts for the caller, and this request carries no verified access token "
                    "(serve over HTTP with BearerAuth and sign in)"
                )
            return token if self.user_mode == "passthrough" else await self.exchange(token, http)
        static = self._env(scheme.env.get("token"))
        if static:
            return static
        return await self.client_credentials(name, scheme, http, refresh)

    async def client_credentials(
        self, name: str, scheme: SecurityScheme, http: httpx.AsyncClient, refresh: bool
    ) -> str:
        cached = self._tokens.get(name)
        if cached is not None and cached[1] > time.monotonic() and not refresh:
            return cached[0]
        lock = self._locks.setdefault(name, asyncio.Lock())
        async with lock:
            cached = self._tokens.get(name)
            if cached is not None and cached[1] > time.monotonic() and not refresh:
                return cached[0]  # another call fetched it while this one waited
            form = {"grant_type": "client_credentials"}
            if scheme.scopes:
                form["scope"] = " ".join(scheme.scopes)
            token, lifetime = await self._token_request(
                self._env(scheme.env.get("token_url")) or scheme.token_url or "",
                form,
                self._env(scheme.env.get("client_id")) or "",
                self._env(scheme.env.get("client_secret")) or "",
                http,
            )
            self._tokens[name] = (token, time.monotonic() + max(lifetime - 60, 0))
            return token

    async def exchange(self, subject: str, http: httpx.AsyncClient) -> str:
        key = hashlib.sha256(subject.encode()).hexdigest()
        cached = self._exchanged.get(key)
        if cached is not None and cached[1] > time.monotonic():
            return cached[0]
        p = self.prefix
        url = self._env(f"{p}_EXCHANGE_TOKEN_URL")
        if url is None:
            raise MissingCredentials(f"{p}_USER_AUTH=exchange needs {p}_EXCHANGE_TOKEN_URL")
        form = {"grant_type": TOKEN_EXCHANGE, "subject_token": subject, "subject_token_type": ACCESS_TOKEN_TYPE}
        for field, var in (("audience", "AUDIENCE"), ("resource", "RESOURCE"), ("scope", "SCOPE")):
            value = self._env(f"{p}_EXCHANGE_{var}")
            if value:
                form[field] = value
        token, lifetime = await self._token_request(
            url, form, self._env(f"{p}_EXCHANGE_CLIENT_ID") or "", self._env(f"{p}_EXCHANGE_CLIENT_SECRET") or "", http
        )
        if len(self._exchanged) >= MAX_EXCHANGED:
            now = time.monotonic()
            self._exchanged = {k: v for k, v in self._exchanged.items() if v[1] > now}
        if len(self._exchanged) < MAX_EXCHANGED:  # full of live tokens: refuse to keep more
            self._exchanged[key] = (token, time.monotonic() + max(lifetime - 60, 0))
        return token

    async def _token_request(
        self, url: str, form: dict[str, str], client_id: str, secret: str, http: httpx.AsyncClient
    ) -> tuple[str, float]:
        if not url.startswith(("https://", "http://")):
            raise MissingCredentials("no token endpoint: the document names none and none is set")
        headers = {"Accept": "application/json"}
        if client_id:  # client_secret_basic (RFC 6749 section 2.3.1: each part form-encoded first)
            from urllib.parse import quote_plus

            pair = f"{quote_plus(client_id)}:{quote_plus(secret)}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        response = await http.post(url, data=form, headers=headers)
        try:
            data = response.json()
        except ValueError:
            data = None
        if response.status_code != 200 or not isinstance(data, dict) or not isinstance(data.get("access_token"), str):
            error = data.get("error") if isinstance(data, dict) else None
            raise MissingCredentials(f"the token endpoint refused (HTTP {response.status_code} {error or ''})".strip())
        lifetime = data.get("expires_in")
        return data["access_token"], float(lifetime) if isinstance(lifetime, (int, float)) else 3600.0


__all__ = ["CallerToken", "Credentials", "MissingCredentials", "caller_token"]
