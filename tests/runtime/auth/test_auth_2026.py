"""The OAuth client's 2026-07-28 rules (mcpgen.runtime.auth.oauth), each against the faked
authorization server and protected MCP endpoint of tests/runtime/auth/test_auth.py: RFC 9207 ``iss``
checks of the authorization response, the metadata ``issuer`` compared exactly, SEP-837
``application_type`` in dynamic registration, SEP-2352 credentials bound to their issuer
(and a resource that moves to another authorization server), SEP-2207 ``offline_access``,
and the RFC 8707 ``resource`` sent exactly as the protected resource metadata names it.
The conformance suite's auth/* scenarios (conformance/run.py client) check the same
against the official mocks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest

from mcpgen.runtime.auth.oauth import ClientInfo, MemoryStorage, OAuthError
from tests.runtime.auth.test_auth import AS, MCP, SECRET, Fake, call, connect

pytestmark = pytest.mark.anyio
AS2 = "https://as2.test"
ABSENT = "<absent>"  # the authorization response carries no iss


@dataclass
class IssFake(Fake):
    """A Fake whose authorization server may advertise RFC 9207 and puts ``iss`` (or a
    forged one, or none) in its redirects, successful or not."""

    iss_flag: bool | None = None  # authorization_response_iss_parameter_supported
    iss: str | None = None  # None: the issuer itself; ABSENT: left out
    deny: bool = False  # answer with error=access_denied instead of a code

    def metadata(self) -> dict[str, Any]:
        body = super().metadata()
        if self.iss_flag is not None:
            body["authorization_response_iss_parameter_supported"] = self.iss_flag
        return body

    def authorize(self, request: httpx.Request) -> httpx.Response:
        redirect = super().authorize(request).headers["location"]
        query = parse_qs(urlsplit(redirect).query)
        params = {"state": query["state"][0]}
        if self.deny:
            params |= {"error": "access_denied", "error_description": "forged-description"}
        else:
            params["code"] = query["code"][0]
        if self.iss != ABSENT:
            params["iss"] = self.iss if self.iss is not None else self.issuer
        base = redirect.split("?")[0]
        return httpx.Response(302, headers={"location": f"{base}?{urlencode(params)}"})


def token_requests(fake: Fake) -> list[str]:
    return [r.url.path for r in fake.requests if r.url.path.endswith("/token")]


# ---------------------------------------------------------------- RFC 9207 iss


@pytest.mark.parametrize(
    ("flag", "iss"),
    [(True, None), (None, ABSENT), (False, ABSENT), (None, None)],
    ids=["advertised-and-correct", "not-advertised-absent", "advertised-false-absent", "not-advertised-but-correct"],
)
async def test_authorization_response_iss_accepted(flag: bool | None, iss: str | None) -> None:
    fake = IssFake(iss_flag=flag, iss=iss)
    assert (await call(fake)).status_code == 200
    assert len(token_requests(fake)) == 1


@pytest.mark.parametrize(
    ("flag", "iss", "why"),
    [
        (True, ABSENT, "carries no iss"),  # iss-supported-missing
        (True, "https://attacker.test", "attacker.test"),  # iss-wrong-issuer
        (None, "https://attacker.test", "attacker.test"),  # iss-unexpected: compared anyway
        (True, AS + "/", "'https://as.test/'"),  # iss-normalized: no trailing-slash folding
        (True, "HTTPS://AS.TEST", "HTTPS://AS.TEST"),  # nor case folding
        (True, "https://as.test:443", "as.test:443"),  # nor default ports
    ],
    ids=["advertised-missing", "advertised-wrong", "unadvertised-wrong", "trailing-slash", "case", "default-port"],
)
async def test_authorization_response_iss_rejected_before_the_code_is_spent(
    flag: bool | None, iss: str, why: str
) -> None:
    fake = IssFake(iss_flag=flag, iss=iss)
    with pytest.raises(OAuthError, match=why):
        await call(fake)
    assert len(fake.authorizations) == 1 and token_requests(fake) == []


async def test_an_error_response_from_the_wrong_issuer_is_not_shown() -> None:
    fake = IssFake(iss_flag=True, iss="https://attacker.test", deny=True)
    with pytest.raises(OAuthError, match="attacker.test") as caught:
        await call(fake)
    assert "forged-description" not in str(caught.value) and "access_denied" not in str(caught.value)
    honest = IssFake(iss_flag=True, deny=True)  # the right issuer: its error is reported
    with pytest.raises(OAuthError, match="access_denied forged-description"):
        await call(honest)


async def test_a_code_state_pair_from_the_hook_cannot_satisfy_an_advertised_iss() -> None:
    fake = IssFake(iss_flag=True)

    async def pair(url: str) -> tuple[str, str | None]:
        query = parse_qs(urlsplit(fake.authorize(httpx.Request("GET", url)).headers["location"]).query)
        return query["code"][0], query["state"][0]

    with pytest.raises(OAuthError, match="no iss"):
        await call(fake, authorize=pair)
    assert token_requests(fake) == []

    fresh = IssFake(iss_flag=True)

    async def redirect(url: str) -> str:  # the URL the user's browser came back to
        return str(fresh.authorize(httpx.Request("GET", url)).headers["location"])

    assert (await call(fresh, authorize=redirect)).status_code == 200


# ---------------------------------------------------------------- metadata issuer, resource


async def test_metadata_issuer_must_be_identical_not_merely_equivalent() -> None:
    fake = Fake()
    fake.metadata = lambda: {**Fake.metadata(fake), "issuer": AS + "/"}  # type: ignore[method-assign]
    with pytest.raises(OAuthError, match="issuer"):
        await call(fake)
    assert fake.registrations == [] and fake.authorizations == [] and token_requests(fake) == []


async def test_resource_is_sent_exactly_as_the_protected_resource_metadata_names_it() -> None:
    fake = Fake(prm_resource="https://mcp.test/")  # covers /mcp; the trailing "/" is part of it
    assert (await call(fake)).status_code == 200
    assert fake.authorizations[0]["resource"] == "https://mcp.test/"
    assert fake.token_forms[0]["resource"] == "https://mcp.test/"


# ---------------------------------------------------------------- SEP-837 application_type


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({}, "native"),  # the default redirect is http://localhost:3000/callback
        ({"redirect_uri": "http://127.0.0.1:8765/cb"}, "native"),
        ({"redirect_uri": "com.example.app:/oauth"}, "native"),
        ({"redirect_uri": "https://app.example.com/callback"}, "web"),
        ({"redirect_uri": "https://app.example.com/callback", "application_type": "native"}, "native"),
    ],
)
async def test_dynamic_registration_states_its_application_type(options: dict[str, Any], expected: str) -> None:
    fake = Fake()
    mcp, _ = connect(fake, **options)
    async with mcp:
        await mcp.post(MCP, content=b"{}")
    assert fake.registrations[0]["application_type"] == expected


# ---------------------------------------------------------------- SEP-2352 credentials per issuer


def move_to_as2(fake: Fake) -> None:
    """The resource now trusts another authorization server; the old tokens stop working."""
    fake.issuer = AS2
    fake.issued.clear()
    fake.registration = {"client_id": "as2-client", "client_secret": "as2-secret"}


async def test_a_resource_moving_to_another_authorization_server_means_registering_there() -> None:
    fake = Fake(registration={"client_id": "as1-client", "client_secret": SECRET})
    storage = MemoryStorage()
    mcp, _ = connect(fake, storage=storage)
    async with mcp:
        assert (await mcp.post(MCP, content=b"{}")).status_code == 200
        move_to_as2(fake)
        assert (await mcp.post(MCP, content=b"{}")).status_code == 200
    as2 = [r for r in fake.requests if r.url.host == "as2.test"]
    assert [r.url.path for r in as2 if r.url.path == "/register"] == ["/register"]
    assert not [
        r
        for r in as2
        if b"as1-client" in r.content
        or "as1-client" in str(r.url)
        or "as1-client" in r.headers.get("authorization", "")
    ]
    assert "as1-client" not in fake.token_forms[-1].get("_basic", "")
    assert [f["grant_type"] for f in fake.token_forms] == ["authorization_code", "authorization_code"]
    assert fake.authorizations[-1]["client_id"] == "as2-client"
    assert {issuer: c.client_id for issuer, c in storage.clients.items()} == {AS: "as1-client", AS2: "as2-client"}
    assert storage.token is not None and storage.token.issuer == AS2


class OneSlotStorage(MemoryStorage):
    """A storage that keeps one registration whatever the issuer (as a pre-2026 one did)."""

    async def load_client(self, issuer: str) -> ClientInfo | None:
        return next(iter(self.clients.values()), None)


async def test_a_registration_from_a_storage_that_ignores_the_issuer_is_not_reused() -> None:
    fake = Fake(registration={"client_id": "as1-client", "client_secret": SECRET})
    storage = OneSlotStorage()
    mcp, _ = connect(fake, storage=storage)
    async with mcp:
        assert (await mcp.post(MCP, content=b"{}")).status_code == 200
        move_to_as2(fake)
        assert (await mcp.post(MCP, content=b"{}")).status_code == 200
    assert len(fake.registrations) == 2 and fake.authorizations[-1]["client_id"] == "as2-client"


@dataclass
class RevokingFake(Fake):
    """A Fake whose resource turns away the access tokens listed in ``revoked``."""

    revoked: set[str] = field(default_factory=set)

    def resource(self, request: httpx.Request) -> httpx.Response:
        if request.headers.get("authorization", "").removeprefix("Bearer ") in self.revoked:
            challenge = f'Bearer resource_metadata="https://mcp.test{self.prm_at}"'
            return httpx.Response(401, headers={"www-authenticate": challenge})
        return super().resource(request)


async def test_a_401_still_refreshes_at_the_same_authorization_server() -> None:
    fake = RevokingFake()
    mcp, _ = connect(fake)
    async with mcp:
        assert (await mcp.post(MCP, content=b"{}")).status_code == 200
        fake.revoked = set(fake.issued)  # the resource forgets the token; the refresh token still works
        assert (await mcp.post(MCP, content=b"{}")).status_code == 200
    assert [f["grant_type"] for f in fake.token_forms] == ["authorization_code", "refresh_token"]
    assert len(fake.authorizations) == 1 and len(fake.registrations) == 1


async def test_pre_registered_credentials_are_never_presented_to_another_issuer() -> None:
    fake = Fake()
    mcp, _ = connect(fake, client=ClientInfo("pre", "pre-secret", issuer=AS2))
    with pytest.raises(OAuthError, match="as2.test"):
        async with mcp:
            await mcp.post(MCP, content=b"{}")
    assert fake.authorizations == [] and token_requests(fake) == []


async def test_unbound_pre_registered_credentials_stay_with_their_first_issuer() -> None:
    fake = Fake()
    mcp, auth = connect(fake, client=ClientInfo("pre", "pre-secret"))
    async with mcp:
        assert (await mcp.post(MCP, content=b"{}")).status_code == 200
        assert auth.client is not None and auth.client.issuer == AS
        move_to_as2(fake)
        with pytest.raises(OAuthError, match="register there"):
            await mcp.post(MCP, content=b"{}")
    assert not [r for r in fake.requests if r.url.host == "as2.test" and r.url.path in ("/authorize", "/token")]


async def test_a_metadata_document_client_id_is_portable_across_issuers() -> None:
    url = "https://app.example/client.json"
    fake = Fake(cimd=True)
    mcp, _ = connect(fake, client_metadata_url=url)
    async with mcp:
        assert (await mcp.post(MCP, content=b"{}")).status_code == 200
        move_to_as2(fake)
        assert (await mcp.post(MCP, content=b"{}")).status_code == 200
    assert fake.registrations == [] and [a["client_id"] for a in fake.authorizations] == [url, url]


# ---------------------------------------------------------------- SEP-2207 offline_access


async def test_offline_access_is_never_asked_of_a_server_that_does_not_list_it() -> None:
    fake = Fake(prm_scopes=["mcp:basic", "offline_access"], as_scopes=["mcp:basic"])
    assert (await call(fake)).status_code == 200
    assert fake.authorizations[0]["scope"] == "mcp:basic"
    challenged = Fake(header_scope="mcp:basic offline_access")  # the AS lists no scopes at all
    assert (await call(challenged)).status_code == 200
    assert challenged.authorizations[0]["scope"] == "mcp:basic"


async def test_offline_access_when_listed_with_refresh_token_registered() -> None:
    fake = Fake(prm_scopes=["mcp:basic"], as_scopes=["mcp:basic", "offline_access"])
    assert (await call(fake)).status_code == 200
    assert fake.authorizations[0]["scope"] == "mcp:basic offline_access"
    assert fake.registrations[0]["grant_types"] == ["authorization_code", "refresh_token"]
    declined = Fake(prm_scopes=["mcp:basic"], as_scopes=["mcp:basic", "offline_access"])
    assert (await call(declined, offline_access=False)).status_code == 200
    assert declined.authorizations[0]["scope"] == "mcp:basic"
