"""The OAuth 2.1 client (mcpgen.runtime.auth.oauth) against a small authorization server and
protected MCP endpoint faked with httpx.MockTransport. The conformance suite's auth
scenarios (conformance/run.py client) exercise it against the official mocks."""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest

from mcpgen import Client
from mcpgen.runtime.auth.discovery import (
    as_metadata_urls,
    canonical_resource,
    parse_bearer_challenge,
    prm_urls,
    resource_covers,
)
from mcpgen.runtime.auth.oauth import (
    ClientInfo,
    CrossAppAccess,
    MemoryStorage,
    OAuthClient,
    OAuthError,
    Token,
)
from mcpgen.runtime.transports.http_client import HttpTransport

pytestmark = pytest.mark.anyio
MCP = "https://mcp.test/mcp"
AS = "https://as.test"
PRM_PATH = "/.well-known/oauth-protected-resource/mcp"
SECRET = "s3cr3t-client-secret"


@dataclass
class Fake:
    """A protected MCP endpoint at mcp.test and its authorization server at as.test."""

    issuer: str = AS
    prm_at: str | None = PRM_PATH  # None: no protected resource metadata (2025-03-26)
    prm_in_header: bool = True
    prm_resource: str = MCP
    prm_scopes: list[str] | None = None
    header_scope: str | None = None
    metadata_at: str | None = "/.well-known/oauth-authorization-server"  # on the issuer's host
    as_scopes: list[str] | None = None
    auth_methods: list[str] = field(default_factory=lambda: ["client_secret_basic"])
    registration: dict[str, Any] = field(default_factory=lambda: {"client_id": "dyn-client", "client_secret": SECRET})
    cimd: bool = False
    required_scope: set[str] = field(default_factory=set)  # beyond it: 403 insufficient_scope
    always_forbid: bool = False
    expires_in: int = 3600
    requests: list[httpx.Request] = field(default_factory=list)
    authorizations: list[dict[str, str]] = field(default_factory=list)
    token_forms: list[dict[str, str]] = field(default_factory=list)
    registrations: list[dict[str, Any]] = field(default_factory=list)
    issued: dict[str, set[str]] = field(default_factory=dict)  # token -> scopes
    challenges: dict[str, str] = field(default_factory=dict)  # code -> code_challenge
    counter: int = 0

    def paths(self, host: str) -> list[str]:
        return [r.url.path for r in self.requests if r.url.host == host]

    def handler(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        host, path = request.url.host, request.url.path
        if host == "mcp.test" and path == "/mcp":
            return self.resource(request)
        if host == "mcp.test" and path == self.prm_at:
            body: dict[str, Any] = {"resource": self.prm_resource, "authorization_servers": [self.issuer]}
            if self.prm_scopes is not None:
                body["scopes_supported"] = self.prm_scopes
            return httpx.Response(200, json=body)
        issuer_host = urlsplit(self.issuer).hostname
        if host == issuer_host and path == self.metadata_at:
            return httpx.Response(200, json=self.metadata())
        prefix = urlsplit(self.issuer).path
        if host == issuer_host and path == f"{prefix}/authorize":
            return self.authorize(request)
        if host == issuer_host and path == f"{prefix}/token":
            return self.token(request)
        if host == issuer_host and path == f"{prefix}/register":
            self.registrations.append(json.loads(request.content))
            return httpx.Response(201, json=self.registration)
        return httpx.Response(404)

    def metadata(self) -> dict[str, Any]:
        base = self.issuer
        body: dict[str, Any] = {
            "issuer": base,
            "authorization_endpoint": f"{base}/authorize",
            "token_endpoint": f"{base}/token",
            "registration_endpoint": f"{base}/register",
            "token_endpoint_auth_methods_supported": self.auth_methods,
            "code_challenge_methods_supported": ["S256"],
        }
        if self.as_scopes is not None:
            body["scopes_supported"] = self.as_scopes
        if self.cimd:
            body["client_id_metadata_document_supported"] = True
        return body

    def resource(self, request: httpx.Request) -> httpx.Response:
        header = request.headers.get("authorization", "")
        scopes = self.issued.get(header.removeprefix("Bearer "))
        if scopes is None:
            params = (
                [f'resource_metadata="https://mcp.test{self.prm_at}"'] if self.prm_in_header and self.prm_at else []
            )
            if self.header_scope:
                params.append(f'scope="{self.header_scope}"')
            return httpx.Response(401, headers={"www-authenticate": "Bearer " + ", ".join(params)})
        if self.always_forbid or not self.required_scope <= scopes:
            needed = " ".join(sorted(self.required_scope))
            return httpx.Response(
                403, headers={"www-authenticate": f'Bearer error="insufficient_scope", scope="{needed}"'}
            )
        return httpx.Response(200, json={"ok": True})

    def authorize(self, request: httpx.Request) -> httpx.Response:
        query = dict(request.url.params)
        self.authorizations.append(query)
        self.counter += 1
        code = f"code-{self.counter}"
        self.challenges[code] = query["code_challenge"]
        return httpx.Response(
            302, headers={"location": f"{query['redirect_uri']}?{urlencode({'code': code, 'state': query['state']})}"}
        )

    def token(self, request: httpx.Request) -> httpx.Response:
        form = {k: v[0] for k, v in parse_qs(request.content.decode()).items()}
        if "authorization" in request.headers:
            form["_basic"] = base64.b64decode(request.headers["authorization"].removeprefix("Basic ")).decode()
        self.token_forms.append(form)
        if form["grant_type"] == "authorization_code":
            verifier = form["code_verifier"]
            digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
            if self.challenges.get(form["code"]) != digest:
                return httpx.Response(400, json={"error": "invalid_grant"})
        self.counter += 1
        token = f"access-{self.counter}"
        scopes = set(form.get("scope", "").split())
        if form["grant_type"] == "authorization_code":
            scopes = set(self.authorizations[-1].get("scope", "").split())
        if form["grant_type"] == "refresh_token":  # the scopes granted before (RFC 6749 section 6)
            scopes = self.issued[form["refresh_token"].replace("refresh", "access")]
        self.issued[token] = scopes
        return httpx.Response(
            200,
            json={
                "access_token": token,
                "token_type": "Bearer",
                "expires_in": self.expires_in,
                "refresh_token": f"refresh-{self.counter}",
            },
        )


def connect(fake: Fake, **options: Any) -> tuple[httpx.AsyncClient, OAuthClient]:
    oauth_http = httpx.AsyncClient(transport=httpx.MockTransport(fake.handler))
    auth = OAuthClient(http_client=oauth_http, **options)
    return httpx.AsyncClient(transport=httpx.MockTransport(fake.handler), auth=auth), auth


async def call(fake: Fake, **options: Any) -> httpx.Response:
    mcp, _ = connect(fake, **options)
    async with mcp:
        return await mcp.post(MCP, content=b"{}")


# ---------------------------------------------------------------- helpers


def test_bearer_challenge_parsing() -> None:
    header = 'Basic realm="x", Bearer error="insufficient_scope", scope="a b", resource_metadata="http://h/p", x=tok'
    assert parse_bearer_challenge(header) == {
        "error": "insufficient_scope",
        "scope": "a b",
        "resource_metadata": "http://h/p",
        "x": "tok",
    }
    assert parse_bearer_challenge('Bearer realm="say \\"hi\\""') == {"realm": 'say "hi"'}
    assert parse_bearer_challenge("Basic realm=x") == {}


def test_discovery_urls() -> None:
    assert prm_urls("http://h/mcp", None) == [
        "http://h/.well-known/oauth-protected-resource/mcp",
        "http://h/.well-known/oauth-protected-resource",
    ]
    assert prm_urls("http://h", "http://h/custom.json") == [
        "http://h/custom.json",
        "http://h/.well-known/oauth-protected-resource",
    ]
    assert as_metadata_urls("http://as/") == [
        "http://as/.well-known/oauth-authorization-server",
        "http://as/.well-known/openid-configuration",
    ]
    assert as_metadata_urls("http://as/tenant1") == [
        "http://as/.well-known/oauth-authorization-server/tenant1",
        "http://as/.well-known/openid-configuration/tenant1",
        "http://as/tenant1/.well-known/openid-configuration",
    ]


def test_resource_matching() -> None:
    assert canonical_resource("HTTPS://Mcp.Test/mcp?x=1#frag") == "https://mcp.test/mcp"
    assert canonical_resource("https://mcp.test/") == "https://mcp.test"
    assert resource_covers("https://mcp.test/mcp", MCP)
    assert resource_covers("https://mcp.test", MCP)
    assert resource_covers("https://mcp.test:443/", MCP)
    assert not resource_covers("https://mcp.test/mc", MCP)
    assert not resource_covers("https://evil.example.com/mcp", MCP)
    assert not resource_covers("https://mcp.test:8080/mcp", MCP)


# ---------------------------------------------------------------- the authorization code flow


async def test_authorization_code_flow_with_pkce_and_resource() -> None:
    fake = Fake()
    mcp, _ = connect(fake)
    async with mcp:
        assert (await mcp.post(MCP, content=b"{}")).status_code == 200
        assert (await mcp.post(MCP, content=b"{}")).status_code == 200  # reuses the token
    assert fake.paths("mcp.test") == ["/mcp", PRM_PATH, "/mcp", "/mcp"]
    assert len(fake.authorizations) == 1 and len(fake.registrations) == 1
    query = fake.authorizations[0]
    assert query["response_type"] == "code" and query["client_id"] == "dyn-client"
    assert query["code_challenge_method"] == "S256" and len(query["state"]) >= 32
    assert query["resource"] == MCP and "scope" not in query
    form = fake.token_forms[0]
    assert form["grant_type"] == "authorization_code" and form["resource"] == query["resource"]
    assert form["redirect_uri"] == query["redirect_uri"] and 43 <= len(form["code_verifier"]) <= 128
    assert form["_basic"] == f"dyn-client:{SECRET}" and "client_secret" not in form
    assert fake.requests[-1].headers["authorization"].startswith("Bearer access-")
    assert "refresh_token" in fake.registrations[0]["grant_types"]


async def test_prm_discovery_falls_back_from_path_to_root() -> None:
    fake = Fake(prm_at="/.well-known/oauth-protected-resource", prm_in_header=False, prm_resource="https://mcp.test")
    assert (await call(fake)).status_code == 200
    assert fake.paths("mcp.test")[:3] == ["/mcp", PRM_PATH, "/.well-known/oauth-protected-resource"]
    assert fake.authorizations[0]["resource"] == "https://mcp.test"


async def test_as_metadata_for_a_path_issuer_never_tries_the_root() -> None:
    fake = Fake(issuer=f"{AS}/tenant1", metadata_at="/tenant1/.well-known/openid-configuration")
    assert (await call(fake)).status_code == 200
    assert fake.paths("as.test")[:3] == [
        "/.well-known/oauth-authorization-server/tenant1",
        "/.well-known/openid-configuration/tenant1",
        "/tenant1/.well-known/openid-configuration",
    ]
    assert "/.well-known/oauth-authorization-server" not in fake.paths("as.test")


async def test_openid_configuration_fallback_for_a_root_issuer() -> None:
    fake = Fake(metadata_at="/.well-known/openid-configuration")
    assert (await call(fake)).status_code == 200
    assert fake.paths("as.test")[:2] == ["/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"]


async def test_resource_mismatch_aborts_before_authorizing() -> None:
    fake = Fake(prm_resource="https://evil.example.com/mcp")
    with pytest.raises(OAuthError, match="evil.example.com"):
        await call(fake)
    assert fake.authorizations == [] and fake.paths("as.test") == []


async def test_issuer_mismatch_is_rejected_with_resource_metadata() -> None:
    fake = Fake()
    fake.metadata = lambda: {**Fake.metadata(fake), "issuer": "https://other.test"}  # type: ignore[method-assign]
    with pytest.raises(OAuthError, match="issuer"):
        await call(fake)


@pytest.mark.parametrize(
    ("header_scope", "prm_scopes", "as_scopes", "expected"),
    [
        ("mcp:basic", ["mcp:basic", "mcp:read"], None, "mcp:basic"),
        (None, ["mcp:basic", "mcp:read", "mcp:write"], None, "mcp:basic mcp:read mcp:write"),
        (None, None, None, None),
        (None, ["mcp:basic"], ["mcp:basic", "offline_access"], "mcp:basic offline_access"),
        (None, ["mcp:basic"], ["mcp:basic", "mcp:read"], "mcp:basic"),
    ],
)
async def test_scope_selection(
    header_scope: str | None, prm_scopes: list[str] | None, as_scopes: list[str] | None, expected: str | None
) -> None:
    fake = Fake(header_scope=header_scope, prm_scopes=prm_scopes, as_scopes=as_scopes)
    assert (await call(fake)).status_code == 200
    assert fake.authorizations[0].get("scope") == expected


async def test_step_up_reauthorizes_with_the_union_of_scopes() -> None:
    fake = Fake(header_scope="mcp:basic", required_scope={"mcp:basic", "mcp:write"})
    assert (await call(fake)).status_code == 200
    assert [a.get("scope") for a in fake.authorizations] == ["mcp:basic", "mcp:basic mcp:write"]


async def test_step_up_gives_up_after_three_authorizations() -> None:
    fake = Fake(header_scope="mcp:admin", always_forbid=True, required_scope={"mcp:admin"})
    with pytest.raises(OAuthError, match="403 after 3 authorizations"):
        await call(fake)
    assert len(fake.authorizations) == 3


async def test_expired_token_is_refreshed_without_the_user() -> None:
    fake = Fake(expires_in=0)
    mcp, _ = connect(fake)
    async with mcp:
        await mcp.post(MCP, content=b"{}")
        assert (await mcp.post(MCP, content=b"{}")).status_code == 200
    assert len(fake.authorizations) == 1
    assert [f["grant_type"] for f in fake.token_forms] == ["authorization_code", "refresh_token"]
    assert fake.token_forms[1]["refresh_token"] == "refresh-2" and fake.token_forms[1]["resource"] == MCP


async def test_authorize_hook_and_state_check() -> None:
    fake = Fake()
    seen: list[str] = []

    async def user(url: str) -> tuple[str, str | None]:
        seen.append(url)
        redirect = fake.authorize(httpx.Request("GET", url)).headers["location"]
        query = parse_qs(urlsplit(redirect).query)
        return query["code"][0], query["state"][0]

    assert (await call(fake, authorize=user)).status_code == 200
    assert seen and seen[0].startswith(f"{AS}/authorize?")

    async def forged(url: str) -> tuple[str, str | None]:
        return "code-1", "not-the-state"

    with pytest.raises(OAuthError, match="state"):
        await call(Fake(), authorize=forged)


# ---------------------------------------------------------------- client identity and auth methods


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post", "none"])
async def test_token_endpoint_auth_method_as_registered(method: str) -> None:
    registration = {"client_id": "dyn", "token_endpoint_auth_method": method}
    if method != "none":
        registration["client_secret"] = SECRET
    fake = Fake(auth_methods=[method], registration=registration)
    assert (await call(fake)).status_code == 200
    assert fake.registrations[0]["token_endpoint_auth_method"] == method
    form = fake.token_forms[0]
    if method == "client_secret_basic":
        assert form["_basic"] == f"dyn:{SECRET}" and "client_secret" not in form
    elif method == "client_secret_post":
        assert "_basic" not in form and (form["client_id"], form["client_secret"]) == ("dyn", SECRET)
    else:
        assert "_basic" not in form and form["client_id"] == "dyn" and "client_secret" not in form


async def test_pre_registered_client_skips_registration() -> None:
    fake = Fake()
    assert (await call(fake, client=ClientInfo("pre", "pre-secret"))).status_code == 200
    assert fake.registrations == [] and fake.token_forms[0]["_basic"] == "pre:pre-secret"


async def test_client_id_metadata_document_when_supported() -> None:
    url = "https://app.example/client.json"
    fake = Fake(cimd=True)
    assert (await call(fake, client_metadata_url=url)).status_code == 200
    assert fake.registrations == [] and fake.authorizations[0]["client_id"] == url
    assert fake.token_forms[0]["client_id"] == url and "_basic" not in fake.token_forms[0]
    plain = Fake()  # no CIMD support: register instead
    assert (await call(plain, client_metadata_url=url)).status_code == 200
    assert len(plain.registrations) == 1


# ---------------------------------------------------------------- 2025-03-26 fallbacks


async def test_legacy_metadata_at_the_server_origin_accepts_another_issuer() -> None:
    fake = Fake(prm_at=None, issuer="https://mcp.test/oauth", metadata_at="/.well-known/oauth-authorization-server")
    assert (await call(fake)).status_code == 200
    assert fake.paths("mcp.test")[:4] == [
        "/mcp",
        PRM_PATH,
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-authorization-server",
    ]
    assert fake.authorizations[0]["resource"] == MCP


async def test_legacy_default_endpoints() -> None:
    fake = Fake(prm_at=None, issuer="https://mcp.test", metadata_at=None)
    assert (await call(fake)).status_code == 200
    assert {"/register", "/authorize", "/token"} <= set(fake.paths("mcp.test"))


# ---------------------------------------------------------------- machine grants


async def test_client_credentials_with_private_key_jwt() -> None:
    import jwt  # the test extra has PyJWT: a missing one fails, never skips
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    fake = Fake(auth_methods=["private_key_jwt"])
    machine = ClientInfo("machine", private_key_pem=pem.decode())
    assert (await call(fake, grant="client_credentials", client=machine)).status_code == 200
    assert fake.authorizations == []
    form = fake.token_forms[0]
    assert form["grant_type"] == "client_credentials" and form["resource"] == MCP
    assert form["client_assertion_type"] == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    claims = jwt.decode(form["client_assertion"], key.public_key(), algorithms=["ES256"], audience=AS)
    assert claims["iss"] == claims["sub"] == "machine" and claims["jti"]
    assert claims["iat"] <= time.time() < claims["exp"]


async def test_client_credentials_with_basic() -> None:
    fake = Fake()
    assert (await call(fake, grant="client_credentials", client=ClientInfo("machine", SECRET))).status_code == 200
    assert (
        fake.token_forms[0]["grant_type"] == "client_credentials"
        and fake.token_forms[0]["_basic"] == f"machine:{SECRET}"
    )


async def test_cross_app_access_exchanges_then_uses_jwt_bearer() -> None:
    fake = Fake()
    exchanged: list[dict[str, str]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.host == "idp.test":
            exchanged.append({k: v[0] for k, v in parse_qs(request.content.decode()).items()})
            return httpx.Response(
                200,
                json={
                    "access_token": "the-id-jag",
                    "token_type": "N_A",
                    "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag",
                },
            )
        return fake.handler(request)

    grant = CrossAppAccess("https://idp.test/token", "idp-client", "the-id-token")
    auth = OAuthClient(
        grant=grant,
        client=ClientInfo("xaa", SECRET),
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)),
    )
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler), auth=auth) as mcp:
        assert (await mcp.post(MCP, content=b"{}")).status_code == 200
    assert exchanged == [
        {
            "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
            "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
            "audience": AS,
            "resource": MCP,
            "subject_token": "the-id-token",
            "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
            "client_id": "idp-client",
        }
    ]
    form = fake.token_forms[0]
    assert form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer" and form["assertion"] == "the-id-jag"
    assert form["_basic"] == f"xaa:{SECRET}"


# ---------------------------------------------------------------- storage, logging, the runtime


async def test_stored_token_is_sent_first() -> None:
    fake = Fake()
    fake.issued["kept"] = set()
    storage = MemoryStorage()
    await storage.save_token(Token("kept"))
    assert (await call(fake, storage=storage)).status_code == 200
    assert fake.authorizations == [] and fake.requests[0].headers["authorization"] == "Bearer kept"
    assert "kept" not in repr(storage.token)


async def test_secrets_never_reach_the_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    fake = Fake(expires_in=0, header_scope="mcp:basic", required_scope={"mcp:basic", "mcp:write"})
    mcp, _ = connect(fake)
    async with mcp:
        await mcp.post(MCP, content=b"{}")
        await mcp.post(MCP, content=b"{}")  # refresh
    assert [f["grant_type"] for f in fake.token_forms] == ["authorization_code", "authorization_code", "refresh_token"]
    secrets = {SECRET, *fake.issued, *fake.challenges}
    secrets |= {f[k] for f in fake.token_forms for k in ("code_verifier", "refresh_token") if k in f}
    assert len(secrets) > 6 and caplog.records
    logged = caplog.text + "".join(repr(r.args) for r in caplog.records)
    assert not [s for s in secrets if s in logged]


async def test_through_the_mcp_client() -> None:
    fake = Fake(header_scope="mcp:basic")

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path != "/mcp" or request.method != "POST":
            return fake.handler(request) if request.url.path != "/mcp" else httpx.Response(405)
        sent.append(request.headers.get("authorization", ""))
        challenged = fake.resource(request)
        if challenged.status_code != 200:
            return challenged
        message = json.loads(request.content)
        if "id" not in message:
            return httpx.Response(202)
        result: dict[str, Any] = {"tools": []}
        if message["method"] == "initialize":
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "fake", "version": "1"},
            }
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": message["id"], "result": result})

    sent: list[str] = []  # the Authorization header of each MCP POST
    auth = OAuthClient(http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)))
    http = httpx.AsyncClient(transport=httpx.MockTransport(handler), auth=auth)

    async def connect_transport() -> HttpTransport:
        return HttpTransport(MCP, client=http)

    async with Client(connect=connect_transport, era="handshake") as client:  # the fake speaks only that era
        assert await client.list_tools() == []
    await http.aclose()
    assert len(fake.authorizations) == 1 and fake.authorizations[0]["scope"] == "mcp:basic"
    assert sent[0] == "" and len(sent) == 4  # initialize, initialize again, initialized, tools/list
    assert all(header.startswith("Bearer access-") for header in sent[1:])
