"""What a generated server sends: every parameter style, and the operator's credentials of
each kind, checked by a recording upstream (uvicorn on loopback) that answers with the
request it received; OAuth client credentials against a real authorization server."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest

from mcpgen.generated import CallToolResult, TextContent
from mcpgen.openapi.normalize import normalize
from mcpgen.openapi.operations import build_operations
from mcpgen.openapi.runtime import params as styles
from mcpgen.openapi.runtime.serve import Bm25, words
from mcpgen.openapi.runtime.upstream import Api
from mcpgen.testing import AuthServer
from tests.openapi.upstream import recording_app, serving

pytestmark = pytest.mark.anyio
COLOR = ["blue", "black", "brown"]
RGB = {"R": 100, "G": 200, "B": 150}


# ---------------------------------------------------------------- styles (OpenAPI's own examples)


@pytest.mark.parametrize(
    ("style", "explode", "value", "expected"),
    [
        ("simple", False, COLOR, "blue,black,brown"),
        ("simple", False, RGB, "R,100,G,200,B,150"),
        ("simple", True, RGB, "R=100,G=200,B=150"),
        ("label", False, "blue", ".blue"),
        ("label", False, COLOR, ".blue,black,brown"),
        ("label", True, COLOR, ".blue.black.brown"),
        ("label", False, RGB, ".R,100,G,200,B,150"),
        ("label", True, RGB, ".R=100.G=200.B=150"),
        ("matrix", False, "", ";color"),
        ("matrix", False, "blue", ";color=blue"),
        ("matrix", False, COLOR, ";color=blue,black,brown"),
        ("matrix", True, COLOR, ";color=blue;color=black;color=brown"),
        ("matrix", False, RGB, ";color=R,100,G,200,B,150"),
        ("matrix", True, RGB, ";R=100;G=200;B=150"),
        ("simple", False, "a/b c", "a%2Fb%20c"),
    ],
)
def test_path_styles(style: str, explode: bool, value: Any, expected: str) -> None:
    assert styles.path_value("color", value, style, explode) == expected


@pytest.mark.parametrize(
    ("style", "explode", "value", "expected"),
    [
        ("form", True, "blue", ["color=blue"]),
        ("form", False, COLOR, ["color=blue,black,brown"]),
        ("form", True, COLOR, ["color=blue", "color=black", "color=brown"]),
        ("form", False, RGB, ["color=R,100,G,200,B,150"]),
        ("form", True, RGB, ["R=100", "G=200", "B=150"]),
        ("spaceDelimited", False, COLOR, ["color=blue%20black%20brown"]),
        ("pipeDelimited", False, COLOR, ["color=blue|black|brown"]),
        ("deepObject", True, RGB, ["color%5BR%5D=100", "color%5BG%5D=200", "color%5BB%5D=150"]),
        ("form", True, True, ["color=true"]),
        ("form", True, "a&b=c", ["color=a%26b%3Dc"]),
    ],
)
def test_query_styles(style: str, explode: bool, value: Any, expected: list[str]) -> None:
    assert styles.query_pairs("color", value, style, explode) == expected


def test_reserved_characters_pass_when_allowed_and_headers_cannot_be_split() -> None:
    assert styles.query_pairs("q", "a/b?c", "form", True, reserved=True) == ["q=a/b?c"]
    assert styles.query_pairs("q", "a/b?c", "form", True) == ["q=a%2Fb%3Fc"]
    assert styles.header_value(COLOR, False) == "blue,black,brown"
    with pytest.raises(ValueError, match="line break"):
        styles.header_value("x\r\nInjected: 1", False)
    assert styles.cookie_pair("sid", "a b;c", False) == "sid=a%20b%3Bc"


# ---------------------------------------------------------------- requests and credentials

SECURED = {
    "openapi": "3.1.0",
    "info": {"title": "Secured", "version": "1"},
    "components": {
        "securitySchemes": {
            "headerKey": {"type": "apiKey", "in": "header", "name": "X-Key"},
            "queryKey": {"type": "apiKey", "in": "query", "name": "api_key"},
            "cookieKey": {"type": "apiKey", "in": "cookie", "name": "session"},
            "basic": {"type": "http", "scheme": "basic"},
            "bearer": {"type": "http", "scheme": "bearer"},
            "machine": {
                "type": "oauth2",
                "flows": {"clientCredentials": {"tokenUrl": "http://127.0.0.1:9/none", "scopes": {"mcp": "all"}}},
            },
        }
    },
}


def secured_paths() -> dict[str, Any]:
    def get(op_id: str, security: list[dict[str, list[str]]], **extra: Any) -> dict[str, Any]:
        return {
            "get": {"operationId": op_id, "security": security, "responses": {"200": {"description": "ok"}}, **extra}
        }

    return {
        "/header": get("header", [{"headerKey": []}]),
        "/query": get(
            "query", [{"queryKey": []}], parameters=[{"name": "q", "in": "query", "schema": {"type": "string"}}]
        ),
        "/cookie": get(
            "cookie", [{"cookieKey": []}], parameters=[{"name": "c", "in": "cookie", "schema": {"type": "string"}}]
        ),
        "/basic": get("basic", [{"basic": []}]),
        "/bearer": get("bearer", [{"bearer": []}]),
        "/machine": get("machine", [{"machine": ["mcp"]}]),
        "/either": get("either", [{"bearer": []}, {}]),
        "/both": get("both", [{"headerKey": [], "queryKey": []}]),
        "/styled/{id}": {
            "post": {
                "operationId": "styled",
                "parameters": [
                    {
                        "name": "id",
                        "in": "path",
                        "required": True,
                        "style": "matrix",
                        "explode": True,
                        "schema": {"type": "array"},
                    },
                    {
                        "name": "filter",
                        "in": "query",
                        "style": "deepObject",
                        "explode": True,
                        "schema": {"type": "object"},
                    },
                    {"name": "X-Trace", "in": "header", "schema": {"type": "string"}},
                ],
                "requestBody": {
                    "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}
                },
                "responses": {"200": {"description": "ok"}},
            }
        },
    }


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    with serving(recording_app()) as url:
        yield url


def api_for(upstream: str, environ: dict[str, str], document: dict[str, Any] | None = None) -> Api:
    source = json.loads(json.dumps(document or {**SECURED, "paths": secured_paths()}))
    built = build_operations(normalize(source, "t"), "t", "0", env_prefix="API", base_url=upstream)
    return Api(built.tables, environ=environ)


def seen(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    block = result.content[0]
    assert isinstance(block, TextContent)
    data: dict[str, Any] = json.loads(block.text)
    return data


async def test_each_kind_of_operator_credential_is_sent_where_the_scheme_says(upstream: str) -> None:
    environ = {
        "API_HEADER_KEY": "hk",
        "API_QUERY_KEY": "q k&",
        "API_COOKIE_KEY": "ck",
        "API_BASIC_USERNAME": "ann",
        "API_BASIC_PASSWORD": "pw:1",
        "API_BEARER_TOKEN": "bt",
    }
    api = api_for(upstream, environ)
    try:
        assert seen(await api.call("header", {}))["headers"]["x-key"] == "hk"
        assert seen(await api.call("query", {"q": "1"}))["query"] == "q=1&api_key=q%20k%26"
        assert seen(await api.call("cookie", {"c": "x"}))["headers"]["cookie"] == "c=x; session=ck"
        basic = seen(await api.call("basic", {}))["headers"]["authorization"]
        assert basic == "Basic " + base64.b64encode(b"ann:pw:1").decode()
        assert seen(await api.call("bearer", {}))["headers"]["authorization"] == "Bearer bt"
        both = seen(await api.call("both", {}))
        assert both["headers"]["x-key"] == "hk" and both["query"] == "api_key=q%20k%26"
    finally:
        await api.aclose()


async def test_missing_credentials_name_the_variables_and_an_empty_alternative_sends_none(upstream: str) -> None:
    api = api_for(upstream, {})
    try:
        refused = await api.call("bearer", {})
        assert refused.is_error and "set API_BEARER_TOKEN" in refused.content[0].text  # type: ignore[union-attr]
        assert "authorization" not in seen(await api.call("either", {}))["headers"]
    finally:
        await api.aclose()


async def test_client_credentials_are_fetched_once_and_cached(upstream: str) -> None:
    with AuthServer() as issuer:
        issuer.add_client("svc", "s3cret", scope="mcp")
        environ = {
            "API_MACHINE_CLIENT_ID": "svc",
            "API_MACHINE_CLIENT_SECRET": "s3cret",
            "API_MACHINE_TOKEN_URL": f"{issuer.issuer}/token",
        }
        api = api_for(upstream, environ)
        try:
            first = seen(await api.call("machine", {}))["headers"]["authorization"]
            second = seen(await api.call("machine", {}))["headers"]["authorization"]
        finally:
            await api.aclose()
    assert first.startswith("Bearer ey") and first == second  # one token, fetched once


async def test_styles_headers_and_binary_bodies_reach_the_wire(upstream: str) -> None:
    api = api_for(upstream, {})
    try:
        got = seen(
            await api.call(
                "styled",
                {
                    "id": ["a", "b c"],
                    "filter": {"name": "x", "tag": "y"},
                    "x_trace": "t1",
                    "body": base64.b64encode(b"\x00\xff").decode(),
                },
            )
        )
        assert got["method"] == "POST"
        assert got["raw_path"] == "/styled/;id=a;id=b%20c"
        assert got["query"] == "filter%5Bname%5D=x&filter%5Btag%5D=y"
        assert got["headers"]["x-trace"] == "t1" and got["headers"]["content-type"] == "application/octet-stream"
        assert base64.b64decode(got["body"]) == b"\x00\xff"
        split = await api.call("styled", {"id": ["a"], "x_trace": "a\r\nInjected: yes"})
        assert split.is_error and "line break" in split.content[0].text  # type: ignore[union-attr]
        not_b64 = await api.call("styled", {"id": ["a"], "body": "%%%"})
        assert not_b64.is_error and "base64" in not_b64.content[0].text  # type: ignore[union-attr]
    finally:
        await api.aclose()


async def test_answers_over_the_limit_are_refused(upstream: str) -> None:
    api = api_for(upstream, {"API_MAX_RESPONSE_BYTES": "50"})
    try:
        big = await api.call("either", {})
        assert big.is_error and "over the limit of 50 bytes" in big.content[0].text  # type: ignore[union-attr]
    finally:
        await api.aclose()


async def test_the_hooks_see_the_request_and_the_answer_with_its_body_read(upstream: str) -> None:
    """on_request may change the request; on_response reads the answer as any httpx
    response (its body read already: .json() works), before the tool's result is made."""
    api = api_for(upstream, {"API_HEADER_KEY": "hk"})
    answers: list[tuple[str, int, Any]] = []

    async def on_request(op: Any, request: Any) -> None:
        request.headers["x-hooked"] = op.tool

    async def on_response(op: Any, response: Any) -> None:
        answers.append((op.tool, response.status_code, response.json()))

    api.on_request, api.on_response = on_request, on_response
    try:
        echoed = seen(await api.call("header", {}))
    finally:
        await api.aclose()
    assert echoed["headers"]["x-hooked"] == "header"
    ((tool, status, body),) = answers
    assert (tool, status) == ("header", 200) and body == echoed


async def test_no_base_url_is_a_tool_error_naming_the_variable() -> None:
    document = {**SECURED, "paths": secured_paths()}
    built = build_operations(normalize(json.loads(json.dumps(document)), "t"), "t", "0", env_prefix="API", base_url="")
    api = Api(built.tables, environ={})
    result = await api.call("either", {})
    assert result.is_error and "set API_BASE_URL" in result.content[0].text  # type: ignore[union-attr]


def test_bm25_ranks_the_operation_that_matches_best() -> None:
    assert words("listPetsByTag HTTPServer_id access") == ["list", "pet", "by", "tag", "http", "server", "id", "access"]
    index = Bm25(
        {
            "listPets": "listPets GET /pets List all pets",
            "deletePet": "deletePet DELETE /pets/{id} Delete a pet",
            "getUser": "getUser GET /users/{id} Get a user by id",
        }
    )
    assert [name for name, _ in index.search("delete pet", 3)][0] == "deletePet"
    assert [name for name, _ in index.search("users", 3)] == ["getUser"]
    assert index.search("nothing matches", 3) == []


async def test_binary_answers_are_resources_without_the_query(upstream: str) -> None:
    """The answer's URI names the resource without its query (which may hold an API key)."""
    import httpx

    document = {
        "openapi": "3.1.0",
        "info": {"title": "Files", "version": "1"},
        "paths": {
            "/file": {
                "get": {
                    "operationId": "file",
                    "responses": {"200": {"description": "a PDF", "content": {"application/pdf": {}}}},
                }
            }
        },
    }
    api = api_for(upstream, {}, document)
    op = api.tables.operations["file"]
    request = httpx.Request("GET", f"{upstream}/file?api_key=secret")
    response = httpx.Response(200, headers={"content-type": "application/pdf"}, content=b"%PDF-1.7", request=request)
    result = api.answer(op, {}, response, b"%PDF-1.7")
    from mcpgen.generated import BlobResourceContents, EmbeddedResource

    block = result.content[0]
    assert isinstance(block, EmbeddedResource) and isinstance(block.resource, BlobResourceContents)
    assert block.resource.uri == f"{upstream}/file" and block.resource.mime_type == "application/pdf"
    assert base64.b64decode(block.resource.blob) == b"%PDF-1.7"


def test_remote_refs_are_fetched_when_asked(upstream: str, tmp_path: Any) -> None:
    """The recording upstream answers any GET with a JSON object: a schema of its own shape."""
    from mcpgen.openapi.loader import load_document

    root = {
        "openapi": "3.1.0",
        "info": {"title": "R", "version": "1"},
        "paths": {},
        "components": {"schemas": {"Remote": {"$ref": f"{upstream}/schemas/remote.json"}}},
    }
    path = tmp_path / "api.json"
    path.write_text(json.dumps(root))
    loaded = load_document(path, remote_refs=True)
    schemas = loaded.document["components"]["schemas"]
    assert schemas["Remote"] == {"$ref": "#/components/schemas/remote"}  # named after the file
    assert schemas["remote"]["path"] == "/schemas/remote.json"
    assert len(loaded.files) == 2
