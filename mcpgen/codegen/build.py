"""Turn a loaded schema into the intermediate model (:mod:`mcpgen.codegen.ir`)."""

from __future__ import annotations

import re
from typing import Any

from mcpgen.codegen import discriminate, methods, naming, recursion
from mcpgen.codegen.facts import Facts
from mcpgen.codegen.ir import (
    AliasDef,
    Const,
    DictOf,
    Field,
    ListOf,
    Model,
    Named,
    Prim,
    Report,
    StructDef,
    TypeDef,
    TypeExpr,
    UnionDef,
    UnionOf,
)
from mcpgen.codegen.loader import LoadedSchema, SchemaError, pointer_escape
from mcpgen.codegen.patches import apply_patches
from mcpgen.codegen.wire import add_wires

_SCALARS: dict[str, Any] = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "null": "None",
}
# Keywords that only annotate: beside a `$ref` they leave it a plain reference. Any other
# sibling of a `$ref` constrains the value further (2020-12: both apply), as an allOf.
_ANNOTATIONS = frozenset({"description", "title", "$comment", "default", "examples", "deprecated"})


def build_model(loaded: LoadedSchema, facts: Facts | None = None) -> Model:
    facts = facts or Facts.load()
    patched, notes = apply_patches(loaded, facts)
    builder = _Builder(patched, facts)
    builder.reports.extend(Report("info", note) for note in notes)
    return builder.build()


def build_types(loaded: LoadedSchema) -> Model:
    """The named types of a bundle that is not the protocol's (a server's tool schemas, for
    ``mcpgen stubs``): the same JSON Schema -> struct path, cycles erased and unions
    resolved, with no facts table, no patches and no methods."""
    builder = _Builder(loaded, Facts(results={}, capabilities={}, open_objects={}, pages={}))
    for name in sorted(builder.defs):
        builder.define(name, builder.defs[name], f"/{loaded.defs_key}/{pointer_escape(name)}")
    model = Model(loaded.revision, loaded.sha256, loaded.source, dict(sorted(builder.types.items())), [])
    model.reports = builder.reports
    recursion.erase_cycles(model)
    discriminate.resolve_unions(model)
    return model


def is_open_object(node: dict[str, Any]) -> bool:
    """An object schema that admits any extra key: kept whole as a dict."""
    extra = node.get("additionalProperties")
    return extra is True or extra == {}


class _Builder:
    def __init__(self, loaded: LoadedSchema, facts: Facts) -> None:
        self.loaded = loaded
        self.facts = facts
        self.defs = loaded.definitions
        self.prefix = f"#/{loaded.defs_key}/"
        self.types: dict[str, TypeDef] = {}
        self.union_names: dict[tuple[TypeExpr, ...], str] = {}  # members -> name, to reuse
        self.reports: list[Report] = [Report("warning", w) for w in loaded.warnings]

    # ------------------------------------------------------------ entry point

    def build(self) -> Model:
        for name in sorted(self.defs):
            self.define(name, self.defs[name], f"/{self.loaded.defs_key}/{pointer_escape(name)}")
        model = Model(
            revision=self.loaded.revision,
            sha256=self.loaded.sha256,
            source=self.loaded.source,
            types=dict(sorted(self.types.items())),
            methods=[],
            reports=self.reports,
        )
        recursion.erase_cycles(model)
        discriminate.resolve_unions(model, self.facts)
        add_wires(model)
        methods.build_methods(model, self.defs, self.facts)
        methods.assign_pages(model, self.facts)
        for table in ("open_objects", "open_definitions"):
            for key in self.facts.unused(table):
                model.reports.append(Report("info", f"facts.toml [{table}] {key!r} matched nothing"))
        return model

    # ------------------------------------------------------------ named types

    def add(self, typedef: TypeDef) -> None:
        existing = self.types.get(typedef.name)
        if existing is not None and existing.pointer != typedef.pointer:
            raise SchemaError(
                self.loaded.source,
                typedef.pointer,
                f"the type name {typedef.name!r} is already used by {existing.pointer}",
            )
        self.types[typedef.name] = typedef

    def define(self, name: str, node: Any, ptr: str) -> None:
        """Create the named type for the schema ``node`` found at ``ptr``."""
        if not isinstance(node, dict):
            self.add(AliasDef(name, Prim("Any"), ptr))
            return
        description = node.get("description")
        if self.facts.is_open_definition(name):
            self.add(AliasDef(name, DictOf(Prim("Any")), ptr, description))
            return
        node = self.ref_siblings_as_all_of(node)
        if "allOf" in node:
            node = self.merge_all_of(node, ptr)
        if "anyOf" in node or "oneOf" in node:
            options = node.get("anyOf") or node.get("oneOf")
            key = "anyOf" if "anyOf" in node else "oneOf"
            members = [self.member_type(opt, name, f"{ptr}/{key}/{i}") for i, opt in enumerate(options)]
            self.add(UnionDef(name, members, ptr, description))
            self.union_names.setdefault(tuple(members), name)
        elif self.is_struct(node, name):
            self.add(self.struct(name, node, ptr))
        else:
            self.add(AliasDef(name, self.type_of(node, name, ptr), ptr, description))

    def is_struct(self, node: dict[str, Any], name: str, owner: str | None = None) -> bool:
        if owner is not None and self.facts.is_open_object(owner):
            return False
        return bool(node.get("properties")) and not is_open_object(node)

    def struct(self, name: str, node: dict[str, Any], ptr: str) -> StructDef:
        required = set(node.get("required", []))
        fields: list[Field] = []
        taken = naming.UniqueNames(sep="_")
        for wire, sub in node["properties"].items():
            # A clash takes a trailing underscore (``meta``, ``meta_``), then a number: not
            # one more underscore per clash, which made thousands of clashing names (a
            # server's schema, under ``mcpgen stubs``) quadratic in time and in output.
            py = naming.field_name(wire)
            py = taken.claim(py if py not in taken else f"{py}_")
            sub_ptr = f"{ptr}/properties/{pointer_escape(wire)}"
            context = f"{name}{naming.pascal(wire)}"
            ftype = self.type_of(sub, context, sub_ptr, owner=f"{name}.{wire}")
            doc = sub.get("description") if isinstance(sub, dict) else None
            fields.append(Field(wire, py, ftype, wire in required, doc))
        return StructDef(name, fields, ptr, node.get("description"))

    def inline_union(self, members: list[TypeExpr], context: str, ptr: str, description: str | None) -> str:
        """Name an inline union where it sits (``<Parent><Field>``). The same union written
        again elsewhere reuses the first name (or a named definition with those members);
        only a clash between different unions falls back to naming by the members."""
        key = tuple(members)
        existing = self.union_names.get(key)
        if existing is not None:
            return existing
        name = context
        if name in self.types:
            name = "Or".join(m.name for m in members if isinstance(m, Named)) or f"{context}Union"
        self.add(UnionDef(name, members, ptr, description))
        self.union_names[key] = name
        return name

    def merge_all_of(self, node: dict[str, Any], ptr: str) -> dict[str, Any]:
        """Flatten ``allOf`` into one object schema: properties and required lists merge,
        later parts refine earlier ones. An open base (such as ``Result``) does not make
        the merged object open."""
        merged: dict[str, Any] = {"type": "object", "properties": {}, "required": []}
        parts = [self.resolve_ref(p, f"{ptr}/allOf/{i}") for i, p in enumerate(node["allOf"])]
        parts.append({k: v for k, v in node.items() if k != "allOf"})
        for part in parts:
            if "allOf" in part:
                part = self.merge_all_of(part, ptr)
            for prop, sub in part.get("properties", {}).items():
                base = merged["properties"].get(prop)
                if isinstance(base, dict) and isinstance(sub, dict) and "$ref" not in sub:
                    sub = {**base, **sub}
                merged["properties"][prop] = sub
            for req in part.get("required", []):
                if req not in merged["required"]:
                    merged["required"].append(req)
            if "description" in part and part is parts[-1]:
                merged["description"] = part["description"]
        return merged

    @staticmethod
    def ref_siblings_as_all_of(node: dict[str, Any]) -> dict[str, Any]:
        """``{$ref: X, <constraints>}`` means X and the constraints both apply (2020-12)."""
        if "$ref" not in node or not set(node) - _ANNOTATIONS - {"$ref"}:
            return node
        rest = {k: v for k, v in node.items() if k != "$ref"}
        return {"allOf": [{"$ref": node["$ref"]}, rest]}

    def resolve_ref(self, node: Any, ptr: str) -> dict[str, Any]:
        while isinstance(node, dict) and "$ref" in node:
            node = self.defs[node["$ref"][len(self.prefix) :]]
        if not isinstance(node, dict):
            raise SchemaError(self.loaded.source, ptr, "allOf parts must be object schemas")
        return node

    # ------------------------------------------------------------ type expressions

    def member_type(self, node: Any, union_name: str, ptr: str) -> TypeExpr:
        """A union member; an inline object member is named after its tag or position."""
        if isinstance(node, dict) and self.is_struct(node, union_name):
            label = _const_label(node)
            if label is None:
                label = f"Option{ptr.rsplit('/', 1)[-1]}"
                self.reports.append(Report("warning", f"{ptr}: inline union member has no const to name it by"))
            return self.type_of(node, f"{union_name}{label}", ptr)
        return self.type_of(node, f"{union_name}Item", ptr)

    def type_of(self, node: Any, context: str, ptr: str, owner: str | None = None) -> TypeExpr:
        """The type of a schema in a field, item or value position.

        ``context`` names an inline struct or union created here (``<Parent><Field>``);
        ``owner`` is ``Definition.property`` for the facts table's overrides.
        """
        if node is True or node == {}:
            return Prim("Any")
        if node is False:
            raise SchemaError(self.loaded.source, ptr, "`false` schema cannot be generated")
        assert isinstance(node, dict)
        node = self.ref_siblings_as_all_of(node)
        if "$ref" in node:
            return Named(node["$ref"][len(self.prefix) :])
        if "const" in node:
            return Const((node["const"],))
        if "enum" in node:
            return Const(tuple(node["enum"]))
        if "allOf" in node:
            self.add(self.struct(context, self.merge_all_of(node, ptr), ptr))
            return Named(context)
        if "anyOf" in node or "oneOf" in node:
            key = "anyOf" if "anyOf" in node else "oneOf"
            options = node[key]
            members = [self.member_type(o, context, f"{ptr}/{key}/{i}") for i, o in enumerate(options)]
            if all(_is_plain(m) for m in members):
                return UnionOf(tuple(members))
            return Named(self.inline_union(members, context, ptr, node.get("description")))
        types = node.get("type")
        if isinstance(types, list):
            parts = [self.type_of({**node, "type": t}, context, ptr, owner) for t in types]
            return parts[0] if len(parts) == 1 else UnionOf(tuple(parts))
        if types == "object" or (types is None and "properties" in node):
            return self.object_type(node, context, ptr, owner)
        if types == "array":
            item = self.type_of(node.get("items", {}), f"{context}Item", f"{ptr}/items")
            return ListOf(item, node.get("minItems"), node.get("maxItems"))
        if types in _SCALARS:
            return self.scalar(_SCALARS[types], node)
        return Prim("Any")

    def object_type(self, node: dict[str, Any], context: str, ptr: str, owner: str | None) -> TypeExpr:
        if self.is_struct(node, context, owner):
            self.add(self.struct(context, node, ptr))
            return Named(context)
        if owner is not None and self.facts.is_open_object(owner):
            return DictOf(Prim("Any"))
        # The values a dict may hold: one type per patternProperties schema, plus
        # additionalProperties (absent, `true` or `{}` admit any value under other keys).
        values: list[TypeExpr] = []
        for i, (pattern, sub) in enumerate(sorted((node.get("patternProperties") or {}).items())):
            here = f"{ptr}/patternProperties/{pointer_escape(pattern)}"
            values.append(self.type_of(sub, f"{context}Pattern{i}", here))
        extra = node.get("additionalProperties")
        if isinstance(extra, dict) and extra:
            values.append(self.type_of(extra, f"{context}Value", f"{ptr}/additionalProperties"))
        elif extra is not False:
            values.append(Prim("Any"))
        members = list(dict.fromkeys(values))
        if not members or Prim("Any") in members:
            return DictOf(Prim("Any"))
        if len(members) == 1:
            return DictOf(members[0])
        if all(_is_plain(m) for m in members):
            return DictOf(UnionOf(tuple(members)))
        return DictOf(Named(self.inline_union(members, f"{context}Value", ptr, None)))

    @staticmethod
    def scalar(name: Any, node: dict[str, Any]) -> Prim:
        return Prim(
            name,
            ge=node.get("minimum"),
            le=node.get("maximum"),
            gt=node.get("exclusiveMinimum"),
            lt=node.get("exclusiveMaximum"),
            min_length=node.get("minLength"),
            max_length=node.get("maxLength"),
            pattern=node.get("pattern"),
            format=node.get("format"),
        )


def _is_plain(t: TypeExpr) -> bool:
    """A type msgspec can always put in a union inline (no struct or named union inside)."""
    if isinstance(t, (Prim, Const)):
        return True
    if isinstance(t, ListOf):
        return _is_plain(t.item)
    if isinstance(t, DictOf):
        return _is_plain(t.value)
    return False


def _const_label(node: dict[str, Any]) -> str | None:
    for sub in node.get("properties", {}).values():
        if isinstance(sub, dict) and isinstance(sub.get("const"), str):
            return naming.pascal(re.sub(r"[^A-Za-z0-9]+", "_", sub["const"]))
    return None
