"""A server's tool schemas made ready for the protocol generator's JSON Schema -> struct path.

A tool's ``inputSchema`` / ``outputSchema`` is a self-contained JSON Schema with its own
``$defs``; the builder (:mod:`mcpgen.codegen.build`) takes one bundle of named definitions.
So each schema's ``$defs`` are hoisted into the bundle under names prefixed by the tool
(``GetWeather`` + ``Location``), its ``$ref`` s rewritten to match, and every construct
the builder cannot type (a ``false`` schema, a reference that leads nowhere, an enum of
objects, a tuple ``items`` array, a pattern Python cannot compile, ...) replaced by an
empty schema, which the builder types as ``Any``, with a note the module prints as a
comment. Nothing here fails: a server's schema is its own business. A property name msgspec
cannot hold as a field's wire name (a quote, a backslash, a control character) leaves its
object untyped too. Every name is found in constant time (:class:`UniqueNames`), so a schema
with many thousands of definitions is prepared in time linear in its size.
"""

from __future__ import annotations

import math
import re
from collections.abc import Container
from dataclasses import dataclass, field
from typing import Any

from mcpgen.codegen import naming
from mcpgen.codegen.loader import pointer_escape
from mcpgen.codegen.naming import UniqueNames

_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf")
_SCHEMA_MAPS = ("properties", "patternProperties")
# Keywords whose subschemas the builder does not read: dropped, so that nothing in them
# (a $ref to a hoisted name, say) is checked or followed.
_IGNORED = ("not", "if", "then", "else", "dependentSchemas", "contains", "prefixItems", "propertyNames")
# What msgspec refuses in a field's wire name (``field(name=...)``): a backslash, a double
# quote, a C0 control character.
_UNNAMEABLE = re.compile(r'[\\"\x00-\x1f]')


@dataclass
class Prepared:
    """One schema as bundle definitions: ``root`` is the name of the schema itself."""

    root: str
    definitions: dict[str, Any]
    notes: list[str] = field(default_factory=list)  # "pointer: what was left untyped"


def prepare(schema: Any, root: str, prefix: str, reserved: Container[str] = frozenset()) -> Prepared:
    """``schema`` as definitions of a bundle: itself under ``root``, its ``$defs`` (or
    ``definitions``) under ``prefix + PascalName`` (never one of the ``reserved`` names)."""
    prepared = Prepared(root, {})
    local: dict[str, str] = {}
    names = UniqueNames({root}, reserved=reserved)
    if isinstance(schema, dict):
        for key in ("$defs", "definitions"):
            defs = schema.get(key)
            if isinstance(defs, dict):
                for name in sorted(defs):
                    local[f"#/{key}/{pointer_escape(name)}"] = names.claim(f"{prefix}{naming.pascal(name) or 'Def'}")
    refs = {"#": root, **local}
    cleaner = _Cleaner(refs, prepared.notes)
    body = cleaner.schema(schema, "")
    if isinstance(body, dict):
        body = {k: v for k, v in body.items() if k not in ("$defs", "definitions", "$schema", "$id")}
    prepared.definitions[root] = body
    for pointer, name in local.items():
        key, defname = pointer[2:].split("/", 1)
        raw = schema[key][defname.replace("~1", "/").replace("~0", "~")]
        prepared.definitions[name] = cleaner.schema(raw, pointer[1:])
    return prepared


class _Cleaner:
    def __init__(self, refs: dict[str, str], notes: list[str]) -> None:
        self.refs = refs
        self.notes = notes

    def untyped(self, ptr: str, why: str, node: Any = None) -> dict[str, Any]:
        self.notes.append(f"{ptr or '/'}: {why}")
        keep = node.get("description") if isinstance(node, dict) else None
        return {"description": keep} if isinstance(keep, str) else {}

    def schema(self, node: Any, ptr: str) -> Any:
        if node is True:
            return {}
        if node is False:
            return self.untyped(ptr, "a `false` schema (no value is valid)")
        if not isinstance(node, dict):
            return self.untyped(ptr, f"not a schema ({type(node).__name__})")
        out: dict[str, Any] = {}
        for key, value in node.items():
            here = f"{ptr}/{pointer_escape(key)}"
            if key in _IGNORED:
                self.notes.append(f"{here}: `{key}` is not expressed in the types")
            elif key == "$ref":
                target = self.refs.get(value) if isinstance(value, str) else None
                if target is None:
                    return self.untyped(ptr, f"a reference the schema does not resolve ({value!r})", node)
                out[key] = f"#/$defs/{target}"
            elif key in ("enum", "const"):
                values = value if key == "enum" else [value]
                if not isinstance(values, list) or not values or not all(map(_literal_ok, values)):
                    self.notes.append(f"{here}: values that cannot be a Literal")
                else:
                    out[key] = value
            elif key == "pattern":
                if isinstance(value, str) and _compiles(value):
                    out[key] = value
            elif key in _SCHEMA_LISTS:
                if isinstance(value, list) and value:
                    out[key] = [self.schema(sub, f"{here}/{i}") for i, sub in enumerate(value)]
            elif key in _SCHEMA_MAPS:
                if key == "properties" and isinstance(value, dict) and any(map(_UNNAMEABLE.search, value)):
                    return self.untyped(
                        ptr, "a property name a field cannot have (a quote, backslash or control character)", node
                    )
                if isinstance(value, dict):
                    out[key] = {k: self.schema(v, f"{here}/{pointer_escape(k)}") for k, v in value.items()}
            elif key == "items":
                if isinstance(value, list):
                    self.notes.append(f"{here}: a tuple of item schemas")
                else:
                    out[key] = self.schema(value, here)
            elif key == "additionalProperties":
                out[key] = value if isinstance(value, bool) else self.schema(value, here)
            elif key == "required":
                if isinstance(value, list):
                    out[key] = [r for r in value if isinstance(r, str)]
            elif key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
                # Finite only: JSON has no infinity, but Python's json module reads one.
                if (isinstance(value, int) and not isinstance(value, bool)) or (
                    isinstance(value, float) and math.isfinite(value)
                ):
                    out[key] = value
            elif key in ("minLength", "maxLength", "minItems", "maxItems"):
                if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                    out[key] = value
            elif key == "type":
                if isinstance(value, str) or (isinstance(value, list) and all(isinstance(t, str) for t in value)):
                    out[key] = value if not isinstance(value, list) or value else "object"
            elif key in ("description", "title", "format") and not isinstance(value, str):
                continue
            else:
                out[key] = value
        # The builder merges allOf parts as objects: a part that is not one stays untyped.
        if "allOf" in out and any(not _object_part(p) for p in out["allOf"]):
            return self.untyped(ptr, "an allOf of parts that are not all objects", node)
        return out


def _object_part(part: Any) -> bool:
    return isinstance(part, dict) and ("$ref" in part or "properties" in part or part.get("type") == "object")


def _literal_ok(value: Any) -> bool:
    """A value ``typing.Literal`` can hold: str, int, bool, None (not a float or a list)."""
    return value is None or isinstance(value, (str, bool, int))


def _compiles(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except (re.error, RecursionError):
        return False
    return True


__all__ = ["Prepared", "prepare"]
