"""mcpgen.runtime.shared.jsonschema: JSON Schema validation through jsonschema-rs.

The official test suite runs in tests/runtime/shared/test_jsonschema_suite.py; here are the project's
own cases (MCP-shaped schemas, each verdict also checked against the ``jsonschema``
package) and what the module adds to the library: draft choice, no remote ``$ref``,
the error form, the cache, and what a peer's data must never do (crash, hang).
"""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from types import MappingProxyType
from typing import Any, ClassVar

import jsonschema
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpgen.runtime.shared import jsonschema as module
from mcpgen.runtime.shared.jsonschema import SchemaValidationError, compile_schema, errors, validate

DRAFT4 = "http://json-schema.org/draft-04/schema#"
DRAFT7 = "http://json-schema.org/draft-07/schema#"
D2020 = "https://json-schema.org/draft/2020-12/schema"

TREE = {
    "$defs": {
        "node": {
            "type": "object",
            "properties": {
                "value": {"type": "integer"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
            },
            "required": ["value"],
            "additionalProperties": False,
        }
    },
    "$ref": "#/$defs/node",
}

# (id, schema, valid instances, invalid instances).  Every verdict here is also
# cross-checked against the `jsonschema` package when it is importable.
CASES: list[tuple[str, Any, list[Any], list[Any]]] = [
    # -- boolean schemas ---------------------------------------------------------
    ("true", True, [None, 0, "x", [], {}], []),
    ("false", False, [], [None, 0, "x", [], {}]),
    ("empty", {}, [None, 1.5, "x", [1], {"a": 1}], []),
    ("nested-false", {"properties": {"x": False}}, [{}, {"y": 1}], [{"x": None}]),
    # -- type ----------------------------------------------------------------------
    ("type-null", {"type": "null"}, [None], [0, False, "", [], {}]),
    ("type-boolean", {"type": "boolean"}, [True, False], [0, 1, None, "true"]),
    ("type-integer", {"type": "integer"}, [0, -3, 1.0, 10**30], [1.5, True, False, "1", None]),
    ("type-number", {"type": "number"}, [0, 1.5, -2, 1e300], [True, False, "1", None, []]),
    ("type-string", {"type": "string"}, ["", "x", "😀"], [1, None, ["x"]]),
    ("type-array", {"type": "array"}, [[], [1, "a"]], [{}, "[]", None]),
    ("type-object", {"type": "object"}, [{}, {"a": 1}], [[], "{}", None]),
    ("type-list", {"type": ["string", "null"]}, ["a", None], [0, False, []]),
    # -- enum / const (JSON equality: 1 == 1.0, true != 1) -----------------------
    (
        "enum",
        {"enum": ["a", 1, None, [1, 2], {"k": "v"}]},
        ["a", 1, 1.0, None, [1, 2], [1.0, 2], {"k": "v"}],
        ["b", 2, True, False, [2, 1], {"k": "w"}, {}],
    ),
    ("enum-bool", {"enum": [True]}, [True], [1, 1.0, "true"]),
    ("enum-zero", {"enum": [0]}, [0, 0.0, -0.0], [False, None, ""]),
    ("const-int", {"const": 1}, [1, 1.0], [True, "1", 2, [1]]),
    ("const-false", {"const": False}, [False], [0, 0.0, None, ""]),
    ("const-null", {"const": None}, [None], [0, False, "", {}]),
    ("const-str", {"const": "text"}, ["text"], ["Text", 1, None]),
    (
        "const-object",
        {"const": {"a": [1, {"b": True}]}},
        [{"a": [1, {"b": True}]}, {"a": [1.0, {"b": True}]}],
        [{"a": [1, {"b": 1}]}, {"a": [1]}, {"a": [1, {"b": True}], "c": 1}],
    ),
    # -- numbers -------------------------------------------------------------------
    ("minimum", {"minimum": 5}, [5, 5.0, 6, 1e9, "1", True], [4, 4.999, -1]),
    ("maximum", {"maximum": 5}, [5, -10, 4.5, False], [5.0001, 6]),
    ("exclusiveMinimum", {"exclusiveMinimum": 5}, [5.01, 6], [5, 5.0, 4]),
    ("exclusiveMaximum", {"exclusiveMaximum": 5}, [4.99, 4], [5, 6]),
    (
        "draft4-exclusive",
        {"$schema": DRAFT4, "minimum": 1, "exclusiveMinimum": True, "maximum": 3, "exclusiveMaximum": True},
        [2, 1.5, 2.99],
        [1, 3, 0, 4],
    ),
    ("draft4-exclusive-false", {"$schema": DRAFT4, "minimum": 1, "exclusiveMinimum": False}, [1, 2], [0]),
    ("multipleOf-int", {"multipleOf": 3}, [0, 3, -9, 6.0, 3 * 10**20, "x"], [1, 4, 3.5, 3 * 10**20 + 1]),
    ("multipleOf-float", {"multipleOf": 0.5}, [0, 1, 1.5, -2.5], [0.25, 1.2]),
    ("multipleOf-small", {"multipleOf": 0.0001}, [0.0075, 1], [0.00751]),
    # -- strings (lengths are in code points) --------------------------------------
    ("minLength", {"minLength": 2}, ["ab", "😀😀", "e\u0301", 1], ["", "a", "😀"]),
    ("maxLength", {"maxLength": 2}, ["", "ab", "😀😀", "日本", None], ["abc", "😀😀😀", "e\u0301e"]),
    ("pattern", {"pattern": "^[a-z]+[0-9]*$"}, ["abc", "ab12", 12], ["1ab", "", "ABC"]),
    ("pattern-unanchored", {"pattern": "b"}, ["abc", "b"], ["ac", ""]),
    ("format-annotation", {"format": "date-time"}, ["not a date", "2024-01-01T00:00:00Z"], []),
    # -- arrays --------------------------------------------------------------------
    ("items", {"items": {"type": "integer"}}, [[], [1, 2], "x", {"a": "b"}], [[1, "2"], [None]]),
    (
        "prefixItems",
        {"prefixItems": [{"type": "string"}, {"type": "integer"}]},
        [[], ["a"], ["a", 1], ["a", 1, None]],
        [[1], ["a", "b"]],
    ),
    (
        "prefixItems+items",
        {"prefixItems": [{"type": "string"}], "items": {"type": "integer"}},
        [["a"], ["a", 1, 2]],
        [["a", "b"], [1, 1]],
    ),
    ("prefixItems+items-false", {"prefixItems": [{}, {}], "items": False}, [[], [1], [1, 2]], [[1, 2, 3]]),
    (
        "draft7-tuple-items",
        {"$schema": DRAFT7, "items": [{"type": "string"}, {"type": "integer"}]},
        [["a", 1], ["a", 1, None, {}], ["a"]],
        [[1, 1], ["a", "b"]],
    ),
    (
        "draft7-additionalItems",
        {"$schema": DRAFT7, "items": [{"type": "string"}], "additionalItems": {"type": "integer"}},
        [["a"], ["a", 1, 2]],
        [["a", "b"], ["a", 1, 1.5]],
    ),
    ("draft7-additionalItems-false", {"$schema": DRAFT7, "items": [{}], "additionalItems": False}, [[], [1]], [[1, 2]]),
    ("draft7-additionalItems-ignored", {"$schema": DRAFT7, "items": {}, "additionalItems": False}, [[1, 2, 3]], []),
    ("contains", {"contains": {"type": "integer"}}, [[1], ["a", 2, "b"], "x", {}], [[], ["a", 1.5]]),
    ("minContains", {"contains": {"const": 1}, "minContains": 2}, [[1, 1], [1, 2, 1, 1]], [[1], [1, 2]]),
    ("maxContains", {"contains": {"const": 1}, "maxContains": 2}, [[1], [1, 1, 2]], [[], [2], [1, 1, 1]]),
    ("minContains-zero", {"contains": {"const": 1}, "minContains": 0, "maxContains": 1}, [[], [2], [1]], [[1, 1]]),
    ("maxContains-alone", {"maxContains": 1}, [[1, 1, 1]], []),
    ("minItems", {"minItems": 2}, [[1, 2], [1, 2, 3], "x"], [[], [1]]),
    ("maxItems", {"maxItems": 2}, [[], [1, 2]], [[1, 2, 3]]),
    (
        "uniqueItems",
        {"uniqueItems": True},
        [[], [1, 2], [1, True], [0, False], [[1], [True]], [{"a": 1}, {"a": 2}], [None, 0, "", [], {}]],
        [[1, 1], [1, 1.0], ["a", "b", "a"], [[1, 2], [1, 2]], [{"a": 1, "b": 2}, {"b": 2, "a": 1.0}], [None, None]],
    ),
    ("uniqueItems-false", {"uniqueItems": False}, [[1, 1]], []),
    # -- objects -------------------------------------------------------------------
    (
        "properties",
        {"properties": {"a": {"type": "string"}, "b": {"type": "integer"}}},
        [{}, {"a": "x"}, {"a": "x", "b": 1, "c": None}, [], "a"],
        [{"a": 1}, {"b": "x"}],
    ),
    ("required", {"required": ["a", "b"]}, [{"a": 1, "b": None}, [], "x"], [{}, {"a": 1}, {"b": 1}]),
    (
        "additionalProperties-false",
        {"properties": {"a": {}}, "additionalProperties": False},
        [{}, {"a": 1}],
        [{"b": 1}, {"a": 1, "b": 2}],
    ),
    (
        "additionalProperties-schema",
        {"properties": {"a": {}}, "additionalProperties": {"type": "integer"}},
        [{"a": "x", "b": 1}],
        [{"b": "x"}],
    ),
    (
        "patternProperties",
        {"patternProperties": {"^x-": {"type": "string"}, "num": {"type": "number"}}},
        [{"x-a": "s", "other": 1}, {"anum": 1}],
        [{"x-a": 1}, {"num": "s"}, {"x-num": "s"}],
    ),
    (
        "patternProperties+additional",
        {"properties": {"id": {}}, "patternProperties": {"^x-": {}}, "additionalProperties": False},
        [{"id": 1, "x-y": 2}],
        [{"id": 1, "y": 2}],
    ),
    (
        "propertyNames",
        {"propertyNames": {"pattern": "^[a-z]+$", "maxLength": 3}},
        [{}, {"abc": 1}, [1]],
        [{"ABC": 1}, {"abcd": 1}],
    ),
    ("propertyNames-false", {"propertyNames": False}, [{}], [{"a": 1}]),
    ("minProperties", {"minProperties": 1}, [{"a": 1}, []], [{}]),
    ("maxProperties", {"maxProperties": 1}, [{}, {"a": 1}], [{"a": 1, "b": 2}]),
    (
        "dependentRequired",
        {"dependentRequired": {"card": ["billing"]}},
        [{}, {"billing": 1}, {"card": 1, "billing": 2}],
        [{"card": 1}],
    ),
    (
        "dependentSchemas",
        {"dependentSchemas": {"card": {"required": ["billing"]}}},
        [{}, {"card": 1, "billing": 2}],
        [{"card": 1}],
    ),
    (
        "draft7-dependencies",
        {"$schema": DRAFT7, "dependencies": {"a": ["b"], "c": {"properties": {"d": {"type": "string"}}}}},
        [{}, {"a": 1, "b": 2}, {"c": 1, "d": "x"}, {"d": 1}],
        [{"a": 1}, {"c": 1, "d": 1}],
    ),
    # -- combinators ---------------------------------------------------------------
    ("allOf", {"allOf": [{"type": "integer"}, {"minimum": 3}]}, [3, 4], [2, "x", 3.5]),
    ("anyOf", {"anyOf": [{"type": "string"}, {"type": "null"}]}, ["a", None], [1, []]),
    ("oneOf", {"oneOf": [{"type": "integer"}, {"minimum": 2}]}, [1, 2.5], [3, 1.5]),
    ("not", {"not": {"type": "string"}}, [1, None, []], ["x"]),
    (
        "if-then-else",
        {
            "if": {"properties": {"kind": {"const": "n"}}, "required": ["kind"]},
            "then": {"required": ["n"]},
            "else": {"required": ["s"]},
        },
        [{"kind": "n", "n": 1}, {"kind": "s", "s": 1}, {"s": 1}],
        [{"kind": "n", "s": 1}, {"kind": "x"}, {}],
    ),
    ("if-then-only", {"if": {"type": "integer"}, "then": {"minimum": 0}}, [0, 5, -1.5, "x"], [-1]),
    ("if-else-only", {"if": {"type": "integer"}, "else": {"type": "string"}}, [-1, "x"], [1.5, None]),
    ("then-without-if", {"then": False, "else": False}, [1], []),
    # -- $ref ----------------------------------------------------------------------
    (
        "ref-defs",
        {"$defs": {"pos": {"type": "integer", "minimum": 1}}, "properties": {"a": {"$ref": "#/$defs/pos"}}},
        [{"a": 1}, {}],
        [{"a": 0}, {"a": "1"}],
    ),
    (
        "ref-definitions",
        {"definitions": {"s": {"type": "string"}}, "items": {"$ref": "#/definitions/s"}},
        [["a", "b"]],
        [["a", 1]],
    ),
    (
        "ref-root",
        {"properties": {"self": {"$ref": "#"}}, "required": ["v"]},
        [{"v": 1}, {"v": 1, "self": {"v": 2}}],
        [{}, {"v": 1, "self": {}}],
    ),
    (
        "ref-tree",
        TREE,
        [{"value": 1}, {"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}, {"value": 4}]}],
        [
            {},
            {"value": 1, "children": [{"value": 2, "children": [{"value": "3"}]}]},
            {"value": 1, "children": [{"value": 2, "extra": True}]},
        ],
    ),
    (
        "ref-escapes",
        {
            "$defs": {"a/b": {"type": "string"}, "c~d": {"type": "integer"}, "e f": {"type": "null"}},
            "prefixItems": [{"$ref": "#/$defs/a~1b"}, {"$ref": "#/$defs/c~0d"}, {"$ref": "#/$defs/e%20f"}],
        },
        [["x", 1, None]],
        [[1, 1, None], ["x", "x", None], ["x", 1, 0]],
    ),
    (
        "ref-into-properties",
        {"properties": {"a": {"type": "integer"}, "b": {"$ref": "#/properties/a"}}},
        [{"a": 1, "b": 2}],
        [{"b": "x"}],
    ),
    (
        "ref-anchor",
        {"$defs": {"n": {"$anchor": "num", "type": "number"}}, "items": {"$ref": "#num"}},
        [[1, 2.5]],
        [[1, "x"]],
    ),
    (
        "ref-with-siblings-2020",
        {"$defs": {"i": {"type": "integer"}}, "$ref": "#/$defs/i", "minimum": 5},
        [5, 6],
        [4, "x"],
    ),
    (
        "ref-with-siblings-draft7",
        {
            "$schema": DRAFT7,
            "definitions": {"i": {"type": "integer"}},
            "properties": {"x": {"$ref": "#/definitions/i", "minimum": 5}},
        },
        [{"x": 1}, {"x": 6}],
        [{"x": "a"}],
    ),
    (
        "draft7-id-anchor",
        {"$schema": DRAFT7, "definitions": {"s": {"$id": "#str", "type": "string"}}, "items": {"$ref": "#str"}},
        [["a"]],
        [[1]],
    ),
    (
        "ref-absolute-id",
        {
            "$id": "https://example.com/root.json",
            "$defs": {"s": {"type": "string"}},
            "properties": {"a": {"$ref": "https://example.com/root.json#/$defs/s"}, "b": {"$ref": "#/$defs/s"}},
        },
        [{"a": "x", "b": "y"}],
        [{"a": 1}, {"b": 1}],
    ),
    (
        "ref-embedded-id",
        {
            "$id": "https://example.com/root.json",
            "$defs": {"item": {"$id": "item.json", "type": "object", "required": ["id"]}},
            "items": {"$ref": "item.json"},
        },
        [[{"id": 1}]],
        [[{}]],
    ),
    (
        "ref-chain",
        {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/c"}, "c": {"type": "null"}}, "$ref": "#/$defs/a"},
        [None],
        [0],
    ),
    (
        "ref-mutual",
        {
            "$defs": {
                "even": {"anyOf": [{"const": []}, {"items": {"$ref": "#/$defs/odd"}, "minItems": 1}]},
                "odd": {"items": {"$ref": "#/$defs/even"}, "minItems": 1},
            },
            "$ref": "#/$defs/even",
        },
        [[], [[[]]], [[[[[]]]]]],
        [[[]], [[[[]]]]],
    ),
    # -- unknown keywords are annotations ----------------------------------------
    (
        "unknown-keywords",
        {
            "x-whatever": {"type": "string"},
            "title": "T",
            "description": "d",
            "examples": [1],
            "default": 3,
            "deprecated": True,
        },
        [1, "a", None],
        [],
    ),
    # -- a typical MCP tool outputSchema -------------------------------------------
    (
        "mcp-output-schema",
        {
            "type": "object",
            "properties": {
                "temperature": {"type": "number", "description": "Celsius"},
                "conditions": {"type": "string", "enum": ["sunny", "cloudy", "rain"]},
                "location": {
                    "type": "object",
                    "properties": {
                        "city": {"type": "string", "minLength": 1},
                        "coords": {
                            "type": "array",
                            "prefixItems": [{"type": "number"}, {"type": "number"}],
                            "minItems": 2,
                            "maxItems": 2,
                        },
                    },
                    "required": ["city"],
                },
                "alerts": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "level": {"type": "integer", "minimum": 1, "maximum": 5},
                            "text": {"type": "string"},
                        },
                        "required": ["level", "text"],
                    },
                },
            },
            "required": ["temperature", "conditions", "location"],
        },
        [
            {"temperature": 21.5, "conditions": "sunny", "location": {"city": "Paris"}},
            {
                "temperature": -3,
                "conditions": "rain",
                "location": {"city": "Oslo", "coords": [59.9, 10.7]},
                "alerts": [{"level": 2, "text": "ice"}],
                "extra": "allowed",
            },
        ],
        [
            {"temperature": "21", "conditions": "sunny", "location": {"city": "Paris"}},
            {"temperature": 21, "conditions": "snow", "location": {"city": "Paris"}},
            {"temperature": 21, "conditions": "sunny"},
            {"temperature": 21, "conditions": "sunny", "location": {"city": ""}},
            {"temperature": 21, "conditions": "sunny", "location": {"city": "X", "coords": [1]}},
            {
                "temperature": 21,
                "conditions": "sunny",
                "location": {"city": "X"},
                "alerts": [{"level": 9, "text": "x"}],
            },
            {"temperature": True, "conditions": "sunny", "location": {"city": "X"}},
            None,
            [],
        ],
    ),
]

VERDICTS = [
    pytest.param(schema, instance, expected, id=f"{name}-{'valid' if expected else 'invalid'}-{i}")
    for name, schema, valid, invalid in CASES
    for expected, instances in ((True, valid), (False, invalid))
    for i, instance in enumerate(instances)
]


@pytest.mark.parametrize(("schema", "instance", "expected"), VERDICTS)
def test_verdicts(schema: Any, instance: Any, expected: bool) -> None:
    check = compile_schema(schema)
    if expected:
        check(instance)
        assert errors(instance, schema) == []
    else:
        with pytest.raises(SchemaValidationError) as info:
            check(instance)
        assert str(info.value) == info.value.path + ": " + info.value.message
        assert "\n" not in str(info.value)
        # errors() finds the fail-fast validator's problem too.
        assert str(info.value) in [str(e) for e in errors(instance, schema)]


def test_differential_against_jsonschema_package() -> None:
    disagreements = []
    for name, schema, valid, invalid in CASES:
        reference = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)(schema)
        for expected, instances in ((True, valid), (False, invalid)):
            for instance in instances:
                if reference.is_valid(instance) != expected:
                    disagreements.append((name, instance, expected))
    assert disagreements == []


# -- random data against MCP-shaped schemas, judged by the reference too ------------

_numbers = st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False)
_json = st.recursive(
    st.none() | st.booleans() | _numbers | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(["a", "b", "n", "x y"]), inner, max_size=4)
    ),
    max_leaves=12,
)

_ORACLE_CASES = {
    "mcp-output-schema",
    "ref-tree",
    "enum",
    "uniqueItems",
    "oneOf",
    "if-then-else",
    "patternProperties",
    "multipleOf-float",
    "type-integer",
    "draft7-tuple-items",
}
ORACLE_SCHEMAS = [schema for name, schema, _, _ in CASES if name in _ORACLE_CASES]


@settings(max_examples=300, deadline=None)
@given(schema=st.sampled_from(ORACLE_SCHEMAS), instance=_json)
def test_random_instances_agree_with_the_reference(schema: Any, instance: Any) -> None:
    reference = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)(schema)
    try:
        compile_schema(schema)(instance)
        ours = True
    except SchemaValidationError:
        ours = False
    assert ours == reference.is_valid(instance)


# -- error messages and paths ------------------------------------------------------

LIST_SCHEMA = {
    "type": "object",
    "properties": {
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}},
                "required": ["name"],
            },
        }
    },
}


def message(instance: Any, schema: Any) -> str:
    with pytest.raises(SchemaValidationError) as info:
        validate(instance, schema)
    return str(info.value)


def test_nested_error_path() -> None:
    with pytest.raises(SchemaValidationError) as info:
        validate({"items": [{"name": "a"}, {"name": "b"}, {"name": 3}]}, LIST_SCHEMA)
    assert info.value.path == "$.items[2].name"
    assert str(info.value) == '$.items[2].name: 3 is not of type "string"'
    assert isinstance(info.value, ValueError)


def test_error_path_through_a_ref() -> None:
    with pytest.raises(SchemaValidationError) as info:
        validate({"value": 1, "children": [{"value": 2}, {"value": 3, "children": [{"value": "x"}]}]}, TREE)
    assert info.value.path == "$.children[1].children[0].value"


def test_error_path_for_odd_keys_and_root() -> None:
    schema = {"properties": {"a b": {"items": {"type": "integer"}}, "日本": {"type": "string"}}}
    with pytest.raises(SchemaValidationError) as info:
        validate({"a b": [1, "x"]}, schema)
    assert info.value.path == '$["a b"][1]'
    with pytest.raises(SchemaValidationError) as info:
        validate({"日本": 1}, schema)
    assert info.value.path == '$["日本"]'
    assert message(1, {"type": "string"}) == '$: 1 is not of type "string"'


def test_messages_name_the_problem() -> None:
    assert message({"items": [{}]}, LIST_SCHEMA) == '$.items[0]: "name" is a required property'
    assert message({"a": 1, "zz": 2}, {"properties": {"a": {}}, "additionalProperties": False}) == (
        "$: Additional properties are not allowed ('zz' was unexpected)"
    )
    assert message(True, {"type": "integer"}) == '$: true is not of type "integer"'
    assert message("c", {"enum": ["a", "b"]}) == '$: "c" is not one of "a" or "b"'
    assert message([1, 2, 1], {"uniqueItems": True}) == "$: [1,2,1] has non-unique elements"
    assert message(0, {"minimum": 1}) == "$: 0 is less than the minimum of 1"
    assert message(1, False) == "$: False schema does not allow 1"


def test_a_huge_value_is_not_echoed_whole() -> None:
    # Messages quote the failing value and go back to the peer that sent it: bounded, one line.
    text = message("x" * 100_000, {"maxLength": 3})
    assert len(text) < 300 and "\n" not in text
    assert text.startswith('$: "xxx') and text.endswith("is longer than 3 characters")
    text = message({"a": {"b": "line\nbreak " * 1000}}, {"properties": {"a": {"type": "array"}}})
    assert len(text) < 300 and "\n" not in text and text.startswith("$.a: ")


def test_errors_collects_several_problems() -> None:
    instance = {"items": [{"name": 1}, {}, {"name": "ok", "tags": ["a", 2, 3]}], "other": None}
    found = errors(instance, LIST_SCHEMA)
    assert [e.path for e in found] == ["$.items[0].name", "$.items[1]", "$.items[2].tags[1]", "$.items[2].tags[2]"]
    assert all(isinstance(e, SchemaValidationError) for e in found)
    assert [e.path for e in errors(instance, LIST_SCHEMA, limit=2)] == ["$.items[0].name", "$.items[1]"]
    assert errors(instance, LIST_SCHEMA, limit=0) == []
    assert errors({"items": [{"name": "fine"}]}, LIST_SCHEMA) == []


def test_errors_reports_each_keyword() -> None:
    schema = {"type": "object", "required": ["a"], "minProperties": 3, "additionalProperties": {"type": "string"}}
    assert sorted(str(e) for e in errors({"x": 1, "y": 2}, schema)) == [
        '$.x: 1 is not of type "string"',
        '$.y: 2 is not of type "string"',
        '$: "a" is a required property',
        '$: {"x":1,"y":2} has less than 3 properties',
    ]


# -- drafts --------------------------------------------------------------------------


def test_no_schema_keyword_means_2020_12() -> None:
    # In 2020-12 `items` is one schema (tuples are prefixItems), so the draft-07 tuple
    # form is a broken schema there, and $ref's siblings apply.
    tuple_items = {"items": [{"type": "string"}], "additionalItems": False}
    with pytest.raises(SchemaValidationError, match="invalid schema"):
        compile_schema(tuple_items)
    compile_schema({"$schema": DRAFT7, **tuple_items})(["a"])
    ref_sibling = {
        "definitions": {"i": {"type": "integer"}},
        "properties": {"x": {"$ref": "#/definitions/i", "minimum": 5}},
    }
    with pytest.raises(SchemaValidationError):
        validate({"x": 1}, ref_sibling)
    validate({"x": 1}, {"$schema": DRAFT7, **ref_sibling})  # draft-07: siblings of $ref are ignored


def test_schema_2020_declared_explicitly() -> None:
    schema = {"$schema": D2020, "$defs": {"i": {"type": "integer"}}, "$ref": "#/$defs/i", "maximum": 3}
    validate(3, schema)
    with pytest.raises(SchemaValidationError):
        validate(4, schema)


def test_unknown_meta_schema_is_refused() -> None:
    # The meta-schema would have to be fetched to know the vocabulary: it is not.
    with pytest.raises(SchemaValidationError, match="meta-schema"):
        compile_schema({"$schema": "https://example.com/my-meta", "type": "string"})


# -- remote $ref: never fetched ------------------------------------------------------


class _Counting(http.server.BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        _Counting.hits.append(self.path)
        body = json.dumps({"type": "string"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/schema+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def schema_host() -> Iterator[str]:
    """A loopback server that would answer any schema request, and counts them."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Counting)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    _Counting.hits = []
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.mark.parametrize(
    "make",
    [
        lambda host: {"$ref": f"{host}/s.json"},
        lambda host: {"properties": {"a": {"$ref": f"{host}/s.json#/x"}}},
        lambda host: {"$id": f"{host}/root.json", "items": {"$ref": "other.json"}},
        lambda host: {"$schema": f"{host}/meta.json", "type": "string"},
        lambda host: {"$defs": {"unused": {"$ref": f"{host}/s.json"}}, "type": "string"},
    ],
    ids=["absolute", "nested", "relative-to-id", "meta-schema", "unused-def"],
)
def test_remote_refs_are_not_fetched(schema_host: str, make: Any) -> None:
    # The library fetches over HTTP by default; a peer's schema must not make us connect.
    with pytest.raises(SchemaValidationError) as info:
        compile_schema(make(schema_host))
    assert info.value.path == "#" and "invalid schema" in str(info.value)
    assert _Counting.hits == []


def test_remote_ref_message_says_why() -> None:
    text = str(pytest.raises(SchemaValidationError, compile_schema, {"$ref": "https://example.com/s.json"}).value)
    assert "'https://example.com/s.json' is not fetched" in text


def test_retrieve_hook_supplies_remote_documents() -> None:
    asked: list[str] = []

    def retrieve(uri: str) -> Any:
        asked.append(uri)
        return {"$defs": {"pos": {"type": "integer", "minimum": 1}}}

    check = compile_schema({"items": {"$ref": "https://example.com/defs.json#/$defs/pos"}}, retrieve=retrieve)
    check([1, 2])
    with pytest.raises(SchemaValidationError) as info:
        check([1, 0])
    assert info.value.path == "$[1]"
    assert asked == ["https://example.com/defs.json"]


# -- schema problems found at compile time ------------------------------------------


@pytest.mark.parametrize(
    ("schema", "path", "needle"),
    [
        ({"$ref": "#/$defs/missing"}, "#", "'/$defs/missing' does not exist"),
        ({"$ref": "#nowhere"}, "#", "'nowhere' does not exist"),
        ({"$defs": {"x": 1}, "$ref": "#/$defs/x"}, "#/$defs/x", 'not of types "boolean", "object"'),
        ({"pattern": "("}, "#/pattern", 'is not a "regex"'),
        ({"patternProperties": {"[": {}}}, "#/patternProperties/[", 'is not a "regex"'),
        ({"properties": {"a/b": {"type": "text"}}}, "#/properties/a~1b/type", "anyOf"),
        ({"minLength": -1}, "#/minLength", "less than the minimum of 0"),
        ({"minimum": "1"}, "#/minimum", 'not of type "number"'),
        ({"multipleOf": 0}, "#/multipleOf", "less than or equal to the minimum of 0"),
        ({"required": "a"}, "#/required", 'not of type "array"'),
        ({"enum": "a"}, "#/enum", 'not of type "array"'),
        ({"properties": {"a": 1}}, "#/properties/a", 'not of types "boolean", "object"'),
        ([], "#", 'not of types "boolean", "object"'),
        ({"type": {1, 2}}, "#", "Unsupported type: 'set'"),
    ],
)
def test_bad_schemas_fail_at_compile_time(schema: Any, path: str, needle: str) -> None:
    with pytest.raises(SchemaValidationError) as info:
        compile_schema(schema)
    assert info.value.path == path
    assert info.value.message.startswith("invalid schema: ") and needle in info.value.message


def test_patterns_are_ecma_262() -> None:
    # JSON Schema regexes are ECMA-262: \p{...} classes work (Python's re has none).
    check = compile_schema({"pattern": r"^\p{Lu}\p{Ll}+$"})
    check("Émile")
    with pytest.raises(SchemaValidationError):
        check("émile")


# -- formats --------------------------------------------------------------------

FORMATS = {
    "date-time": (
        ["2024-02-29T12:30:00Z", "2024-01-01t00:00:00.123+05:30", "2016-12-31T23:59:60Z"],
        ["2023-02-29T12:30:00Z", "2024-01-01 00:00:00Z", "2024-01-01T24:00:00Z", "2024-01-01T00:00:00", "yesterday"],
    ),
    "date": (["2024-02-29", "1999-12-31"], ["2023-02-29", "2024-13-01", "2024-1-1", "2024-01-01T00:00:00Z"]),
    "email": (["a@b.example", "first.last+tag@host"], ["no-at-sign", "a@", "@b", "a b@c.d", "a@b@c"]),
    "uri": (
        ["https://example.com/x?y#z", "urn:isbn:0451450523", "mailto:a@b"],
        ["/relative/path", "no scheme", "http://has space"],
    ),
    "ipv4": (["127.0.0.1"], ["not an ip", "256.1.1.1"]),
}


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("draft", [None, DRAFT7, DRAFT4])
def test_format_is_an_annotation_unless_asked(fmt: str, draft: str | None) -> None:
    schema = {"format": fmt} if draft is None else {"$schema": draft, "format": fmt}
    good, bad = FORMATS[fmt]
    asserting = compile_schema(schema, format_assertion=True)
    annotating = compile_schema(schema)
    for value in good:
        asserting(value)
    for value in bad:
        annotating(value)  # as for the official SDK, in every draft
        with pytest.raises(SchemaValidationError, match=f'is not a "{fmt}"'):
            asserting(value)
    asserting(42)  # formats only constrain strings


# -- what a peer's data must not do ---------------------------------------------------


def _chain(depth: int) -> dict[str, Any]:
    node: dict[str, Any] = {"value": 0}
    for i in range(depth):
        node = {"value": i, "children": [node]}
    return node


def test_recursive_tree_schema() -> None:
    check = compile_schema(TREE)
    check(_chain(50))
    bad = _chain(40)
    leaf = bad
    for _ in range(40):
        leaf = leaf["children"][0]
    leaf["value"] = "deep"
    with pytest.raises(SchemaValidationError) as info:
        check(bad)
    assert info.value.path == "$" + ".children[0]" * 40 + ".value"


def _deepest_wire_array() -> Any:
    """The deepest array msgspec decodes off the wire (deeper ones are refused there)."""
    depth, deepest = 1, msgspec.json.decode(b"[]")
    while True:
        try:
            deepest = msgspec.json.decode(b"[" * (depth + 1) + b"]" * (depth + 1))
        except RecursionError:
            # The last one decoded, not decoded again here: inside this handler the stack
            # is deeper, and on Python 3.12 the same depth may no longer fit.
            return deepest
        depth += 1


DEEP_SCHEMAS = [
    {"items": {"$ref": "#"}},
    {"oneOf": [{"items": {"$ref": "#"}, "minItems": 1}, {"maxItems": 0}]},
    {"not": {"not": {"items": {"$ref": "#"}}}},
    {"prefixItems": [{"$ref": "#"}], "unevaluatedItems": False},
    {"anyOf": [{"allOf": [{"items": {"$ref": "#"}}]}], "type": "array"},
]


def test_wire_deep_instances_fit_a_small_thread_stack() -> None:
    # The library recurses on the native stack: a peer's deepest instance must fit with
    # room to spare (threads get 8 MiB; this one 1 MiB). Overflow would kill the process.
    deep = _deepest_wire_array()
    outcome: list[Any] = []

    def work() -> None:
        for schema in DEEP_SCHEMAS:
            compile_schema(schema)(deep)
            outcome.append(errors(deep, schema))

    previous = threading.stack_size(1 << 20)
    try:
        thread = threading.Thread(target=work)
        thread.start()
        thread.join()
    finally:
        threading.stack_size(previous)
    assert outcome == [[]] * len(DEEP_SCHEMAS)


def test_deep_comparisons_are_errors_not_crashes() -> None:
    deep: Any = []
    for _ in range(5000):
        deep = [deep]
    for schema in ({"const": [1]}, {"enum": [1, [2]]}, {"uniqueItems": True}):
        with pytest.raises(SchemaValidationError):
            compile_schema(schema)([deep, deep])
    with pytest.raises(SchemaValidationError, match="invalid schema"):
        compile_schema({"const": deep})


def test_too_deep_schema_is_rejected_at_compile_time() -> None:
    for depth in (300, 5000):
        schema: dict[str, Any] = {"type": "integer"}
        for _ in range(depth):
            schema = {"properties": {"a": schema}}
        with pytest.raises(SchemaValidationError, match="invalid schema"):
            compile_schema(schema)


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#"},
        {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"},
        {"anyOf": [{"$ref": "#"}]},
        {"not": {"$ref": "#"}},
    ],
)
def test_ref_cycles_terminate(schema: Any) -> None:
    # A $ref cycle that consumes no data would loop forever; the library stops it.
    check = compile_schema(schema)
    for instance in (1, [1, [2]], {"a": {}}):
        try:
            check(instance)
        except SchemaValidationError:
            pass
        errors(instance, schema)


_KEYWORDS = [
    "type",
    "properties",
    "items",
    "prefixItems",
    "additionalProperties",
    "required",
    "enum",
    "const",
    "minimum",
    "exclusiveMinimum",
    "multipleOf",
    "minLength",
    "pattern",
    "format",
    "anyOf",
    "oneOf",
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "$ref",
    "$defs",
    "definitions",
    "$id",
    "$anchor",
    "$dynamicRef",
    "$dynamicAnchor",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contains",
    "minContains",
    "uniqueItems",
    "propertyNames",
    "patternProperties",
    "dependentSchemas",
    "dependencies",
    "additionalItems",
    "$schema",
    "contentEncoding",
    "minItems",
    "maxProperties",
]
_schema_words = [
    "",
    "#",
    "#/$defs/a",
    "#a",
    "string",
    "integer",
    "object",
    "array",
    "^a+$",
    "(",
    r"\p{L}",
    "date-time",
    "email",
    "a",
    DRAFT7,
    D2020,
    "urn:x",
    "x.json",
    "#/properties/a",
]
_schema_atoms = st.none() | st.booleans() | _numbers | st.sampled_from(_schema_words)
_peer_schemas = st.recursive(
    _schema_atoms,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from([*_KEYWORDS, "a", "b"]), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(schema=_peer_schemas, instance=_json)
def test_any_schema_from_a_peer_compiles_or_raises_our_error(schema: Any, instance: Any) -> None:
    # A tool's schema comes from the other side: whatever it holds, the library must not
    # panic (a PanicException is a BaseException and would end the session's loop).
    try:
        check = compile_schema(schema)
    except SchemaValidationError:
        return
    try:
        check(instance)
    except SchemaValidationError:
        pass
    errors(instance, schema)


def test_values_that_are_not_json_are_errors() -> None:
    with pytest.raises(SchemaValidationError, match="cannot check this value"):
        compile_schema({"type": "object"})({1: "int key"})
    assert [e.path for e in errors({1: "x"}, {"type": "object"})] == ["$"]


def test_huge_integers() -> None:
    # msgspec decodes integers of any size; the library compares them exactly.
    big = 10**400
    validate(big, {"type": "integer", "minimum": 1})
    assert "maximum" in message(big, {"maximum": 1e308})
    assert "1.00000e+400" in message(big, {"maximum": 1e308})
    assert "multiple" in message(big, {"multipleOf": 3})  # 10**400 % 3 == 1
    validate(big * 3, {"multipleOf": 3})


def test_long_numbers_are_written_short_before_a_message_is_cut() -> None:
    # As jsonschema-rs 0.61 words it: both numbers in full, the keyword between them.
    spelled = "1" + "0" * 400 + " is greater than the maximum of " + "1" + "0" * 308 + ".0"
    assert module._one_line(spelled) == "1.00000e+400 is greater than the maximum of 1.00000e+308"
    short = "12345 is greater than the maximum of 10"
    assert module._one_line(short) == short  # nothing to shorten
    long_text = "x" * 2000 + " is not of type 'integer'"
    cut = module._one_line(long_text)
    assert len(cut) < 1000 and cut.endswith("is not of type 'integer'")


def test_compiled_validator_is_thread_safe() -> None:
    check = compile_schema(TREE)
    failures: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(50):
                check(_chain(30))
                with pytest.raises(SchemaValidationError):
                    check({"value": "x"})
        except BaseException as exc:  # pragma: no cover - reported below
            failures.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


# -- the compile cache ---------------------------------------------------------------


def test_equal_schemas_share_one_compiled_validator() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    first = module._compiled(schema, False, None)
    assert module._compiled(json.loads(json.dumps(schema)), False, None) is first
    assert module._compiled(schema, True, None) is not first  # format assertion is part of the key
    schema["properties"]["n"]["type"] = "string"  # a changed schema is a new entry, never the old one
    assert module._compiled(schema, False, None) is not first
    compile_schema(schema)({"n": "now a string"})


def test_cache_is_bounded() -> None:
    for i in range(module.CACHE_SIZE + 50):
        compile_schema({"const": i})(i)
    assert len(module._cache) <= module.CACHE_SIZE


# -- miscellany ---------------------------------------------------------------------


def test_tuples_are_arrays_and_schema_may_be_any_mapping() -> None:
    check = compile_schema(MappingProxyType({"type": "array", "items": MappingProxyType({"type": "integer"})}))
    check((1, 2))
    with pytest.raises(SchemaValidationError):
        check((1, "2"))


def test_validate_returns_none_and_compiled_is_reusable() -> None:
    check = compile_schema({"type": "string"})
    assert check("a") is None
    assert check("b") is None
    assert validate("c", {"type": "string"}) is None
