"""Load an MCP schema revision from a file, an http(s) URL, or a revision mcpgen ships.

The loader reads bytes, records where they came from and their sha256, parses JSON, and
checks the document's shape (every ``$ref`` resolves, every keyword is one we understand).
Problems that make generation impossible raise :class:`SchemaError` with the file, a JSON
pointer and what is wrong; unknown keywords only become warnings, and so does a ``$ref``
the published file leaves dangling (it is dropped, so the value becomes an open type).
"""

from __future__ import annotations

import hashlib
import json
import re
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpgen import schema as shipped

# Keywords whose meaning the generator uses or deliberately ignores.
# Grouped by kind (references, structure, combinators, bounds, annotations): easier to check
# against the spec than one a line.
KNOWN_KEYWORDS = frozenset(
    {
        "$schema", "$ref", "$defs", "$id", "$comment", "definitions",
        "type", "properties", "required", "additionalProperties", "items", "patternProperties",
        "anyOf", "oneOf", "allOf", "enum", "const", "format",
        "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
        "minLength", "maxLength", "pattern", "minItems", "maxItems",
        "description", "title", "default", "examples", "deprecated",
    }
)  # fmt: skip
JSON_TYPES = frozenset({"string", "integer", "number", "boolean", "object", "array", "null"})
_REVISION = re.compile(r"\d{4}-\d{2}-\d{2}")


class SchemaError(Exception):
    """A schema that cannot be generated from; ``str()`` is one line: file, pointer, problem."""

    def __init__(self, source: str, pointer: str, problem: str) -> None:
        super().__init__(f"{source}: {pointer or '/'}: {problem}")
        self.source = source
        self.pointer = pointer
        self.problem = problem


@dataclass
class LoadedSchema:
    source: str
    revision: str
    sha256: str
    document: dict[str, Any]
    defs_key: str  # "definitions" (draft-07) or "$defs" (2020-12)
    warnings: list[str] = field(default_factory=list)

    @property
    def definitions(self) -> dict[str, Any]:
        defs: dict[str, Any] = self.document[self.defs_key]
        return defs

    @property
    def dialect(self) -> str:
        return "2020-12" if self.defs_key == "$defs" else "draft-07"


def load_schema(spec: str | Path, revision: str | None = None) -> LoadedSchema:
    """Load ``spec``: a shipped revision name, a path, or an http(s) URL."""
    text_spec = str(spec)
    if text_spec in shipped.revisions():
        path = shipped.path_for(text_spec)
        raw, source = path.read_bytes(), f"mcpgen:{text_spec}"
        revision = revision or text_spec
    elif text_spec.startswith(("http://", "https://")):
        raw, source = _fetch(text_spec), text_spec
    else:
        path = Path(text_spec)
        source = str(path)
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise SchemaError(source, "", f"cannot read file: {exc.strerror or exc}") from None
    if revision is None:
        found = _REVISION.findall(text_spec)
        revision = found[-1] if found else "unknown"
    return parse_schema(raw, source, revision)


def parse_schema(raw: bytes, source: str, revision: str) -> LoadedSchema:
    try:
        document = json.loads(raw)
    except UnicodeDecodeError as exc:
        raise SchemaError(source, "", f"not UTF-8 text ({exc.reason})") from None
    except json.JSONDecodeError as exc:
        raise SchemaError(source, "", f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    if not isinstance(document, dict):
        raise SchemaError(source, "", "the document is not a JSON object")
    keys = [k for k in ("$defs", "definitions") if k in document]
    if not keys:
        raise SchemaError(source, "", "no `$defs` or `definitions` object: not a schema bundle")
    defs_key = keys[0]
    if not isinstance(document[defs_key], dict):
        raise SchemaError(source, f"/{defs_key}", "must be an object of named schemas")
    loaded = LoadedSchema(
        source=source,
        revision=revision,
        sha256=hashlib.sha256(raw).hexdigest(),
        document=document,
        defs_key=defs_key,
    )
    _Checker(loaded).check()
    return loaded


def _fetch(url: str) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            data: bytes = response.read()
            return data
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise SchemaError(url, "", f"cannot download: {reason}") from None


def pointer_escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


class _Checker:
    """Walks every schema node once, validating shape and collecting warnings."""

    def __init__(self, loaded: LoadedSchema) -> None:
        self.loaded = loaded
        self.defs = loaded.definitions

    def fail(self, pointer: str, problem: str) -> SchemaError:
        return SchemaError(self.loaded.source, pointer, problem)

    def check(self) -> None:
        for key in self.loaded.document:
            if key not in KNOWN_KEYWORDS:
                self.loaded.warnings.append(f"/{pointer_escape(key)}: unknown keyword ignored")
        for name, node in self.defs.items():
            self.node(node, f"/{self.loaded.defs_key}/{pointer_escape(name)}")

    def node(self, node: Any, ptr: str) -> None:
        if isinstance(node, bool):
            return  # `true` / `false` are valid schemas
        if not isinstance(node, dict):
            raise self.fail(ptr, f"a schema must be an object or boolean, got {type(node).__name__}")
        dangling = False
        for key, value in node.items():
            here = f"{ptr}/{pointer_escape(key)}"
            if key not in KNOWN_KEYWORDS:
                self.loaded.warnings.append(f"{here}: unknown keyword `{key}` ignored")
            elif key == "$ref":
                dangling = not self.ref(value, here)
            elif key == "type":
                self.type_(value, here)
            elif key == "properties":
                if not isinstance(value, dict):
                    raise self.fail(here, "`properties` must be an object")
                for prop, sub in value.items():
                    self.node(sub, f"{here}/{pointer_escape(prop)}")
            elif key in ("items", "additionalProperties"):
                self.node(value, here)
            elif key == "patternProperties":
                if not isinstance(value, dict):
                    raise self.fail(here, "`patternProperties` must be an object of schemas")
                for pattern, sub in value.items():
                    self.node(sub, f"{here}/{pointer_escape(pattern)}")
            elif key in ("anyOf", "oneOf", "allOf"):
                if not isinstance(value, list) or not value:
                    raise self.fail(here, f"`{key}` must be a non-empty array of schemas")
                for i, sub in enumerate(value):
                    self.node(sub, f"{here}/{i}")
            elif key == "required":
                if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                    raise self.fail(here, "`required` must be an array of property names")
            elif key == "enum":
                if not isinstance(value, list) or not value:
                    raise self.fail(here, "`enum` must be a non-empty array")
            elif key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise self.fail(here, f"`{key}` must be a number")
            elif key in ("minLength", "maxLength", "minItems", "maxItems"):
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise self.fail(here, f"`{key}` must be a non-negative integer")
        if dangling:
            # Published bundles do this (ext-apps 2.0.4 points at a `$defs` entry nested
            # elsewhere): the value is still valid JSON of some kind, so an open type is
            # the honest binding, and one bad pointer must not cost the whole generation.
            del node["$ref"]
        required = node.get("required")
        props = node.get("properties")
        if isinstance(required, list) and isinstance(props, dict):
            for name in required:
                if name not in props:
                    self.loaded.warnings.append(
                        f"{ptr}/required: `{name}` is required but has no schema in `properties`"
                    )

    def ref(self, value: Any, ptr: str) -> bool:
        """Whether the reference resolves; a dangling one is a warning (the caller drops it)."""
        prefix = f"#/{self.loaded.defs_key}/"
        if not isinstance(value, str) or not value.startswith(prefix):
            raise self.fail(ptr, f"unsupported reference {value!r}: expected `{prefix}<Name>`")
        if value[len(prefix) :] not in self.defs:
            self.loaded.warnings.append(f"{ptr}: reference {value!r} names no definition; the value is an open type")
            return False
        return True

    def type_(self, value: Any, ptr: str) -> None:
        names = value if isinstance(value, list) else [value]
        for name in names:
            if name not in JSON_TYPES:
                raise self.fail(ptr, f"unknown type {name!r}")
