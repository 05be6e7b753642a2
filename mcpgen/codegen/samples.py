"""Test vectors made from the model: valid JSON for every type, and invalid variants.

For each struct: a *full* instance (every field) and a *minimal* one (required fields
only), and for each field the ways to break it (a value of the wrong JSON type, the field
left out when it is required, a number outside its bounds, a const with another value).
The tests decode all of them with the generated package.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from mcpgen.codegen.discriminate import value_kind
from mcpgen.codegen.ir import (
    AliasDef,
    Const,
    DictOf,
    Field,
    ListOf,
    Model,
    Named,
    Prim,
    StructDef,
    TypeExpr,
    UnionDef,
    UnionOf,
)

_MAX_DEPTH = 4


@dataclass(frozen=True)
class Invalid:
    """A JSON value that must fail to decode as ``type_name``, with an error naming ``field``."""

    type_name: str
    field: str  # wire name the error must mention
    why: str
    value: Any


class SampleMaker:
    def __init__(self, model: Model) -> None:
        self.model = model

    # -------------------------------------------------------------- valid values

    def value(self, expr: TypeExpr, *, full: bool = True, depth: int = 0, variant: int = 0) -> Any:
        """A valid JSON value of ``expr``; ``variant`` picks a union member."""
        if isinstance(expr, Named):
            typedef = self.model.types[expr.name]
            if isinstance(typedef, StructDef):
                return self.struct(typedef, full=full and depth < _MAX_DEPTH, depth=depth)
            if typedef.erased is not None:  # on a cycle of aliases: plain JSON of its shape
                return self.value(typedef.erased, full=full, depth=depth)
            if isinstance(typedef, AliasDef):
                return self.value(typedef.target, full=full, depth=depth)
            members = typedef.members
            return self.value(members[variant % len(members)], full=full, depth=depth + 1)
        if isinstance(expr, UnionOf):
            return self.value(expr.members[variant % len(expr.members)], full=full, depth=depth)
        if isinstance(expr, Const):
            return expr.values[0]
        if isinstance(expr, ListOf):
            if depth >= _MAX_DEPTH and not expr.min_items:
                return []
            return [self.value(expr.item, full=full, depth=depth + 1)] * max(1, expr.min_items or 1)
        if isinstance(expr, DictOf):
            if isinstance(expr.value, Prim) and expr.value.name == "Any":
                return {"free": {"form": [1, "two", None, True]}, "x-extra": 3.5}
            return {"key": self.value(expr.value, full=full, depth=depth + 1)}
        return self.scalar(expr)

    @staticmethod
    def scalar(p: Prim) -> Any:
        if p.name == "str":
            return {
                "uri": "file:///tmp/example.txt",
                "uri-template": "file:///{path}",
                "byte": "aGVsbG8=",
                "date-time": "2025-01-12T15:00:58Z",
            }.get(p.format or "", "text")
        if p.name == "int":
            return int(p.ge) if p.ge is not None else 7
        if p.name == "float":
            low = p.ge if p.ge is not None else 0.0
            high = p.le if p.le is not None else low + 1.0
            return (low + high) / 2
        if p.name == "bool":
            return True
        if p.name == "None":
            return None
        return {"any": ["json", 1]}

    def struct(self, s: StructDef, *, full: bool, depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if s.tag_field:
            out[s.tag_field] = s.tag_value
        for f in s.fields:
            if f.wire_name in s.reserved:
                out[f.wire_name] = s.reserved[f.wire_name]
            elif f.required or full:
                out[f.wire_name] = self.value(f.type, full=full, depth=depth + 1)
        return out

    def union_samples(self, union: UnionDef) -> Iterator[tuple[TypeExpr, Any]]:
        """One full sample per member of a union, with the member it came from."""
        for member in union.members:
            yield member, self.value(member, full=True, depth=1)

    # -------------------------------------------------------------- invalid values

    def invalid(self, s: StructDef) -> Iterator[Invalid]:
        base = self.struct(s, full=True, depth=0)
        for f in s.fields:
            if f.wire_name == s.tag_field:
                yield Invalid(s.name, f.wire_name, "wrong tag", {**base, f.wire_name: "no-such-tag"})
                continue
            wrong = self.wrong_type(f)
            if wrong is not None:
                yield Invalid(s.name, f.wire_name, "wrong type", {**base, f.wire_name: wrong})
            if f.required and not f.is_const:
                broken = {k: v for k, v in base.items() if k != f.wire_name}
                yield Invalid(s.name, f.wire_name, "missing required", broken)
            if isinstance(f.type, Const) and all(isinstance(v, str) for v in f.type.values):
                bad = "-".join(str(v) for v in f.type.values) + "-x"
                yield Invalid(s.name, f.wire_name, "bad const", {**base, f.wire_name: bad})
            out_of_bounds = self.out_of_bounds(f)
            if out_of_bounds is not None:
                yield Invalid(s.name, f.wire_name, "out of bounds", {**base, f.wire_name: out_of_bounds})

    def wrong_type(self, f: Field) -> Any:
        """A JSON value the field's type rejects, or None when it accepts anything."""
        kinds = self.kinds(f.type)
        if "any" in kinds:
            return None
        for candidate, kind in (
            ({"not": "this"}, "object"),
            ([["nested"]], "array"),
            ("a string", "string"),
            (True, "boolean"),
            (12345, "integer"),
        ):
            if kind not in kinds and not (kind == "integer" and "number" in kinds):
                return candidate
        return None

    def kinds(self, expr: TypeExpr) -> set[str]:
        if isinstance(expr, Named):
            typedef = self.model.types[expr.name]
            if isinstance(typedef, StructDef):
                return {"object"}
            if isinstance(typedef, AliasDef):
                return self.kinds(typedef.target)
            return set().union(*(self.kinds(m) for m in typedef.members))
        if isinstance(expr, UnionOf):
            return set().union(*(self.kinds(m) for m in expr.members))
        if isinstance(expr, ListOf):
            return {"array"}
        if isinstance(expr, DictOf):
            return {"object"}
        if isinstance(expr, Const):
            return {value_kind(v) for v in expr.values}
        return {
            {"str": "string", "int": "integer", "float": "number", "bool": "boolean", "None": "null", "Any": "any"}[
                expr.name
            ]
        }

    @staticmethod
    def out_of_bounds(f: Field) -> Any:
        t = f.type
        if isinstance(t, Prim) and t.name in ("int", "float"):
            if t.le is not None:
                return t.le + 1
            if t.ge is not None:
                return t.ge - 1
        return None
