"""Credentials a gateway sends its backends, from its configuration (:mod:`.config`):

* static headers (``headers``) or environment variables (``env``), sent on every connection;
* ``client_credentials``: the runtime's OAuth client (:class:`~mcpgen.OAuthClient`) gets
  the gateway's own token for the backend, discovering its authorization server from the
  backend's 401 challenge;
* ``passthrough``: the caller's own access token, as it came (only where the config says so);
* ``token_exchange``: the caller's token traded (RFC 8693) for one meant for the backend.

The last two act for the caller: they need a gateway that checks tokens (its ``auth``), whose
verifier keeps the verified token for the request being served only (:class:`CallerToken`),
and a request without one is refused rather than sent with any other credentials. A
caller's token is never logged, nor kept past its request except exchanged (cached by the
token's SHA-256, until a minute before it expires, at most ``MAX_EXCHANGED`` of them).
"""

from __future__ import annotations

import base64
import hashlib
import time
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol

from mcpgen.runtime.errors import INTERNAL_ERROR, INVALID_REQUEST, McpError

if TYPE_CHECKING:
    import httpx

    from mcpgen.runtime.auth.info import AuthInfo
    from mcpgen.runtime.gateway.config import BackendAuth
    from mcpgen.runtime.gateway.targets import Credentials

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN = "urn:ietf:params:oauth:token-type:access_token"
MAX_EXCHANGED = 1000
caller_token: ContextVar[str | None] = ContextVar("mcpgen_gateway_caller_token", default=None)


class _Verifier(Protocol):
    async def verify(self, token: str) -> AuthInfo: ...


class CallerToken:
    """A token verifier that also keeps the verified token, for the request being served
    only (``BearerAuth(..., verifier=CallerToken(JwtVerifier(...)))``)."""

    def __init__(self, inner: _Verifier) -> None:
        self.inner = inner

    async def verify(self, token: str) -> AuthInfo:
        info = await self.inner.verify(token)
        caller_token.set(token)
        return info

    def __getattr__(self, name: str) -> Any:  # the rest of the verifier's interface
        return getattr(self.inner, name)


def _caller() -> str:
    token = caller_token.get()
    if token is None:
        raise McpError(
            INVALID_REQUEST,
            "this backend acts for the caller, and the request carries no verified access token "
            "(the gateway must check tokens: its auth setting)",
        )
    return token


def passthrough() -> Credentials:
    async def headers() -> Mapping[str, str]:
        return {"Authorization": f"Bearer {_caller()}"}

    return headers


class TokenExchange:
    """RFC 8693: the caller's token for one meant for the backend (``audience`` /
    ``resource``), from ``token_endpoint``, this gateway authenticating as ``client_id``."""

    def __init__(
        self,
        token_endpoint: str,
        client_id: str,
        client_secret: str | None = None,
        *,
        audience: str | None = None,
        resource: str | None = None,
        scope: str | None = None,
    ) -> None:
        self.token_endpoint = token_endpoint
        self.client_id = client_id
        self.client_secret = client_secret
        self.audience = audience
        self.resource = resource
        self.scope = scope
        self._cache: dict[str, tuple[str, float]] = {}

    async def __call__(self) -> Mapping[str, str]:
        return {"Authorization": f"Bearer {await self.exchange(_caller())}"}

    async def exchange(self, subject: str) -> str:
        digest = hashlib.sha256(subject.encode()).hexdigest()
        found = self._cache.get(digest)
        if found is not None and found[1] > time.time():
            return found[0]
        form = {"grant_type": TOKEN_EXCHANGE, "subject_token": subject, "subject_token_type": ACCESS_TOKEN}
        for name in ("audience", "resource", "scope"):
            value = getattr(self, name)
            if value:
                form[name] = value
        headers = {"accept": "application/json"}
        if self.client_secret is not None:
            pair = f"{self.client_id}:{self.client_secret}".encode()
            headers["authorization"] = "Basic " + base64.b64encode(pair).decode()
        else:
            form["client_id"] = self.client_id
        import httpx

        async with httpx.AsyncClient(timeout=10.0) as http:
            response = await http.post(self.token_endpoint, data=form, headers=headers)
        try:
            data = response.json()
        except ValueError:
            data = None
        token = data.get("access_token") if isinstance(data, dict) else None
        if response.status_code != 200 or not isinstance(token, str):
            # The authorization server's words, never the tokens sent.
            reason = data.get("error") if isinstance(data, dict) else None
            raise McpError(
                INTERNAL_ERROR, f"token exchange refused (HTTP {response.status_code}, {reason or 'no error'})"
            )
        lifetime = data.get("expires_in") if isinstance(data, dict) else None
        expires = time.time() + (float(lifetime) if isinstance(lifetime, (int, float)) else 300.0) - 60.0
        if len(self._cache) >= MAX_EXCHANGED:
            self._cache.clear()
        self._cache[digest] = (token, expires)
        return token


def client_credentials(url: str, auth: BackendAuth) -> Callable[[], httpx.Auth]:
    """A maker of the runtime's OAuth client, client credentials grant, per connection (they
    share one token store: the token is fetched once, not per connection)."""
    from mcpgen.runtime.auth.oauth import ClientInfo, MemoryStorage, OAuthClient

    assert auth.client_id is not None
    client = ClientInfo(auth.client_id, auth.client_secret)
    storage = MemoryStorage()

    def make() -> httpx.Auth:
        return OAuthClient(url, grant="client_credentials", client=client, storage=storage)

    return make


def acts_for_caller(auth: BackendAuth | None) -> bool:
    return auth is not None and auth.type in ("passthrough", "token_exchange")


def credentials_of(auth: BackendAuth | None) -> Credentials | None:
    if auth is None:
        return None
    if auth.type == "passthrough":
        return passthrough()
    if auth.type == "token_exchange":
        assert auth.token_endpoint is not None and auth.client_id is not None
        return TokenExchange(
            auth.token_endpoint,
            auth.client_id,
            auth.client_secret,
            audience=auth.audience,
            resource=auth.resource,
            scope=auth.scope,
        )
    return None
