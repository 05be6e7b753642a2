"""Wire forms of untagged unions held in struct fields: decoded in msgspec's one pass.

msgspec decodes tagged unions natively but has no untagged union of structs. Through the
codec's ``dec_hook``, a value such as ``TextResourceContents | BlobResourceContents`` inside
an EmbeddedResource is first parsed into a dict and then converted: about three times the
cost of decoding the same block as a struct. So a field holding such a union is declared,
for msgspec only, as the union's *wire struct*: one struct with every arm's fields, decoded
in the same pass as the rest of the message. The struct that holds the field gets a
``__post_init__`` that builds the arm the union's rules (derived in :mod:`discriminate`)
pick, from the wire struct's attributes, and checks what the wire struct could not: the
arm's required fields, and the arm's own type where the wire type is wider. Type checkers
still see the union, and the arms are the generated classes, so encoding is unchanged.

The wire struct must accept every value the union accepts. A key that one arm declares and
another does not may be an undeclared extra of the other arm (the schema's objects are
open, and a struct ignores unknown keys), so the wire struct types a key strictly only when
its presence alone rules out every arm that does not declare it; otherwise it keeps the
value as plain JSON (``Any``) and the picked arm checks it if it declares it. A union whose
arms or rules fall outside this scheme keeps the ``dec_hook`` path.
"""

from __future__ import annotations

from typing import Literal

from mcpgen.codegen.discriminate import Leaf, leaves_of, value_kind
from mcpgen.codegen.ir import (
    AliasDef,
    Check,
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
    WireArm,
    WireSlot,
    WireUnion,
    WireValue,
)

ANY = Prim("Any")


def wire_name(union: str) -> str:
    """The wire struct's class (private: the name is not part of the generated API)."""
    return f"_{union}Wire"


def add_wires(model: Model) -> None:
    """Give every untagged union that a struct field holds a wire form (``model.wires``)
    and mark those fields (``model.slots``, ``Field.runtime_type``)."""
    candidates = {u.name: u for u in model.unions() if _eligible(model, u)}
    # Dropping a union can make another one's arm need the hook, so repeat until stable.
    while True:
        wires = {name: _wire_union(model, union, set(candidates)) for name, union in candidates.items()}
        dropped = {name for name, wire in wires.items() if wire is None}
        used = _used(model, set(candidates))
        dropped |= set(candidates) - used
        if not dropped:
            break
        for name in dropped:
            del candidates[name]
    model.wires = {name: wire for name, wire in sorted(wires.items()) if wire is not None}
    model.slots = {}
    for struct in [*model.structs(), *(w.struct for w in model.wires.values())]:
        slots = [s for f in struct.fields if (s := _slot(f, set(model.wires))) is not None]
        for slot in slots:
            slot.field.runtime_type = _runtime_type(slot)
        if slots:
            model.slots[struct.name] = slots


# ------------------------------------------------------------------ which unions


def _eligible(model: Model, union: UnionDef) -> bool:
    """Every variant a struct without a msgspec tag, every rule a test of its keys."""
    if union.native or union.erased is not None or union.fallback is None:
        return False
    leaves = leaves_of(model, union.members)
    if any(leaf.struct is None or leaf.struct.tag_field is not None for leaf in leaves):
        return False
    return all(r.check.op in ("has", "eq", "in") or r.check == Check("kind", (), "object") for r in union.rules)


def _slot(f: Field, wired: set[str]) -> WireSlot | None:
    expr = f.type
    if isinstance(expr, Named) and expr.name in wired:
        return WireSlot(f, expr.name, "one")
    if isinstance(expr, ListOf) and isinstance(expr.item, Named) and expr.item.name in wired:
        return WireSlot(f, expr.item.name, "list")
    if isinstance(expr, DictOf) and isinstance(expr.value, Named) and expr.value.name in wired:
        return WireSlot(f, expr.value.name, "dict")
    return None


def _runtime_type(slot: WireSlot) -> TypeExpr:
    wire = Named(wire_name(slot.union))
    expr = slot.field.type
    if isinstance(expr, ListOf):
        return ListOf(wire, expr.min_items, expr.max_items)
    if isinstance(expr, DictOf):
        return DictOf(wire)
    return wire


def _used(model: Model, candidates: set[str]) -> set[str]:
    """Candidates some struct field holds (directly, or inside another candidate's arms)."""
    return {s.union for struct in model.structs() for f in struct.fields if (s := _slot(f, candidates))}


# ------------------------------------------------------------------ one union


def _wire_union(model: Model, union: UnionDef, wired: set[str]) -> WireUnion | None:
    picks: list[tuple[Check | None, Leaf]] = []
    by_expr = {repr(leaf.expr): leaf for leaf in leaves_of(model, union.members)}
    for rule in union.rules:
        check = None if rule.check.op == "kind" else rule.check
        picks.append((check, by_expr[repr(rule.variant)]))
    assert union.fallback is not None
    picks.append((None, by_expr[repr(union.fallback)]))
    arms = [leaf.struct for _, leaf in picks]
    assert all(a is not None for a in arms)
    structs: list[StructDef] = [a for a in arms if a is not None]

    # Every wire name, in the order the arms first declare it.
    names: list[str] = []
    for s in structs:
        names += [f.wire_name for f in s.fields if f.wire_name not in names]
    nested = {c.path[0] for c, _ in picks if c is not None and len(c.path) > 1}
    fields: list[Field] = []
    taken: set[str] = set()
    for name in names:
        declared = [f for s in structs if (f := s.field_by_wire(name)) is not None]
        attr = declared[0].py_name
        while attr in taken:
            attr += "_"
        taken.add(attr)
        strict = name not in nested and _presence_rules_out_others(name, picks)
        wire_type = _common_type([f.type for f in declared]) if strict else ANY
        if wire_type is None:
            wire_type = ANY
        required = len(declared) == len(structs) and all(f.required and not f.is_const for f in declared)
        fields.append(Field(name, attr, wire_type, required and wire_type is not ANY))
    fields.sort(key=lambda f: not f.required)  # msgspec: required fields first (stable)
    struct = StructDef(wire_name(union.name), fields, union.pointer, f"The wire form of {union.name}.")

    built: list[WireArm] = []
    for check, leaf in picks:
        arm = leaf.struct
        assert arm is not None
        values = []
        for f in arm.fields:
            wf = struct.field_by_wire(f.wire_name)
            assert wf is not None
            value = _value(model, f, wf, check, wired)
            if value is None:
                return None
            values.append(value)
        built.append(WireArm(check, arm.name, values))
    return WireUnion(union.name, struct, built)


def _presence_rules_out_others(name: str, picks: list[tuple[Check | None, Leaf]]) -> bool:
    """Whether a value with key ``name`` can only be picked as an arm declaring it: every
    arm without the key comes after a rule that picks another arm when the key is there."""
    seen_has = False
    for check, leaf in picks:
        assert leaf.struct is not None
        if leaf.struct.field_by_wire(name) is None and not seen_has:
            return False
        if check is not None and check.op == "has" and check.path == (name,):
            seen_has = True
    return True


def _common_type(types: list[TypeExpr]) -> TypeExpr | None:
    """One type msgspec decodes natively that admits every one of ``types`` (a union of
    scalars and scalar lists, one of each JSON kind), or None."""
    distinct: list[TypeExpr] = []
    for t in types:
        if t not in distinct:
            distinct.append(t)
    if len(distinct) == 1:
        return distinct[0]
    members: list[TypeExpr] = []
    for t in distinct:
        members += list(t.members) if isinstance(t, UnionOf) else [t]
    consts = [v for m in members if isinstance(m, Const) for v in m.values]
    others = [m for m in members if not isinstance(m, Const)]
    kinds: list[str] = []
    for m in others:
        if isinstance(m, Prim) and m.name != "Any" and not m.constrained:
            kinds += _PRIM_KINDS[m.name]
        elif isinstance(m, ListOf) and isinstance(m.item, Prim) and not m.item.constrained:
            kinds.append("array")
        else:
            return None  # objects of different shapes, or constraints: not one msgspec type
    if len(kinds) != len(set(kinds)) or {value_kind(v) for v in consts} & set(kinds):
        return None
    merged: list[TypeExpr] = [Const(tuple(dict.fromkeys(consts)))] if consts else []
    return UnionOf((*merged, *others))


# The JSON kinds a plain type takes (a float field is rendered `int | float`).
_PRIM_KINDS = {
    "str": ["string"],
    "int": ["integer"],
    "float": ["integer", "number"],
    "bool": ["boolean"],
    "None": ["null"],
}


def _value(model: Model, f: Field, wf: Field, check: Check | None, wired: set[str]) -> WireValue | None:
    """How the arm's field ``f`` is filled from the wire struct's field ``wf``; None when
    its check would need the codec's hook (then the union keeps the hook path)."""
    guaranteed = check is not None and check.path == (f.wire_name,)
    missing: Literal["error", "default", "unset"]
    if f.required and not f.is_const:
        missing = "error"
    elif f.required:
        missing = "default"
    else:
        missing = "unset"
    if wf.required or guaranteed:
        missing = "unset"  # msgspec or the pick already saw it
    narrow: TypeExpr | None = None
    if wf.type != f.type and not _implied(check, f):
        narrow = f.type
        if _needs_hook(model, f.type, wired):
            return None
    return WireValue(f.py_name, wf.py_name, f.wire_name, missing, f.const_value, narrow, wf.type)


def _implied(check: Check | None, f: Field) -> bool:
    """Whether the rule that picked the arm already proves the value has the arm's type."""
    if check is None or check.path != (f.wire_name,) or not isinstance(f.type, Const):
        return False
    if check.op == "eq":
        return check.value in f.type.values and not isinstance(check.value, bool | int | float)
    if check.op == "in":
        return all(v in f.type.values and isinstance(v, str) for v in check.value)
    return False


def _needs_hook(model: Model, expr: TypeExpr, wired: set[str]) -> bool:
    """Whether ``msgspec.convert(value, expr)`` meets an untagged union that is not wired
    (wired ones inside structs are handled by those structs' ``__post_init__``)."""
    memo: dict[str, bool] = {}

    def walk(expr: TypeExpr) -> bool:
        if isinstance(expr, Named):
            return named(expr.name)
        if isinstance(expr, ListOf):
            return walk(expr.item)
        if isinstance(expr, DictOf):
            return walk(expr.value)
        if isinstance(expr, UnionOf):
            return any(walk(m) for m in expr.members)
        return False

    def named(name: str) -> bool:
        typedef = model.types[name]
        if isinstance(typedef, StructDef):
            if name not in memo:
                memo[name] = False
                memo[name] = any(walk(f.type) and _slot(f, wired) is None for f in typedef.fields)
            return memo[name]
        if typedef.erased is not None:
            return False
        if isinstance(typedef, AliasDef):
            return walk(typedef.target)
        if not typedef.native:
            return True  # an untagged union where no post-init converts it
        return any(walk(m) for m in typedef.members)

    return walk(expr)
