"""mcpgen/schema holds the project's own rendering of each revision: the official
structure exactly, descriptions in the project's own words."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpgen import schema as shipped
from mcpgen.codegen.ship import describe, locations, render, strip_descriptions, texts_for
from tests.cli.test_cli import mcpgen
from tests.conftest import REVISIONS, official_schema

PACKAGE = Path(shipped.__file__).resolve().parent.parent  # mcpgen/
# The first revision whose every officially described location carries our text. The three
# older revisions write request and notification params inline (`X.params.y`) and leave
# those locations without our text; nothing of theirs is copied either way.
FULLY_DESCRIBED_FROM = "2025-11-25"


def load(path: Path) -> Any:
    return json.loads(path.read_text("utf-8"))


def our_texts() -> dict[str, str]:
    texts: dict[str, str] = load(shipped.HERE / "descriptions.json")
    return texts


def definitions(doc: dict[str, Any]) -> dict[str, Any]:
    defs: dict[str, Any] = doc.get("$defs") or doc["definitions"]
    return defs


def described(doc: dict[str, Any]) -> dict[str, str]:
    """Location -> description, for every location ``describe`` can reach that has one."""
    return {
        path: node["description"]
        for name, sub in definitions(doc).items()
        for path, node in locations(sub, name)
        if "description" in node
    }


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
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = first_difference(x, y, f"{pointer}/{i}")
            if found:
                return found
        return None
    return None if a == b else f"{pointer}: {a!r} != {b!r}"


def test_every_revision_under_test_ships() -> None:
    assert set(REVISIONS) <= set(shipped.revisions())
    assert "2026-07-28" in shipped.revisions()
    # Which revision is the default is the lead's call, made in mcpgen/schema/__init__.py.
    assert shipped.DEFAULT_REVISION == "2025-11-25"


@pytest.mark.parametrize("revision", shipped.revisions())
def test_shipped_structure_matches_official(revision: str) -> None:
    official = strip_descriptions(load(official_schema(revision)))
    ours = strip_descriptions(load(shipped.path_for(revision)))
    assert first_difference(official, ours) is None


@pytest.mark.parametrize("revision", shipped.revisions())
def test_shipped_file_is_what_ship_renders(revision: str) -> None:
    """descriptions.json and the shipped files agree: an edited text was re-rendered."""
    doc = render(official_schema(revision), our_texts(), revision)
    expected = json.dumps(doc, indent=4, ensure_ascii=False) + "\n"
    assert shipped.path_for(revision).read_text("utf-8") == expected


@pytest.mark.parametrize("revision", [r for r in shipped.revisions() if r >= FULLY_DESCRIBED_FROM])
def test_every_official_description_has_ours(revision: str) -> None:
    official = described(load(official_schema(revision)))
    ours = described(load(shipped.path_for(revision)))
    assert sorted(set(official) - set(ours)) == []


def test_strip_keeps_properties_named_description() -> None:
    node = {"description": "x", "properties": {"description": {"type": "string", "description": "y"}}}
    assert strip_descriptions(node) == {"properties": {"description": {"type": "string"}}}


def test_describe_follows_properties_items_and_allof() -> None:
    node = {
        "properties": {
            "error": {"allOf": [{"$ref": "#/$defs/Error"}, {"properties": {"data": {"type": "object"}}}]},
            "list": {"type": "array", "items": {"properties": {"x": {"type": "string"}}}},
            "a.b/c": {"type": "string"},
        }
    }
    texts = {"E": "e", "E.error": "err", "E.error.data": "d", "E.list": "l", "E.list.x": "x", "E.a.b/c": "abc"}
    out = describe(node, "E", texts)
    assert out["description"] == "e"
    error = out["properties"]["error"]
    assert error["description"] == "err"
    assert "description" not in error["allOf"][1]  # the property's text stays on the property
    assert error["allOf"][1]["properties"]["data"]["description"] == "d"
    assert out["properties"]["list"]["description"] == "l"
    assert "description" not in out["properties"]["list"]["items"]
    assert out["properties"]["list"]["items"]["properties"]["x"]["description"] == "x"
    assert out["properties"]["a.b/c"]["description"] == "abc"
    assert {path for path, _ in locations(node, "E")} == set(texts)


def test_a_revision_scoped_text_holds_from_its_revision_on() -> None:
    texts = {
        "A": "plain",
        "2026-07-28:A": "since 2026",
        "2025-06-18:B": "since 2025-06",
        "2025-03-26:B": "since 2025-03",
    }
    assert texts_for("2024-11-05", texts) == {"A": "plain"}
    assert texts_for("2025-03-26", texts) == {"A": "plain", "B": "since 2025-03"}
    assert texts_for("2025-11-25", texts) == {"A": "plain", "B": "since 2025-06"}
    assert texts_for("2026-07-28", texts) == {"A": "since 2026", "B": "since 2025-06"}


def test_texts_2026_made_wrong_are_replaced_only_there() -> None:
    texts = our_texts()
    for key in ("ClientCapabilities", "CallToolRequestParams", "EmptyResult", "RequestParams._meta"):
        head, *path = key.split(".")
        old = definitions(load(shipped.path_for("2025-11-25")))[head]
        new = definitions(load(shipped.path_for("2026-07-28")))[head]
        for part in path:
            old, new = old["properties"][part], new["properties"][part]
        assert old["description"] == texts[key]
        assert new["description"] == texts[f"2026-07-28:{key}"] != texts[key]
    # The handshake and the tasks are gone in 2026-07-28; its texts must not lean on them.
    for location, text in described(load(shipped.path_for("2026-07-28"))).items():
        assert not re.search(r"initiali[sz]|tasks?\b|logging/setLevel|'ping'", text), (location, text)


def test_description_keys_name_real_locations() -> None:
    """Every key names a location of some revision it applies to, so no text goes stale
    unnoticed; a scope names a shipped revision."""
    where: dict[str, set[str]] = {}
    for revision in shipped.revisions():
        doc = load(official_schema(revision))
        for name, sub in definitions(doc).items():
            for path, _ in locations(sub, name):
                where.setdefault(path, set()).add(revision)
    unknown = []
    for key in our_texts():
        since, _, path = key.rpartition(":")
        assert not since or since in shipped.revisions(), key
        if not any(revision >= since for revision in where.get(path, ())):
            unknown.append(key)
    assert unknown == []


# ------------------------------------------------------- no official description text copied


def official_descriptions() -> set[str]:
    texts: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("description"), str):
                texts.add(node["description"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for revision in shipped.revisions():
        walk(load(official_schema(revision)))
    return texts


def flat(text: str) -> str:
    """Whitespace runs as one space, so re-wrapped or re-indented text still matches."""
    return re.sub(r"\s+", " ", text).strip()


def json_strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield key
            yield from json_strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from json_strings(value)


def readable(path: Path) -> str | None:
    """A file's text as a reader sees it (JSON strings decoded), or None for binary files."""
    try:
        text = path.read_text("utf-8")
    except UnicodeDecodeError:
        return None
    if path.suffix == ".json":
        return "\n".join(json_strings(json.loads(text)))
    return text


def copies(texts: set[str], minimum: int, files: list[Path]) -> list[tuple[str, str]]:
    """(file, start of the text) for each text of ``minimum`` characters or more found in a file."""
    bodies = {path: flat(body) for path in files if (body := readable(path)) is not None}
    found = []
    for text in sorted(texts):
        needle = flat(text)
        if len(needle) >= minimum:
            found += [(str(path), needle[:60]) for path, body in bodies.items() if needle in body]
    return found


def test_no_official_description_text_is_shipped() -> None:
    files = [shipped.path_for(r) for r in shipped.revisions()] + [shipped.HERE / "descriptions.json"]
    assert copies(official_descriptions(), 40, files) == []


def test_no_official_description_text_anywhere_in_the_package() -> None:
    files = [p for p in sorted(PACKAGE.rglob("*")) if p.is_file() and "__pycache__" not in p.parts]
    assert copies(official_descriptions(), 60, files) == []


def test_the_copy_check_sees_through_wrapping_and_json_escapes(tmp_path: Path) -> None:
    text = "An official sentence, long enough to count,\nwrapped over two lines as schema text is."
    rewrapped = text.replace("\n", "\n    ").replace("count, ", "count,\n    ")
    (tmp_path / "a.py").write_text(f'def f() -> None:\n    """{rewrapped}"""\n')
    (tmp_path / "b.json").write_text(json.dumps({"description": text}))
    (tmp_path / "c.bin").write_bytes(b"\xff\xfe" + text.encode("utf-16-le"))
    (tmp_path / "d.txt").write_text(text[:59])
    files = sorted(tmp_path.iterdir())
    assert [Path(name).name for name, _ in copies({text}, 60, files)] == ["a.py", "b.json"]
    assert copies({text}, len(flat(text)) + 1, files) == []


def test_revisions_command_lists_2026() -> None:
    proc = mcpgen("revisions")
    assert proc.returncode == 0, proc.stderr
    assert "2026-07-28" in proc.stdout
