"""Decide how each union is decoded.

A union whose object variants all carry a const under one key becomes a msgspec tagged
union (decoded natively, in one pass). Any other union gets a derived rule: an ordered
list of :class:`~mcpgen.codegen.ir.Check` s, each naming the variant a JSON value belongs
to, found greedily:

1. a check every instance of the variant passes and no instance of any remaining
   variant can pass (its JSON kind, a const or enum value, a required key) selects it;
2. failing that, a key only this variant declares (optional) selects it, and instances
   without the key fall through to the others (reported as an ordered fallback);
3. an open object variant (kept as a dict) accepts anything, so it is the last resort;
4. variants no check can separate are reported as ambiguous; the first one wins.

Before all of that, a result the facts table gives a ``resultType`` of its own (such as
InputRequiredResult's "input_required") is chosen by that value: the schema types the
field as a plain string, but the protocol reserves the value for that one result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcpgen.codegen.facts import Facts
from mcpgen.codegen.ir import (
    AliasDef,
    Check,
    Const,
    DictOf,
    JsonKind,
    ListOf,
    Model,
    Named,
    Prim,
    Report,
    Rule,
    StructDef,
    TypeExpr,
    UnionDef,
    UnionOf,
    type_label,
)

_PRIM_KIND: dict[str, JsonKind] = {
    "str": "string",
    "int": "integer",
    "float": "number",
    "bool": "boolean",
    "None": "null",
    "Any": "any",
}
_TAG_PREFERENCE = ("type", "method", "kind", "mode")


@dataclass
class Leaf:
    """A union variant after aliases and nested unions are looked through."""

    expr: TypeExpr  # what decoding produces (a Named struct, a dict, a list, a scalar)
    kind: JsonKind
    struct: StructDef | None = None  # for object variants that are structs

    @property
    def label(self) -> str:
        return type_label(self.expr)

    @property
    def is_dict(self) -> bool:
        return self.kind == "object" and self.struct is None


def resolve_unions(model: Model, facts: Facts | None = None) -> None:
    unions = [u for u in model.unions() if u.erased is None]
    for union in unions:
        _assign_tag(model, union)
    tags = _result_tags(model, facts)
    for union in unions:
        leaves = leaves_of(model, union.members)
        union.native = _is_native(leaves)
        if not union.native:
            _RuleFinder(model, tags).derive(union, leaves)


def _result_tags(model: Model, facts: Facts | None) -> dict[str, Check]:
    """Struct name -> the ``resultType`` check reserved for it by the facts table."""
    if facts is None or facts.result_type_field is None:
        return {}
    tags = {}
    for struct in model.structs():
        value = facts.result_type_value(struct.name)
        if value is not None and struct.field_by_wire(facts.result_type_field) is not None:
            tags[struct.name] = Check("eq", (facts.result_type_field,), value)
            struct.reserved[facts.result_type_field] = value
    return tags


# ------------------------------------------------------------------ leaves


def leaves_of(model: Model, members: list[TypeExpr] | tuple[TypeExpr, ...]) -> list[Leaf]:
    out: list[Leaf] = []
    for member in members:
        out.extend(_leaves(model, member))
    return out


def _leaves(model: Model, expr: TypeExpr) -> list[Leaf]:
    if isinstance(expr, Named):
        typedef = model.types[expr.name]
        if isinstance(typedef, StructDef):
            return [Leaf(expr, "object", typedef)]
        if isinstance(typedef, UnionDef):
            return leaves_of(model, typedef.members)
        inner = _leaves(model, typedef.target)
        # Keep the alias name when it stands for a single variant (e.g. Result).
        return [Leaf(expr, inner[0].kind, inner[0].struct)] if len(inner) == 1 else inner
    if isinstance(expr, UnionOf):
        return leaves_of(model, expr.members)
    if isinstance(expr, DictOf):
        return [Leaf(expr, "object")]
    if isinstance(expr, ListOf):
        return [Leaf(expr, "array")]
    if isinstance(expr, Const):
        return [Leaf(Const((v,)), value_kind(v)) for v in expr.values]
    assert isinstance(expr, Prim)
    return [Leaf(expr, _PRIM_KIND[expr.name])]


def value_kind(value: Any) -> JsonKind:
    """The JSON kind of a scalar (bool before int: True is an int in Python)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "any"


# ------------------------------------------------------------------ tags


def _assign_tag(model: Model, union: UnionDef) -> None:
    leaves = leaves_of(model, union.members)
    objects = [leaf for leaf in leaves if leaf.kind == "object"]
    structs = [leaf.struct for leaf in objects if leaf.struct is not None]
    if len(objects) < 2 or len(structs) != len(objects):
        return
    candidates = _tag_candidates(structs)
    if not candidates:
        return
    tag = sorted(candidates, key=lambda c: (c not in _TAG_PREFERENCE, _pref_index(c), c))[0]
    for struct in structs:
        struct.tag_field = tag
    union.tag_field = tag


def _pref_index(name: str) -> int:
    return _TAG_PREFERENCE.index(name) if name in _TAG_PREFERENCE else len(_TAG_PREFERENCE)


def _tag_candidates(structs: list[StructDef]) -> list[str]:
    names = None
    for s in structs:
        consts = {f.wire_name for f in s.fields if f.required and f.is_const and isinstance(f.const_value, str)}
        names = consts if names is None else names & consts
    out = []
    for name in sorted(names or ()):
        values = [s.field_by_wire(name).const_value for s in structs]  # type: ignore[union-attr]
        if len(set(values)) != len(values):
            continue
        if any(s.tag_field not in (None, name) for s in structs):
            continue
        out.append(name)
    return out


def _is_native(leaves: list[Leaf]) -> bool:
    """Whether msgspec can decode a union of these leaves without help."""
    counts: dict[str, int] = {}
    for leaf in leaves:
        counts[leaf.kind] = counts.get(leaf.kind, 0) + 1
    objects = [leaf for leaf in leaves if leaf.kind == "object"]
    if len(objects) > 1:
        tags = {leaf.struct.tag_field if leaf.struct else None for leaf in objects}
        if len(tags) != 1 or None in tags:
            return False
    if counts.get("array", 0) > 1:
        return False
    scalars = [leaf for leaf in leaves if leaf.kind not in ("object", "array", "any")]
    plain_kinds = [leaf.kind for leaf in scalars if not isinstance(leaf.expr, Const)]
    return len(plain_kinds) == len(set(plain_kinds))


# ------------------------------------------------------------------ rules


class _RuleFinder:
    def __init__(self, model: Model, tags: dict[str, Check]) -> None:
        self.model = model
        self.tags = tags  # reserved resultType values, by struct name
        self.reserved = {(c.path, c.value) for c in tags.values()}

    def derive(self, union: UnionDef, leaves: list[Leaf]) -> None:
        dicts = [leaf for leaf in leaves if leaf.is_dict]
        remaining = [leaf for leaf in leaves if not leaf.is_dict]
        for leaf in list(remaining):
            tag = self.tags.get(leaf.struct.name) if leaf.struct else None
            if tag is not None and len(remaining) + len(dicts) > 1:
                union.rules.append(Rule(tag, leaf.expr, True))
                remaining.remove(leaf)
        while len(remaining) > 1 or (remaining and dicts):
            found = self.find(remaining, True, bool(dicts)) or self.find(remaining, False, bool(dicts))
            if found is None:
                names = ", ".join(x.label for x in remaining)
                if self.same_shape(remaining):
                    # Nothing is lost: every variant decodes the same JSON to the same data.
                    self.report("info", f"{union.name}: {names} have one shape; decoding picks {remaining[0].label}")
                else:
                    self.report(
                        "warning", f"{union.name}: cannot tell {names} apart; decoding picks {remaining[0].label}"
                    )
                winner = remaining[0]
                if dicts:  # the structs still need a check that keeps them from the dict
                    union.rules.append(Rule(self.must_checks(winner)[-1], winner.expr, True))
                    remaining = []
                else:
                    remaining = [winner]
                break
            rule, leaf = found
            if not rule.guaranteed:
                fellow = self.absorber(leaf, [o for o in remaining if o is not leaf])
                self.report(
                    "info",
                    f"{union.name}: {leaf.label} is chosen when {describe(rule.check)}; "
                    f"without it the value decodes as {fellow.label if fellow else '?'}",
                )
            union.rules.append(rule)
            remaining.remove(leaf)
        if dicts:
            if len(dicts) > 1:
                names = ", ".join(x.label for x in dicts)
                self.report("info", f"{union.name}: open objects {names} look alike; {dicts[0].label} is used")
            union.fallback = dicts[0].expr
        elif remaining:
            union.fallback = remaining[0].expr

    @staticmethod
    def same_shape(leaves: list[Leaf]) -> bool:
        shapes = {
            tuple((f.wire_name, f.required, repr(f.type)) for f in leaf.struct.fields) if leaf.struct else None
            for leaf in leaves
        }
        return len(shapes) == 1 and None not in shapes

    def report(self, level: Any, message: str) -> None:
        self.model.reports.append(Report(level, message))

    def find(self, remaining: list[Leaf], guaranteed: bool, open_objects: bool = False) -> tuple[Rule, Leaf] | None:
        """A check that selects one leaf and no other remaining one. With an open object
        (kept as a dict) among the variants, "it is an object" would take every object the
        dict should get, so a key check is preferred there."""
        for leaf in remaining:
            others = [o for o in remaining if o is not leaf]
            if guaranteed:
                checks = self.must_checks(leaf)
            elif self.absorber(leaf, others) is not None:
                checks = self.optional_checks(leaf)
            else:
                continue
            if open_objects and leaf.kind == "object" and len(checks) > 1:
                checks = [c for c in checks if c.op != "kind"]
            for check in checks:
                if not any(self.can_pass(o, check) for o in others):
                    return Rule(check, leaf.expr, guaranteed), leaf
        return None

    def absorber(self, leaf: Leaf, others: list[Leaf]) -> Leaf | None:
        """Another variant every instance of ``leaf`` also satisfies, as far as the
        checks can see: selecting ``leaf`` by an optional key is then safe, because its
        instances without the key still decode (as that variant)."""
        mine = set(self.must_checks(leaf))
        fellows = [o for o in others if set(self.must_checks(o)) <= mine]
        return max(fellows, key=lambda o: len(self.must_checks(o)), default=None)

    def must_checks(self, leaf: Leaf) -> list[Check]:
        """Checks every instance of the leaf passes, most telling first."""
        checks = [Check("kind", (), leaf.kind)]
        if leaf.struct is None:
            return checks
        if leaf.struct.name in self.tags:
            checks.append(self.tags[leaf.struct.name])
        consts: list[Check] = []
        enums: list[Check] = []
        keys: list[Check] = []
        nested: list[Check] = []
        for f in leaf.struct.fields:
            if not f.required:
                continue
            if f.is_const:
                consts.append(Check("eq", (f.wire_name,), f.const_value))
            elif isinstance(f.type, Const):
                enums.append(Check("in", (f.wire_name,), tuple(f.type.values)))
            keys.append(Check("has", (f.wire_name,)))
            sub = self.resolve(f.type)
            if isinstance(sub, StructDef):
                for g in sub.fields:
                    if g.required and g.is_const:
                        nested.append(Check("eq", (f.wire_name, g.wire_name), g.const_value))
                    if g.required:
                        nested.append(Check("has", (f.wire_name, g.wire_name)))
        return checks + consts + enums + keys + nested

    @staticmethod
    def optional_checks(leaf: Leaf) -> list[Check]:
        if leaf.struct is None:
            return []
        return [Check("has", (f.wire_name,)) for f in leaf.struct.fields if not f.required]

    def can_pass(self, leaf: Leaf, check: Check) -> bool:
        """Whether some valid instance of ``leaf`` could pass ``check``."""
        if leaf.kind == "any":
            return True
        if check.op == "kind":
            return leaf.kind == check.value or (leaf.kind == "number" and check.value == "integer")
        if leaf.kind != "object":
            return False
        if leaf.struct is None:
            return True  # an open object may hold any key and value
        if check.op == "eq" and (check.path, check.value) in self.reserved:
            return self.tags.get(leaf.struct.name) == check
        return self.struct_can_pass(leaf.struct, check.path, check)

    def struct_can_pass(self, struct: StructDef, path: tuple[str, ...], check: Check) -> bool:
        f = struct.field_by_wire(path[0])
        if f is None:
            return False  # an undeclared key is taken to be absent
        if len(path) > 1:
            target = self.resolve(f.type)
            if isinstance(target, StructDef):
                return self.struct_can_pass(target, path[1:], check)
            return isinstance(target, DictOf) or _is_any(target)
        if check.op == "has":
            return True
        values = [check.value] if check.op == "eq" else list(check.value)
        return any(self.admits(f.type, v) for v in values)

    def resolve(self, expr: TypeExpr) -> Any:
        while isinstance(expr, Named):
            typedef = self.model.types[expr.name]
            if not isinstance(typedef, AliasDef):
                return typedef
            expr = typedef.target
        return expr

    def admits(self, expr: TypeExpr, value: Any) -> bool:
        """Whether a field of type ``expr`` may hold the JSON scalar ``value``."""
        target = self.resolve(expr)
        if isinstance(target, Const):
            return value in target.values
        if isinstance(target, Prim):
            kind, got = _PRIM_KIND[target.name], value_kind(value)
            return kind in ("any", got) or (kind == "number" and got == "integer")
        if isinstance(target, (UnionOf, UnionDef)):
            return any(self.admits(m, value) for m in target.members)
        return False


def _is_any(expr: Any) -> bool:
    return isinstance(expr, Prim) and expr.name == "Any"


def describe(check: Check) -> str:
    where = ".".join(check.path)
    if check.op == "kind":
        return f"the value is a JSON {check.value}"
    if check.op == "has":
        return f"`{where}` is present"
    if check.op == "eq":
        return f"`{where}` is {check.value!r}"
    return f"`{where}` is one of {list(check.value)!r}"
