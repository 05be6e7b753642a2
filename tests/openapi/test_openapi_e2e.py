"""End to end: a FastAPI application serves its own ``/openapi.json``; ``mcpgen openapi``
generates a server from that URL; the official Python SDK's client drives the generated
server (a real subprocess over stdio) in both protocol eras, calls every operation, and
each answer equals what calling the API directly gives."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import jsonschema
import mcp.types as sdk
import pytest
from mcp import Client as SdkClient
from mcp import StdioServerParameters, stdio_client

from tests.openapi.project_runs import generate, server_command, server_env
from tests.openapi.upstream import PNG, pets_app, serving

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]
MODES = {"legacy": "2025-11-25", "2026-07-28": "2026-07-28"}
OPERATIONS = {
    "listPets",
    "createPet",
    "getPet",
    "deletePet",
    "pagedPets",
    "linkedPets",
    "readme",
    "photo",
    "upload",
    "login",
    "session",
    "secret",
    "echo",
}


@pytest.fixture(scope="module")
def api() -> Iterator[str]:
    with serving(pets_app()) as url:
        yield url


@pytest.fixture(scope="module")
def project(api: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("generated") / "pets"
    return generate(f"{api}/openapi.json", target, "pets", "--base-url", api)


@asynccontextmanager
async def connected(project: Path, mode: str) -> AsyncIterator[SdkClient]:
    command, *args = server_command("pets")
    params = StdioServerParameters(command=command, args=args, cwd=str(project), env=server_env())
    async with SdkClient(stdio_client(params), mode=mode, read_timeout_seconds=20) as client:
        assert client.protocol_version == MODES[mode]
        yield client


def text(result: sdk.CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, sdk.TextContent))


@pytest.mark.parametrize("mode", MODES)
async def test_every_operation_is_a_tool_with_valid_schemas(project: Path, mode: str) -> None:
    async with connected(project, mode) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == OPERATIONS
    for tool in tools.values():
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
        if tool.output_schema is not None:
            jsonschema.Draft202012Validator.check_schema(tool.output_schema)
    assert tools["getPet"].output_schema is not None and tools["getPet"].output_schema["type"] == "object"
    assert tools["listPets"].output_schema is None  # a JSON array: no structured content
    assert tools["getPet"].annotations is not None and tools["getPet"].annotations.read_only_hint is True
    assert tools["deletePet"].annotations is not None and tools["deletePet"].annotations.destructive_hint is True
    assert tools["echo"].annotations is not None and tools["echo"].annotations.idempotent_hint is True
    assert tools["getPet"].description == "Get a pet"
    assert tools["getPet"].input_schema["required"] == ["pet_id"]


@pytest.mark.parametrize("mode", MODES)
async def test_calls_equal_the_api_called_directly(project: Path, api: str, mode: str) -> None:
    direct = httpx.Client(base_url=api, timeout=10)
    async with connected(project, mode) as client:

        async def call(name: str, arguments: dict[str, Any]) -> sdk.CallToolResult:
            return await client.call_tool(name, arguments)

        listed = await call("listPets", {"tag": ["dog", "cat"], "limit": 5})
        assert json.loads(text(listed)) == direct.get("/pets", params={"tag": ["dog", "cat"], "limit": 5}).json()

        one = await call("getPet", {"pet_id": 1, "x_trace": "t-1"})
        assert not one.is_error and one.structured_content == direct.get("/pets/1").json()

        missing = await call("getPet", {"pet_id": 999})
        assert missing.is_error and "HTTP 404" in text(missing) and "no pet 999" in text(missing)

        word = "héllo wörld?&#;,="
        echoed = await call("echo", {"word": word, "n": 2, "body": {"a": [1, None], "ü": "✓"}})
        expected = direct.put(f"/echo/{quote(word, safe='')}", params={"n": 2}, json={"a": [1, None], "ü": "✓"})
        assert (
            echoed.structured_content == expected.json() == {"word": word, "n": 2, "body": {"a": [1, None], "ü": "✓"}}
        )

        readme = await call("readme", {})
        assert text(readme) == direct.get("/readme").text

        photo = await call("photo", {})
        image = photo.content[0]
        assert isinstance(image, sdk.ImageContent) and image.mime_type == "image/png"
        assert base64.b64decode(image.data) == PNG == direct.get("/photo").content

        data = b"\x89PNG\r\n\x00binary"
        upload = await call("upload", {"body": {"file": base64.b64encode(data).decode(), "note": "a note"}})
        assert upload.structured_content == {"size": len(data), "note": "a note", "first": data[:4].hex()}

        login = await call("login", {"body": {"user": "ann", "remember": True}})
        assert login.structured_content == direct.post("/login", data={"user": "ann", "remember": "true"}).json()

        session = await call("session", {"sid": "abc-1/x"})
        assert session.structured_content == direct.get("/session", headers={"cookie": "sid=abc-1/x"}).json()

        refused = await call("secret", {"x_api_key": "wrong"})
        assert refused.is_error and "HTTP 401" in text(refused)
        allowed = await call("secret", {"x_api_key": "k3y-for-tests"})
        assert allowed.structured_content == {"ok": True}

        created = await call("createPet", {"body": {"name": "Fido", "tag": "dog"}})
        assert created.structured_content is not None
        pet_id = created.structured_content["id"]
        assert created.structured_content == direct.get(f"/pets/{pet_id}").json()
        deleted = await call("deletePet", {"pet_id": pet_id})
        assert not deleted.is_error and direct.get(f"/pets/{pet_id}").status_code == 404

        bad = await call("getPet", {"pet_id": "one"})
        assert bad.is_error and "Invalid arguments for getPet" in text(bad)


@pytest.mark.parametrize("mode", MODES)
async def test_pagination_is_offered_as_an_argument_never_followed(project: Path, mode: str) -> None:
    async with connected(project, mode) as client:
        first = await client.call_tool("pagedPets", {})
        assert first.structured_content is not None and len(first.structured_content["items"]) == 1
        assert (first.meta or {})["io.mcpgen.openapi/next"] == {"cursor": "1"}
        assert "next page: cursor=1" in text(first)
        second = await client.call_tool("pagedPets", {"cursor": "1"})
        assert second.structured_content is not None and second.structured_content["items"][0]["id"] == 2

        linked = await client.call_tool("linkedPets", {})
        assert json.loads(text(linked).split("\nnext page")[0].split("next page")[0])[0]["id"] == 1
        cursor = (linked.meta or {})["io.mcpgen.openapi/next"]["page_cursor"]
        assert cursor == "page=2"
        then = await client.call_tool("linkedPets", {"page_cursor": cursor})
        assert json.loads(text(then).split("next page")[0])[0]["id"] == 2
