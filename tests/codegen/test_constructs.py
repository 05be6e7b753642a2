"""General JSON Schema constructs, on small schemas written here: each must generate a
package that imports, decodes and type-checks, or stop with the file and JSON pointer.

The released MCP schemas use a few of these shapes; a later revision may use any of them.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import msgspec
import pytest

from mcpgen.codegen.build import build_model
from mcpgen.codegen.facts import Facts, Patch
from mcpgen.codegen.generate import generate, write
from mcpgen.codegen.loader import SchemaError, load_schema

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$defs": {
        # Mutually recursive aliases: a value is a map of values, a list of values or a scalar.
        "Value": {
            "anyOf": [
                {"$ref": "#/$defs/Map"},
                {"type": "array", "items": {"$ref": "#/$defs/Value"}},
                {"type": ["string", "number", "boolean", "null"]},
            ]
        },
        "Map": {"type": "object", "additionalProperties": {"$ref": "#/$defs/Value"}},
        # A recursive struct (a cycle through a class is fine for msgspec).
        "Node": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
            },
            "required": ["name"],
        },
        "Base": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
        # $ref with constraining siblings: Base and the extra properties both apply.
        "Extended": {
            "$ref": "#/$defs/Base",
            "properties": {"label": {"type": "string", "maxLength": 8}},
            "required": ["label"],
            "description": "Base plus a label.",
        },
        "Merged": {
            "allOf": [
                {"$ref": "#/$defs/Base"},
                {"properties": {"tags": {"type": "array", "items": {"type": "string"}}}, "required": ["tags"]},
            ]
        },
        "Shape": {
            "oneOf": [
                {
                    "type": "object",
                    "properties": {"kind": {"const": "circle"}, "r": {"type": "number"}},
                    "required": ["kind", "r"],
                },
                {
                    "type": "object",
                    "properties": {"kind": {"const": "square"}, "side": {"type": "number"}},
                    "required": ["kind", "side"],
                },
            ]
        },
        "Color": {"enum": ["red", "green"]},
        "Headers": {"type": "object", "patternProperties": {"^x-": {"type": "string"}}, "additionalProperties": False},
        "Loose": {"type": "object", "patternProperties": {"^n-": {"type": "integer"}}},
        "Open": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {}},
    },
}


def write_schema(tmp_path: Path, doc: dict[str, Any], name: str = "schema.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture(scope="module")
def pkg(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    root = tmp_path_factory.mktemp("constructs")
    path = write_schema(root, SCHEMA)
    write(generate(path, "2099-01-01"), root / "constructs_pkg")
    sys.path.insert(0, str(root))
    try:
        return importlib.import_module("constructs_pkg")
    finally:
        sys.path.remove(str(root))


def test_recursive_aliases_decode_any_json_value_intact(pkg: ModuleType) -> None:
    value = {"a": [1, 2.5, None, {"b": [True, "s"]}], "c": {}}
    assert pkg.decode(json.dumps(value), pkg.Map) == value
    assert pkg.decode(b'[1, {"x": null}]', pkg.Value) == [1, {"x": None}]
    with pytest.raises(msgspec.ValidationError):
        pkg.decode(b"[1]", pkg.Map)  # a Map is still an object at run time


def test_recursive_struct(pkg: ModuleType) -> None:
    tree = pkg.decode(b'{"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]}', pkg.Node)
    assert tree.children[0].children[0].name == "c"


def test_ref_with_siblings_is_both(pkg: ModuleType) -> None:
    value = pkg.decode(b'{"id": 1, "label": "x"}', pkg.Extended)
    assert (value.id, value.label) == (1, "x")
    with pytest.raises(msgspec.ValidationError, match="id"):
        pkg.decode(b'{"label": "x"}', pkg.Extended)
    with pytest.raises(msgspec.ValidationError, match="label"):
        pkg.decode(b'{"id": 1, "label": "much too long"}', pkg.Extended)


def test_all_of_one_of_enum(pkg: ModuleType) -> None:
    assert pkg.decode(b'{"id": 1, "tags": ["t"]}', pkg.Merged).tags == ["t"]
    with pytest.raises(msgspec.ValidationError, match="tags"):
        pkg.decode(b'{"id": 1}', pkg.Merged)
    assert type(pkg.decode(b'{"kind": "square", "side": 2}', pkg.Shape)).__name__ == "ShapeSquare"
    assert pkg.decode(b'"red"', pkg.Color) == "red"
    with pytest.raises(msgspec.ValidationError):
        pkg.decode(b'"blue"', pkg.Color)


def test_pattern_properties(pkg: ModuleType) -> None:
    assert pkg.decode(b'{"x-a": "1"}', pkg.Headers) == {"x-a": "1"}
    with pytest.raises(msgspec.ValidationError):
        pkg.decode(b'{"x-a": 1}', pkg.Headers)  # closed: every value matches a pattern's schema
    assert pkg.decode(b'{"n-a": 1, "other": [1]}', pkg.Loose) == {"n-a": 1, "other": [1]}
    assert pkg.decode(b'{"a": "s", "more": 1}', pkg.Open) == {"a": "s", "more": 1}


def test_generated_constructs_type_check(pkg: ModuleType, tmp_path: Path) -> None:
    """mypy --strict on the package, and the recursive alias is exact for type checkers."""
    root = Path(pkg.__file__).parent.parent
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from constructs_pkg import Map, Value\n"
        "ok: Value = {'a': [1, 2.5, None, {'b': True}]}\n"
        "bad: Map = {'a': {1, 2}}\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "constructs_pkg", str(probe)],
        capture_output=True,
        text=True,
        cwd=root,
    )
    errors = [line for line in proc.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1 and "probe.py:3" in errors[0], proc.stdout


def test_draft_07_definitions(tmp_path: Path) -> None:
    doc = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "definitions": {
            "A": {"type": "object", "properties": {"b": {"$ref": "#/definitions/B"}}, "required": ["b"]},
            "B": {"type": "array", "items": {"$ref": "#/definitions/A"}},
        },
    }
    model = build_model(load_schema(write_schema(tmp_path, doc)))
    assert model.types["A"].kind == "struct"
    assert model.types["B"].kind == "alias" and model.types["B"].erased is None  # cycle through a struct


@pytest.mark.parametrize(
    ("node", "pointer"),
    [
        ({"$ref": "https://example.com/other.json#/$defs/X"}, "/$defs/A/properties/f/$ref"),
        # (a local $ref naming no definition is an open type with a warning: test_loader)
        (False, "/$defs/A/properties/f"),
        ({"patternProperties": []}, "/$defs/A/properties/f/patternProperties"),
    ],
)
def test_what_cannot_be_generated_names_file_and_pointer(tmp_path: Path, node: Any, pointer: str) -> None:
    doc = {"$defs": {"A": {"type": "object", "properties": {"f": node}}}}
    path = write_schema(tmp_path, doc)
    with pytest.raises(SchemaError) as info:
        build_model(load_schema(path))
    assert info.value.pointer == pointer
    assert str(path) in str(info.value)


def test_patches_assert_the_value_they_replace(tmp_path: Path) -> None:
    doc = {"$defs": {"V": {"type": ["string", "integer"]}}}
    path = write_schema(tmp_path, doc, "2099-01-01.json")
    facts = Facts.load()
    facts.patches = [Patch("2099-01-01", "/$defs/V/type", ["string", "integer"], ["string", "number"], "test")]
    model = build_model(load_schema(path), facts)
    assert any("patched /$defs/V/type" in r.message for r in model.reports)
    assert "float" in repr(model.types["V"])
    # The file no longer holds the expected value (an upstream fix): generation stops.
    path.write_text(json.dumps({"$defs": {"V": {"type": ["string", "number"]}}}))
    facts.patches = [Patch("2099-01-01", "/$defs/V/type", ["string", "integer"], ["string", "number"], "test")]
    with pytest.raises(SchemaError, match="fixed or moved upstream") as info:
        build_model(load_schema(path), facts)
    assert info.value.pointer == "/$defs/V/type"
    facts.patches = [Patch("2099-01-01", "/$defs/Gone/type", "x", "y", "test")]
    with pytest.raises(SchemaError, match="nothing at /\\$defs/Gone"):
        build_model(load_schema(path), facts)


def test_the_2026_patches_are_needed_and_applied() -> None:
    """The shipped 2026-07-28 file still has the JSONValue defect; both patches apply."""
    model = build_model(load_schema("2026-07-28"))
    notes = [r.message for r in model.reports if r.message.startswith("patched ")]
    assert len(notes) == 2, notes
