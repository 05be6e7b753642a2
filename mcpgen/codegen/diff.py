"""What changed between two schema revisions, computed from their intermediate models.

Every named type is compared by its *local* shape: a field typed ``Named("Foo")`` is the
same in both revisions whatever happened inside ``Foo`` (that is reported on ``Foo``).
Capability structs are walked as one tree per side (``server.tasks.list``) instead of
being reported field by field; methods are keyed by direction and method name.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any, Literal

from rich.table import Table
from rich.text import Text

from mcpgen.codegen.ir import (
    AliasDef,
    Const,
    Field,
    ListOf,
    Method,
    Model,
    Named,
    StructDef,
    TypeDef,
    TypeExpr,
    UnionDef,
    type_label,
)

ChangeKind = Literal["definition", "field", "method", "capability", "enum", "union"]
ChangeType = Literal["added", "removed", "changed"]
KINDS: tuple[ChangeKind, ...] = ("definition", "field", "method", "capability", "enum", "union")
CHANGES: tuple[ChangeType, ...] = ("added", "removed", "changed")
CAPABILITY_ROOTS = {"server": "ServerCapabilities", "client": "ClientCapabilities"}
_TOP_LEVEL = re.compile(r"^/(\$defs|definitions)/[^/]+$")
_STYLES = {"added": "green", "removed": "red", "changed": "yellow"}


@dataclass(frozen=True)
class Change:
    kind: ChangeKind
    change: ChangeType
    where: str  # "CallToolResult", "CallToolResult.structuredContent", "tools/call (c2s)", ...
    detail: str


@dataclass
class RevisionDiff:
    old: str
    new: str
    changes: list[Change]

    def summary(self) -> dict[str, dict[str, int]]:
        counts: dict[str, dict[str, int]] = {k: {c: 0 for c in CHANGES} for k in KINDS}
        for c in self.changes:
            counts[c.kind][c.change] += 1
        return counts

    def to_json(self) -> dict[str, Any]:
        return {
            "old": self.old,
            "new": self.new,
            "changes": [asdict(c) for c in self.changes],
            "summary": self.summary(),
        }


def diff_models(old: Model, new: Model) -> RevisionDiff:
    caps_old, caps_new = _capability_tree(old), _capability_tree(new)
    skip = _capability_structs(old) | _capability_structs(new)
    changes = [
        *_definitions(old, new, skip),
        *_methods(old, new),
        *_capabilities(caps_old, caps_new),
    ]
    order = {kind: i for i, kind in enumerate(KINDS)}
    changes.sort(key=lambda c: (order[c.kind], c.where, CHANGES.index(c.change), c.detail))
    return RevisionDiff(old.revision, new.revision, changes)


# ---------------------------------------------------------------- named types


def _kind_label(t: TypeDef) -> str:
    inline = "" if _TOP_LEVEL.match(t.pointer) else " (inline)"
    return f"{t.kind}{inline}"


def _definitions(old: Model, new: Model, skip: set[str]) -> Iterator[Change]:
    for name in sorted(old.types.keys() | new.types.keys()):
        a, b = old.types.get(name), new.types.get(name)
        if a is None or b is None:
            present = b if a is None else a
            assert present is not None
            yield Change("definition", "added" if a is None else "removed", name, _kind_label(present))
        elif a.kind != b.kind:
            yield Change("definition", "changed", name, f"{_kind_label(a)} -> {_kind_label(b)}")
        elif isinstance(a, StructDef) and isinstance(b, StructDef):
            if name not in skip:
                yield from _struct(a, b)
        elif isinstance(a, UnionDef) and isinstance(b, UnionDef):
            yield from _union(a, b)
        elif isinstance(a, AliasDef) and isinstance(b, AliasDef):
            yield from _retyped("definition", name, a.target, b.target, "alias of ")


def _struct(a: StructDef, b: StructDef) -> Iterator[Change]:
    old = {f.wire_name: f for f in a.fields}
    new = {f.wire_name: f for f in b.fields}
    for wire in sorted(old.keys() | new.keys()):
        where = f"{a.name}.{wire}"
        fa, fb = old.get(wire), new.get(wire)
        if fa is None or fb is None:
            present = fb if fa is None else fa
            assert present is not None
            yield Change("field", "added" if fa is None else "removed", where, _field_label(present))
            continue
        yield from _retyped("field", where, fa.type, fb.type, "type ")
        if fa.required != fb.required:
            yield Change("field", "changed", where, "now required" if fb.required else "now optional")


def _field_label(f: Field) -> str:
    return f"{type_label(f.type)}, {'required' if f.required else 'optional'}"


def _retyped(kind: ChangeKind, where: str, a: TypeExpr, b: TypeExpr, prefix: str) -> Iterator[Change]:
    """A type that may have changed: enums report their values, consts their value."""
    if isinstance(a, Const) and isinstance(b, Const):
        if len(a.values) == 1 and len(b.values) == 1:
            if a.values != b.values:
                yield Change(kind, "changed", where, f"const {a.values[0]!r} -> {b.values[0]!r}")
            return
        yield from _enum_values(where, a.values, b.values)
    elif _enum_list(a) is not None and _enum_list(b) is not None:
        yield from _enum_values(where, _enum_list(a) or (), _enum_list(b) or ())
    elif type_label(a) != type_label(b):
        yield Change(kind, "changed", where, f"{prefix}{type_label(a)} -> {type_label(b)}")


def _enum_list(t: TypeExpr) -> tuple[Any, ...] | None:
    """The values of ``list[Literal[...]]`` (a multi-select enum), else ``None``."""
    if isinstance(t, ListOf) and isinstance(t.item, Const):
        return t.item.values
    return None


def _enum_values(where: str, a: tuple[Any, ...], b: tuple[Any, ...]) -> Iterator[Change]:
    added = [v for v in b if v not in a]
    removed = [v for v in a if v not in b]
    if added:
        yield Change("enum", "added", where, "values added: " + ", ".join(map(repr, added)))
    if removed:
        yield Change("enum", "removed", where, "values removed: " + ", ".join(map(repr, removed)))


def _union(a: UnionDef, b: UnionDef) -> Iterator[Change]:
    old = [type_label(m) for m in a.members]
    new = [type_label(m) for m in b.members]
    for label in new:
        if label not in old:
            yield Change("union", "added", a.name, f"member added: {label}")
    for label in old:
        if label not in new:
            yield Change("union", "removed", a.name, f"member removed: {label}")
    if a.tag_field != b.tag_field:
        yield Change("union", "changed", a.name, f"tag field {a.tag_field!r} -> {b.tag_field!r}")
    if a.native != b.native:
        yield Change("union", "changed", a.name, "now decoded natively" if b.native else "no longer native")


# ---------------------------------------------------------------- methods


def _method_where(m: Method) -> str:
    return f"{m.method} ({m.direction})"


def _methods(old: Model, new: Model) -> Iterator[Change]:
    a = {_method_where(m): m for m in old.methods}
    b = {_method_where(m): m for m in new.methods}
    for where in sorted(a.keys() | b.keys()):
        ma, mb = a.get(where), b.get(where)
        if ma is None or mb is None:
            present = mb if ma is None else ma
            assert present is not None
            yield Change("method", "added" if ma is None else "removed", where, _method_label(present))
            continue
        for part, (va, vb) in {
            "kind": (ma.kind, mb.kind),
            "params": (_params_label(old, ma), _params_label(new, mb)),
            "result": (ma.result_type, mb.result_type),
            "capability": (ma.capability, mb.capability),
            "may ask for input": (ma.input_required, mb.input_required),
            "cacheable": (ma.cacheable, mb.cacheable),
        }.items():
            if va != vb:
                yield Change("method", "changed", where, f"{part} {va} -> {vb}")


def _method_label(m: Method) -> str:
    params = type_label(m.params_type) if m.params_type is not None else "none"
    text = f"{m.kind}, params {params}"
    if m.result_type is not None:
        text += f", result {m.result_type}"
    text += f", capability {m.capability}" if m.capability else ""
    text += ", may ask for input" if m.input_required else ""
    return text + (", cacheable" if m.cacheable else "")


def _params_label(model: Model, m: Method) -> str:
    """The params type, with the kind of the type it names (a struct that became a union
    changes the method's signature even though its name stayed) and whether it is required."""
    if m.params_type is None:
        return "none"
    label = type_label(m.params_type)
    if isinstance(m.params_type, Named) and m.params_type.name in model.types:
        label += f" ({model.types[m.params_type.name].kind})"
    return label + ("" if m.params_required else ", optional")


# ---------------------------------------------------------------- capabilities


def _capability_tree(model: Model) -> dict[str, str]:
    """``{"server.tasks.list": "dict[str, Any]", "server.tasks": "object", ...}``."""
    tree: dict[str, str] = {}
    for side, root in CAPABILITY_ROOTS.items():
        struct = model.types.get(root)
        if isinstance(struct, StructDef):
            _walk(model, struct, side, tree, {root})
    return tree


def _walk(model: Model, struct: StructDef, path: str, tree: dict[str, str], seen: set[str]) -> None:
    for f in struct.fields:
        here = f"{path}.{f.wire_name}"
        sub = _struct_of(model, f.type)
        if sub is not None and sub.name not in seen:
            tree[here] = "object"
            _walk(model, sub, here, tree, seen | {sub.name})
        else:
            tree[here] = type_label(f.type)


def _struct_of(model: Model, t: TypeExpr) -> StructDef | None:
    found = model.types.get(t.name) if isinstance(t, Named) else None
    return found if isinstance(found, StructDef) else None


def _capability_structs(model: Model) -> set[str]:
    """The structs whose fields the capability tree reports (roots and nested ones)."""
    names = {root for root in CAPABILITY_ROOTS.values() if root in model.types}
    pending = list(names)
    while pending:
        struct = model.types[pending.pop()]
        assert isinstance(struct, StructDef)
        for f in struct.fields:
            sub = _struct_of(model, f.type)
            if sub is not None and sub.name not in names:
                names.add(sub.name)
                pending.append(sub.name)
    return names


def _capabilities(a: dict[str, str], b: dict[str, str]) -> Iterator[Change]:
    for path in sorted(a.keys() | b.keys()):
        if path not in a:
            yield Change("capability", "added", path, b[path])
        elif path not in b:
            yield Change("capability", "removed", path, a[path])
        elif a[path] != b[path]:
            yield Change("capability", "changed", path, f"type {a[path]} -> {b[path]}")


# ---------------------------------------------------------------- rendering


def render_lines(diff: RevisionDiff) -> str:
    """The changes as tab-separated lines (kind, change, where, detail), one per change:
    for a pipe or a file, where a table's columns would wrap names mid-word."""
    return "".join(
        f"{c.kind}\t{c.change}\t{c.where}\t{c.detail}\n" for kind in KINDS for c in diff.changes if c.kind == kind
    )


def render_table(diff: RevisionDiff) -> Table:
    """One table, a section per kind, the change column colored."""
    table = Table(title=f"MCP schema changes {diff.old} -> {diff.new}", show_lines=False)
    for column in ("kind", "change", "where", "detail"):
        table.add_column(column, overflow="fold")
    for kind in KINDS:
        rows = [c for c in diff.changes if c.kind == kind]
        for c in rows:
            style = _STYLES[c.change]
            table.add_row(kind, Text(c.change, style=style), Text(c.where, style="bold"), c.detail)
        if rows:
            table.add_section()
    if not diff.changes:
        table.add_row("", "", "no changes", "")
    return table
