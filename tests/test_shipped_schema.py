"""mcpgen/schema holds the project's own rendering of each revision: the official
structure exactly, descriptions in the project's own words."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcpgen import schema as shipped
from mcpgen.codegen.ship import strip_descriptions
from tests.conftest import REVISIONS, official_schema


def first_difference(a: Any, b: Any, pointer: str = "") -> str | None:
    if type(a) is not type(b):
        return f"{pointer or '/'}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f"{pointer}/{key}: only in {'official' if key in a else 'ours'}"
            found = first_difference(a[key], b[key], f"{pointer}/{key}")
            if found:
                return found
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{pointer}: {len(a)} items != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            found = first_difference(x, y, f"{pointer}/{i}")
            if found:
                return found
        return None
    return None if a == b else f"{pointer}: {a!r} != {b!r}"


@pytest.mark.parametrize("revision", REVISIONS)
def test_shipped_structure_matches_official(revision: str) -> None:
    official = strip_descriptions(json.loads(official_schema(revision).read_text()))
    ours = strip_descriptions(json.loads(shipped.path_for(revision).read_text()))
    assert first_difference(official, ours) is None


def test_strip_keeps_properties_named_description() -> None:
    node = {"description": "x", "properties": {"description": {"type": "string", "description": "y"}}}
    assert strip_descriptions(node) == {"properties": {"description": {"type": "string"}}}


def official_descriptions() -> list[str]:
    texts: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("description"), str):
                texts.append(node["description"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for revision in REVISIONS:
        walk(json.loads(official_schema(revision).read_text()))
    return texts


def test_no_official_description_text_is_shipped() -> None:
    ours = [shipped.path_for(r).read_text() for r in shipped.revisions()]
    ours.append((shipped.HERE / "descriptions.json").read_text())
    body = "\n".join(ours)
    copied = [t for t in official_descriptions() if len(t) >= 40 and t in body]
    assert copied == []


def test_shipped_revisions_carry_our_descriptions() -> None:
    doc = json.loads(shipped.path_for("2025-11-25").read_text())
    tool = doc["$defs"]["Tool"]
    assert tool["description"]
    assert tool["properties"]["inputSchema"]["description"]


def test_description_keys_name_real_locations() -> None:
    texts: dict[str, str] = json.loads((shipped.HERE / "descriptions.json").read_text())
    names = set()
    for revision in REVISIONS:
        doc = json.loads(official_schema(revision).read_text())
        names |= set(doc.get("$defs") or doc["definitions"])
    latest = json.loads(official_schema("2025-11-25").read_text())["$defs"]
    for key in texts:
        head, *path = key.split(".")
        assert head in names, key
        if not path:
            continue
        node = latest[head]
        for part in path:
            while "properties" not in node:
                node = node.get("items") or node.get("additionalProperties")
                assert isinstance(node, dict), key
            node = node["properties"][part]
