"""Wire forms of untagged unions held in struct fields (mcpgen/codegen/wire.py).

Such a field decodes in msgspec's one pass into the union's wire struct, and its holder's
``__post_init__`` builds the arm. These tests hold that path to the rule-based one (the
codec's ``dec_hook``, which decodes the union at the top level): same arm, same values,
same rejections, on every union sample and every invalid variant of every arm, and with
keys of other arms added as undeclared extras (which the schema's open objects allow).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import msgspec
import pytest

from mcpgen.codegen.build import build_model
from mcpgen.codegen.ir import Model, Prim, StructDef, UnionDef
from mcpgen.codegen.loader import load_schema
from mcpgen.codegen.samples import SampleMaker
from tests.conftest import needs_shared, official_schema

REVISIONS = ["2025-11-25", "2026-07-28"]
# Values an arm's field may not hold, one of each JSON kind (an extra key may hold any).
ODD_VALUES: list[Any] = [12345, "a string", True, None, {"not": "this"}, [["nested"]]]


@pytest.fixture(scope="module", params=REVISIONS)
def model(request: pytest.FixtureRequest) -> Model:
    return build_model(load_schema(official_schema(request.param)))


def outcome(decode: Any, value: Any) -> Any:
    """What decoding gives: the value as plain JSON and its class, or "rejected"."""
    try:
        decoded = decode(value)
    except (msgspec.ValidationError, ValueError):
        return "rejected"
    return type(decoded).__name__, msgspec.to_builtins(decoded)


def wire_cases(model: Model, union: str) -> Iterator[Any]:
    """Every sample of the union, every invalid variant of its arms, and each arm's sample
    with another arm's key added holding a value of each kind."""
    maker = SampleMaker(model)
    wire = model.wires[union]
    arms = [model.types[a.struct] for a in wire.arms]
    typedef = model.types[union]
    assert isinstance(typedef, UnionDef)
    yield from (value for _, value in maker.union_samples(typedef))
    for arm in arms:
        assert isinstance(arm, StructDef)
        yield from (case.value for case in maker.invalid(arm))
        base = maker.struct(arm, full=True, depth=1)
        for f in wire.struct.fields:
            if arm.field_by_wire(f.wire_name) is None:
                for odd in ODD_VALUES:
                    yield {**base, f.wire_name: odd}


@needs_shared
def test_fields_holding_untagged_unions_are_wired(model: Model) -> None:
    assert {"EmbeddedResourceResource", "ElicitRequestParams", "PrimitiveSchemaDefinition"} <= set(model.wires)
    slots = {(s, slot.field.wire_name): slot.shape for s, found in model.slots.items() for slot in found}
    assert slots[("EmbeddedResource", "resource")] == "one"
    assert slots[("ReadResourceResult", "contents")] == "list"
    assert slots[("ElicitRequestFormParamsRequestedSchema", "properties")] == "dict"
    assert slots[("ElicitRequest", "params")] == "one"


@needs_shared
def test_a_key_is_typed_on_the_wire_only_when_its_presence_picks_its_arm(model: Model) -> None:
    def wire_type(union: str, key: str) -> Any:
        f = model.wires[union].struct.field_by_wire(key)
        assert f is not None
        return f.type

    # "text" present means TextResourceContents (its rule); "blob" beside "text" is an
    # undeclared extra of TextResourceContents, so the wire keeps it as plain JSON.
    assert wire_type("EmbeddedResourceResource", "text") == Prim("str")
    assert wire_type("EmbeddedResourceResource", "blob") == Prim("Any")
    assert wire_type("EmbeddedResourceResource", "uri").name == "str"
    assert wire_type("ElicitRequestParams", "url") == Prim("Any")
    if model.revision == "2026-07-28":  # a requestedSchema makes it a form: typed
        assert wire_type("ElicitRequestParams", "requestedSchema") != Prim("Any")
    else:  # mode "url" makes it a URL request, requestedSchema or not: plain JSON
        assert wire_type("ElicitRequestParams", "requestedSchema") == Prim("Any")


def holder_decoders(model: Model, g: ModuleType, union: str) -> Iterator[tuple[str, Any]]:
    """For each field holding ``union`` (as itself, list items or dict values): a function
    that decodes one value of the union through that field's holder, in one msgspec pass,
    and gives back what the holder's ``__post_init__`` built from the wire struct."""
    maker = SampleMaker(model)
    for holder, slots in model.slots.items():
        typedef = model.types.get(holder)
        if not isinstance(typedef, StructDef):
            continue  # a wire struct holding another wire struct: reached through its holder
        for slot in slots:
            if slot.union != union:
                continue
            base = maker.struct(typedef, full=False, depth=1)
            key, cls = slot.field.wire_name, getattr(g, holder)

            def decode(value: Any, base: Any = base, key: str = key, slot: Any = slot, cls: Any = cls) -> Any:
                wrapped = {"one": value, "list": [value], "dict": {"k": value}}[slot.shape]
                built = getattr(g.decode(json.dumps({**base, key: wrapped}), cls), slot.field.py_name)
                if slot.shape == "list":
                    return built[0]
                return built["k"] if slot.shape == "dict" else built

            yield f"{holder}.{key}", decode


@needs_shared
def test_the_wire_path_decodes_as_the_rules_do(packages: dict[str, ModuleType], model: Model) -> None:
    g = packages[model.revision]
    checked = 0
    for union in model.wires:
        union_type = getattr(g.types, union)

        def by_rules(value: Any, union_type: Any = union_type) -> Any:
            return g.convert(value, union_type)

        holders = list(holder_decoders(model, g, union))
        assert holders, union
        for value in wire_cases(model, union):
            expected = outcome(by_rules, value)
            for where, by_wire in holders:
                assert outcome(by_wire, value) == expected, (where, json.dumps(value)[:300])
                checked += 1
    assert checked > 300


@needs_shared
def test_holders_decode_each_arm_in_one_pass(packages: dict[str, ModuleType]) -> None:
    g = packages["2026-07-28"]
    text = {"uri": "file:///a.md", "mimeType": "text/markdown", "text": "# A"}
    blob = {"uri": "file:///a.png", "blob": "AAEC"}
    result = {"content": [{"type": "resource", "resource": r} for r in (text, blob)], "resultType": "complete"}
    for data in (json.dumps(result), json.dumps(result).encode()):
        decoded = g.decode(data, g.CallToolResult)
        assert [type(c.resource).__name__ for c in decoded.content] == ["TextResourceContents", "BlobResourceContents"]
        assert json.loads(g.encode(decoded)) == result
    assert g.convert(result, g.CallToolResult) == decoded  # from plain JSON data too

    read = {"contents": [blob, text], "resultType": "complete", "cacheScope": "public", "ttlMs": 0}
    assert [type(c).__name__ for c in g.decode(json.dumps(read), g.ReadResourceResult).contents] == [
        "BlobResourceContents",
        "TextResourceContents",
    ]

    fields = {
        "ok": {"type": "boolean", "default": True},
        "n": {"type": "integer", "minimum": 1},
        "pick": {"type": "string", "enum": ["a", "b"]},
        "many": {"type": "array", "items": {"anyOf": [{"const": "x", "title": "X"}]}},
        "name": {"type": "string"},
    }
    form = {"message": "m", "requestedSchema": {"type": "object", "properties": fields}}
    irr = {"resultType": "input_required", "inputRequests": {"q": {"method": "elicitation/create", "params": form}}}
    decoded_irr = g.decode(json.dumps(irr), g.InputRequiredResult)
    params = decoded_irr.input_requests["q"].params
    assert type(params).__name__ == "ElicitRequestFormParams"
    assert {k: type(v).__name__ for k, v in params.requested_schema.properties.items()} == {
        "ok": "BooleanSchema",
        "n": "NumberSchema",
        "pick": "UntitledSingleSelectEnumSchema",
        "many": "TitledMultiSelectEnumSchema",
        "name": "StringSchema",
    }
    assert json.loads(g.encode(decoded_irr)) == irr


@needs_shared
@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"uri": "u"}, "Object missing required field `blob` - at `$.content[0].resource`"),
        ({"uri": "u", "blob": 5}, "Expected `str`, got `int` - at `$.content[0].resource.blob`"),
        ({"uri": "u", "text": 5}, "Expected `str`, got `int` - at `$.content[0].resource.text`"),
    ],
)
def test_wire_errors_name_the_place(packages: dict[str, ModuleType], value: Any, message: str) -> None:
    g = packages["2025-11-25"]
    data = json.dumps({"content": [{"type": "resource", "resource": value}]})
    with pytest.raises(msgspec.ValidationError) as info:
        g.decode(data, g.CallToolResult)
    assert str(info.value) == message


@needs_shared
def test_wire_errors_inside_dict_values_name_the_field(packages: dict[str, ModuleType]) -> None:
    g = packages["2026-07-28"]
    form = {
        "message": "m",
        "requestedSchema": {"type": "object", "properties": {"f": {"type": "boolean", "default": 1}}},
    }
    with pytest.raises(msgspec.ValidationError) as info:
        g.decode(json.dumps({"method": "elicitation/create", "params": form}), g.ElicitRequest)
    assert str(info.value) == "Expected `bool`, got `int` - at `$.params.requestedSchema.properties[...].default`"
    url = {"message": "m", "mode": "url", "url": 7}
    with pytest.raises(msgspec.ValidationError, match=r"`\$\.params\.url`"):
        g.decode(json.dumps({"method": "elicitation/create", "params": url}), g.ElicitRequest)


@needs_shared
def test_values_built_in_code_pass_through(packages: dict[str, ModuleType]) -> None:
    g = packages["2026-07-28"]
    contents = g.TextResourceContents(uri="u", text="t")
    block = g.EmbeddedResource(resource=contents)
    assert block.resource is contents
    assert g.encode(block) == b'{"type":"resource","resource":{"text":"t","uri":"u"}}'
    assert isinstance(contents, g.EmbeddedResourceResource)
