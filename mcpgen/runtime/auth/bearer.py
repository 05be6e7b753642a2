"""Protect an MCP server served over HTTP: the OAuth resource server side of "Authorization".

    server = Server("notes", auth=BearerAuth(
        issuer="https://login.example.com/",          # any OAuth 2.1 / OIDC issuer
        resource="https://notes.example.com/mcp",     # this server's canonical URI
        scopes=["notes:read"],                        # needed by every request
    ))

    @server.tool(scopes=["notes:write"])              # and this tool needs more
    def write(text: str, ctx: Context) -> str:
        return f"saved for {ctx.auth.subject}"

What :class:`BearerAuth` does, in front of the Streamable HTTP endpoint (both protocol eras)
and the legacy HTTP+SSE endpoints, as a small ASGI layer:

- serves the protected resource metadata (RFC 9728) at ``/.well-known/oauth-protected-resource``
  plus the resource's path, and at the bare well-known path, naming the issuer and scopes;
- answers a request without a usable token 401 with ``WWW-Authenticate: Bearer
  resource_metadata="...", scope="..."`` (``error="invalid_token"`` when a token was sent:
  RFC 6750 §3), and one whose token lacks a scope 403 ``insufficient_scope`` naming the
  scopes needed, so that a client can step up;
- verifies tokens as JWTs against the issuer's keys, or by introspection
  (:mod:`mcpgen.runtime.auth.token_verify`), with the audience bound to ``resource``;
- verifies DPoP-bound tokens (RFC 9449: ``Authorization: DPoP``, the proof, its key's
  thumbprint as the token's ``cnf.jkt``, replays; :mod:`mcpgen.runtime.auth.dpop_verify`),
  replays and nonces across every worker when the server has a shared store;
- checks the scopes a tool, resource or prompt declares once the request is parsed and
  the name is known, before its handler runs (the stateless era has no session to hang a
  check on; the handshake era is checked the same way, per POST);
- binds a session to the identity that opened it: a session id presented with someone
  else's token is "not found";
- hands the verified claims to handlers as ``ctx.auth`` (:class:`~mcpgen.runtime.auth.info.AuthInfo`).

Nothing about a token (its text, its claims) is ever put in a response or a log line: a
refusal says which check failed, in a fixed sentence.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit, urlunsplit

import msgspec

from mcpgen.runtime.auth.dpop_verify import DpopVerifier, InvalidProof, NonceRequired
from mcpgen.runtime.auth.info import AuthInfo, current_auth
from mcpgen.runtime.auth.token_verify import (
    DEFAULT_ALGORITHMS,
    InvalidToken,
    JwtVerifier,
    TokenVerifier,
    VerifierUnavailable,
)
from mcpgen.runtime.errors import INVALID_REQUEST
from mcpgen.runtime.jsonrpc.framing import Envelope, error_frame
from mcpgen.runtime.stores.shared_store import ProofLedger, StoreUnavailable
from mcpgen.runtime.transports.asgi import Receive, Scope, Send, respond

log = logging.getLogger("mcpgen.auth")

WELL_KNOWN = "/.well-known/oauth-protected-resource"
# RFC 6750 §2.1 b64token; anything else in the header is not a token at all.
_TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_MAX_TOKEN = 16 * 1024
# The methods whose target names something that may declare its own scopes.
_NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri", "resources/subscribe": "uri"}

App = Callable[[Scope, Receive, Send], Awaitable[None]]
DpopMode = Literal["allowed", "required", "off"]


class _Target(msgspec.Struct):
    """Just enough of a request's params to know what it calls (``ref``: what a
    ``completion/complete`` completes; ``notifications``: what a ``subscriptions/listen``
    follows)."""

    name: Any = None
    uri: Any = None
    ref: Any = None
    notifications: Any = None


class Refusal:
    """A 401, 403 or 503 answer with its challenge; sent instead of serving the request."""

    def __init__(self, status: int, description: str, headers: list[tuple[bytes, bytes]]) -> None:
        self.status = status
        self.description = description
        self.headers = headers

    async def send(self, send: Send) -> None:
        reason = {401: "Unauthorized", 403: "Forbidden"}.get(self.status, "Service Unavailable")
        await respond(
            send, self.status, error_frame(INVALID_REQUEST, f"{reason}: {self.description}"), extra=self.headers
        )


def canonical_resource(uri: str) -> str:
    """RFC 8707 form of a server URI: lowercase scheme and host, no query or fragment, no
    lone trailing "/"."""
    parts = urlsplit(uri)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"resource must be an absolute http(s) URI, not {uri!r}")
    path = "" if parts.path == "/" else parts.path
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, "", ""))


class ScopeSource(Protocol):
    """What :class:`BearerAuth` asks of the server it protects (a
    :class:`~mcpgen.runtime.server.server.Server` satisfies it): the scopes its handlers
    declare. Declared here so that auth sits below the server and never imports it."""

    def declared_scopes(self) -> list[str]: ...
    def required_scopes(self, method: str, name: str) -> tuple[str, ...]: ...
    def completion_scopes(self, ref_type: str, name: str) -> tuple[str, ...]: ...


class BearerAuth:
    """OAuth protection of an HTTP-served :class:`~mcpgen.runtime.server.server.Server`
    (``Server(..., auth=BearerAuth(...))``). See the module's docstring.

    ``issuer``: the authorization server (its metadata gives the JWKS; name several
    in ``authorization_servers`` to advertise more). ``resource``: this server's canonical
    URI, the audience every token must name. ``scopes``: needed by every request, and
    advertised (with ``scopes_supported``, default: these plus every scope a tool,
    resource or prompt declares). ``verifier``: how tokens are checked (default: a
    :class:`~mcpgen.runtime.auth.token_verify.JwtVerifier` of the issuer's keys; pass an
    :class:`~mcpgen.runtime.auth.token_verify.IntrospectionVerifier` for opaque tokens).
    ``dpop``: ``"allowed"`` (DPoP-bound tokens are checked, bearer ones accepted),
    ``"required"`` (only DPoP-bound tokens) or ``"off"`` (a DPoP-bound token is refused:
    its binding could not be checked); ``dpop_nonces`` makes proofs carry this server's
    nonce. ``store``: a shared store (``RedisStore``) through which used proofs and nonces
    hold across workers; ``server.run("http", store=...)`` and ``http_app(store=...)``
    hand theirs over (:meth:`use_store`)."""

    def __init__(
        self,
        issuer: str,
        resource: str,
        *,
        scopes: Iterable[str] = (),
        scopes_supported: Iterable[str] | None = None,
        verifier: TokenVerifier | None = None,
        jwks_url: str | None = None,
        algorithms: Iterable[str] = DEFAULT_ALGORITHMS,
        leeway: float = 30.0,
        dpop: DpopMode = "allowed",
        dpop_nonces: bool = False,
        authorization_servers: Iterable[str] | None = None,
        resource_name: str | None = None,
        documentation: str | None = None,
        store: object | None = None,
    ) -> None:
        if dpop not in ("allowed", "required", "off"):
            raise ValueError(f"dpop must be 'allowed', 'required' or 'off', not {dpop!r}")
        self.issuer = issuer
        self.resource = canonical_resource(resource)
        self.scopes = tuple(scopes)
        self._scopes_supported = list(scopes_supported) if scopes_supported is not None else None
        self.algorithms = tuple(algorithms)
        self.verifier: TokenVerifier = verifier or JwtVerifier(
            issuer, self.resource, jwks_url=jwks_url, algorithms=self.algorithms, leeway=leeway
        )
        self.dpop: DpopMode = dpop
        self.proofs = DpopVerifier(algorithms=self.algorithms, nonces=dpop_nonces) if dpop != "off" else None
        self.authorization_servers = list(authorization_servers or [issuer])
        self.resource_name = resource_name
        self.documentation = documentation
        parts = urlsplit(self.resource)
        self._origin = f"{parts.scheme}://{parts.netloc}"
        self.metadata_url = f"{self._origin}{WELL_KNOWN}{parts.path}"
        self.metadata_paths = frozenset({WELL_KNOWN, f"{WELL_KNOWN}{parts.path}"})
        self._server: ScopeSource | None = None
        if store is not None:
            self.use_store(store)

    def use_store(self, store: object) -> None:
        """Check DPoP replays and nonces through ``store``'s ledger (its ``proofs``, a
        :class:`~mcpgen.runtime.stores.shared_store.ProofLedger`), so that they hold across
        every worker sharing it; a store without one changes nothing."""
        ledger = getattr(store, "proofs", None)
        if self.proofs is not None and isinstance(ledger, ProofLedger):
            self.proofs.ledger = ledger

    def attach(self, server: ScopeSource) -> None:
        """Called by the server this protects (for the scopes its handlers declare)."""
        self._server = server

    # ------------------------------------------------------------ metadata (RFC 9728)

    def scopes_supported(self) -> list[str]:
        if self._scopes_supported is not None:
            return list(self._scopes_supported)
        found = list(dict.fromkeys(self.scopes))
        if self._server is not None:
            found.extend(s for s in self._server.declared_scopes() if s not in found)
        return found

    def metadata(self) -> dict[str, Any]:
        """The protected resource metadata document."""
        document: dict[str, Any] = {
            "resource": self.resource,
            "authorization_servers": self.authorization_servers,
            "bearer_methods_supported": ["header"],
        }
        scopes = self.scopes_supported()
        if scopes:
            document["scopes_supported"] = scopes
        if self.dpop != "off":
            document["dpop_signing_alg_values_supported"] = list(self.algorithms)
        if self.dpop == "required":
            document["dpop_bound_access_tokens_required"] = True
        if self.resource_name:
            document["resource_name"] = self.resource_name
        if self.documentation:
            document["resource_documentation"] = self.documentation
        return document

    # ------------------------------------------------------------ the ASGI layer

    async def __call__(self, scope: Scope, receive: Receive, send: Send, app: App) -> None:
        """Serve the metadata, refuse what carries no valid token, pass the rest to ``app``
        with the verified token as :data:`~mcpgen.runtime.auth.info.current_auth`."""
        path = scope.get("path", "/")
        if path in self.metadata_paths:
            await self._serve_metadata(scope["method"], send)
            return
        headers = _headers(scope)
        outcome = await self.authenticate(scope["method"], self._request_url(scope), headers)
        if isinstance(outcome, Refusal):
            await outcome.send(send)
            return
        reset = current_auth.set(outcome)
        try:
            await app(scope, receive, send)
        finally:
            current_auth.reset(reset)

    async def _serve_metadata(self, method: str, send: Send) -> None:
        # Browser-based clients read it from another origin: it is public by design.
        cors = [(b"access-control-allow-origin", b"*"), (b"access-control-allow-methods", b"GET, OPTIONS")]
        if method == "OPTIONS":
            await respond(send, 204, b"", extra=[*cors, (b"access-control-allow-headers", b"*")])
        elif method in ("GET", "HEAD"):
            await respond(send, 200, json.dumps(self.metadata()).encode(), extra=cors)
        else:
            await respond(send, 405, b"", extra=[(b"allow", b"GET, OPTIONS")])

    def _request_url(self, scope: Scope) -> str:
        """The URL a DPoP proof must name: this server's configured origin (not the Host
        header, which a client chooses) and the path requested."""
        return f"{self._origin}{scope.get('root_path', '')}{scope.get('path', '/')}"

    async def authenticate(self, method: str, url: str, headers: dict[str, str]) -> AuthInfo | Refusal:
        """The verified token of a request, or the refusal to send."""
        given = headers.get("authorization")
        if given is None:
            return self.challenge(401, "this server needs an access token")
        scheme, _, token = given.strip().partition(" ")
        scheme, token = scheme.lower(), token.strip()
        if scheme not in ("bearer", "dpop") or not token:
            return self.challenge(401, "send the access token as Authorization: Bearer (or DPoP)")
        if len(token) > _MAX_TOKEN or not _TOKEN.fullmatch(token):
            return self.challenge(401, "the token is malformed", error="invalid_token")
        try:
            info = await self.verifier.verify(token)
        except InvalidToken as exc:
            return self.challenge(401, str(exc), error="invalid_token")
        except VerifierUnavailable as exc:
            log.warning("mcpgen: cannot verify access tokens: %s", exc)
            return Refusal(503, "the authorization server cannot be reached; retry later", [(b"retry-after", b"5")])
        if not info.subject and not info.client_id:
            # It could own nothing of its own: every such token would share one principal.
            return self.challenge(401, "the token names no subject and no client", error="invalid_token")
        refused = await self._check_binding(info, scheme, method, url, token, headers)
        if refused is not None:
            return refused
        if not info.has_scopes(self.scopes):
            return self.challenge(403, "the token lacks a scope this server needs", error="insufficient_scope")
        return info

    async def _check_binding(
        self, info: AuthInfo, scheme: str, method: str, url: str, token: str, headers: dict[str, str]
    ) -> Refusal | None:
        """RFC 9449 §7: a bound token only with the DPoP scheme and a good proof; an
        unbound one never with the DPoP scheme (or at all, when DPoP is required)."""
        if info.jkt is None:
            if scheme == "dpop":
                return self.challenge(401, "the token is not DPoP-bound", error="invalid_token", dpop=True)
            if self.dpop == "required":
                return self.challenge(401, "this server accepts DPoP-bound tokens only", error="invalid_token")
            return None
        if self.proofs is None:
            return self.challenge(401, "this server does not accept DPoP-bound tokens", error="invalid_token")
        if scheme != "dpop":
            return self.challenge(401, "a DPoP-bound token needs the DPoP scheme", error="invalid_token", dpop=True)
        proof = headers.get("dpop")
        if proof is None or "," in proof:
            return self.challenge(401, "send exactly one DPoP proof", error="invalid_dpop_proof", dpop=True)
        try:
            await self.proofs.verify(proof.strip(), method=method, url=url, access_token=token, jkt=info.jkt)
        except NonceRequired as exc:
            try:
                nonce = await self.proofs.nonce()
            except StoreUnavailable as unavailable:
                return self._store_down(unavailable)
            refusal = self.challenge(401, str(exc), error="use_dpop_nonce", dpop=True)
            refusal.headers.append((b"dpop-nonce", nonce.encode()))
            return refusal
        except InvalidProof as exc:
            return self.challenge(401, str(exc), error="invalid_dpop_proof", dpop=True)
        except StoreUnavailable as exc:
            return self._store_down(exc)
        return None

    @staticmethod
    def _store_down(exc: StoreUnavailable) -> Refusal:
        """The shared store cannot say whether a proof was used: refused, not let through."""
        log.warning("mcpgen: cannot check a DPoP proof: %s", exc.message)
        return Refusal(503, "the shared store cannot be reached; retry later", [(b"retry-after", b"2")])

    def challenge(
        self,
        status: int,
        description: str,
        *,
        error: str | None = None,
        scopes: Iterable[str] | None = None,
        dpop: bool = False,
    ) -> Refusal:
        """A refusal with its ``WWW-Authenticate`` header: the Bearer challenge (where a
        client finds the metadata and the scopes to ask for), and the DPoP one when
        DPoP is in play. ``error`` goes on the challenge of the scheme that failed."""
        # The scopes to ask for: the server's own unless told (least privilege: a tool's
        # scopes are asked for when it is called, through a 403 and a step-up).
        wanted = list(scopes) if scopes is not None else list(self.scopes)
        bearer = [f'resource_metadata="{self.metadata_url}"']
        if wanted:
            bearer.append(f'scope="{" ".join(wanted)}"')
        if error is not None and not dpop:
            bearer.append(f'error="{error}", error_description="{description}"')
        challenges = ["Bearer " + ", ".join(bearer)]
        if self.dpop != "off":
            params = [f'algs="{" ".join(self.algorithms)}"']
            if error is not None and dpop:
                params.append(f'error="{error}", error_description="{description}"')
            challenges.append("DPoP " + ", ".join(params))
        header = ", ".join(challenges).encode()
        return Refusal(status, description, [(b"www-authenticate", header)])

    # ------------------------------------------------------------ scopes of what is called

    def denied(self, env: Envelope) -> Refusal | None:
        """After parsing, before the handler: the 403 for a tool, resource or prompt the
        token lacks the declared scopes of (None when it may run)."""
        server, info = self._server, current_auth.get()
        completes = env.method == "completion/complete"
        listens = env.method == "subscriptions/listen"
        field = _NAMED.get(env.method) if isinstance(env.method, str) else None
        if (
            server is None
            or info is None
            or (field is None and not completes and not listens)
            or env.params is msgspec.UNSET
        ):
            return None
        try:
            target = msgspec.json.decode(env.params, type=_Target)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None  # params that do not parse: refused as such before any handler
        if listens:
            # A listen naming resources is a subscription to each: it needs what
            # resources/subscribe of that URI would (else it tells of changes the token may
            # not subscribe to).
            wanted = target.notifications if isinstance(target.notifications, dict) else {}
            uris = wanted.get("resourceSubscriptions")
            named = {uri: None for uri in uris if isinstance(uri, str)} if isinstance(uris, list) else {}
            listened: dict[str, None] = {}
            for uri in named:
                listened.update(dict.fromkeys(server.required_scopes("resources/subscribe", uri)))
            required: tuple[str, ...] = tuple(listened)
        elif completes:
            ref = target.ref if isinstance(target.ref, dict) else {}
            kind, name = ref.get("type"), ref.get("name" if ref.get("type") == "ref/prompt" else "uri")
            if not isinstance(kind, str) or not isinstance(name, str):
                return None
            required = server.completion_scopes(kind, name)
        else:
            assert field is not None
            name = getattr(target, field)
            if not isinstance(name, str):
                return None
            required = server.required_scopes(env.method, name)
        if not required or info.has_scopes(required):
            return None
        needed = list(dict.fromkeys([*info.scopes, *self.scopes, *required]))
        return self.challenge(
            403, f"{env.method} of this target needs more scopes", error="insufficient_scope", scopes=needed
        )


def _headers(scope: Scope) -> dict[str, str]:
    found: dict[str, str] = {}
    for key, value in scope.get("headers", []):
        name = key.decode("latin-1").lower()
        text = value.decode("latin-1")
        # Two Authorization or DPoP headers are one ambiguous request: joined, they no
        # longer parse as one token or proof and are refused.
        found[name] = f"{found[name]},{text}" if name in found else text
    return found


__all__ = ["BearerAuth", "Refusal", "canonical_resource"]
