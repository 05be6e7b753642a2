"""Loading schemas: every official revision, both dialects, and clear errors."""

from __future__ import annotations

import hashlib
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcpgen.codegen.build import build_model
from mcpgen.codegen.ir import Prim, StructDef
from mcpgen.codegen.loader import SchemaError, load_schema
from tests.conftest import REVISIONS, official_schema


@pytest.mark.parametrize("revision", REVISIONS)
def test_loads_each_official_revision(revision: str) -> None:
    path = official_schema(revision)
    loaded = load_schema(path)
    assert loaded.revision == revision
    assert loaded.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert loaded.dialect == ("draft-07" if revision in ("2024-11-05", "2025-03-26", "2025-06-18") else "2020-12")
    assert loaded.warnings == []
    assert "CallToolResult" in loaded.definitions


def test_loads_shipped_revision_by_name() -> None:
    loaded = load_schema("2025-11-25")
    assert loaded.source == "mcpgen:2025-11-25"
    assert len(loaded.definitions) == 145


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "schema.json"
    path.write_text(text)
    return path


def test_invalid_json_names_file_and_position(tmp_path: Path) -> None:
    path = write(tmp_path, '{"$defs": {\n  "A": {"type": "object",}\n}}')
    with pytest.raises(SchemaError) as info:
        load_schema(path)
    assert str(path) in str(info.value)
    assert "line 2" in str(info.value)


def test_dangling_ref_is_a_warning_naming_its_pointer_and_the_value_becomes_open(tmp_path: Path) -> None:
    doc = {"$defs": {"A": {"type": "object", "properties": {"b": {"$ref": "#/$defs/B"}}, "required": ["b"]}}}
    loaded = load_schema(write(tmp_path, json.dumps(doc)))
    assert loaded.warnings == [
        "/$defs/A/properties/b/$ref: reference '#/$defs/B' names no definition; the value is an open type"
    ]
    assert loaded.definitions["A"]["properties"]["b"] == {}
    struct = build_model(loaded).types["A"]
    assert isinstance(struct, StructDef)
    field = struct.field_by_wire("b")
    assert field is not None and field.type == Prim("Any")


@pytest.mark.parametrize(
    ("doc", "pointer"),
    [
        ({"definitions": {"A": {"type": "strnig"}}}, "/definitions/A/type"),
        ({"definitions": {"A": {"required": "x"}}}, "/definitions/A/required"),
        ({"definitions": {"A": {"anyOf": []}}}, "/definitions/A/anyOf"),
        ({"definitions": {"A": 3}}, "/definitions/A"),
        ({"definitions": []}, "/definitions"),
        ({"types": {}}, ""),
    ],
)
def test_malformed_schemas_are_errors(tmp_path: Path, doc: object, pointer: str) -> None:
    with pytest.raises(SchemaError) as info:
        load_schema(write(tmp_path, json.dumps(doc)))
    assert info.value.pointer == pointer


def test_unknown_keyword_is_a_warning_not_a_crash(tmp_path: Path) -> None:
    doc = {
        "$defs": {
            "Thing": {
                "type": "object",
                "x-vendor": True,
                "properties": {"n": {"type": "integer", "multipleOf": 2}},
            }
        }
    }
    loaded = load_schema(write(tmp_path, json.dumps(doc)))
    assert any("x-vendor" in w for w in loaded.warnings)
    assert any("multipleOf" in w for w in loaded.warnings)
    model = build_model(loaded)
    assert "Thing" in model.types
    assert any("multipleOf" in r.message for r in model.reports)


def test_missing_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(SchemaError) as info:
        load_schema(tmp_path / "nope.json")
    assert "cannot read" in str(info.value)
    assert "\n" not in str(info.value)


@pytest.fixture
def schema_server() -> Iterator[str]:
    """Serve ../shared/mcp-schema over HTTP on loopback."""
    root = official_schema("2025-11-25").parent.parent

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, directory=str(root), **kwargs)  # type: ignore[arg-type]

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_loads_from_url(schema_server: str) -> None:
    loaded = load_schema(f"{schema_server}/2025-06-18/schema.json")
    assert loaded.revision == "2025-06-18"
    assert loaded.source.startswith("http://127.0.0.1:")
    assert loaded.sha256 == hashlib.sha256(official_schema("2025-06-18").read_bytes()).hexdigest()


def test_unreachable_url_is_an_error(schema_server: str) -> None:
    with pytest.raises(SchemaError) as info:
        load_schema(f"{schema_server}/1999-01-01/schema.json")
    assert "cannot download" in str(info.value)
