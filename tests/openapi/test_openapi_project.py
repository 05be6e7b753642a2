"""The generated project: hostile documents reach the code only escaped, a module that is not
its template's is refused, regeneration keeps the project's own files, ``--check`` names
what changed, ``mcpgen new --from-openapi`` makes the same project, and code mode."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcpgen import Client
from mcpgen.openapi import project
from mcpgen.openapi.operations import ArgCode, ToolCode
from tests.openapi.project_runs import generate, mcpgen, server_env

pytestmark = pytest.mark.anyio
EVIL = 'x"""; import os; os.system("echo pwned") #\n\x00\\ \u2028 é 😀 \'\'\''


def hostile_document() -> dict[str, Any]:
    weird_props = {
        name: {"type": "string", "description": EVIL}
        for name in ("class", "+1", "-1", "with space", "ünï", "self", "__x", "None")
    }
    schemas = {
        "2FA": {"type": "object", "properties": weird_props, "description": EVIL},
        "None": {"type": "string", "enum": [EVIL, "a\nb", "\ud83d\ude00", 'q"q']},
        "Struct": {"type": "object", "properties": {"tool": {"$ref": "#/components/schemas/Café"}}},
        "Café": {"type": "object", "properties": {"x": {"type": "integer"}}, "title": EVIL},
        "pet": {"type": "object", "properties": {"a": {"type": "string"}}},
        "Pet": {"type": "object", "properties": {"b": {"type": "string"}}},
        "class": {"type": "string", "pattern": '^["\\\\]+$'},
    }
    paths: dict[str, Any] = {}
    for i, op_id in enumerate(["class", "tool", "API", "TOOLS", "__init__", "import", EVIL, "print('x')", "Any"]):
        paths[f"/p{i}/{{id}}"] = {
            "post": {
                "operationId": op_id,
                "summary": EVIL,
                "description": EVIL,
                "tags": [EVIL],
                "parameters": [
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}, "description": EVIL},
                    {"name": EVIL, "in": "query", "schema": {"type": "string"}},
                    {"name": "import", "in": "header", "schema": {"type": "string"}},
                ],
                "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/2FA"}}}},
                "responses": {
                    "200": {
                        "description": EVIL,
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Struct"}}},
                    }
                },
            }
        }
    return {
        "openapi": "3.1.0",
        "info": {"title": EVIL, "version": EVIL, "description": EVIL},
        "servers": [{"url": "http://127.0.0.1:9/\"'"}],
        "paths": paths,
        "components": {"schemas": schemas},
    }


async def test_a_hostile_document_reaches_the_code_only_escaped(tmp_path: Path) -> None:
    spec = tmp_path / "evil.json"
    spec.write_text(json.dumps(hostile_document()), encoding="utf-8")
    target = generate(str(spec), tmp_path / "evil", "evil")
    package = target / "evil"
    for module in ("tools", "models", "server", "hooks", "auth"):
        source = (package / f"{module}.py").read_text(encoding="utf-8")
        assert "\x00" not in source
        tree = ast.parse(source)
        # The document's text stayed inside strings and comments: no code of its own.
        assert not [n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "system"]
        assert module not in ("tools", "models") or not [n for n in ast.walk(tree) if isinstance(n, ast.Import)]
    code = "import evil.tools, evil.models, sys; print(len(evil.tools.TOOLS), sorted(evil.models.__all__)[:3])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=target, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("9 ")
    tables = json.loads((package / "operations.json").read_text(encoding="utf-8"))
    assert {"class", "tool", "API", "TOOLS", "init", "import", "print_x", "Any"} <= set(tables["tools"])
    async with Client.stdio(sys.executable, "-m", "evil.server", cwd=str(target), env=server_env()) as client:
        tools = await client.list_tools()
        assert len(tools) == 9
        listed = {t.name: t for t in tools}
        assert listed["class"].description is not None and "\x00" not in listed["class"].description
        assert "pwned" in listed["class"].description  # the text is kept, as text
        # The API's URL holds quotes: nothing listens there; the call fails as a tool error.
        result = await client.call_tool("class", {"id": EVIL, "body": {}})
        assert result.is_error


def code_of(*functions: str) -> list[ToolCode]:
    return [ToolCode(f, f, "s", [ArgCode("a", "str", True)]) for f in functions]


TOOLS_SOURCE = '''"""doc"""

from __future__ import annotations

from typing import Any

from mcpgen.generated import CallToolResult
from mcpgen.openapi.runtime.serve import Api, tool
from msgspec import UNSET, UnsetType

API = Api.load(__file__)


@tool("f")
async def f(a: str) -> CallToolResult:
    """s"""
    return await API.call("f", {"a": a})
{extra}

TOOLS: tuple[Any, ...] = (f,)
'''


def test_a_module_whose_statements_are_not_the_templates_is_refused() -> None:
    project._verify_tools(TOOLS_SOURCE.replace("{extra}", ""), code_of("f"))
    for extra in (
        '\nimport os\nos.system("x")',
        "\nprint(1)",
        '\n\n@tool("g")\nasync def g(a: str) -> None:\n    """s"""\n    return None',
    ):
        with pytest.raises(project.GenerationRefused):
            project._verify_tools(TOOLS_SOURCE.replace("{extra}", extra), code_of("f"))
    with pytest.raises(project.GenerationRefused, match="not the template's"):
        project._verify_tools(
            TOOLS_SOURCE.replace("{extra}", "").replace(
                'return await API.call("f", {"a": a})', 'x = 1\n    return await API.call("f", {"a": a})'
            ),
            code_of("f"),
        )
    project._verify_models('"""d"""\nfrom msgspec import Struct\n\n\nclass A(Struct):\n    x: int\n', {"A"})
    for bad in (
        '"""d"""\nimport os\n',
        '"""d"""\nclass B:\n    pass\n',
        '"""d"""\nclass A:\n    def f(self): pass\n',
        "x = 1\n",
    ):
        with pytest.raises(project.GenerationRefused):
            project._verify_models(bad, {"A"})


def small_document(extra_ops: dict[str, Any] | None = None, summary: str = "List") -> dict[str, Any]:
    paths: dict[str, Any] = {
        "/items": {
            "get": {"operationId": "listItems", "summary": summary, "responses": {"200": {"description": "ok"}}}
        },
        "/items/{id}": {
            "delete": {
                "operationId": "deleteItem",
                "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}],
                "responses": {"204": {"description": "gone"}},
            }
        },
    }
    paths.update(extra_ops or {})
    return {
        "openapi": "3.1.0",
        "info": {"title": "Items", "version": "1"},
        "servers": [{"url": "http://127.0.0.1:9"}],
        "paths": paths,
    }


def test_regeneration_keeps_the_projects_files_and_check_names_what_changed(tmp_path: Path) -> None:
    spec = tmp_path / "items.json"
    spec.write_text(json.dumps(small_document()))
    target = generate(str(spec), tmp_path / "items", "items")
    hooks = target / "items" / "hooks.py"
    hooks.write_text(hooks.read_text() + "\n# my own change\n")
    clean = mcpgen("openapi", str(spec), "-o", str(target), "--name", "items", "--check")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "up to date" in clean.stdout
    added = {"/more": {"post": {"operationId": "addItem", "responses": {"201": {"description": "made"}}}}}
    changed = small_document(added, summary="List them all")
    del changed["paths"]["/items/{id}"]
    spec.write_text(json.dumps(changed))
    stale = mcpgen("openapi", str(spec), "-o", str(target), "--name", "items", "--check")
    assert stale.returncode == 1
    assert stale.stdout.splitlines() == [
        "operation added: addItem",
        "operation removed: deleteItem",
        "operation changed: listItems",
        "stale: items/tools.py",
        "stale: items/models.py",  # its header names the document's sha256
        "stale: items/operations.json",
    ]
    again = mcpgen("openapi", str(spec), "-o", str(target), "--name", "items")
    assert again.returncode == 0, again.stderr
    assert hooks.read_text().endswith("# my own change\n")
    assert "addItem" in (target / "items" / "tools.py").read_text()
    assert mcpgen("openapi", str(spec), "-o", str(target), "--name", "items", "--check").returncode == 0


def test_a_directory_that_is_not_a_generated_project_is_not_written_into(tmp_path: Path) -> None:
    spec = tmp_path / "items.json"
    spec.write_text(json.dumps(small_document()))
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    done = mcpgen("openapi", str(spec), "-o", str(tmp_path / "busy"), "--name", "busy")
    assert done.returncode == 2 and "is not empty" in done.stderr
    bad = mcpgen("openapi", str(spec), "-o", str(tmp_path / "x"), "--name", "Bad Name")
    assert bad.returncode == 2 and "--name" in bad.stderr
    missing = mcpgen("openapi", str(tmp_path / "nope.json"), "-o", str(tmp_path / "y"))
    assert missing.returncode == 2 and "cannot read file" in missing.stderr


async def test_new_from_openapi_and_code_mode(tmp_path: Path) -> None:
    spec = tmp_path / "items.json"
    spec.write_text(json.dumps(small_document()))
    done = mcpgen("new", "inventory", "--dir", str(tmp_path / "inventory"), "--from-openapi", str(spec))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "inventory" / "inventory" / "tools.py").exists()
    assert (tmp_path / "inventory" / "server.json").exists()
    pyproject = (tmp_path / "inventory" / "pyproject.toml").read_text()
    assert "mcpgen[http,auth]" in pyproject and "INVENTORY_BASE_URL" in pyproject
    listing = json.loads((tmp_path / "inventory" / "server.json").read_text())
    variables = {v["name"] for v in listing["packages"][0]["environmentVariables"]}
    assert {"INVENTORY_BASE_URL", "INVENTORY_TIMEOUT", "MCP_ISSUER"} <= variables
    from mcpgen.scaffold import registry

    assert registry.validate(listing) == []  # the registry's own schema
    readme = (tmp_path / "inventory" / "README.md").read_text()
    assert "`INVENTORY_BASE_URL`" in readme

    coded = generate(str(spec), tmp_path / "coded", "coded", "--mode", "code")
    async with Client.stdio(sys.executable, "-m", "coded.server", cwd=str(coded), env=server_env()) as client:
        assert {t.name for t in await client.list_tools()} == {
            "search_operations",
            "describe_operation",
            "call_operation",
        }
        found = await client.call_tool("search_operations", {"query": "delete an item"})
        assert found.structured_content is not None
        assert found.structured_content["operations"][0]["name"] == "deleteItem"
        described = await client.call_tool("describe_operation", {"name": "deleteItem"})
        assert described.structured_content is not None
        assert described.structured_content["arguments"]["required"] == ["id"]
        refused = await client.call_tool("call_operation", {"name": "deleteItem", "arguments": {"id": "seven"}})
        assert refused.is_error and "invalid arguments for deleteItem" in refused.content[0].text  # type: ignore[union-attr]
        unknown = await client.call_tool("call_operation", {"name": "nope"})
        assert unknown.is_error


def test_curation_and_overlays_from_the_command_line(tmp_path: Path) -> None:
    spec = tmp_path / "items.json"
    document = small_document(
        {
            "/more": {
                "post": {"operationId": "addItem", "tags": ["write"], "responses": {"201": {"description": "made"}}}
            }
        }
    )
    spec.write_text(json.dumps(document))
    overlay = tmp_path / "rename.yaml"
    overlay.write_text(
        "overlay: 1.0.0\ninfo: {title: o, version: '1'}\nactions:\n"
        "  - target: $.paths['/items'].get\n    update: {summary: Every item, tags: [read]}\n"
    )
    done = mcpgen(
        "openapi",
        str(spec),
        "-o",
        str(tmp_path / "cur"),
        "--name",
        "cur",
        "--overlay",
        str(overlay),
        "--exclude-tag",
        "write",
        "--exclude-op",
        "delete*",
    )
    assert done.returncode == 0, done.stderr
    tables = json.loads((tmp_path / "cur" / "cur" / "operations.json").read_text())
    assert list(tables["tools"]) == ["listItems"] and tables["tools"]["listItems"]["title"] == "Every item"
    only = mcpgen("openapi", str(spec), "-o", str(tmp_path / "only"), "--name", "only", "--include-path", "/more")
    assert only.returncode == 0, only.stderr
    assert list(json.loads((tmp_path / "only" / "only" / "operations.json").read_text())["tools"]) == ["addItem"]
    nothing = mcpgen("openapi", str(spec), "-o", str(tmp_path / "none"), "--name", "none", "--include-tag", "nope")
    assert nothing.returncode == 2 and "nothing to generate" in nothing.stderr
