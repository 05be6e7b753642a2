"""The MCP Apps extension's bindings: generated from the project's copy of the schema that
``@modelcontextprotocol/ext-apps`` 2.0.4 publishes, committed as ``mcpgen.protocol.ext_apps``
(``mcpgen generate --check`` guards them with the protocol's, tests/protocol/test_generated.py)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from mcpgen import schema as shipped
from mcpgen.codegen.committed import extension_table
from mcpgen.codegen.loader import load_schema
from mcpgen.codegen.ship import render_extension
from tests.apps_peers import PUBLISHED_SCHEMA, ensure_installed

ROW = extension_table()["apps"]
COPY = shipped.HERE / ROW.schema


def prose(node: Any, path: str = "") -> list[str]:
    """Where a schema node holds a description or title (property names excepted)."""
    found: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("description", "title") and isinstance(value, str):
                found.append(f"{path}/{key}")
            else:
                found += prose(value, f"{path}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += prose(value, f"{path}/{i}")
    return found


def test_the_table_names_the_extension_and_its_package() -> None:
    assert (ROW.id, ROW.version, ROW.package) == ("io.modelcontextprotocol/ui", "ext-apps 2.0.4", "ext_apps")


def test_the_shipped_copy_is_structure_only() -> None:
    doc = json.loads(COPY.read_text())
    assert len(doc["$defs"]) == 39
    assert prose(doc) == []


def test_the_copy_generates_with_the_dangling_reference_as_a_warning() -> None:
    loaded = load_schema(COPY, ROW.version)
    dangling = [w for w in loaded.warnings if "names no definition" in w]
    assert len(dangling) == 3
    assert all("'#/$defs/__schema0'" in w and w.endswith("the value is an open type") for w in dangling)


def test_every_definition_is_importable_and_decodes() -> None:
    from mcpgen.protocol import ext_apps

    for name in json.loads(COPY.read_text())["$defs"]:
        assert name in ext_apps.__all__, name
    meta = ext_apps.decode(b'{"resourceUri": "ui://w/app.html", "visibility": ["app"]}', ext_apps.McpUiToolMeta)
    assert (meta.resource_uri, meta.visibility) == ("ui://w/app.html", ["app"])
    resource = ext_apps.decode(
        b'{"csp": {"connectDomains": ["https://api.example.com"]},'
        b' "permissions": {"camera": {}}, "prefersBorder": true}',
        ext_apps.McpUiResourceMeta,
    )
    assert resource.csp.connect_domains == ["https://api.example.com"]
    assert resource.prefers_border is True
    with pytest.raises(msgspec.ValidationError):
        ext_apps.decode(b'{"resourceUri": "ui://w/app.html", "visibility": ["nobody"]}', ext_apps.McpUiToolMeta)
    # Where the published file's reference dangles (inside an open object) any JSON value decodes.
    context = ext_apps.decode(
        b'{"toolInfo": {"tool": {"name": "t",'
        b' "inputSchema": {"type": "object", "properties": {"a": [1, {"b": null}]}}}}}',
        ext_apps.McpUiHostContext,
    )
    assert context["toolInfo"]["tool"]["inputSchema"]["properties"] == {"a": [1, {"b": None}]}


@pytest.mark.slow
def test_the_copy_is_the_published_schema_without_prose(tmp_path: Path) -> None:
    """Our file keeps every structural fact of the npm package's schema.json; the generator
    takes the published file itself too, warning at the reference it leaves dangling."""
    ensure_installed()
    assert render_extension(PUBLISHED_SCHEMA) == json.loads(COPY.read_text())
    out = tmp_path / "apps"
    done = subprocess.run(
        [sys.executable, "-m", "mcpgen", "generate", "--schema", str(PUBLISHED_SCHEMA), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "reference '#/$defs/__schema0' names no definition; the value is an open type" in done.stderr
    assert "107 types" in done.stdout


def test_generate_check_guards_the_extension_and_counts_its_warnings() -> None:
    """``mcpgen generate --check`` compares ext_apps with the protocol packages; the
    published schema's known quirks (listed above) are a count, listed with --verbose."""
    done = subprocess.run([sys.executable, "-m", "mcpgen", "generate", "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "__schema0" not in done.stderr
    assert re.search(r"ext_apps: \d+ schema warning\(s\); --verbose lists them", done.stderr)
