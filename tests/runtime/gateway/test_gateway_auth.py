"""Auth on both sides of a gateway, with a real authorization server (mcpgen.testing's) and
real HTTP: the front protected by the runtime's ``BearerAuth``; per backend, the caller's
own token passed through (only where the configuration says so), the caller's token
exchanged (RFC 8693) for one meant for the backend, or the gateway's own token from the
client credentials grant (the runtime's OAuth client). Each backend checks its tokens
itself and says whom the request acts for."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from mcpgen import BearerAuth, Client, Context, Gateway, McpError, Server
from mcpgen.generated import TextContent
from tests.authserver import AuthServer
from tests.http_server import free_port, serving_in_thread

pytestmark = pytest.mark.anyio
EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
AUDIENCE = "https://backend.example/mcp"  # the exchanged token's audience (the backend checks it)


@pytest.fixture(scope="module")
def issuer() -> Iterator[AuthServer]:
    with AuthServer() as server:
        server.add_client("caller", "caller-secret", scope="mcp")
        server.add_client("gw", "gw-secret", scope="mcp")
        server.add_client("backend-user", "bu-secret", scope="mcp")
        yield server


def token(issuer: AuthServer, client: str, secret: str, resource: str) -> str:
    grant = {"grant_type": "client_credentials", "scope": "mcp", "resource": resource}
    answer = httpx.post(f"{issuer.issuer}/token", data=grant, auth=(client, secret))
    assert answer.status_code == 200, answer.text
    return str(answer.json()["access_token"])


def protected_backend(issuer: AuthServer, audience: str) -> Server:
    server = Server("protected", auth=BearerAuth(issuer.issuer, audience, scopes=["mcp"]))

    @server.tool()
    async def whoami(ctx: Context) -> str:
        assert ctx.auth is not None
        return f"{ctx.auth.client_id}"

    return server


def served(app: Any) -> Iterator[str]:
    port = free_port()
    with serving_in_thread(app, port):
        yield f"http://127.0.0.1:{port}/mcp"


def text(result: Any) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


async def whoami_through(front_url: str, caller_token: str | None, era: str) -> str:
    headers = {"Authorization": f"Bearer {caller_token}"} if caller_token else None
    async with Client.http(front_url, headers=headers, era=era) as client:
        return text(await client.call_tool("whoami"))


@pytest.mark.parametrize("era", ["handshake", "stateless"])
async def test_the_callers_own_token_is_passed_through(issuer: AuthServer, era: str) -> None:
    front_port = free_port()
    front_url = f"http://127.0.0.1:{front_port}/mcp"
    # The backend trusts tokens issued for the gateway: what passthrough means.
    for backend_url in served(protected_backend(issuer, front_url).http_app()):
        config = {
            "mcpServers": {"b": {"url": backend_url, "auth": {"type": "passthrough"}}},
            "gateway": {"auth": {"issuer": issuer.issuer, "resource": front_url, "scopes": ["mcp"]}},
        }
        front = Gateway(config).server()
        with serving_in_thread(front.http_app(), front_port):
            caller = token(issuer, "caller", "caller-secret", front_url)
            assert await whoami_through(front_url, caller, era) == "caller"
            with pytest.raises((McpError, httpx.HTTPError)):  # no token: 401 at the gateway
                await whoami_through(front_url, None, era)


async def test_the_callers_token_is_exchanged_for_one_meant_for_the_backend(issuer: AuthServer) -> None:
    seen: list[dict[str, Any]] = []
    for backend_url in served(protected_backend(issuer, AUDIENCE).http_app()):

        async def exchange(request: Request) -> JSONResponse:
            form = dict(await request.form())
            expected = "Basic " + base64.b64encode(b"gw-exchange:xs").decode()
            seen.append({**form, "authenticated": request.headers.get("authorization") == expected})
            if form.get("grant_type") != EXCHANGE or request.headers.get("authorization") != expected:
                return JSONResponse({"error": "invalid_request"}, status_code=400)
            # The exchanged token: one of the backend's own users, for the backend's audience.
            exchanged = token(issuer, "backend-user", "bu-secret", AUDIENCE)
            return JSONResponse({"access_token": exchanged, "token_type": "Bearer", "expires_in": 300})

        exchanger = Starlette(routes=[Route("/token", exchange, methods=["POST"])])
        front_port = free_port()
        front_url = f"http://127.0.0.1:{front_port}/mcp"
        for exchange_url in served(exchanger):
            endpoint = exchange_url.removesuffix("/mcp") + "/token"
            auth = {
                "type": "token_exchange",
                "token_endpoint": endpoint,
                "client_id": "gw-exchange",
                "client_secret": "xs",
                "audience": AUDIENCE,
            }
            config = {
                "mcpServers": {"b": {"url": backend_url, "auth": auth}},
                "gateway": {"auth": {"issuer": issuer.issuer, "resource": front_url}},
            }
            with serving_in_thread(Gateway(config).server().http_app(), front_port):
                caller = token(issuer, "caller", "caller-secret", front_url)
                assert await whoami_through(front_url, caller, "stateless") == "backend-user"
                assert await whoami_through(front_url, caller, "stateless") == "backend-user"
    # Exchanged once (then kept until it expires), the caller's token as the subject.
    assert [(e["subject_token"], e["audience"], e["authenticated"]) for e in seen] == [(caller, AUDIENCE, True)]


async def test_the_gateways_own_token_from_client_credentials(issuer: AuthServer) -> None:
    port = free_port()
    backend_url = f"http://127.0.0.1:{port}/mcp"
    with serving_in_thread(protected_backend(issuer, backend_url).http_app(), port):
        auth = {"type": "client_credentials", "client_id": "gw", "client_secret": "gw-secret"}
        front = Gateway({"mcpServers": {"b": {"url": backend_url, "auth": auth}}}).server()
        async with Client(front, era="stateless") as client:
            assert text(await client.call_tool("whoami")) == "gw"
        async with Client(front, era="handshake") as client:
            assert text(await client.call_tool("whoami")) == "gw"
