"""Decoding and re-encoding: the seed pages' JSON examples and a corpus made from the model.

Valid messages decode to the right typed value and encode back to the same JSON (key order
aside); invalid ones raise a validation error that names the bad field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import msgspec
import pytest

from mcpgen.codegen.build import build_model
from mcpgen.codegen.ir import Model, Named, StructDef
from mcpgen.codegen.loader import load_schema
from mcpgen.codegen.samples import Invalid, SampleMaker
from tests.conftest import SEEDS, SHARED, needs_shared, official_schema, shared_params

# ------------------------------------------------------------------ seed pages


def strip_comments(text: str) -> str:
    """Drop // comments (the pages annotate their JSON) but not // inside strings."""
    out, in_string, i = [], False, 0
    while i < len(text):
        ch = text[i]
        if in_string:
            out.append(ch)
            if ch == "\\":
                out.append(text[i + 1])
                i += 1
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
            out.append(ch)
        elif text.startswith("//", i):
            while i < len(text) and text[i] != "\n":
                i += 1
            continue
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def seed_examples() -> Iterator[tuple[str, Any]]:
    files = sorted(SEEDS.glob("*.md"))
    assert files, f"no seed pages in {SEEDS}"
    for path in files:
        blocks = re.findall(r"```json[^\n]*\n(.*?)```", path.read_text(), re.S)
        for i, block in enumerate(blocks):
            yield f"{path.stem}#{i}", json.loads(strip_comments(block))


SEED_EXAMPLES = list(seed_examples()) if SHARED.is_dir() else []  # without ../shared the tests below skip

# Examples that put a key where the schema declares none. Structs keep declared fields
# only (unknown keys survive in open objects, which the schema marks as such), so these
# keys are dropped on decoding; everything else must still round-trip.
UNDECLARED_KEYS = {
    # The page shows `annotations` inside the embedded resource's contents; the schema
    # declares annotations on EmbeddedResource, not on TextResourceContents.
    "01-tools.ko#10": ("resource", "annotations"),
}


def is_schematic(value: Any) -> bool:
    """The overview page sketches message shapes with placeholder keys (`params?`)."""
    return isinstance(value, dict) and any(k.endswith("?") for k in value)


def without(value: Any, path: tuple[str, ...]) -> Any:
    copy = json.loads(json.dumps(value))
    node = copy
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return copy


def fragment_type(g: ModuleType, page: str, value: Any) -> Any:
    """The schema type a JSON fragment on a page shows (the pages say it in prose)."""
    if isinstance(value, list):
        return list[g.Root]
    if "capabilities" in value:
        caps = value["capabilities"]
        return g.ClientCapabilities if "roots" in caps else g.ServerCapabilities
    if "inputSchema" in value:
        return g.Tool
    if "type" in value:
        return g.ContentBlock
    if "roots" in page or "protocol" in page:
        return g.Root
    if "name" in value:
        return g.Resource
    return g.EmbeddedResourceResource


def assert_round_trip(g: ModuleType, value: Any, type_: Any) -> Any:
    decoded = g.decode(json.dumps(value), type_)
    assert json.loads(g.encode(decoded)) == value
    return decoded


@needs_shared
def test_seed_pages_have_examples() -> None:
    assert len(SEED_EXAMPLES) >= 50


@pytest.mark.parametrize(
    ("where", "value"), shared_params(lambda: (pytest.param(*e, id=e[0]) for e in SEED_EXAMPLES), 2)
)
def test_seed_example_round_trips(packages: dict[str, ModuleType], where: str, value: Any) -> None:
    g = packages["2025-11-25"]
    if is_schematic(value):
        # A sketch, not a message; its placeholders hold no real params to check.
        assert where.startswith("04-protocol-overview")
        with pytest.raises(msgspec.ValidationError):
            g.decode(json.dumps(value), g.ClientRequest)
        return
    if where in UNDECLARED_KEYS:
        value = without(value, UNDECLARED_KEYS[where])
    if not (isinstance(value, dict) and "jsonrpc" in value):
        fragment = value["capabilities"] if isinstance(value, dict) and "capabilities" in value else value
        assert_round_trip(g, fragment, fragment_type(g, where, value))
        return
    message = assert_round_trip(g, value, g.JSONRPCMessage)
    method = value.get("method")
    spec = g.CLIENT_TO_SERVER.get(method) or g.SERVER_TO_CLIENT.get(method)
    if isinstance(message, (g.JSONRPCRequest, g.JSONRPCNotification)) and spec is not None:
        typed = assert_round_trip(
            g,
            value,
            g.ClientRequest | g.ClientNotification
            if method in g.CLIENT_TO_SERVER
            else g.ServerRequest | g.ServerNotification,
        )
        assert type(typed).__name__.endswith(("Request", "Notification"))
        assert typed.method == method
    elif isinstance(message, g.JSONRPCResultResponse):
        request = request_for(where, value["id"])
        if request is None:  # a response shown alone: the result union must type it
            union = g.ClientResult if "roots" in where else g.ServerResult
            typed = assert_round_trip(g, value["result"], union)
            assert not isinstance(typed, dict)
        else:
            spec = g.CLIENT_TO_SERVER.get(request) or g.SERVER_TO_CLIENT[request]
            typed = assert_round_trip(g, value["result"], spec.result_type)
            assert isinstance(typed, spec.result_type)


def request_for(where: str, request_id: Any) -> str | None:
    """The method of the request a response on the same page answers, if shown."""
    page = where.split("#")[0]
    for other, value in SEED_EXAMPLES:
        if other.startswith(page + "#") and isinstance(value, dict) and value.get("id") == request_id:
            if "method" in value:
                return str(value["method"])
    return None


# ------------------------------------------------------------------ corpus from the model


# The corpus runs on the newest revision of each era.
CORPUS_REVISIONS = ["2025-11-25", "2026-07-28"]


@pytest.fixture(scope="module", params=CORPUS_REVISIONS)
def model(request: pytest.FixtureRequest) -> Model:
    return build_model(load_schema(official_schema(request.param)))


def test_every_struct_round_trips_full_and_minimal(packages: dict[str, ModuleType], model: Model) -> None:
    g = packages[model.revision]
    maker = SampleMaker(model)
    checked = 0
    for s in model.structs():
        for full in (True, False):
            value = maker.struct(s, full=full, depth=0)
            decoded = assert_round_trip(g, value, getattr(g.types, s.name))
            assert type(decoded).__name__ == s.name
            checked += 1
    assert checked == 2 * len(model.structs())


def test_every_union_member_decodes_to_its_variant(packages: dict[str, ModuleType], model: Model) -> None:
    g = packages[model.revision]
    maker = SampleMaker(model)
    same_shape = {"GetTaskResult", "CancelTaskResult", "Result", "GetTaskPayloadResult"}
    for u in model.unions():
        union_type = getattr(g.types, u.name)
        for member, value in maker.union_samples(u):
            decoded = assert_round_trip(g, value, union_type)
            if u.erased is not None:  # a recursive alias: plain JSON at run time
                assert decoded == value
                continue
            if not u.native:  # native unions may hold list[...], which isinstance refuses
                assert isinstance(decoded, union_type)
            if isinstance(member, Named) and isinstance(model.types[member.name], StructDef):
                if member.name not in same_shape:
                    assert type(decoded).__name__ == member.name, (u.name, member.name)


def invalid_cases() -> list[tuple[str, Invalid]]:
    cases = []
    for revision in CORPUS_REVISIONS:
        model = build_model(load_schema(official_schema(revision)))
        maker = SampleMaker(model)
        cases += [(revision, case) for s in model.structs() for case in maker.invalid(s)]
    return cases


INVALID = invalid_cases() if SHARED.is_dir() else []  # without ../shared the tests below skip


@needs_shared
def test_invalid_corpus_covers_every_kind() -> None:
    for revision in CORPUS_REVISIONS:
        kinds = {case.why for rev, case in INVALID if rev == revision}
        assert kinds == {"wrong type", "missing required", "bad const", "out of bounds", "wrong tag"}, revision
        assert len([rev for rev, _ in INVALID if rev == revision]) > 400, revision


@pytest.mark.parametrize(
    ("revision", "case"),
    shared_params(lambda: (pytest.param(r, c, id=f"{r}:{c.type_name}.{c.field}:{c.why}") for r, c in INVALID), 2),
)
def test_invalid_value_is_rejected_naming_the_field(
    packages: dict[str, ModuleType], revision: str, case: Invalid
) -> None:
    g = packages[revision]
    with pytest.raises(msgspec.ValidationError) as info:
        g.decode(json.dumps(case.value), getattr(g.types, case.type_name))
    assert f"`{case.field}`" in str(info.value) or f"$.{case.field}" in str(info.value)


# ------------------------------------------------------------------ specific behaviour


def test_unknown_keys_in_open_objects_survive(packages: dict[str, ModuleType]) -> None:
    g = packages["2025-11-25"]
    value = {
        "name": "t",
        "inputSchema": {"type": "object", "$defs": {"a": {"type": "string"}}, "additionalProperties": False},
        "_meta": {"vendor/x": {"deep": [1, 2]}},
    }
    assert_round_trip(g, value, g.Tool)
    assert_round_trip(g, {"_meta": {"k": 1}, "anything": [1, {"x": None}]}, g.EmptyResult)


def test_absent_optional_fields_are_not_written(packages: dict[str, ModuleType]) -> None:
    g = packages["2025-11-25"]
    assert g.encode(g.CallToolResult(content=[g.TextContent(text="hi")])) == (
        b'{"content":[{"type":"text","text":"hi"}]}'
    )
    assert b"null" not in g.encode(g.Tool(name="t", input_schema={"type": "object"}))


def test_required_consts_are_filled_in(packages: dict[str, ModuleType]) -> None:
    g = packages["2025-11-25"]
    request = g.CallToolRequest(id=1, params=g.CallToolRequestParams(name="add"))
    assert json.loads(g.encode(request)) == {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "add"},
    }


def test_nested_union_error_path_is_joined(packages: dict[str, ModuleType]) -> None:
    g = packages["2025-11-25"]
    with pytest.raises(msgspec.ValidationError) as info:
        g.decode(b'{"contents": [{"uri": "x", "text": 5}]}', g.ReadResourceResult)
    assert str(info.value) == "Expected `str`, got `int` - at `$.contents[0].text`"


def test_older_revision_bindings_round_trip(packages: dict[str, ModuleType]) -> None:
    old = packages["2024-11-05"]
    value = {"content": [{"type": "text", "text": "x"}], "isError": True}
    assert_round_trip(old, value, old.CallToolResult)
    batch = [{"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    mid = packages["2025-03-26"]
    decoded = assert_round_trip(mid, batch, mid.JSONRPCMessage)
    assert [type(x).__name__ for x in decoded] == ["JSONRPCRequest", "JSONRPCNotification"]


def test_union_types_are_isinstance_checkable(packages: dict[str, ModuleType], model: Model) -> None:
    g = packages[model.revision]
    untagged = [u for u in model.unions() if not u.native and u.erased is None]
    assert untagged
    for u in untagged:
        assert isinstance(type(getattr(g.types, u.name)), type)
    assert isinstance(g.TextResourceContents(uri="u", text="t"), g.EmbeddedResourceResource)
    assert not isinstance(g.TextContent(text="t"), g.EmbeddedResourceResource)
