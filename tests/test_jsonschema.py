"""mcpgen.runtime.jsonschema: the dependency-free JSON Schema validator."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from mcpgen.runtime.jsonschema import (
    MAX_DEPTH,
    SchemaValidationError,
    compile_schema,
    errors,
    validate,
)

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
        assert str(info.value).startswith(info.value.path + ": ")
        assert "\n" not in str(info.value)
        # errors() agrees with the fail-fast validator, and reports its first problem first.
        found = errors(instance, schema)
        assert found and str(found[0]) == str(info.value)


def test_differential_against_jsonschema_package() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    disagreements = []
    for name, schema, valid, invalid in CASES:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        reference = cls(schema)
        for expected, instances in ((True, valid), (False, invalid)):
            for instance in instances:
                if reference.is_valid(instance) != expected:
                    disagreements.append((name, instance, expected))
    assert disagreements == []


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


def test_nested_error_path() -> None:
    with pytest.raises(SchemaValidationError) as info:
        validate({"items": [{"name": "a"}, {"name": "b"}, {"name": 3}]}, LIST_SCHEMA)
    assert info.value.path == "$.items[2].name"
    assert str(info.value) == "$.items[2].name: expected string, got integer"
    assert isinstance(info.value, ValueError)


def test_error_path_for_odd_keys_and_root() -> None:
    schema = {"properties": {"a b": {"items": {"type": "integer"}}, "日本": {"type": "string"}}}
    with pytest.raises(SchemaValidationError) as info:
        validate({"a b": [1, "x"]}, schema)
    assert info.value.path == '$["a b"][1]'
    with pytest.raises(SchemaValidationError) as info:
        validate({"日本": 1}, schema)
    assert info.value.path == '$["日本"]'
    with pytest.raises(SchemaValidationError) as info:
        validate(1, {"type": "string"})
    assert str(info.value) == "$: expected string, got integer"


def test_messages_name_the_problem() -> None:
    def message(instance: Any, schema: Any) -> str:
        with pytest.raises(SchemaValidationError) as info:
            validate(instance, schema)
        return str(info.value)

    assert message({"items": [{}]}, LIST_SCHEMA) == '$.items[0]: missing required property "name"'
    assert message({}, {"required": ["a", "b"]}) == '$: missing required properties "a", "b"'
    assert message({"a": 1, "zz": 2}, {"properties": {"a": {}}, "additionalProperties": False}) == (
        '$: additional property "zz" is not allowed'
    )
    assert message(True, {"type": "integer"}) == "$: expected integer, got boolean"
    assert message("c", {"enum": ["a", "b"]}) == '$: "c" is not allowed; must be one of "a", "b"'
    assert message([1, 2, 1], {"uniqueItems": True}) == "$: array items [0] and [2] are equal; items must be unique"
    assert message({"Ab": 1}, {"propertyNames": {"pattern": "^[a-z]+$"}}).startswith('$: property name "Ab": ')
    assert "minimum" in message(0, {"minimum": 1})
    assert "remote" not in message("x" * 500, {"maxLength": 3})


def test_errors_collects_several_problems() -> None:
    instance = {"items": [{"name": 1}, {}, {"name": "ok", "tags": ["a", 2, 3]}], "other": None}
    found = errors(instance, LIST_SCHEMA)
    assert [e.path for e in found] == ["$.items[0].name", "$.items[1]", "$.items[2].tags[1]", "$.items[2].tags[2]"]
    assert all(isinstance(e, SchemaValidationError) for e in found)
    assert [e.path for e in errors(instance, LIST_SCHEMA, limit=2)] == ["$.items[0].name", "$.items[1]"]
    assert errors(instance, LIST_SCHEMA, limit=0) == []
    assert errors({"items": [{"name": "fine"}]}, LIST_SCHEMA) == []


def test_errors_reports_each_keyword_once() -> None:
    schema = {"type": "object", "required": ["a"], "minProperties": 3, "additionalProperties": {"type": "string"}}
    found = errors({"x": 1, "y": 2}, schema)
    assert [str(e) for e in found] == [
        "$.x: expected string, got integer",
        "$.y: expected string, got integer",
        '$: missing required property "a"',
        "$: object has 2 properties, fewer than 3",
    ]


# -- numbers ---------------------------------------------------------------------


def test_multiple_of_is_decimal_safe() -> None:
    # Binary floating point says 0.3 / 0.1 == 2.9999999999999996; the schema author meant decimals.
    check = compile_schema({"multipleOf": 0.1})
    for good in (0.3, 0.7, 1.1, 10, 123456789.1, 12.3):
        check(good)
    for bad in (0.35, 0.01):
        with pytest.raises(SchemaValidationError):
            check(bad)
    compile_schema({"multipleOf": 0.01})(19.99)
    compile_schema({"multipleOf": 0.0001})(12.3456)
    compile_schema({"multipleOf": 1e-8})(1e308)  # no overflow
    with pytest.raises(SchemaValidationError):
        compile_schema({"multipleOf": 0.5})(float("inf"))


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
}


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_format_assertion(fmt: str) -> None:
    good, bad = FORMATS[fmt]
    asserting = compile_schema({"format": fmt}, format_assertion=True)
    annotating = compile_schema({"format": fmt})
    for value in good:
        asserting(value)
    for value in bad:
        annotating(value)  # off by default
        with pytest.raises(SchemaValidationError, match=f"not a valid {fmt}"):
            asserting(value)
    asserting(42)  # formats only constrain strings
    compile_schema({"format": "ipv4"}, format_assertion=True)("not an ip")  # unsupported: annotation


# -- schema problems found at compile time ------------------------------------------


@pytest.mark.parametrize(
    ("schema", "needle"),
    [
        ({"$ref": "https://example.com/other.json"}, "remote $ref not supported"),
        ({"properties": {"a": {"$ref": "other.json#/x"}}}, "remote $ref not supported"),
        ({"$ref": "#/$defs/missing"}, "does not resolve"),
        ({"$ref": "#nowhere"}, "no such $anchor"),
        ({"$defs": {"x": 1}, "$ref": "#/$defs/x"}, "does not point to a schema"),
        ({"pattern": "("}, "bad regular expression"),
        ({"patternProperties": {"[": {}}}, "bad regular expression"),
        ({"type": "text"}, "unknown type"),
        ({"minLength": -1}, "non-negative integer"),
        ({"minimum": "1"}, "must be a number"),
        ({"multipleOf": 0}, "greater than 0"),
        ({"required": "a"}, "array of strings"),
        ({"enum": "a"}, "must be an array"),
        ({"properties": {"a": 1}}, "must be an object or a boolean"),
        ([], "must be an object or a boolean"),
    ],
)
def test_bad_schemas_fail_at_compile_time(schema: Any, needle: str) -> None:
    with pytest.raises(SchemaValidationError) as info:
        compile_schema(schema)
    assert needle in str(info.value)
    assert info.value.path.startswith("#")


def test_remote_ref_error_path_points_into_schema() -> None:
    with pytest.raises(SchemaValidationError) as info:
        compile_schema({"properties": {"a/b": {"$ref": "http://x.test/s.json"}}})
    assert info.value.path == "#/properties/a~1b/$ref"


def test_unreferenced_definitions_are_not_compiled() -> None:
    # Only what validation can reach must be usable; a sloppy unused $def is fine.
    compile_schema({"$defs": {"unused": {"$ref": "https://example.com/x.json"}}, "type": "string"})("ok")


# -- recursion and pathological inputs ----------------------------------------------


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


def test_too_deep_instance_is_a_validation_error_not_recursion_error() -> None:
    with pytest.raises(SchemaValidationError, match="deep"):
        compile_schema(TREE)(_chain(5000))
    # The validator is still usable afterwards (the depth counter was unwound).
    compile_schema(TREE)(_chain(10))


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
    check = compile_schema(schema)
    with pytest.raises(SchemaValidationError, match=f"deeper than {MAX_DEPTH}"):
        check(1)
    assert [e.message for e in errors(1, schema)] == [f"$ref nesting deeper than {MAX_DEPTH} levels"]


def test_too_deep_schema_is_rejected_at_compile_time() -> None:
    schema: dict[str, Any] = {"type": "integer"}
    for _ in range(MAX_DEPTH + 10):
        schema = {"properties": {"a": schema}}
    with pytest.raises(SchemaValidationError, match="deep"):
        compile_schema(schema)


def test_too_deep_const_and_instance_for_equality() -> None:
    deep: Any = []
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(SchemaValidationError, match="deep"):
        compile_schema({"const": deep})
    with pytest.raises(SchemaValidationError, match="deep"):
        compile_schema({"enum": [1]})(deep)
    with pytest.raises(SchemaValidationError, match="deep"):
        compile_schema({"uniqueItems": True})([deep, 1])


def test_compiled_validator_is_thread_safe() -> None:
    check = compile_schema(TREE)
    failures: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(50):
                check(_chain(30))
        except BaseException as exc:  # pragma: no cover - reported below
            failures.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


# -- miscellany ---------------------------------------------------------------------


def test_tuples_are_arrays_and_schema_may_be_any_mapping() -> None:
    from types import MappingProxyType

    check = compile_schema(MappingProxyType({"type": "array", "items": {"type": "integer"}}))
    check((1, 2))
    with pytest.raises(SchemaValidationError):
        check((1, "2"))


def test_schema_2020_declared_explicitly() -> None:
    schema = {"$schema": D2020, "$defs": {"i": {"type": "integer"}}, "$ref": "#/$defs/i", "maximum": 3}
    validate(3, schema)
    with pytest.raises(SchemaValidationError):
        validate(4, schema)


def test_validate_returns_none_and_compiled_is_reusable() -> None:
    check = compile_schema({"type": "string"})
    assert check("a") is None
    assert check("b") is None
    assert validate("c", {"type": "string"}) is None
