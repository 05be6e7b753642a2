"""Render the project's own copy of a schema revision (maintainers' tool).

The shipped file keeps every structural fact of the official schema (definitions,
properties, types, required lists, enums, consts, bounds, formats, additionalProperties)
and replaces every description with the project's own text from
``mcpgen/schema/descriptions.json``; locations with no text of ours carry no description.

Keys name a location: ``Definition`` or ``Definition.prop.sub``. Property names are
joined with dots as they are, so ``RequestMetaObject.io.modelcontextprotocol/logLevel``
names the property ``io.modelcontextprotocol/logLevel``. The path runs through
``properties``, and stays the same through ``items``, ``additionalProperties`` and the
members of ``allOf`` (they describe the same value).

A plain key holds for every revision. A key ``"<revision>:<location>"`` replaces it from
that revision on: for a text a later revision made wrong, or a location only a later
revision describes. The newest such key not after the revision being rendered wins.

    python -m mcpgen.codegen.ship ../shared/mcp-schema/2025-11-25/schema.json [...]

An extension's schema ships the same way but with no descriptions at all (structure only),
under the name ``mcpgen/schema/extensions.toml`` gives it:

    python -m mcpgen.codegen.ship --extension apps \
        tests/apps/node_modules/@modelcontextprotocol/ext-apps/dist/src/generated/schema.json
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
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
        elif key in _SUBSCHEMA_ONE or key in ("propertyNames", "not"):
            out[key] = strip_descriptions(value)
        else:
            out[key] = value
    return out


def texts_for(revision: str, texts: dict[str, str]) -> dict[str, str]:
    """Our texts by location as they hold for ``revision`` (revision-scoped keys applied)."""
    out = {key: text for key, text in texts.items() if ":" not in key}
    scoped = sorted((key.split(":", 1), text) for key, text in texts.items() if ":" in key)
    # Oldest scope first, so for each location the newest scope not after `revision` wins;
    # revision names are ISO dates, so string order is release order.
    for (since, key), text in scoped:
        if since <= revision:
            out[key] = text
    return out


def describe(node: Any, path: str, texts: dict[str, str]) -> Any:
    """Put our description for ``path`` (and nested property paths) on a stripped node."""
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    text = texts.get(path)
    # Subschemas that describe the same value continue the same path; the text for the
    # path itself belongs to the property, not to its items or allOf members.
    inner = texts if text is None else {k: v for k, v in texts.items() if k != path}
    for key, value in node.items():
        if key == "properties":
            out[key] = {name: describe(sub, f"{path}.{name}", texts) for name, sub in value.items()}
        elif key in _SUBSCHEMA_ONE and isinstance(value, dict):
            out[key] = describe(value, path, inner)
        elif key == "allOf":
            out[key] = [describe(sub, path, inner) for sub in value]
        else:
            out[key] = value
    if text is not None:
        # Our text goes where the official one would: first, before the structure.
        out = {"description": text, **out}
    return out


def locations(node: Any, path: str) -> Iterator[tuple[str, Any]]:
    """Every (location, node) pair ``describe`` can reach from ``node`` at ``path``."""
    if not isinstance(node, dict):
        return
    yield path, node
    for key, value in node.items():
        if key == "properties":
            for name, sub in value.items():
                yield from locations(sub, f"{path}.{name}")
        elif key in _SUBSCHEMA_ONE and isinstance(value, dict):
            yield from ((p, n) for p, n in locations(value, path) if p != path)
        elif key == "allOf":
            for sub in value:
                yield from ((p, n) for p, n in locations(sub, path) if p != path)


def render(official: Path, texts: dict[str, str], revision: str | None = None) -> dict[str, Any]:
    """The shipped document for ``official``; ``texts`` are all keys of descriptions.json."""
    loaded = load_schema(official)
    mine = texts_for(revision or loaded.revision, texts)
    doc: dict[str, Any] = strip_descriptions(loaded.document)
    key = loaded.defs_key
    doc[key] = {name: describe(sub, name, mine) for name, sub in doc[key].items()}
    return doc


def render_extension(official: Path) -> dict[str, Any]:
    """The shipped copy of an extension's published schema: every structural fact, no prose.

    Read as JSON, not through the loader: a reference the published file leaves dangling
    stays in the copy, so regenerating from it takes the same path as from the original."""
    doc: dict[str, Any] = strip_descriptions(json.loads(official.read_text(encoding="utf-8")))
    doc.pop("title", None)
    return doc


def main(argv: list[str]) -> int:
    if argv[:1] == ["--extension"] and len(argv) == 3:
        from mcpgen.codegen.committed import extension_table

        target = shipped.HERE / extension_table()[argv[1]].schema
        target.write_text(json.dumps(render_extension(Path(argv[2])), indent=1) + "\n", encoding="utf-8")
        print(f"wrote {target}")
        return 0
    texts: dict[str, str] = json.loads((shipped.HERE / "descriptions.json").read_text("utf-8"))
    for arg in argv:
        official = Path(arg)
        revision = official.parent.name
        doc = render(official, texts, revision)
        target = shipped.HERE / f"{revision}.json"
        target.write_text(json.dumps(doc, indent=4, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
