"""mcpgen.runtime.server.signature: callables -> MCP schemas and argument decoders."""

import dataclasses
import datetime
import enum
import json
import uuid
from typing import Annotated, Any, Literal, Optional, TypedDict

import msgspec
import pytest

from mcpgen.runtime.server.signature import ArgumentError, Signature, signature_of

try:  # a cross-check only; the structural checks below stand on their own
    import jsonschema
except ImportError:  # pragma: no cover
    jsonschema = None


class Ctx:
    """Stands in for the runtime's request context."""


class TextThing:
    """Stands in for an MCP content block."""


class Point(msgspec.Struct):
    """A point on the plane."""

    x: int
    y: int = 0


@dataclasses.dataclass
class Owner:
    name: str
    email: str | None = None


class Filter(TypedDict):
    field: str
    value: int


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Tree(msgspec.Struct):
    label: str
    children: list["Tree"] = []


# --- helpers -----------------------------------------------------------------


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [ref for key, value in node.items() if key != "default" for ref in _refs(value)]
    if isinstance(node, list):
        return [ref for item in node for ref in _refs(item)]
    return []


def assert_object_schema(schema: dict[str, Any]) -> None:
    """A JSON Schema object with an object root, whose every $ref resolves in its own $defs."""
    assert isinstance(schema, dict)
    assert schema["type"] == "object"
    json.dumps(schema, allow_nan=False)  # plain JSON data all the way down
    properties = schema.get("properties", {})
    assert isinstance(properties, dict)
    assert all(isinstance(sub, dict) for sub in properties.values())
    required = schema.get("required", [])
    assert isinstance(required, list) and set(required) <= set(properties)
    defs = schema.get("$defs", {})
    assert isinstance(defs, dict)
    for ref in _refs(schema):
        assert ref.startswith("#/$defs/"), ref
        assert ref.removeprefix("#/$defs/") in defs, ref
    if jsonschema is not None:
        jsonschema.Draft202012Validator.check_schema(schema)


def sig(fn: Any, **kwargs: Any) -> Signature:
    """signature_of plus the schema checks every produced signature must pass."""
    result = signature_of(fn, inject_types=(Ctx,), content_types=(TextThing,), **kwargs)
    assert_object_schema(result.input_schema)
    assert result.input_schema["additionalProperties"] is False
    if result.output_schema is not None:
        assert_object_schema(result.output_schema)
    return result


def valid(schema: dict[str, Any], instance: Any) -> bool:
    if jsonschema is None:  # pragma: no cover
        return True
    return jsonschema.Draft202012Validator(schema).is_valid(instance)


# --- input schemas -----------------------------------------------------------


def test_primitives_are_required_properties() -> None:
    def f(s: str, i: int, x: float, b: bool, anything, nothing: None) -> None: ...

    schema = sig(f).input_schema
    assert schema["properties"] == {
        "s": {"type": "string"},
        "i": {"type": "integer"},
        "x": {"type": "number"},
        "b": {"type": "boolean"},
        "anything": {},
        "nothing": {"type": "null"},
    }
    assert schema["required"] == ["s", "i", "x", "b", "anything", "nothing"]
    assert "$defs" not in schema


def test_defaults_are_optional_and_advertised() -> None:
    sentinel = object()

    # A mutable default on purpose: its value is what the schema must advertise.
    def f(a: int, b: int = 3, c: str = "hi", d: list[int] = [1, 2], e: Color = Color.GREEN, z: Any = sentinel): ...  # noqa: B006

    schema = sig(f).input_schema
    assert schema["required"] == ["a"]
    props = schema["properties"]
    assert props["b"]["default"] == 3
    assert props["c"]["default"] == "hi"
    assert props["d"]["default"] == [1, 2]
    assert props["e"]["default"] == "green"
    assert "default" not in props["z"]  # not JSON: left out, still optional


def test_optional_and_literal() -> None:
    # typing.Optional on purpose: both spellings of an optional parameter must read the same.
    def f(mode: Literal["fast", "slow"], limit: Optional[int] = None, tag: str | None = None): ...  # noqa: UP045

    schema = sig(f).input_schema
    props = schema["properties"]
    assert props["mode"] == {"enum": ["fast", "slow"]}
    assert props["limit"] == {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None}
    assert props["tag"]["default"] is None
    assert schema["required"] == ["mode"]


def test_optional_without_default_is_required() -> None:
    def f(limit: int | None): ...

    assert sig(f).input_schema["required"] == ["limit"]


def test_annotated_constraints_and_descriptions() -> None:
    def f(
        n: Annotated[int, msgspec.Meta(ge=1, le=10, description="How many.")],
        name: Annotated[str, msgspec.Meta(min_length=2, pattern="^[a-z]+$")] = "ab",
        ratio: Annotated[float, msgspec.Meta(gt=0.0, lt=1.0)] = 0.5,
    ): ...

    props = sig(f).input_schema["properties"]
    assert props["n"] == {"description": "How many.", "type": "integer", "minimum": 1, "maximum": 10}
    assert props["name"] == {"type": "string", "minLength": 2, "pattern": "^[a-z]+$", "default": "ab"}
    assert props["ratio"]["exclusiveMinimum"] == 0.0 and props["ratio"]["exclusiveMaximum"] == 1.0


def test_nested_types_live_in_defs() -> None:
    def f(p: Point, owner: Owner, filters: list[Filter], color: Color, tree: Tree | None = None): ...

    schema = sig(f).input_schema
    props = schema["properties"]
    assert props["p"] == {"$ref": "#/$defs/Point"}
    assert props["owner"] == {"$ref": "#/$defs/Owner"}
    assert props["filters"] == {"type": "array", "items": {"$ref": "#/$defs/Filter"}}
    assert props["color"] == {"$ref": "#/$defs/Color"}
    assert set(schema["$defs"]) == {"Point", "Owner", "Filter", "Color", "Tree"}
    assert schema["$defs"]["Point"]["required"] == ["x"]
    assert schema["$defs"]["Point"]["description"] == "A point on the plane."
    assert sorted(schema["$defs"]["Color"]["enum"]) == ["green", "red"]
    assert valid(
        schema,
        {"p": {"x": 1}, "owner": {"name": "a"}, "filters": [{"field": "f", "value": 1}], "color": "red"},
    )
    assert not valid(schema, {"p": {"x": "1"}, "owner": {"name": "a"}, "filters": [], "color": "red"})


def test_defs_only_hold_what_is_referenced() -> None:
    def f(x: int) -> Point: ...

    s = sig(f)
    assert "$defs" not in s.input_schema
    assert "$defs" not in s.output_schema  # type: ignore[operator]


def test_collections() -> None:
    def f(
        ints: list[int],
        scores: dict[str, float],
        pair: tuple[int, str],
        tags: set[str] = set(),  # noqa: B006 (a default of a collection type is the case under test)
        rest: tuple[int, ...] = (),
    ): ...

    props = sig(f).input_schema["properties"]
    assert props["ints"] == {"type": "array", "items": {"type": "integer"}}
    assert props["scores"] == {"type": "object", "additionalProperties": {"type": "number"}}
    assert props["pair"]["prefixItems"] == [{"type": "integer"}, {"type": "string"}]
    assert props["tags"]["type"] == "array" and props["tags"]["uniqueItems"] is True
    assert props["tags"]["default"] == []
    assert props["rest"]["default"] == []


def test_string_annotations_are_resolved() -> None:
    def f(p: "Point", n: "int" = 1) -> "Owner": ...

    s = sig(f)
    assert s.input_schema["properties"]["p"] == {"$ref": "#/$defs/Point"}
    assert s.output_schema is not None and s.output_schema["title"] == "Owner"


def test_no_parameters() -> None:
    def f() -> None: ...

    s = sig(f)
    assert s.input_schema == {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    }
    assert s.decode_arguments(None) == {}
    assert s.decode_arguments({}) == {}


def test_user_type_named_like_the_arguments_struct() -> None:
    class f_arguments(msgspec.Struct):
        v: int

    def f(a: f_arguments) -> None: ...

    s = sig(f)
    (name,) = s.input_schema["$defs"]
    assert s.input_schema["properties"]["a"] == {"$ref": f"#/$defs/{name}"}
    assert s.input_schema["$defs"][name]["properties"] == {"v": {"type": "integer"}}
    assert s.decode_arguments({"a": {"v": 1}}) == {"a": f_arguments(v=1)}


# --- decoding ----------------------------------------------------------------


def test_decode_converts_nested_objects_and_applies_defaults() -> None:
    def f(
        p: Point,
        owner: Owner,
        filters: list[Filter],
        color: Color = Color.RED,
        when: datetime.date | None = None,
    ): ...

    s = sig(f)
    kwargs = s.decode_arguments({"p": {"x": 1}, "owner": {"name": "ann"}, "filters": [{"field": "a", "value": 2}]})
    assert kwargs == {
        "p": Point(x=1, y=0),
        "owner": Owner(name="ann"),
        "filters": [{"field": "a", "value": 2}],
        "color": Color.RED,
        "when": None,
    }
    assert type(kwargs["p"]) is Point and type(kwargs["owner"]) is Owner
    kwargs = s.decode_arguments(
        {
            "p": {"x": 1, "y": 2},
            "owner": {"name": "b", "email": "b@x"},
            "filters": [],
            "color": "green",
            "when": "2024-05-06",
        }
    )
    assert kwargs["color"] is Color.GREEN
    assert kwargs["when"] == datetime.date(2024, 5, 6)


def test_decode_json_native_types() -> None:
    def f(
        at: datetime.datetime,
        ident: uuid.UUID,
        tags: set[str],
        pair: tuple[int, str],
        scores: dict[str, float],
    ): ...

    kwargs = sig(f).decode_arguments(
        {
            "at": "2024-01-02T03:04:05Z",
            "ident": "12345678-1234-5678-1234-567812345678",
            "tags": ["a", "b", "a"],
            "pair": [1, "x"],
            "scores": {"a": 1, "b": 0.5},
        }
    )
    assert kwargs["at"] == datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    assert kwargs["ident"] == uuid.UUID("12345678-1234-5678-1234-567812345678")
    assert kwargs["tags"] == {"a", "b"}
    assert kwargs["pair"] == (1, "x")
    assert kwargs["scores"] == {"a": 1.0, "b": 0.5}


def test_mutable_default_behaves_like_python() -> None:
    default = [1, 2]

    def f(items: list[int] = default): ...

    s = sig(f)
    assert s.decode_arguments(None)["items"] is default
    assert s.decode_arguments({"items": [3]}) == {"items": [3]}


def test_none_arguments_mean_empty_object() -> None:
    def f(a: int = 1, b: str = "x"): ...

    s = sig(f)
    assert s.decode_arguments(None) == {"a": 1, "b": "x"}
    assert s.decode_arguments({}) == {"a": 1, "b": "x"}


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"a": "1", "b": 1}, "Expected `int`, got `str` - at `$.a`"),
        ({"a": 1}, "missing required argument `b`"),
        ({"a": 1, "b": 2, "x": 3}, "unknown argument `x`"),
        ({"a": 1, "b": 2, "n": 0}, "Expected `int` >= 1 - at `$.n`"),
        ({"a": 1, "b": 2, "n": 11}, "Expected `int` <= 10 - at `$.n`"),
        ({"a": 1, "b": 2, "name": "a"}, "Expected `str` of length >= 2 - at `$.name`"),
        ({"a": 1, "b": 2, "name": "AB"}, "Expected `str` matching regex '^[a-z]+$' - at `$.name`"),
        ({"a": 1, "b": 2, "mode": "medium"}, "Invalid enum value 'medium' - at `$.mode`"),
        ({"a": 1, "b": 2, "p": {"x": "1"}}, "Expected `int`, got `str` - at `$.p.x`"),
        ({"a": 1, "b": 2, "p": {}}, "Object missing required field `x` - at `$.p`"),
        ({"a": 1, "b": 2, "a2": True}, "unknown argument `a2`"),
        ({"a": True, "b": 1}, "Expected `int`, got `bool` - at `$.a`"),
    ],
)
def test_decode_rejects_bad_arguments(arguments: dict[str, Any], message: str) -> None:
    def f(
        a: int,
        b: int,
        n: Annotated[int, msgspec.Meta(ge=1, le=10)] = 1,
        name: Annotated[str, msgspec.Meta(min_length=2, pattern="^[a-z]+$")] = "ab",
        mode: Literal["fast", "slow"] = "fast",
        p: Point | None = None,
    ): ...

    with pytest.raises(ArgumentError) as info:
        sig(f).decode_arguments(arguments)
    assert str(info.value) == message
    assert "\n" not in str(info.value)
    assert isinstance(info.value, ValueError)


def test_decode_rejects_non_object_arguments() -> None:
    def f(a: int = 1): ...

    with pytest.raises(ArgumentError, match="must be a JSON object"):
        sig(f).decode_arguments([1])  # type: ignore[arg-type]


def test_decode_accepts_any_mapping() -> None:
    from types import MappingProxyType

    def f(a: int): ...

    assert sig(f).decode_arguments(MappingProxyType({"a": 1})) == {"a": 1}


# --- context parameter -------------------------------------------------------


# typing.Optional on purpose: every spelling of the context annotation is recognised.
@pytest.mark.parametrize("annotation", [Ctx, Optional[Ctx], Annotated[Ctx, "injected"], Ctx | None])  # noqa: UP045
def test_context_parameter_is_excluded(annotation: Any) -> None:
    def f(query: str, ctx=None, limit: int = 5) -> str: ...

    f.__annotations__["ctx"] = annotation
    s = sig(f)
    assert s.context_param == "ctx"
    assert set(s.input_schema["properties"]) == {"query", "limit"}
    assert s.input_schema["required"] == ["query"]
    assert s.decode_arguments({"query": "q"}) == {"query": "q", "limit": 5}
    with pytest.raises(ArgumentError, match="unknown argument `ctx`"):
        s.decode_arguments({"query": "q", "ctx": {}})


def test_no_context_parameter() -> None:
    def f(query: str): ...

    assert sig(f).context_param is None


def test_two_context_parameters_are_rejected() -> None:
    def f(a: Ctx, b: Ctx): ...

    with pytest.raises(TypeError, match="two context parameters"):
        signature_of(f, inject_types=(Ctx,))


# --- output schemas ----------------------------------------------------------


def test_output_struct() -> None:
    def f() -> Point: ...

    s = sig(f)
    assert s.wrap_result is False
    assert s.output_schema is not None
    assert s.output_schema["properties"] == {"x": {"type": "integer"}, "y": {"type": "integer", "default": 0}}
    assert s.output_schema["required"] == ["x"]


def test_output_dataclass() -> None:
    def f() -> Owner: ...

    s = sig(f)
    assert s.wrap_result is False
    assert s.output_schema is not None and set(s.output_schema["properties"]) == {"name", "email"}


def test_output_typeddict() -> None:
    def f() -> Filter: ...

    s = sig(f)
    assert s.wrap_result is False
    assert s.output_schema is not None and s.output_schema["required"] == ["field", "value"]


def test_output_dict() -> None:
    def f() -> dict[str, int]: ...

    s = sig(f)
    assert s.wrap_result is False
    assert s.output_schema == {"type": "object", "additionalProperties": {"type": "integer"}}


def test_output_recursive_struct_keeps_its_defs() -> None:
    def f() -> Tree: ...

    s = sig(f)
    assert s.output_schema is not None
    assert s.output_schema["properties"]["children"]["items"] == {"$ref": "#/$defs/Tree"}
    assert "Tree" in s.output_schema["$defs"]


@pytest.mark.parametrize(
    ("annotation", "inner"),
    [
        (int, {"type": "integer"}),
        (list[str], {"type": "array", "items": {"type": "string"}}),
        (str | None, {"anyOf": [{"type": "string"}, {"type": "null"}]}),
        (list[Point], {"type": "array", "items": {"$ref": "#/$defs/Point"}}),
    ],
)
def test_output_other_types_are_wrapped(annotation: Any, inner: dict[str, Any]) -> None:
    def f(): ...

    f.__annotations__["return"] = annotation
    s = sig(f)
    assert s.wrap_result is True
    assert s.output_schema is not None
    assert s.output_schema["properties"] == {"result": inner}
    assert s.output_schema["required"] == ["result"]


@pytest.mark.parametrize("annotation", [None, TextThing, list[TextThing], TextThing | None, Annotated[TextThing, "x"]])
def test_no_output_schema(annotation: Any) -> None:
    def f(): ...

    f.__annotations__["return"] = annotation
    s = sig(f)
    assert s.output_schema is None
    assert s.wrap_result is False


def test_missing_return_annotation_has_no_output_schema() -> None:
    def f(a: int): ...

    s = sig(f)
    assert s.output_schema is None and s.wrap_result is False


# --- metadata ----------------------------------------------------------------


def test_name_and_description() -> None:
    def search_docs(q: str) -> None:
        """Search the   documentation
        for a phrase.

        Args:
            q: the phrase.
        """

    def bare(q: str) -> None: ...

    assert sig(search_docs).name == "search_docs"
    assert sig(search_docs).description == "Search the documentation for a phrase."
    assert sig(bare).description is None


def test_async_detection() -> None:
    async def a(x: int) -> int:
        return x

    def s(x: int) -> int:
        return x

    assert sig(a).is_async is True
    assert sig(s).is_async is False


# --- rejected callables ------------------------------------------------------


def test_var_positional_is_rejected() -> None:
    def f(a: int, *args: int): ...

    with pytest.raises(TypeError, match=r"\*args"):
        signature_of(f)


def test_var_keyword_is_rejected() -> None:
    def f(a: int, **kwargs: int): ...

    with pytest.raises(TypeError, match=r"\*\*kwargs"):
        signature_of(f)


def test_positional_only_is_rejected() -> None:
    def f(a: int, /, b: int): ...

    with pytest.raises(TypeError, match="positional-only"):
        signature_of(f)


def test_unsupported_parameter_type_is_rejected() -> None:
    class Opaque: ...

    def f(a: Opaque): ...

    with pytest.raises(TypeError, match="unsupported parameter type in `f`"):
        signature_of(f)
