"""Finding a protected MCP server's authorization server, for the OAuth client
(:mod:`mcpgen.runtime.auth.oauth`): the server's challenge, its protected resource metadata
(RFC 9728), the authorization server's metadata (RFC 8414, OpenID discovery), and the
2025-03-26 fallbacks.

The server and its authorization server are not trusted with where the client goes: every
URL they name (the challenge's ``resource_metadata``, the issuer, and the authorization,
token and registration endpoints) must be https, or http on this machine's loopback, with
no user information and no fragment, before any request is made to it or any browser is
sent there (a ``file:`` or custom-scheme "authorization endpoint" handed to the operating
system's opener is how CVE-2025-6514 ran code on clients). The URLs the user gave (the
MCP server's, an enterprise IdP's) are the user's choice.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from mcpgen.runtime.auth.challenge import challenge_params
from mcpgen.runtime.shared.origins import origin, secure_endpoint

log = logging.getLogger("mcpgen.auth")

_JSON = {"accept": "application/json"}
# The authorization server metadata's endpoints the client may use.
ENDPOINTS = ("authorization_endpoint", "token_endpoint", "registration_endpoint")


class OAuthError(Exception):
    """Authorization failed: discovery, registration, the grant, or a scope that never suffices."""


def checked_endpoint(name: str, url: object, source: str) -> str:
    """``url`` if it may be requested (or opened in a browser); else :class:`OAuthError`,
    naming the URL, who gave it and why it is refused."""
    if not isinstance(url, str) or not url:
        raise OAuthError(f"{source} gives no usable {name}")
    why = secure_endpoint(url)
    if why is not None:
        raise OAuthError(f"refusing the {name} {url!r} that {source} names: {why}")
    return url


@dataclass
class Challenge:
    """A 401, or a 403 ``insufficient_scope``, with its ``WWW-Authenticate: Bearer`` params."""

    status: int
    scope: list[str]
    resource_metadata: str | None

    @classmethod
    def of(cls, response: httpx.Response) -> Challenge | None:
        header = response.headers.get("www-authenticate", "")
        params = challenge_params(header, "bearer") or challenge_params(header, "dpop")
        if response.status_code == 401 or (response.status_code == 403 and params.get("error") == "insufficient_scope"):
            return cls(response.status_code, params.get("scope", "").split(), params.get("resource_metadata"))
        return None


def parse_bearer_challenge(header: str) -> dict[str, str]:
    """The auth-params of the ``Bearer`` challenge in a WWW-Authenticate value."""
    return challenge_params(header, "bearer")


@dataclass
class Discovery:
    """What discovery found: every endpoint in ``metadata`` checked (:func:`checked_endpoint`)."""

    resource: str  # the RFC 8707 resource: the PRM's, else our canonical server URL
    metadata: dict[str, Any]  # the authorization server's
    issuer: str
    scopes_supported: list[str]  # the protected resource's
    prm_url: str | None

    def __post_init__(self) -> None:
        source = f"the authorization server metadata of {self.issuer}"
        for name in ENDPOINTS:
            if name in self.metadata:
                checked_endpoint(name, self.metadata[name], source)

    @property
    def iss_supported(self) -> bool:
        """RFC 9207: the server puts ``iss`` in every authorization response."""
        return self.metadata.get("authorization_response_iss_parameter_supported") is True

    def endpoint(self, name: str) -> str:
        value = self.metadata.get(name)
        if not isinstance(value, str) or not value:
            raise OAuthError(f"the authorization server metadata has no {name}")
        return checked_endpoint(name, value, f"the authorization server metadata of {self.issuer}")


def canonical_resource(url: str) -> str:
    """RFC 8707 form: lowercase scheme and host, no query or fragment, no lone "/" path."""
    parts = urlsplit(url)
    path = "" if parts.path == "/" else parts.path
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, "", ""))


def resource_covers(resource: str, server_url: str) -> bool:
    """Does the PRM ``resource`` name this server: same origin, and a prefix of its path?"""
    ours, theirs = canonical_resource(server_url), canonical_resource(resource)
    if origin(ours) != origin(theirs):
        return False
    prefix = urlsplit(theirs).path.rstrip("/")
    path = urlsplit(ours).path
    return path == prefix or path.startswith(prefix + "/")


def prm_urls(server_url: str, header_url: str | None) -> list[str]:
    """RFC 9728 candidates: the challenge's URL, then path-aware, then the root."""
    parts = urlsplit(server_url)
    base, path = f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")
    urls = [header_url] if header_url else []
    if path:
        urls.append(f"{base}/.well-known/oauth-protected-resource{path}")
    urls.append(f"{base}/.well-known/oauth-protected-resource")
    return urls


def as_metadata_urls(issuer: str) -> list[str]:
    """RFC 8414 section 3.1 and OpenID discovery, in the order MCP prescribes."""
    parts = urlsplit(issuer)
    base, path = f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")
    urls = [
        f"{base}/.well-known/oauth-authorization-server{path}",
        f"{base}/.well-known/openid-configuration{path}",
        f"{base}{path}/.well-known/openid-configuration",
    ]
    return list(dict.fromkeys(urls))


async def get_json(http: httpx.AsyncClient, url: str) -> dict[str, Any] | None:
    """The JSON object at ``url``, or None (not there, not JSON, not an object)."""
    try:
        response = await http.get(url, headers=_JSON)
    except httpx.HTTPError as exc:
        log.debug("mcpgen: GET %s failed: %s", url, exc)
        return None
    if response.status_code != 200:
        log.debug("mcpgen: GET %s: HTTP %d", url, response.status_code)
        return None
    try:
        data = response.json()
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


async def discover_from_prm(
    http: httpx.AsyncClient, server_url: str, prm: dict[str, Any], url: str | None
) -> Discovery:
    """The authorization server the protected resource metadata ``prm`` (read at ``url``) names."""
    resource, servers = prm.get("resource"), prm.get("authorization_servers")
    if not isinstance(resource, str) or not resource_covers(resource, server_url):
        raise OAuthError(f"the protected resource metadata at {url} is for {resource!r}, not {server_url}")
    if not isinstance(servers, list) or not servers or not isinstance(servers[0], str):
        raise OAuthError(f"the protected resource metadata at {url} names no authorization server")
    issuer = checked_endpoint("authorization server", servers[0], f"the protected resource metadata at {url}")
    for metadata_url in as_metadata_urls(issuer):
        metadata = await get_json(http, metadata_url)
        if metadata is None:
            continue
        # RFC 8414 section 3.3: identical, not merely equivalent; a document naming
        # another issuer is not used at all (not even its endpoints).
        if metadata.get("issuer") != issuer:
            found = metadata.get("issuer")
            raise OAuthError(f"the metadata at {metadata_url} is for issuer {found!r}, not {issuer}")
        scopes = prm.get("scopes_supported")
        log.info("mcpgen: %s is protected by the authorization server %s", server_url, issuer)
        # The RFC 8707 resource is the PRM's own string, verbatim: the authorization
        # server compares it with what the resource registered, character for character.
        return Discovery(
            resource=resource,
            metadata=metadata,
            issuer=issuer,
            scopes_supported=[str(s) for s in scopes] if isinstance(scopes, list) else [],
            prm_url=url,
        )
    raise OAuthError(f"no authorization server metadata found for {issuer}")


async def discover_legacy(http: httpx.AsyncClient, server_url: str) -> Discovery:
    """2025-03-26: no resource metadata, so the authorization server is at the MCP
    server's origin: its metadata (whatever issuer it names), else default endpoints."""
    parts = urlsplit(server_url)
    base = f"{parts.scheme}://{parts.netloc}"
    for url in as_metadata_urls(base):
        metadata = await get_json(http, url)
        if metadata is not None:
            log.info(
                "mcpgen: %s has no resource metadata; using the authorization server metadata at %s", server_url, url
            )
            issuer = metadata.get("issuer")
            return Discovery(server_url, metadata, issuer if isinstance(issuer, str) else base, [], None)
    log.info("mcpgen: %s has no OAuth metadata; using the default endpoints on %s", server_url, base)
    defaults = {
        "authorization_endpoint": f"{base}/authorize",
        "token_endpoint": f"{base}/token",
        "registration_endpoint": f"{base}/register",
    }
    return Discovery(server_url, defaults, base, [], None)


__all__ = [
    "Challenge",
    "Discovery",
    "OAuthError",
    "as_metadata_urls",
    "canonical_resource",
    "checked_endpoint",
    "discover_from_prm",
    "discover_legacy",
    "get_json",
    "parse_bearer_challenge",
    "prm_urls",
    "resource_covers",
]
