"""The intermediate model: every decision about the generated code is made here.

Templates only print what this model says. A schema is turned into named types (structs,
aliases, unions), each field typed with a small :data:`TypeExpr` tree, plus the method
table that drives dispatch and the typed stubs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

# ---------------------------------------------------------------- type expressions


@dataclass(frozen=True)
class Prim:
    """A JSON scalar (or anything): ``str``, ``int``, ``float``, ``bool``, ``None``, ``Any``."""

    name: Literal["str", "int", "float", "bool", "None", "Any"]
    ge: float | None = None  # inclusive bounds (JSON Schema minimum / maximum)
    le: float | None = None
    gt: float | None = None  # exclusive bounds
    lt: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    format: str | None = None

    @property
    def constrained(self) -> bool:
        return any(
            v is not None for v in (self.ge, self.le, self.gt, self.lt, self.min_length, self.max_length, self.pattern)
        )


@dataclass(frozen=True)
class ListOf:
    item: TypeExpr
    min_items: int | None = None
    max_items: int | None = None


@dataclass(frozen=True)
class DictOf:
    """A JSON object kept as a dict; ``value`` is ``Prim("Any")`` for free-form objects."""

    value: TypeExpr


@dataclass(frozen=True)
class Const:
    """One or more allowed JSON scalars (``const`` or an inline ``enum``)."""

    values: tuple[str | int | float | bool | None, ...]


@dataclass(frozen=True)
class Named:
    """A reference to a named type of the model."""

    name: str


@dataclass(frozen=True)
class UnionOf:
    members: tuple[TypeExpr, ...]


TypeExpr = Prim | ListOf | DictOf | Const | Named | UnionOf


def type_label(expr: TypeExpr) -> str:
    """A short, Python-like spelling of a type expression for messages."""
    if isinstance(expr, Named):
        return expr.name
    if isinstance(expr, Prim):
        return expr.name
    if isinstance(expr, ListOf):
        return f"list[{type_label(expr.item)}]"
    if isinstance(expr, DictOf):
        return f"dict[str, {type_label(expr.value)}]"
    if isinstance(expr, Const):
        return f"Literal[{', '.join(repr(v) for v in expr.values)}]"
    return " | ".join(type_label(m) for m in expr.members)


# ---------------------------------------------------------------- named types

JsonKind = Literal["object", "array", "string", "integer", "number", "boolean", "null", "any"]


@dataclass
class Field:
    wire_name: str
    py_name: str
    type: TypeExpr
    required: bool
    description: str | None = None
    # What msgspec reads at run time when it differs from ``type``: the same shape with a
    # wired untagged union replaced by its wire struct (see :mod:`mcpgen.codegen.wire`).
    runtime_type: TypeExpr | None = None

    @property
    def const_value(self) -> Any:
        """The single value of a const field, else ``None``."""
        if isinstance(self.type, Const) and len(self.type.values) == 1:
            return self.type.values[0]
        return None

    @property
    def is_const(self) -> bool:
        return isinstance(self.type, Const) and len(self.type.values) == 1


@dataclass
class StructDef:
    name: str
    fields: list[Field]
    pointer: str  # JSON pointer of the schema node it came from
    description: str | None = None
    page: str = ""
    tag_field: str | None = None  # wire name of the msgspec tag field, when tagged
    # Values the protocol reserves for this struct though the schema types the field
    # loosely (InputRequiredResult's resultType "input_required"): wire name -> value.
    reserved: dict[str, Any] = field(default_factory=dict)
    kind: Literal["struct"] = "struct"

    def field_by_wire(self, wire_name: str) -> Field | None:
        for f in self.fields:
            if f.wire_name == wire_name:
                return f
        return None

    @property
    def tag_value(self) -> Any:
        assert self.tag_field is not None
        f = self.field_by_wire(self.tag_field)
        assert f is not None
        return f.const_value


@dataclass
class AliasDef:
    """A named type that is another type: primitives, enums (as Literal), open objects."""

    name: str
    target: TypeExpr
    pointer: str
    description: str | None = None
    page: str = ""
    # Set for a type on a cycle of aliases and unions (msgspec cannot take a recursive
    # alias): what the name stands for at run time; type checkers still see ``target``.
    erased: TypeExpr | None = None
    kind: Literal["alias"] = "alias"


@dataclass(frozen=True)
class Check:
    """One test of a decoded JSON value that selects a union variant.

    ``op`` is ``kind`` (the value's JSON kind is ``value``), ``has`` (an object has a key
    at ``path``), ``eq`` (the key at ``path`` equals ``value``) or ``in`` (it is one of
    the values in ``value``).
    """

    op: Literal["kind", "has", "eq", "in"]
    path: tuple[str, ...] = ()
    value: Any = None


@dataclass
class Rule:
    check: Check
    variant: TypeExpr
    guaranteed: bool  # every instance of the variant passes the check


@dataclass
class UnionDef:
    name: str
    members: list[TypeExpr]
    pointer: str
    description: str | None = None
    page: str = ""
    tag_field: str | None = None  # set when msgspec can decode it natively as a tagged union
    native: bool = False  # msgspec decodes it without help
    rules: list[Rule] = field(default_factory=list)  # for non-native unions, tried in order
    fallback: TypeExpr | None = None
    erased: TypeExpr | None = None  # as for AliasDef: set on a cycle of aliases and unions
    kind: Literal["union"] = "union"


TypeDef = StructDef | AliasDef | UnionDef


# ---------------------------------------------------------------- wire forms of untagged unions


@dataclass
class WireValue:
    """One keyword argument of an arm built from its union's wire struct."""

    py_name: str  # the arm's attribute
    attr: str  # the wire struct's attribute that holds the value
    wire_name: str
    # When the wire struct holds UNSET: the arm's required field is missing ("error"),
    # takes its const default ("default"), or is optional and stays unset ("unset").
    missing: Literal["error", "default", "unset"]
    default: Any = None
    # The arm's type, when the wire decoded something wider (plain JSON or a union).
    check: TypeExpr | None = None
    checked_as: TypeExpr | None = None  # what the wire decoded it as (Prim("Any"): plain JSON)


@dataclass
class WireArm:
    condition: Check | None  # on the wire struct's attributes; None for the fallback
    struct: str  # the arm's class
    values: list[WireValue]


@dataclass
class WireUnion:
    """How a union in a struct field decodes in one msgspec pass: ``struct`` holds every
    arm's fields, and the arms (in the union's rule order) say how each is built from it."""

    union: str
    struct: StructDef
    arms: list[WireArm]


@dataclass
class WireSlot:
    """A field that holds a wired union directly, as list items or as dict values."""

    field: Field
    union: str
    shape: Literal["one", "list", "dict"]


# ---------------------------------------------------------------- methods

Direction = Literal["c2s", "s2c"]


MethodKind = Literal["request", "notification", "input"]


@dataclass
class Method:
    """One message of the protocol.

    ``kind`` "input" is a request a server embeds in an InputRequiredResult for the client
    to answer in its retry (2026-07-28 on): it has params and a result but no JSON-RPC
    envelope of its own.
    """

    method: str
    kind: MethodKind
    direction: Direction
    message_type: str  # e.g. CallToolRequest
    params_type: TypeExpr | None
    params_required: bool
    result_type: str | None  # None for notifications
    capability: str | None
    py_name: str  # e.g. call_tool, on_progress
    input_required: bool = False  # the result may be one that asks the client for input
    cacheable: bool = False  # the (complete) result carries caching hints

    @property
    def key(self) -> str:
        return f"{self.direction} {self.method}"


@dataclass
class Report:
    level: Literal["info", "warning"]
    message: str


@dataclass
class Model:
    revision: str
    sha256: str
    source: str
    types: dict[str, TypeDef]
    methods: list[Method]
    reports: list[Report] = field(default_factory=list)
    wires: dict[str, WireUnion] = field(default_factory=dict)  # union name -> its wire form
    slots: dict[str, list[WireSlot]] = field(default_factory=dict)  # struct name -> wired fields
    # One page that specifies every type (an extension's spec), instead of the protocol
    # revision's page per section.
    spec_page: str | None = None

    def methods_for(self, direction: Direction, kind: str | None = None) -> list[Method]:
        """Messages sent in ``direction`` (all kinds but "input" unless asked for)."""
        return [m for m in self.methods if m.direction == direction and (m.kind == kind if kind else m.kind != "input")]

    def structs(self) -> list[StructDef]:
        return [t for t in self.types.values() if isinstance(t, StructDef)]

    def unions(self) -> list[UnionDef]:
        return [t for t in self.types.values() if isinstance(t, UnionDef)]

    def aliases(self) -> list[AliasDef]:
        return [t for t in self.types.values() if isinstance(t, AliasDef)]
