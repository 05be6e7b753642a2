"""A protected mcpgen server (``Server(auth=BearerAuth(...))``) against a real authorization
server (tests/authserver.py: authlib on loopback), over uvicorn and httpx on 127.0.0.1.

Clients that get in: mcpgen's ``OAuthClient`` (authorization code with PKCE and dynamic
registration; client credentials) in both protocol eras, the official SDK's
``OAuthClientProvider`` in both of its eras, a DPoP-bound token with fresh proofs, the
legacy HTTP+SSE transport with a bearer header, and a token checked by introspection.

Refusals, each with its status and challenge: no token; a token for another audience,
expired, not valid yet, with a tampered signature, from another issuer; a token without
the server's scope, or without a tool's, a resource's or a prompt's scope (403
``insufficient_scope``, in both eras and over legacy SSE, the handler never run); a
DPoP-bound token sent as Bearer, a replayed DPoP proof, a proof made with another key;
someone else's session id. No refusal body, header or log line carries the token or any
of its claims.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import httpx2
import jwt
import pytest
from joserfc import jws
from joserfc.jwk import ECKey
from mcp.client.auth import OAuthClientProvider
from mcp.client.client import Client as SdkClient
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from mcpgen import Client
from mcpgen.runtime.auth.bearer import BearerAuth
from mcpgen.runtime.auth.dpop_verify import token_hash
from mcpgen.runtime.auth.oauth import ClientInfo, OAuthClient
from mcpgen.runtime.auth.token_verify import IntrospectionVerifier, JwtVerifier
from mcpgen.runtime.server.context import Context
from mcpgen.runtime.server.server import Server
from tests.authserver import AuthServer
from tests.http_server import free_port, serving_in_thread
from tests.paths import ROOT

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"
REDIRECT = "http://localhost:3000/callback"


# ---------------------------------------------------------------- servers


@dataclass
class Protected:
    url: str  # the MCP endpoint, also the resource URI
    base: str
    auth: BearerAuth
    calls: list[str]  # every handler run: "name:subject"


def _protected_server(issuer: str, resource: str, calls: list[str], **auth_options: Any) -> tuple[Server, BearerAuth]:
    verifier = auth_options.pop("verifier", None) or JwtVerifier(issuer, resource, refetch_interval=0)
    auth = BearerAuth(issuer, resource, scopes=["mcp"], verifier=verifier, **auth_options)
    server = Server("protected", auth=auth)

    @server.tool
    def whoami(ctx: Context) -> str:
        """Who the token speaks for."""
        info = ctx.auth
        assert info is not None
        calls.append(f"whoami:{info.subject}")
        binding = "dpop" if info.jkt is not None else "bearer"
        return f"{info.subject} {info.client_id} {binding} {' '.join(sorted(info.scopes))}"

    @server.tool(scopes=["notes:write"])
    def write_note(text: str) -> str:
        calls.append("write_note")
        return "saved"

    @server.resource("notes://secret", scopes=["admin"])
    def secret() -> str:
        calls.append("secret")
        return "the secret"

    @server.resource_template("notes://by-id/{note}", scopes=["notes:read"])
    def note(note: str) -> str:
        calls.append("note")
        return f"note {note}"

    @server.prompt(scopes=["admin"])
    def audit() -> str:
        calls.append("audit")
        return "audit everything"

    # Completers of the guarded prompt and template: their values are guarded alike.
    @server.completion(argument="focus", prompt="audit")
    def audit_focus(value: str, arguments: dict[str, str]) -> list[str]:
        calls.append("complete:audit")
        return ["payroll", "secrets"]

    @server.completion(argument="note", template="notes://by-id/{note}")
    def note_ids(value: str, arguments: dict[str, str]) -> list[str]:
        calls.append("complete:note")
        return ["7", "8"]

    return server, auth


@contextlib.contextmanager
def serving(server: Server, port: int) -> Iterator[None]:
    with serving_in_thread(server.http_app(), port, lifespan="off"):
        yield


@pytest.fixture(scope="module")
def auth_server() -> Iterator[AuthServer]:
    with AuthServer() as server:
        server.add_client("svc", "svc-secret", scope="mcp notes:read notes:write admin")
        server.add_client("reader", "reader-secret", scope="mcp notes:read")
        server.add_client("no-mcp", "no-mcp-secret", scope="notes:read")
        server.add_client("lapsed-9", "lapsed-9-secret", scope="mcp", lifetime=-300)
        server.add_client("early-9", "early-9-secret", scope="mcp", not_before=600)
        server.add_client("rs", "rs-secret", scope="")  # the resource server, for introspection
        yield server


@pytest.fixture(scope="module")
def protected(auth_server: AuthServer) -> Iterator[Protected]:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    calls: list[str] = []
    server, auth = _protected_server(auth_server.issuer, url, calls)
    with serving(server, port):
        yield Protected(url, f"http://127.0.0.1:{port}", auth, calls)


# ---------------------------------------------------------------- helpers


def get_token(auth_server: AuthServer, client: str, scope: str, resource: str, *, dpop: ECKey | None = None) -> str:
    """A token from the authorization server's token endpoint (client credentials)."""
    headers = {}
    if dpop is not None:
        headers["DPoP"] = proof(dpop, "POST", f"{auth_server.issuer}/token")
    secret = {c: f"{c}-secret" for c in ("svc", "reader", "no-mcp", "lapsed-9", "early-9")}[client]
    response = httpx.post(
        f"{auth_server.issuer}/token",
        data={"grant_type": "client_credentials", "scope": scope, "resource": resource},
        auth=(client, secret),
        headers=headers,
    )
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["token_type"] == ("DPoP" if dpop is not None else "Bearer")
    return str(answer["access_token"])


def proof(key: ECKey, method: str, url: str, access_token: str | None = None, **claims: Any) -> str:
    """A DPoP proof (RFC 9449 §4.2), signed with joserfc."""
    body: dict[str, Any] = {"htm": method, "htu": url, "iat": int(time.time()), "jti": uuid.uuid4().hex}
    if access_token is not None:
        body["ath"] = token_hash(access_token)
    body.update(claims)
    header = {"typ": "dpop+jwt", "alg": "ES256", "jwk": key.as_dict(private=False)}
    return str(jws.serialize_compact(header, json.dumps(body).encode(), key))


def _meta() -> dict[str, Any]:
    return {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}


def modern_call(
    name: str, arguments: dict[str, Any] | None = None, method: str = "tools/call"
) -> tuple[dict[str, Any], dict[str, str]]:
    """A stateless-era request body and its HTTP headers."""
    params: dict[str, Any] = {"_meta": _meta()}
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if method == "tools/call":
        params.update(name=name, arguments=arguments or {})
        headers["Mcp-Name"] = name
    elif method == "resources/read":
        params["uri"] = name
        headers["Mcp-Name"] = name
    elif method == "prompts/get":
        params["name"] = name
        headers["Mcp-Name"] = name
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}, headers


def post(url: str, body: dict[str, Any], headers: dict[str, str], authorization: str | None) -> httpx.Response:
    sent = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json", **headers}
    if authorization is not None:
        sent["Authorization"] = authorization
    return httpx.post(url, json=body, headers=sent, timeout=10)


def challenge(response: httpx.Response) -> str:
    return response.headers.get("www-authenticate", "")


def assert_secret_free(texts: list[str], token: str | None) -> None:
    """Nothing of the token (its text, any of its three parts) nor of its claims (their
    values: subject, client id, jti) appears in ``texts``."""
    if token is None:
        return
    secrets = [token, *[part for part in token.split(".") if len(part) > 8]]
    try:
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError:
        claims = {}
    for name in ("sub", "client_id", "jti"):
        value = claims.get(name)
        if isinstance(value, str) and value:
            secrets.append(value)
    for text in texts:
        for secret in secrets:
            assert secret not in text, f"token or claim text leaked: {secret[:12]}..."


def server_log(caplog: pytest.LogCaptureFixture) -> str:
    """Every log line of the test but the authorization server's own (authlib logs the
    tokens it issues at debug level: that is the issuer's business, not the MCP server's)."""
    return "\n".join(record.getMessage() for record in caplog.records if not record.name.startswith("authlib"))


def tamper(token: str) -> str:
    head, body, signature = token.split(".")
    raw = bytearray(base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4)))
    raw[5] ^= 0x01
    return f"{head}.{body}.{base64.urlsafe_b64encode(bytes(raw)).rstrip(b'=').decode()}"


def tool_text(result: Any) -> str:
    return str(result.content[0].text)


# ---------------------------------------------------------------- metadata


def test_protected_resource_metadata(protected: Protected, auth_server: AuthServer) -> None:
    for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
        response = httpx.get(protected.base + path)
        assert response.status_code == 200
        document = response.json()
        assert document["resource"] == protected.url
        assert document["authorization_servers"] == [auth_server.issuer]
        # The server's scope and every scope a tool, resource, template or prompt declares.
        assert set(document["scopes_supported"]) == {"mcp", "notes:write", "admin", "notes:read"}
        assert document["bearer_methods_supported"] == ["header"]
        assert "ES256" in document["dpop_signing_alg_values_supported"]
        assert response.headers["access-control-allow-origin"] == "*"


# ---------------------------------------------------------------- clients that get in


@pytest.mark.parametrize("era", ["handshake", "stateless"])
async def test_mcpgen_oauth_client_authorization_code(protected: Protected, auth_server: AuthServer, era: str) -> None:
    """Discovery from the 401, dynamic registration, code + PKCE (approved without a
    browser: the test server's user is signed in), the token, the call; ctx.auth in the tool."""
    oauth = OAuthClient(redirect_uri=REDIRECT)
    async with Client.http(protected.url, auth=oauth, era=era) as client:
        assert client.stateless is (era == "stateless")
        result = await client.call_tool("whoami", {})
    subject, client_id, binding, scopes = tool_text(result).split(" ", 3)
    assert subject == auth_server.user
    assert binding == "dpop"  # the AS offers DPoP, so mcpgen's client binds its tokens: checked here
    assert client_id in auth_server.clients  # the client it registered
    assert "mcp" in scopes.split()
    assert "POST /register" in auth_server.requests


@pytest.mark.parametrize("era", ["handshake", "stateless"])
async def test_mcpgen_oauth_client_credentials(protected: Protected, era: str) -> None:
    oauth = OAuthClient(grant="client_credentials", client=ClientInfo("svc", client_secret="svc-secret"))
    async with Client.http(protected.url, auth=oauth, era=era) as client:
        result = await client.call_tool("whoami", {})
        assert tool_text(result).startswith("svc svc dpop ")
        # The tool's own scope: the client steps up after the 403 insufficient_scope.
        written = await client.call_tool("write_note", {"text": "hi"})
        assert tool_text(written) == "saved"


class _SdkStorage:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


@pytest.mark.parametrize("mode", ["legacy", MODERN])
async def test_sdk_oauth_client(protected: Protected, auth_server: AuthServer, mode: str) -> None:
    """The official SDK's OAuthClientProvider: its own discovery, registration and code flow
    (the redirect followed without a browser), then a protected tool call."""
    redirected: list[str] = []

    async def redirect_handler(url: str) -> None:
        answer = httpx.get(url, follow_redirects=False)
        assert answer.status_code == 302
        redirected.append(answer.headers["location"])

    async def callback_handler() -> AuthorizationCodeResult:
        query = parse_qs(urlsplit(redirected[-1]).query)
        return AuthorizationCodeResult(
            code=query["code"][0], state=query.get("state", [None])[0], iss=query.get("iss", [None])[0]
        )

    provider = OAuthClientProvider(
        server_url=protected.url,
        client_metadata=OAuthClientMetadata(
            client_name="sdk", redirect_uris=[REDIRECT], grant_types=["authorization_code"], scope="mcp"
        ),
        storage=_SdkStorage(),
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    http = httpx2.AsyncClient(auth=provider, timeout=httpx2.Timeout(10, read=30))
    async with http, SdkClient(streamable_http_client(protected.url, http_client=http), mode=mode) as client:
        result = await client.call_tool("whoami", {})
    assert result.content[0].text.startswith(f"{auth_server.user} ")
    assert redirected, "the SDK never went through the authorization endpoint"


# ---------------------------------------------------------------- refusals


@dataclass
class Case:
    """A token the server must refuse, and how."""

    client: str = "svc"
    scope: str = "mcp"
    resource: str | None = None  # None: the protected server's own URI
    twin: bool = False  # issued by another authorization server holding the same key
    alter: Any = None  # a change made to the token after it was issued
    status: int = 401
    error: str | None = "invalid_token"
    description: str = ""


CASES = {
    "no token": Case(error=None, description="needs an access token"),
    "another audience": Case(resource="http://127.0.0.1:1/elsewhere", description="for another resource"),
    "expired": Case(client="lapsed-9", description="has expired"),
    "not valid yet": Case(client="early-9", description="not valid yet"),
    "tampered signature": Case(alter=tamper, description="signature does not verify"),
    "wrong issuer": Case(twin=True, description="from another issuer"),
    "not a JWT": Case(alter=lambda t: "opaque-" + t[:20], description="not a well-formed JWT"),
    "server scope missing": Case(
        client="no-mcp", scope="notes:read", status=403, error="insufficient_scope", description="lacks a scope"
    ),
}


def _token_for(case: Case, auth_server: AuthServer, protected: Protected) -> str | None:
    if case.error is None:
        return None
    resource = case.resource or protected.url
    if case.twin:
        with auth_server.twin() as other:
            return get_token(other, case.client, case.scope, resource)
    token = get_token(auth_server, case.client, case.scope, resource)
    return case.alter(token) if case.alter is not None else token


@pytest.mark.parametrize("era", ["handshake", "stateless"])
@pytest.mark.parametrize("name", list(CASES))
def test_refused(
    protected: Protected, auth_server: AuthServer, caplog: pytest.LogCaptureFixture, name: str, era: str
) -> None:
    caplog.set_level(logging.DEBUG)
    case = CASES[name]
    token = _token_for(case, auth_server, protected)
    before = len(protected.calls)
    if era == "stateless":
        body, headers = modern_call("whoami")
    else:
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": HANDSHAKE, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
        }
        headers = {"MCP-Protocol-Version": HANDSHAKE}
    response = post(protected.url, body, headers, f"Bearer {token}" if token is not None else None)
    assert response.status_code == case.status, response.text
    header = challenge(response)
    assert header.startswith("Bearer ")
    assert f'resource_metadata="{protected.auth.metadata_url}"' in header
    if case.error is None:
        assert "error=" not in header  # RFC 6750 §3.1: no error code when no token was sent
        assert 'scope="mcp"' in header  # what to ask for: the server's own scope, not every tool's
    else:
        assert f'error="{case.error}"' in header.split(", DPoP ")[0]
    if case.status == 403:
        assert 'scope="mcp"' in header  # the scope to step up to
    assert case.description in response.json()["error"]["message"]
    assert len(protected.calls) == before  # nothing ran
    assert_secret_free([response.text, header, server_log(caplog)], token)


def test_refused_over_legacy_sse(protected: Protected, auth_server: AuthServer) -> None:
    assert httpx.get(protected.base + "/sse").status_code == 401
    expired = get_token(auth_server, "lapsed-9", "mcp", protected.url)
    response = httpx.post(
        protected.base + "/messages?session_id=x", json={}, headers={"Authorization": f"Bearer {expired}"}
    )
    assert response.status_code == 401
    assert 'error="invalid_token"' in challenge(response)


SCOPED = {
    # target: (method, name, scope that grants it)
    "tool": ("tools/call", "write_note", "notes:write"),
    "resource": ("resources/read", "notes://secret", "admin"),
    "template": ("resources/read", "notes://by-id/7", "notes:read"),
    "prompt": ("prompts/get", "audit", "admin"),
}


@pytest.mark.parametrize("target", list(SCOPED))
def test_insufficient_scope_stateless(
    protected: Protected, auth_server: AuthServer, caplog: pytest.LogCaptureFixture, target: str
) -> None:
    """The check happens where the name is known: after parsing, before the handler."""
    caplog.set_level(logging.DEBUG)
    method, name, scope = SCOPED[target]
    token = get_token(auth_server, "svc", "mcp", protected.url)
    body, headers = modern_call(name, {"text": "x"}, method)
    before = list(protected.calls)
    response = post(protected.url, body, headers, f"Bearer {token}")
    assert response.status_code == 403, response.text
    header = challenge(response)
    assert 'error="insufficient_scope"' in header
    scopes = header.split('scope="', 1)[1].split('"', 1)[0].split()
    assert scope in scopes and "mcp" in scopes  # the step-up: what it has plus what it needs
    assert protected.calls == before  # the handler never ran
    assert_secret_free([response.text, header, server_log(caplog)], token)
    # With the scope it runs.
    granted = get_token(auth_server, "svc", f"mcp {scope}", protected.url)
    response = post(protected.url, body, headers, f"Bearer {granted}")
    assert response.status_code == 200, response.text
    assert "error" not in response.json()


COMPLETED = {
    # what a completion completes: (its ref, the scope its target declares)
    "prompt": ({"type": "ref/prompt", "name": "audit"}, "admin"),
    "template": ({"type": "ref/resource", "uri": "notes://by-id/{note}"}, "notes:read"),
}


@pytest.mark.parametrize("era", [MODERN, HANDSHAKE])
@pytest.mark.parametrize("target", list(COMPLETED))
def test_completion_needs_the_scopes_of_what_it_completes(
    protected: Protected, auth_server: AuthServer, era: str, target: str
) -> None:
    """A caller refused prompts/get of a prompt (or a read of a template) gets no
    completions of its arguments either: 403 insufficient_scope, the completer never run."""
    ref, scope = COMPLETED[target]
    argument = "focus" if target == "prompt" else "note"
    params: dict[str, Any] = {"ref": ref, "argument": {"name": argument, "value": ""}}

    def complete(token: str) -> httpx.Response:
        if era == MODERN:
            body = {"jsonrpc": "2.0", "id": 1, "method": "completion/complete", "params": {**params, "_meta": _meta()}}
            headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "completion/complete"}
        else:
            session = _initialize(protected.url, token)
            body = {"jsonrpc": "2.0", "id": 2, "method": "completion/complete", "params": params}
            headers = {"MCP-Protocol-Version": HANDSHAKE, "Mcp-Session-Id": session}
        return post(protected.url, body, headers, f"Bearer {token}")

    before = list(protected.calls)
    response = complete(get_token(auth_server, "svc", "mcp", protected.url))
    assert response.status_code == 403, response.text
    assert 'error="insufficient_scope"' in challenge(response)
    assert scope in challenge(response)
    assert protected.calls == before  # the completer never ran
    response = complete(get_token(auth_server, "svc", f"mcp {scope}", protected.url))
    assert response.status_code == 200, response.text
    assert ("payroll" if target == "prompt" else '"7"') in response.text
    assert protected.calls == [*before, f"complete:{'audit' if target == 'prompt' else 'note'}"]


def test_insufficient_scope_handshake_session(protected: Protected, auth_server: AuthServer) -> None:
    """In a session each POST is checked with its own token: the session's first token
    had the scope, or not, it makes no difference."""
    token = get_token(auth_server, "svc", "mcp", protected.url)
    session = _initialize(protected.url, token)
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "write_note", "arguments": {"text": "x"}},
    }
    headers = {"MCP-Protocol-Version": HANDSHAKE, "Mcp-Session-Id": session}
    before = list(protected.calls)
    response = post(protected.url, call, headers, f"Bearer {token}")
    assert response.status_code == 403
    assert 'error="insufficient_scope"' in challenge(response)
    assert protected.calls == before
    stronger = get_token(auth_server, "svc", "mcp notes:write", protected.url)
    response = post(protected.url, call, headers, f"Bearer {stronger}")
    assert response.status_code == 200
    assert protected.calls == [*before, "write_note"]


def _initialize(url: str, token: str) -> str:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": HANDSHAKE, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    response = post(url, body, {"MCP-Protocol-Version": HANDSHAKE}, f"Bearer {token}")
    assert response.status_code == 200, response.text
    session = response.headers["mcp-session-id"]
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    headers = {"MCP-Protocol-Version": HANDSHAKE, "Mcp-Session-Id": session}
    assert post(url, done, headers, f"Bearer {token}").status_code == 202
    return session


def test_session_belongs_to_its_opener(protected: Protected, auth_server: AuthServer) -> None:
    mine = get_token(auth_server, "svc", "mcp", protected.url)
    session = _initialize(protected.url, mine)
    theirs = get_token(auth_server, "reader", "mcp", protected.url)
    ping = {"jsonrpc": "2.0", "id": 3, "method": "ping"}
    headers = {"MCP-Protocol-Version": HANDSHAKE, "Mcp-Session-Id": session}
    assert post(protected.url, ping, headers, f"Bearer {theirs}").status_code == 404
    assert post(protected.url, ping, headers, f"Bearer {mine}").status_code == 200


async def test_legacy_sse_with_a_token(protected: Protected, auth_server: AuthServer) -> None:
    token = get_token(auth_server, "svc", "mcp", protected.url)
    async with Client.sse(protected.base + "/sse", headers={"Authorization": f"Bearer {token}"}) as client:
        result = await client.call_tool("whoami", {})
        assert tool_text(result).startswith("svc ")
        before = list(protected.calls)
        with pytest.raises(Exception) as refused:  # noqa: PT011 - the POST's 403 surfaces as the transport's error
            await client.call_tool("write_note", {"text": "x"}, timeout=5)
        assert protected.calls == before  # the handler never ran
    assert "403" in str(refused.value), refused.value


# ---------------------------------------------------------------- key rotation


def test_key_rotation(protected: Protected, auth_server: AuthServer) -> None:
    """A token signed with a key the server has not seen yet: one JWKS refetch, accepted."""
    body, headers = modern_call("whoami")
    first = get_token(auth_server, "svc", "mcp", protected.url)
    assert post(protected.url, body, headers, f"Bearer {first}").status_code == 200
    auth_server.rotate_key()
    second = get_token(auth_server, "svc", "mcp", protected.url)
    assert jwt.get_unverified_header(second)["kid"] != jwt.get_unverified_header(first)["kid"]
    fetched = auth_server.requests.count("GET /jwks")
    assert post(protected.url, body, headers, f"Bearer {second}").status_code == 200
    assert auth_server.requests.count("GET /jwks") == fetched + 1
    assert post(protected.url, body, headers, f"Bearer {first}").status_code == 200  # the old key still listed


# ---------------------------------------------------------------- DPoP


def _dpop_call(protected: Protected, token: str, key: ECKey, proof_text: str | None = None) -> httpx.Response:
    body, headers = modern_call("whoami")
    headers["DPoP"] = proof_text or proof(key, "POST", protected.url, token)
    return post(protected.url, body, headers, f"DPoP {token}")


def test_dpop_bound_token(protected: Protected, auth_server: AuthServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    key = ECKey.generate_key("P-256")
    token = get_token(auth_server, "svc", "mcp", protected.url, dpop=key)
    assert jwt.decode(token, options={"verify_signature": False})["cnf"]["jkt"] == key.thumbprint()
    accepted = _dpop_call(protected, token, key)
    assert accepted.status_code == 200, accepted.text

    replayed_proof = proof(key, "POST", protected.url, token)
    assert _dpop_call(protected, token, key, replayed_proof).status_code == 200
    replayed = _dpop_call(protected, token, key, replayed_proof)
    other_key = ECKey.generate_key("P-256")
    another_key = _dpop_call(protected, token, key, proof(other_key, "POST", protected.url, token))
    wrong_url = _dpop_call(protected, token, key, proof(key, "POST", protected.base + "/elsewhere", token))
    wrong_token = _dpop_call(protected, token, key, proof(key, "POST", protected.url, token + "x"))
    stale = _dpop_call(protected, token, key, proof(key, "POST", protected.url, token, iat=int(time.time()) - 3600))
    body, headers = modern_call("whoami")
    as_bearer = post(protected.url, body, headers, f"Bearer {token}")
    without_proof = post(protected.url, body, headers, f"DPoP {token}")
    for response, description in [
        (replayed, "already used"),
        (another_key, "key the token is not bound to"),
        (wrong_url, "another URL"),
        (wrong_token, "not for this access token"),
        (stale, "too old"),
        (as_bearer, "needs the DPoP scheme"),
        (without_proof, "exactly one DPoP proof"),
    ]:
        assert response.status_code == 401, (description, response.text)
        assert description in response.json()["error"]["message"]
        header = challenge(response)
        assert header.startswith(f'Bearer resource_metadata="{protected.auth.metadata_url}"')
        dpop_challenge = header.split(", DPoP ", 1)[1]
        expected = "invalid_token" if description == "needs the DPoP scheme" else "invalid_dpop_proof"
        assert f'error="{expected}"' in dpop_challenge
        assert_secret_free([response.text, header], token)
    assert_secret_free([server_log(caplog)], token)


def test_bearer_token_with_dpop_scheme(protected: Protected, auth_server: AuthServer) -> None:
    key = ECKey.generate_key("P-256")
    token = get_token(auth_server, "svc", "mcp", protected.url)
    response = _dpop_call(protected, token, key)
    assert response.status_code == 401
    assert "not DPoP-bound" in response.json()["error"]["message"]


# ---------------------------------------------------------------- introspection


def test_introspection(auth_server: AuthServer) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    verifier = IntrospectionVerifier(
        f"{auth_server.issuer}/introspect",
        issuer=auth_server.issuer,
        audience=url,
        client_id="rs",
        client_secret="rs-secret",
    )
    calls: list[str] = []
    server, _ = _protected_server(auth_server.issuer, url, calls, verifier=verifier)
    body, headers = modern_call("whoami")
    with serving(server, port):
        good = get_token(auth_server, "svc", "mcp", url)
        response = post(url, body, headers, f"Bearer {good}")
        assert response.status_code == 200, response.text
        assert calls == ["whoami:svc"]
        elsewhere = get_token(auth_server, "svc", "mcp", "http://127.0.0.1:1/elsewhere")
        refused = post(url, body, headers, f"Bearer {elsewhere}")
        assert refused.status_code == 401
        assert "another resource" in refused.json()["error"]["message"]
        unknown = post(url, body, headers, "Bearer never-issued")
        assert unknown.status_code == 401
        assert "not active" in unknown.json()["error"]["message"]


# ---------------------------------------------------------------- mcpgen new --auth


def test_mcpgen_new_auth_project_tests_pass(tmp_path: Path) -> None:
    """The scaffolded protected server's own tests (against mcpgen.testing.AuthServer) pass,
    in this venv; and its server refuses to serve HTTP without an issuer to trust."""
    project = tmp_path / "notes"
    made = subprocess.run(
        [sys.executable, "-m", "mcpgen", "new", "notes", "--auth", "--dir", str(project)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert made.returncode == 0, made.stderr
    assert "MCP_ISSUER" in (project / "README.md").read_text()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_")}
    env["PYTHONPATH"] = str(project)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(project / "tests")],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "10 passed" in run.stdout  # the six feature tests over protected HTTP, four of protection
    unprotected = subprocess.run(
        [sys.executable, "-m", "notes.server", "--http", "0"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert unprotected.returncode == 2 and "MCP_ISSUER" in unprotected.stderr


# ---------------------------------------------------------------- DPoP nonces, unreachable issuer, garbage


async def test_dpop_nonce_with_mcpgen_client(auth_server: AuthServer) -> None:
    """A server that wants its own nonce in proofs: 401 use_dpop_nonce with a DPoP-Nonce,
    which mcpgen's client puts in its next proof."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    calls: list[str] = []
    server, _ = _protected_server(auth_server.issuer, url, calls, dpop_nonces=True)
    with serving(server, port):
        key = ECKey.generate_key("P-256")
        token = get_token(auth_server, "svc", "mcp", url, dpop=key)
        body, headers = modern_call("whoami")
        headers["DPoP"] = proof(key, "POST", url, token)
        first = post(url, body, headers, f"DPoP {token}")
        assert first.status_code == 401
        assert 'error="use_dpop_nonce"' in challenge(first)
        nonce = first.headers["dpop-nonce"]
        headers["DPoP"] = proof(key, "POST", url, token, nonce=nonce)
        assert post(url, body, headers, f"DPoP {token}").status_code == 200
        oauth = OAuthClient(grant="client_credentials", client=ClientInfo("svc", client_secret="svc-secret"))
        async with Client.http(url, auth=oauth) as client:
            result = await client.call_tool("whoami", {})
        assert tool_text(result).startswith("svc svc dpop ")


def test_unreachable_issuer_is_503_not_a_crash(caplog: pytest.LogCaptureFixture) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    calls: list[str] = []
    server, _ = _protected_server(f"http://127.0.0.1:{free_port()}", url, calls)
    body, headers = modern_call("whoami")
    with serving(server, port):
        response = post(url, body, headers, "Bearer eyJhbGciOiJFUzI1NiIsImtpZCI6ImsifQ.e30.c2ln")
    assert response.status_code == 503
    assert response.headers["retry-after"] == "5"
    assert "cannot verify access tokens" in caplog.text


@pytest.mark.parametrize(
    "authorization",
    [
        b"Bearer",
        b"Basic dXNlcjpwYXNz",
        b"Bearer a b",
        "Bearer \u00e9t\u00e9".encode("latin-1"),
        b"Bearer " + b"A" * 20_000,
        b"DPoP",
    ],
)
def test_garbage_authorization_is_401(protected: Protected, authorization: bytes) -> None:
    body, headers = modern_call("whoami")
    sent = {"Accept": "application/json", "Content-Type": "application/json", "Authorization": authorization, **headers}
    response = httpx.post(protected.url, content=json.dumps(body).encode(), headers=sent, timeout=10)
    assert response.status_code == 401
    assert challenge(response).startswith("Bearer resource_metadata=")


# ---------------------------------------------------------------- the auth guide's example


async def test_the_auth_guides_protected_server() -> None:
    """The first example of docs/auth.md ("Protecting a server"), pointed at a test
    authorization server that grants its scopes: the per-tool scope makes the client step
    up, ctx.auth names it."""
    guide = (ROOT / "docs" / "auth.md").read_text(encoding="utf-8")
    found = re.search(r"## Protecting a server\n\n```python\n(.*?)```", guide, re.S)
    assert found, "no example under '## Protecting a server' in docs/auth.md"
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with AuthServer(scopes=["notes", "notes:write"]) as issuer:
        issuer.add_client("app", "app-secret")
        code = found[1].replace("https://your-tenant.example.com/", issuer.issuer)
        code = code.replace("https://notes.example.com/mcp", url)
        namespace: dict[str, Any] = {}
        exec(compile(code, "docs/auth.md", "exec"), namespace)  # noqa: S102 - our own guide's example
        with serving(namespace["server"], port):
            oauth = OAuthClient(grant="client_credentials", client=ClientInfo("app", client_secret="app-secret"))
            async with Client.http(url, auth=oauth) as client:
                result = await client.call_tool("save", {"text": "hello"})
    assert tool_text(result) == "saved for app"
