"""OAuth sign-in against a server and authorization server that name endpoints a client
must not go to (issue 36, point 8; the class of CVE-2025-6514): a ``file:`` or custom-scheme
authorization endpoint (which a sign-in hands to the operating system's opener), plain http
to another host, user information before the host, a fragment. Each is refused before any
request is made to it and before the browser hook is called.

The protected server and its authorization server's metadata are one small ASGI app under
uvicorn on loopback (http on loopback is allowed: it is this machine), recording every
request it gets.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from mcpgen import Client
from mcpgen.runtime.auth.discovery import checked_endpoint
from mcpgen.runtime.auth.oauth import ClientInfo, OAuthClient, OAuthError
from mcpgen.runtime.shared.origins import secure_endpoint
from tests.http_server import serving_in_thread

pytestmark = pytest.mark.anyio


@dataclass
class Parties:
    """The protected MCP endpoint, its resource metadata and the authorization server's
    metadata, all on one loopback origin; ``{origin}`` in a value is replaced by it."""

    resource_metadata: str = "{origin}/.well-known/oauth-protected-resource/mcp"
    issuer: str = "{origin}"
    endpoints: dict[str, str] = field(
        default_factory=lambda: {
            "authorization_endpoint": "{origin}/authorize",
            "token_endpoint": "{origin}/token",
            "registration_endpoint": "{origin}/register",
        }
    )
    seen: list[str] = field(default_factory=list)
    origin: str = ""

    def fill(self, value: str) -> str:
        return value.replace("{origin}", self.origin)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        path = scope["path"]
        self.seen.append(path)
        status, body, headers = 404, b"", []
        if path == "/mcp":
            status = 401
            headers = [
                (b"www-authenticate", f'Bearer resource_metadata="{self.fill(self.resource_metadata)}"'.encode())
            ]
        elif path == "/.well-known/oauth-protected-resource/mcp":
            prm = {"resource": f"{self.origin}/mcp", "authorization_servers": [self.fill(self.issuer)]}
            status, body = 200, json.dumps(prm).encode()
        elif path == "/.well-known/oauth-authorization-server":
            metadata = {"issuer": self.fill(self.issuer), **{k: self.fill(v) for k, v in self.endpoints.items()}}
            metadata["code_challenge_methods_supported"] = ["S256"]
            status, body = 200, json.dumps(metadata).encode()
        headers.append((b"content-type", b"application/json"))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


@pytest.fixture
def parties() -> Iterator[Parties]:
    state = Parties()
    with serving_in_thread(state) as port:
        state.origin = f"http://127.0.0.1:{port}"
        yield state


async def sign_in(parties: Parties) -> list[str]:
    """Connect with an OAuthClient whose browser hook records what it is handed."""
    opened: list[str] = []

    async def browser(url: str) -> str:
        opened.append(url)
        raise AssertionError("the browser hook must not be reached")

    auth = OAuthClient(authorize=browser, client=ClientInfo("c", auth_method="none"))
    with pytest.raises(OAuthError, match="refusing the"):
        async with Client.http(f"{parties.origin}/mcp", auth=auth, era="handshake"):
            pass
    return opened


@pytest.mark.parametrize(
    "endpoint",
    [
        "file:///etc/passwd",
        "calc:evil",
        "javascript:alert(1)",
        "http://evil.example/authorize",  # plain http off this machine
        "https://accounts.example@evil.example/authorize",  # one host shown, another reached
        "{origin}/authorize#fragment",
    ],
)
async def test_an_unsafe_authorization_endpoint_never_reaches_the_browser(parties: Parties, endpoint: str) -> None:
    parties.endpoints["authorization_endpoint"] = endpoint
    assert await sign_in(parties) == []
    assert "/authorize" not in parties.seen


@pytest.mark.parametrize("name", ["token_endpoint", "registration_endpoint"])
async def test_an_unsafe_token_or_registration_endpoint_is_never_requested(parties: Parties, name: str) -> None:
    parties.endpoints[name] = parties.endpoints[name] + "#x"  # reachable, but not an endpoint URL
    assert await sign_in(parties) == []
    assert not {"/token", "/register", "/authorize"} & set(parties.seen)


async def test_an_unsafe_resource_metadata_url_is_never_fetched(parties: Parties) -> None:
    parties.resource_metadata = "{origin}/elsewhere#x"
    assert await sign_in(parties) == []
    assert "/elsewhere" not in parties.seen and "/.well-known/oauth-authorization-server" not in parties.seen


async def test_an_unsafe_issuer_is_never_asked_for_its_metadata(parties: Parties) -> None:
    parties.issuer = "ftp://127.0.0.1/"
    assert await sign_in(parties) == []
    assert "/.well-known/oauth-authorization-server" not in parties.seen


def test_what_an_endpoint_may_be() -> None:
    for fine in ("https://as.example/authorize", "http://127.0.0.1:8080/t", "http://localhost/t", "http://[::1]/t"):
        assert secure_endpoint(fine) is None, fine
        assert checked_endpoint("token_endpoint", fine, "x") == fine
    for bad in (
        "file:///x",
        "https://u:p@as.example/",
        "http://10.0.0.1/t",
        "https://as.example/#f",
        "https:///x",
        "x",
    ):
        assert secure_endpoint(bad) is not None, bad
        with pytest.raises(OAuthError):
            checked_endpoint("token_endpoint", bad, "x")
    with pytest.raises(OAuthError, match="gives no usable token_endpoint"):
        checked_endpoint("token_endpoint", 42, "the metadata")
