"""The document's ``components/schemas`` as msgspec Structs, made by the protocol generator's
own JSON Schema -> model path (:func:`mcpgen.codegen.build.build_types`, after
:func:`mcpgen.stubs.schema.prepare` left out what types cannot say).

Component names become class names here (PascalCase ASCII, never a name the module
imports or a Python constant), so nothing of a name reaches the source but letters and
digits; descriptions are cleaned of control characters before the renderer's docstring
escaping sees them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from mcpgen.codegen import naming
from mcpgen.codegen.build import build_types
from mcpgen.codegen.ir import Model, StructDef, TypeDef, UnionDef
from mcpgen.codegen.loader import LoadedSchema, SchemaError
from mcpgen.openapi.loader import pointer_escape
from mcpgen.openapi.operations import clean_text
from mcpgen.openapi.schemas import PREFIX
from mcpgen.stubs.schema import prepare

# Names models.py defines or imports besides the types.
RESERVED = frozenset(
    {"Struct", "Annotated", "Any", "ClassVar", "Literal", "TypeAlias", "UNSET", "Meta", "UnsetType", "field"}
    | {"None", "True", "False", "OpenApiRoot"}
)
_ROOT = "OpenApiRoot"
_TEXT_KEYS = ("description", "title")
MAX_RETRIES = 100


@dataclass
class Models:
    types: dict[str, TypeDef]
    names: dict[str, str]  # component name -> class or alias name
    notes: list[str] = field(default_factory=list)

    def structs(self) -> list[StructDef]:
        return [t for t in self.types.values() if isinstance(t, StructDef)]

    @property
    def model(self) -> Model:
        return Model("", "", "openapi", self.types, [])


def class_names(components: list[str]) -> dict[str, str]:
    names: dict[str, str] = {}
    taken = set(RESERVED)
    for component in sorted(components):
        base = naming.pascal(component) or "Schema"
        if base[0].isdigit() or base in RESERVED:
            base = f"Schema{base}"
        name, n = base, 2
        while name in taken:
            name, n = f"{base}{n}", n + 1
        taken.add(name)
        names[component] = name
    return names


def build_models(schemas: dict[str, Any]) -> Models:
    names = class_names(list(schemas))
    defs = {names[c]: _rewrite(s, names) for c, s in schemas.items()}  # _rewrite copies
    prepared = prepare({"$defs": defs}, _ROOT, "", RESERVED - {_ROOT})
    notes = list(prepared.notes)
    definitions = prepared.definitions
    for _ in range(MAX_RETRIES):
        try:
            model = build_types(LoadedSchema("openapi", "", "", {"$defs": definitions}, "$defs"))
            break
        except SchemaError as exc:
            # One schema the builder refuses (a name its inline types would take twice, ...):
            # that one is left untyped, the others are built again without it.
            culprit = exc.pointer.split("/")[2] if exc.pointer.startswith("/$defs/") else None
            if culprit is not None and definitions.get(culprit) == {}:
                other = re.search(r"already used by /\$defs/([^/ ]+)", exc.problem)  # the one that took the name
                culprit = other[1] if other else None
            if culprit is None or culprit not in definitions or definitions[culprit] == {}:
                return Models({}, names, [*notes, f"no models: {exc.problem} (at {exc.pointer})"])
            notes.append(f"{culprit}: left untyped ({exc.problem})")
            definitions = {**definitions, culprit: {}}
    else:
        return Models({}, names, [*notes, f"no models: more than {MAX_RETRIES} schemas the builder refuses"])
    types = {k: v for k, v in model.types.items() if k != _ROOT}
    for t in types.values():
        if isinstance(t, UnionDef) and not t.native and t.erased is None and not t.description:
            t.description = "untyped (Any): a union msgspec cannot tell apart by a tag"
        for attr in ("description",):
            setattr(t, attr, clean_text(getattr(t, attr)) or None)
        if isinstance(t, StructDef):
            for f in t.fields:
                f.description = clean_text(f.description) or None
    notes += [r.message for r in model.reports if r.level == "warning" and "unknown keyword" not in r.message]
    return Models(dict(sorted(types.items())), names, notes)


def _rewrite(node: Any, names: dict[str, str], in_map: bool = False) -> Any:
    """References renamed, texts cleaned; ``in_map``: the keys are names, the values schemas."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if in_map:
                out[key] = _rewrite(value, names)
            elif key == "$ref" and isinstance(value, str) and value.startswith(PREFIX):
                target = value[len(PREFIX) :].replace("~1", "/").replace("~0", "~")
                out[key] = f"#/$defs/{pointer_escape(names.get(target, target))}"
            elif key in _TEXT_KEYS and isinstance(value, str):
                out[key] = clean_text(value)
            elif key in ("default", "const", "enum", "examples"):
                out[key] = value
            else:
                out[key] = _rewrite(value, names, key in ("properties", "patternProperties", "$defs"))
        return out
    if isinstance(node, list):
        return [_rewrite(item, names) for item in node]
    return node


__all__ = ["Models", "build_models", "class_names"]
