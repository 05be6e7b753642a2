"""The document's schemas as the self-contained JSON Schemas (2020-12) a tool lists.

A tool's ``inputSchema`` and ``outputSchema`` cannot point into the document: each carries
the components it uses, transitively, under ``$defs`` (``#/components/schemas/Pet`` becomes
``#/$defs/Pet``), so recursive and circular schemas stay exactly what they are. Properties
the document marks ``readOnly`` are left out of what a tool takes, ``writeOnly`` ones out
of what it answers (OpenAPI: such a property is ``required`` only in its direction).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

from mcpgen.openapi.loader import OpenApiError, pointer_escape

PREFIX = "#/components/schemas/"
DEFS = "#/$defs/"
_DATA = frozenset({"default", "const", "enum", "examples", "example"})
Direction = Literal["input", "output"]


class Components:
    """The document's ``components/schemas`` and each one's references, computed once."""

    def __init__(self, schemas: dict[str, Any], source: str) -> None:
        self.schemas = schemas
        self.source = source
        self._refs: dict[str, frozenset[str]] = {}
        self._closures: dict[str, frozenset[str]] = {}

    def name_of(self, ref: str, where: str) -> str:
        if not ref.startswith(PREFIX):
            raise OpenApiError(self.source, where, f"unsupported schema reference {ref!r}")
        name = ref[len(PREFIX) :].replace("~1", "/").replace("~0", "~")
        if name not in self.schemas:
            raise OpenApiError(self.source, where, f"the schema reference {ref!r} points at nothing")
        return name

    def refs(self, name: str) -> frozenset[str]:
        found = self._refs.get(name)
        if found is None:
            found = frozenset(self.name_of(r, f"/components/schemas/{name}") for r in refs_in(self.schemas[name]))
            self._refs[name] = found
        return found

    def closure(self, roots: set[str]) -> list[str]:
        """Every schema the named ones use, directly or not, themselves included (sorted)."""
        seen: set[str] = set()
        pending = list(roots)
        while pending:
            name = pending.pop()
            if name in seen:
                continue
            seen.add(name)
            done = self._closures.get(name)
            if done is not None:
                seen |= done
                continue
            pending.extend(self.refs(name) - seen)
        return sorted(seen)

    def resolve(self, node: Any, where: str) -> Any:
        """A schema with references followed (to find what kind of value it is)."""
        for _ in range(64):
            if not (isinstance(node, dict) and isinstance(node.get("$ref"), str)):
                return node
            node = self.schemas[self.name_of(node["$ref"], where)]
        raise OpenApiError(self.source, where, "a schema that is only a chain of references, without end")

    def is_object(self, node: Any, where: str, depth: int = 0) -> bool:
        """Whether every value of the schema is a JSON object (so it can be an outputSchema)."""
        node = self.resolve(node, where)
        if not isinstance(node, dict) or depth > 16:
            return False
        kind = node.get("type")
        if kind == "object":
            return True
        if kind is None and "properties" in node:
            return True
        parts = node.get("allOf")
        if isinstance(parts, list) and parts and any(self.is_object(p, where, depth + 1) for p in parts):
            return kind is None
        options = node.get("oneOf") or node.get("anyOf")
        if isinstance(options, list) and options and kind is None:
            return all(self.is_object(p, where, depth + 1) for p in options)
        return False

    def bundle(self, root: dict[str, Any], direction: Direction, where: str) -> dict[str, Any]:
        """A copy of ``root`` with the components it uses under ``$defs`` (copied too, by
        :func:`_localize`; the values of data keywords are shared, and never changed)."""
        used = {self.name_of(r, where) for r in refs_in(root)}
        names = self.closure(used)
        drop = "readOnly" if direction == "input" else "writeOnly"
        body: dict[str, Any] = _localize(root, drop)
        if names:
            body["$defs"] = {name: _localize(self.schemas[name], drop) for name in names}
        return body


def refs_in(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            elif key not in _DATA:
                yield from refs_in(value)
    elif isinstance(node, list):
        for item in node:
            yield from refs_in(item)


def _localize(node: Any, drop: str) -> Any:
    """References rewritten to ``$defs``, and properties flagged ``drop`` left out."""
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str) and value.startswith(PREFIX):
                name = value[len(PREFIX) :].replace("~1", "/").replace("~0", "~")
                out[key] = DEFS + pointer_escape(name)
            elif key in _DATA:
                out[key] = value
            elif key == "properties" and isinstance(value, dict):
                kept = {k: v for k, v in value.items() if not (isinstance(v, dict) and v.get(drop) is True)}
                out[key] = {k: _localize(v, drop) for k, v in kept.items()}
                gone = set(value) - set(kept)
                if gone and isinstance(node.get("required"), list):
                    out["required"] = [r for r in node["required"] if r not in gone]
            elif key == "required" and "required" in out:
                continue
            else:
                out[key] = _localize(value, drop)
        return out
    if isinstance(node, list):
        return [_localize(item, drop) for item in node]
    return node


__all__ = ["Components", "DEFS", "PREFIX", "refs_in"]
