"""The intermediate model: names, fields, unions and the method table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcpgen.codegen.build import build_model, is_open_object
from mcpgen.codegen.facts import Facts
from mcpgen.codegen.ir import AliasDef, Check, Const, DictOf, Model, Named, StructDef, UnionDef
from mcpgen.codegen.loader import load_schema, parse_schema
from mcpgen.codegen.naming import field_name
from tests.conftest import REVISIONS, official_schema


@pytest.fixture(scope="module")
def models() -> dict[str, Model]:
    return {rev: build_model(load_schema(official_schema(rev))) for rev in REVISIONS}


def struct(model: Model, name: str) -> StructDef:
    typedef = model.types[name]
    assert isinstance(typedef, StructDef), name
    return typedef


def union(model: Model, name: str) -> UnionDef:
    typedef = model.types[name]
    assert isinstance(typedef, UnionDef), name
    return typedef


@pytest.mark.parametrize("revision", REVISIONS)
def test_every_schema_property_is_captured(models: dict[str, Model], revision: str) -> None:
    """A property the generator drops would vanish silently; this makes it fail loudly."""
    model = models[revision]
    doc = json.loads(official_schema(revision).read_text())
    defs = doc.get("$defs") or doc["definitions"]
    for name, node in defs.items():
        assert name in model.types, name
        typedef = model.types[name]
        props = dict(node.get("properties", {}))
        for part in node.get("allOf", []):
            ref = part.get("$ref")
            props.update((defs[ref.rsplit("/", 1)[-1]] if ref else part).get("properties", {}))
        if isinstance(typedef, StructDef):
            assert {f.wire_name for f in typedef.fields} == set(props), name
            required = set(node.get("required", []))
            for f in typedef.fields:
                if "allOf" not in node:
                    assert f.required == (f.wire_name in required), (name, f.wire_name)
        elif props:
            assert isinstance(typedef, AliasDef) and isinstance(typedef.target, DictOf), name
            assert is_open_object(node) or name in Facts.load().open_definitions, name


def test_anonymous_types_are_named_where_they_sit(models: dict[str, Model]) -> None:
    model = models["2025-11-25"]
    for name in (
        "ServerCapabilitiesTools",
        "ServerCapabilitiesTasksRequestsTools",
        "CompleteRequestParamsArgument",
        "CompleteResultCompletion",
        "TitledSingleSelectEnumSchemaOneOfItem",
        "URLElicitationRequiredErrorError",
    ):
        assert isinstance(model.types[name], StructDef), name
    # Older revisions write params inline; they get the same names the newest defines.
    old = models["2024-11-05"]
    assert isinstance(old.types["CallToolRequestParams"], StructDef)
    assert old.types["CallToolRequestParams"].pointer.endswith("/CallToolRequest/properties/params")


def test_fields_carry_wire_names_types_and_bounds(models: dict[str, Model]) -> None:
    model = models["2025-11-25"]
    result = struct(model, "CallToolResult")
    by_wire = {f.wire_name: f for f in result.fields}
    assert by_wire["isError"].py_name == "is_error"
    assert by_wire["_meta"].py_name == "meta"
    assert by_wire["structuredContent"].type == DictOf(by_wire["_meta"].type.value)  # type: ignore[union-attr]
    priority = struct(model, "Annotations").field_by_wire("priority")
    assert priority is not None
    assert (priority.type.ge, priority.type.le) == (0, 1)  # type: ignore[union-attr]
    request = struct(model, "JSONRPCRequest")
    jsonrpc = request.field_by_wire("jsonrpc")
    assert jsonrpc is not None and jsonrpc.type == Const(("2.0",)) and jsonrpc.required
    tool = struct(model, "Tool")
    schema_field = tool.field_by_wire("inputSchema")
    assert schema_field is not None and isinstance(schema_field.type, DictOf)  # kept whole (facts.toml)
    task = struct(model, "Task")
    ttl = task.field_by_wire("ttl")
    assert ttl is not None and ttl.required and "None" in repr(ttl.type)


def test_tagged_unions(models: dict[str, Model]) -> None:
    model = models["2025-11-25"]
    content = union(model, "ContentBlock")
    assert content.native and content.tag_field == "type"
    assert struct(model, "TextContent").tag_field == "type"
    assert union(model, "ClientRequest").tag_field == "method"
    assert struct(model, "CallToolRequest").tag_value == "tools/call"


def rules(u: UnionDef) -> list[tuple[str, tuple[str, ...], Any, str]]:
    return [(r.check.op, r.check.path, r.check.value, getattr(r.variant, "name", "")) for r in u.rules]


def test_untagged_union_rules(models: dict[str, Model]) -> None:
    model = models["2025-11-25"]
    contents = union(model, "EmbeddedResourceResource")
    assert rules(contents) == [("has", ("text",), None, "TextResourceContents")]
    assert contents.fallback == Named("BlobResourceContents")
    elicit = union(model, "ElicitRequestParams")
    assert rules(elicit) == [("eq", ("mode",), "url", "ElicitRequestURLParams")]
    message = union(model, "JSONRPCMessage")
    assert [r[3] for r in rules(message)] == ["JSONRPCResultResponse", "JSONRPCErrorResponse", "JSONRPCRequest"]
    assert message.fallback == Named("JSONRPCNotification")
    primitive = union(model, "PrimitiveSchemaDefinition")
    assert ("in", ("type",), ("integer", "number"), "NumberSchema") in rules(primitive)
    assert ("has", ("items", "enum"), None, "UntitledMultiSelectEnumSchema") in rules(primitive)
    assert primitive.fallback == Named("StringSchema")
    server_result = union(model, "ServerResult")
    assert server_result.fallback == Named("Result")  # the open object takes the rest


def test_method_table(models: dict[str, Model]) -> None:
    model = models["2025-11-25"]
    table = {m.key: m for m in model.methods}
    call = table["c2s tools/call"]
    assert (call.params_type, call.result_type, call.capability, call.py_name) == (
        Named("CallToolRequestParams"),
        "CallToolResult",
        "server.tools",
        "call_tool",
    )
    assert table["c2s ping"].result_type == "EmptyResult"
    assert table["s2c ping"].result_type == "EmptyResult"
    assert table["s2c sampling/createMessage"].capability == "client.sampling"
    assert table["s2c elicitation/create"].params_type == Named("ElicitRequestParams")
    assert table["c2s notifications/initialized"].kind == "notification"
    assert table["s2c notifications/message"].py_name == "on_logging_message"
    assert len(model.methods_for("c2s")) == 22 and len(model.methods_for("s2c")) == 17
    for rev, count in (("2024-11-05", 27), ("2025-03-26", 27), ("2025-06-18", 28)):
        assert len(models[rev].methods) == count


def test_types_link_their_spec_page(models: dict[str, Model]) -> None:
    model = models["2025-11-25"]
    assert model.types["Tool"].page == "server/tools"
    assert model.types["Resource"].page == "server/resources"
    assert model.types["CreateMessageRequestParams"].page == "client/sampling"
    assert model.types["InitializeRequest"].page == "basic/lifecycle"
    assert model.types["JSONRPCMessage"].page == "basic"


def build_from(tmp_path: Path, defs: dict[str, Any], facts: Facts | None = None) -> Model:
    raw = json.dumps({"$defs": defs}).encode()
    return build_model(parse_schema(raw, str(tmp_path / "s.json"), "2099-01-01"), facts)


def test_ambiguous_union_is_reported(tmp_path: Path) -> None:
    model = build_from(
        tmp_path,
        {
            "A": {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]},
            "B": {
                "type": "object",
                "properties": {"x": {"type": "string"}, "y": {"type": "integer"}},
                "required": ["x", "y"],
            },
            "C": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]},
            "U": {"anyOf": [{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/C"}]},
        },
    )
    assert any(r.level == "warning" and "U: cannot tell A, C apart" in r.message for r in model.reports)


def test_unused_facts_are_reported(tmp_path: Path) -> None:
    facts = Facts(
        results={"NoSuchRequest": "EmptyResult"},
        capabilities={"c2s no/such": "server.x"},
        open_objects={"Nope.field": "x"},
        pages={"no/such": "basic"},
    )
    model = build_from(tmp_path, {"A": {"type": "string"}}, facts)
    messages = " ".join(r.message for r in model.reports)
    for entry in ("'NoSuchRequest'", "'c2s no/such'", "'Nope.field'", "'no/such'"):
        assert entry in messages


def test_check_is_hashable_value() -> None:
    assert Check("eq", ("mode",), "url") == Check("eq", ("mode",), "url")


@pytest.mark.parametrize(
    ("wire", "attribute"),
    [("type", "type"), ("match", "match"), ("case", "case"), ("class", "class_"), ("from", "from_"), ("_meta", "meta")],
)
def test_attribute_names_do_not_depend_on_the_python_running_the_generator(wire: str, attribute: str) -> None:
    """Soft keywords (``type`` became one in 3.12) are legal names and stay as they are; only
    hard keywords, the same in every supported Python, get a trailing underscore. Renaming
    by the running interpreter's list made the bindings generated on 3.12 differ from the
    committed ones."""
    assert field_name(wire) == attribute


@pytest.mark.parametrize(("wire", "attribute"), [("+1", "n1"), ("-1", "n1"), ("2fa", "n2fa"), ("401", "n401")])
def test_a_wire_name_that_starts_with_a_digit_gets_a_name(wire: str, attribute: str) -> None:
    """GitHub's reactions have a ``+1`` field: a trailing underscore (``1_``) is no Python
    name, a leading letter is (the wire name stays in ``field(name=...)``)."""
    assert field_name(wire) == attribute
    assert attribute.isidentifier()


@pytest.mark.parametrize("text", ['Where did this come from?"', 'ends with """', 'a \\ and a quote"', '"'])
def test_a_docstring_whatever_its_text_ends_with_stays_one_string(text: str) -> None:
    import ast

    from mcpgen.codegen.render import docstring

    source = f"def f():\n    {docstring(text)}\n"
    body = ast.parse(source).body[0]
    assert isinstance(body, ast.FunctionDef)
    assert ast.get_docstring(body, clean=False) is not None
    assert len(body.body) == 1
