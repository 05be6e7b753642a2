"""Render the project's own copy of a schema revision (maintainers' tool).

The shipped file keeps every structural fact of the official schema (definitions,
properties, types, required lists, enums, consts, bounds, formats, additionalProperties)
and replaces every description with the project's own text from
``mcpgen/schema/descriptions.json`` (keys ``Definition`` or ``Definition.prop.sub``);
locations with no text of ours carry no description.

    python -m mcpgen.codegen.ship ../shared/mcp-schema/2025-11-25/schema.json [...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from mcpgen import schema as shipped
from mcpgen.codegen.loader import load_schema

_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf")
_SUBSCHEMA_ONE = ("items", "additionalProperties")


def strip_descriptions(node: Any) -> Any:
    """A copy of a schema node without ``description`` keywords (property names stay)."""
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "description":
            continue
        if key in ("properties", "$defs", "definitions"):
            out[key] = {name: strip_descriptions(sub) for name, sub in value.items()}
        elif key in _SUBSCHEMA_LISTS:
            out[key] = [strip_descriptions(sub) for sub in value]
        elif key in _SUBSCHEMA_ONE:
            out[key] = strip_descriptions(value)
        else:
            out[key] = value
    return out


def describe(node: Any, path: str, texts: dict[str, str]) -> Any:
    """Put our description for ``path`` (and nested property paths) on a stripped node."""
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    text = texts.get(path)
    for key, value in node.items():
        if key == "properties":
            out[key] = {name: describe(sub, f"{path}.{name}", texts) for name, sub in value.items()}
        elif key in _SUBSCHEMA_ONE and isinstance(value, dict):
            # An inline object under items/additionalProperties continues the same path;
            # the text for the path itself belongs to the property, not to its items.
            out[key] = describe(value, path, {k: v for k, v in texts.items() if k != path})
        else:
            out[key] = value
    if text is not None:
        # Our text goes where the official one would: first, before the structure.
        out = {"description": text, **out}
    return out


def render(official: Path, texts: dict[str, str]) -> dict[str, Any]:
    loaded = load_schema(official)
    doc: dict[str, Any] = strip_descriptions(loaded.document)
    key = loaded.defs_key
    doc[key] = {name: describe(sub, name, texts) for name, sub in doc[key].items()}
    return doc


def main(argv: list[str]) -> int:
    texts: dict[str, str] = json.loads((shipped.HERE / "descriptions.json").read_text("utf-8"))
    for arg in argv:
        official = Path(arg)
        revision = official.parent.name
        doc = render(official, texts)
        target = shipped.HERE / f"{revision}.json"
        target.write_text(json.dumps(doc, indent=4, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
