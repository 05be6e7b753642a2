"""Calling the API as each MCP caller: the generated server, protected with ``BearerAuth``
(tokens from a real authorization server) and served over HTTP, passes the caller's own
token upstream, or exchanges it (RFC 8693) first; without a verified caller (stdio) it
refuses rather than fall back to anything else."""

from __future__ import annotations

import base64
import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from mcpgen import Client
from mcpgen.generated import TextContent
from mcpgen.testing import AuthServer
from tests.openapi.project_runs import generate, running, server_command, server_env
from tests.openapi.upstream import free_port, recording_app, serving

pytestmark = pytest.mark.anyio
DOCUMENT = {
    "openapi": "3.1.0",
    "info": {"title": "Per user", "version": "1"},
    "security": [{"user": []}],
    "components": {
        "securitySchemes": {
            "user": {
                "type": "oauth2",
                "flows": {
                    "authorizationCode": {
                        "authorizationUrl": "https://idp.invalid/a",
                        "tokenUrl": "https://idp.invalid/t",
                        "scopes": {},
                    }
                },
            }
        }
    },
    "paths": {"/me": {"get": {"operationId": "me", "responses": {"200": {"description": "ok"}}}}},
}
EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"


def exchanger(log: list[dict[str, Any]]) -> Starlette:
    """A token endpoint that does RFC 8693 token exchange only, for a client ``mcp-server``."""

    async def token(request: Request) -> JSONResponse:
        form = dict(await request.form())
        expected = "Basic " + base64.b64encode(b"mcp-server:xs").decode()
        log.append({**form, "client": request.headers.get("authorization") == expected})
        if form.get("grant_type") != EXCHANGE or request.headers.get("authorization") != expected:
            return JSONResponse({"error": "invalid_request"}, status_code=400)
        exchanged = "exchanged-" + hashlib.sha256(str(form["subject_token"]).encode()).hexdigest()[:12]
        return JSONResponse({"access_token": exchanged, "token_type": "Bearer", "expires_in": 300})

    return Starlette(routes=[Route("/token", token, methods=["POST"])])


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    with serving(recording_app()) as url:
        yield url


@pytest.fixture(scope="module")
def project(upstream: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("users")
    spec = tmp / "users.json"
    spec.write_text(json.dumps(DOCUMENT))
    return generate(str(spec), tmp / "users", "users", "--base-url", upstream)


def upstream_saw(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    block = result.content[0]
    assert isinstance(block, TextContent)
    headers: dict[str, Any] = json.loads(block.text)["headers"]
    return headers


async def call_me_over_http(
    project: Path, issuer: AuthServer, era: str = "auto", **variables: str
) -> tuple[str, dict[str, Any]]:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    env = server_env(MCP_ISSUER=issuer.issuer, MCP_RESOURCE=url, MCP_SCOPES="mcp", **variables)
    grant = {"grant_type": "client_credentials", "scope": "mcp", "resource": url}
    token = httpx.post(f"{issuer.issuer}/token", data=grant, auth=("caller", "pw")).json()["access_token"]
    with running([*server_command("users"), "--http", str(port)], url, cwd=project, env=env):
        async with Client.http(url, headers={"Authorization": f"Bearer {token}"}, era=era) as client:
            return token, upstream_saw(await client.call_tool("me", {}))


@pytest.mark.parametrize("era", ["handshake", "stateless"])
async def test_the_callers_own_token_is_passed_on(project: Path, era: str) -> None:
    with AuthServer() as issuer:
        issuer.add_client("caller", "pw", scope="mcp")
        token, headers = await call_me_over_http(project, issuer, era, USERS_USER_AUTH="passthrough")
    assert headers["authorization"] == f"Bearer {token}"


async def test_the_callers_token_is_exchanged_first(project: Path) -> None:
    log: list[dict[str, Any]] = []
    with AuthServer() as issuer, serving(exchanger(log)) as exchange:
        issuer.add_client("caller", "pw", scope="mcp")
        variables = {
            "USERS_USER_AUTH": "exchange",
            "USERS_EXCHANGE_TOKEN_URL": f"{exchange}/token",
            "USERS_EXCHANGE_CLIENT_ID": "mcp-server",
            "USERS_EXCHANGE_CLIENT_SECRET": "xs",
            "USERS_EXCHANGE_AUDIENCE": "https://api.example",
        }
        token, headers = await call_me_over_http(project, issuer, **variables)
    expected = "exchanged-" + hashlib.sha256(token.encode()).hexdigest()[:12]
    assert headers["authorization"] == f"Bearer {expected}"
    assert [(entry["subject_token"], entry["audience"], entry["client"]) for entry in log] == [
        (token, "https://api.example", True)
    ]


async def test_without_a_verified_caller_the_call_is_refused(project: Path) -> None:
    env = server_env(USERS_USER_AUTH="passthrough", USERS_USER_TOKEN="operator-token")
    async with Client.stdio(*server_command("users"), cwd=str(project), env=env) as client:
        result = await client.call_tool("me", {})
    assert result.is_error
    text = result.content[0]
    assert isinstance(text, TextContent) and "acts for the caller" in text.text
    assert sys.executable  # the server ran under this interpreter (server_command)
