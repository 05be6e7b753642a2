"""datamodel-code-generator (dcg) as an independent oracle for the generator.

For every shipped revision, dcg's JSON Schema parser reads the same file mcpgen ships, and
for every object it models with fields the field names and their required-ness must match
mcpgen's intermediate model exactly. dcg is a separate implementation (pydantic models,
its own ``allOf`` inheritance, its own handling of open objects), so a mistake in how
mcpgen reads ``properties``, ``required`` or ``allOf`` shows up as a disagreement that names
the definition and the field.

What is compared, and how each schema node is accounted for (nothing is skipped silently):

* Object definitions (``/$defs/Name``): dcg's model (its own fields plus those it inherits
  through ``allOf`` base classes) against mcpgen's :class:`StructDef` at the same pointer.
* Inline objects (a property, list item or map value that is itself an object schema):
  placed by walking dcg's field types from their definition, so each gets the JSON pointer
  mcpgen records (``/$defs/Name/properties/x[/items|/additionalProperties]``); compared the
  same way. An inline model dcg makes that cannot be placed fails the test.
* An object dcg models with fields that mcpgen keeps as a dict is accepted only for a
  stated reason: facts.toml lists it (a definition by name in ``[open_definitions]``, such
  as the 2026-07-28 ``_meta`` objects; an inline object as ``<Struct>.<property>`` in
  ``[open_objects]``, such as ``Tool.inputSchema``), or the schema node itself says
  ``additionalProperties: true | {}`` and dcg reads it as open too (``Result``). Objects
  nested inside one kept whole are covered by its reason.
* Definitions dcg reads as something other than an object with fields (aliases, unions,
  enums, the recursive ``JSONValue``/``JSONObject``/``JSONArray`` aliases, field-less
  objects such as ``MetaObject``) have no fields to compare; for them mcpgen must not make
  a struct with fields either. Every mcpgen struct must match a dcg object.
* Every definition of the file must appear in dcg's output at all.

dcg and pydantic are test-only dependencies (the ``test`` extra); the runtime never sees them.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from mcpgen import schema as shipped
from mcpgen.codegen.build import build_model
from mcpgen.codegen.facts import Facts
from mcpgen.codegen.ir import AliasDef, DictOf, Field, Model, Prim, StructDef, TypeDef
from mcpgen.codegen.loader import parse_schema

_DEFINITION = re.compile(r"^#/(\$defs|definitions)/([^/]+)$")
# dcg marks an object that admits unknown keys with this pseudo-field (pydantic's extras).
_EXTRA_FIELD = "__pydantic_extra__"


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


# ---------------------------------------------------------------- dcg's reading


@dataclass(frozen=True)
class OracleObject:
    """One object dcg models with fields, at the JSON pointer mcpgen would record for it."""

    pointer: str
    class_name: str  # dcg's class name, for messages
    fields: dict[str, bool]  # wire name -> required
    open: bool  # dcg lets unknown keys through


@dataclass
class OracleReading:
    objects: dict[str, OracleObject]  # pointer -> object with fields
    not_objects: dict[str, str]  # definition pointer -> what dcg made instead (for messages)
    unplaced: list[str]  # inline dcg models with fields that no walk reached


def _dcg_fields(model: Any, by_path: dict[str, Any], seen: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Own fields plus the ones inherited through base classes (dcg turns ``allOf`` with a
    ``$ref`` into inheritance); a field the model declares itself overrides the base's."""
    fields: dict[str, Any] = {}
    for base in model.base_classes:
        ref = base.reference
        if ref is not None and ref.path in by_path and ref.path not in seen:
            fields.update(_dcg_fields(by_path[ref.path], by_path, seen | {model.reference.path}))
    for f in model.fields:
        name = f.original_name or f.name
        if name is not None:
            fields[name] = f
    return fields


def _is_open(model: Any, by_path: dict[str, Any]) -> bool:
    return _EXTRA_FIELD in _dcg_fields(model, by_path) or (
        model.extra_template_data.get("additionalProperties") is True
    )


def _inline_refs(data_type: Any, suffix: str = "") -> Iterator[tuple[str, str]]:
    """(pointer suffix, dcg reference path) of every model a field's type names directly,
    through lists (``/items``), maps (``/additionalProperties``) and union/optional wrappers."""
    if data_type.reference is not None:
        yield suffix, data_type.reference.path
        return
    if data_type.is_list:
        suffix += "/items"
    elif data_type.is_dict:
        suffix += "/additionalProperties"
    for child in data_type.data_types:
        yield from _inline_refs(child, suffix)


def read_with_dcg(text: str) -> OracleReading:
    # Imported here, not at module level: it takes half a second, which every collection of
    # the suite would pay. It is in the test extra, so a missing install fails, never skips.
    from datamodel_code_generator.parser.jsonschema import JsonSchemaParser

    parser = JsonSchemaParser(text)
    parser.parse_raw()
    by_path: dict[str, Any] = {m.reference.path: m for m in parser.results}
    kind_of = {path: type(m).__name__ for path, m in by_path.items()}

    def fields_of(model: Any) -> dict[str, bool]:
        return {n: bool(f.required) for n, f in _dcg_fields(model, by_path).items() if n != _EXTRA_FIELD}

    objects: dict[str, OracleObject] = {}
    not_objects: dict[str, str] = {}
    placed: set[str] = set()

    def visit(path: str, pointer: str) -> None:
        model = by_path[path]
        placed.add(path)
        fields = fields_of(model) if kind_of[path] == "BaseModel" else {}
        if not fields:
            not_objects[pointer] = f"{kind_of[path]} {model.class_name}" + (
                " without fields" if kind_of[path] == "BaseModel" else ""
            )
            return
        if pointer in objects:
            return
        objects[pointer] = OracleObject(pointer, model.class_name, fields, _is_open(model, by_path))
        for f in model.fields:
            name = f.original_name or f.name
            if name is None or name == _EXTRA_FIELD:
                continue
            for suffix, ref in _inline_refs(f.data_type):
                if ref in by_path and not _DEFINITION.match(ref):
                    visit(ref, f"{pointer}/properties/{_escape(name)}{suffix}")

    for path in sorted(by_path):
        found = _DEFINITION.match(path)
        if found:
            visit(path, f"/{found.group(1)}/{_escape(found.group(2))}")
    unplaced = sorted(
        f"{by_path[p].class_name} ({p})"
        for p in by_path
        if p not in placed and kind_of[p] == "BaseModel" and fields_of(by_path[p])
    )
    return OracleReading(objects, not_objects, unplaced)


# ---------------------------------------------------------------- the comparison


def _fields_differ(where: str, dcg: dict[str, bool], ours: list[Field]) -> list[str]:
    mine = {f.wire_name: f.required for f in ours}
    problems: list[str] = []
    for name in sorted(set(dcg) | set(mine)):
        if name not in mine:
            problems.append(f"{where}: field {name!r} is read by dcg but missing from mcpgen")
        elif name not in dcg:
            problems.append(f"{where}: field {name!r} is in mcpgen but dcg reads no such field")
        elif dcg[name] != mine[name]:
            said = {True: "required", False: "optional"}
            problems.append(f"{where}: field {name!r} is {said[dcg[name]]} for dcg, {said[mine[name]]} for mcpgen")
    return problems


def _node(document: dict[str, Any], pointer: str) -> Any:
    """The schema node at one of mcpgen's pointers. mcpgen merges ``allOf`` and records a
    merged property under the ``allOf`` node itself, so a token the node lacks is looked up
    in its ``allOf`` parts (through their ``$ref``), the last part that has it first."""
    defs_key = "$defs" if "$defs" in document else "definitions"

    def walk(node: Any, tokens: list[str]) -> Any:
        if not tokens:
            return node
        if not isinstance(node, dict):
            return None
        if isinstance(node.get("$ref"), str):
            node = document[defs_key].get(node["$ref"].rsplit("/", 1)[-1])
            return walk(node, tokens)
        if tokens[0] in node:
            found = walk(node[tokens[0]], tokens[1:])
            if found is not None:
                return found
        for part in reversed(node.get("allOf", [])):  # a later part refines an earlier one
            found = walk(part, tokens)
            if found is not None:
                return found
        return None

    tokens = [t.replace("~1", "/").replace("~0", "~") for t in pointer.lstrip("/").split("/")]
    return walk(document, tokens)


def _declared_open(document: dict[str, Any], pointer: str) -> bool:
    """The schema node says so itself: ``additionalProperties`` is ``true`` or ``{}``."""
    node = _node(document, pointer)
    return isinstance(node, dict) and (node.get("additionalProperties") in (True, {}))


def _owner_key(model: Model, by_pointer: dict[str, TypeDef], pointer: str) -> str | None:
    """facts.toml's key for an inline object: ``<struct name>.<property>``, where the struct is
    the mcpgen type that holds the property (``.../properties/<p>[/items...]``)."""
    head, sep, rest = pointer.rpartition("/properties/")
    if not sep:
        return None
    owner = by_pointer.get(head)
    prop = rest.split("/", 1)[0].replace("~1", "/").replace("~0", "~")
    return f"{owner.name}.{prop}" if owner is not None else None


def compare(model: Model, reading: OracleReading, document: dict[str, Any], facts: Facts) -> list[str]:
    """Every disagreement between mcpgen's model and dcg's reading, one readable line each."""
    by_pointer: dict[str, TypeDef] = {t.pointer: t for t in model.types.values()}
    problems = [f"dcg made an inline model that no walk could place at a pointer: {u}" for u in reading.unplaced]

    defs_key = "$defs" if "$defs" in document else "definitions"
    for name in sorted(document[defs_key]):
        pointer = f"/{defs_key}/{_escape(name)}"
        if pointer not in reading.objects and pointer not in reading.not_objects:
            problems.append(f"{name}: dcg produced no model for this definition")

    kept_whole: list[str] = []  # pointers of objects mcpgen keeps as dicts, for a stated reason
    for pointer, obj in sorted(reading.objects.items()):  # a parent sorts before its children
        is_definition = pointer.count("/") == 2
        where = pointer.rsplit("/", 1)[-1] if is_definition else pointer
        ours = by_pointer.get(pointer)
        if ours is None and any(pointer.startswith(f"{k}/") for k in kept_whole):
            continue  # inside an object mcpgen keeps whole: its parent's reason covers it
        if isinstance(ours, StructDef):
            problems += _fields_differ(f"{where} (mcpgen {ours.name})", obj.fields, ours.fields)
            continue
        # dcg reads an object with fields where mcpgen keeps a dict (or something else).
        # facts.toml names a definition kept whole in [open_definitions], an inline object
        # (a property of some struct) in [open_objects] as "<Struct>.<property>".
        key: str | None
        if is_definition:
            table, key = "open_definitions", where  # a table new with 2026-07-28
        else:
            table, key = "open_objects", _owner_key(model, by_pointer, pointer)
        if key is not None and key in getattr(facts, table, {}):
            kept_whole.append(pointer)  # on purpose: facts.toml says why
            continue
        kept_as_dict = ours is None or (isinstance(ours, AliasDef) and ours.target == DictOf(Prim("Any")))
        if kept_as_dict and obj.open and _declared_open(document, pointer):
            kept_whole.append(pointer)  # the schema declares it open, and dcg reads it so too
            continue
        made = "no named type" if ours is None else f"{ours.kind} {ours.name}"
        problems.append(
            f"{where}: dcg reads an object with fields {sorted(obj.fields)}, mcpgen makes {made}; "
            f"facts.toml [{table}] does not list {key or pointer!r} and the schema does not declare it open"
        )

    for struct in model.structs():
        if struct.fields and struct.pointer not in reading.objects:
            dcg_made = reading.not_objects.get(struct.pointer, "nothing it could place there")
            problems.append(
                f"{struct.pointer}: mcpgen makes struct {struct.name} with fields "
                f"{[f.wire_name for f in struct.fields]}, dcg reads no object with fields there ({dcg_made})"
            )
    return problems


# ---------------------------------------------------------------- per revision, cached


@dataclass
class Revision:
    text: str
    document: dict[str, Any]
    model: Model
    reading: OracleReading


def _build(text: str, source: str, revision: str) -> Model:
    return build_model(parse_schema(text.encode(), source, revision))


@pytest.fixture(scope="module")
def revisions() -> dict[str, Revision]:
    """mcpgen's model and dcg's reading of every shipped revision, each built once."""
    result: dict[str, Revision] = {}
    for rev in shipped.revisions():
        text = shipped.path_for(rev).read_text(encoding="utf-8")
        model = _build(text, f"mcpgen:{rev}", rev)
        result[rev] = Revision(text, json.loads(text), model, read_with_dcg(text))
    return result


@pytest.fixture(scope="module")
def facts() -> Facts:
    return Facts.load()


@pytest.mark.parametrize("revision", shipped.revisions())
def test_fields_and_required_agree_with_dcg(revisions: dict[str, Revision], facts: Facts, revision: str) -> None:
    rev = revisions[revision]
    problems = compare(rev.model, rev.reading, rev.document, facts)
    assert not problems, f"{revision}: mcpgen and datamodel-code-generator disagree:\n" + "\n".join(problems)


@pytest.mark.parametrize("revision", shipped.revisions())
def test_oracle_covers_the_revision(revisions: dict[str, Revision], revision: str) -> None:
    """The comparison is not vacuous: dcg reads most definitions as objects with fields, and
    every struct mcpgen makes (definitions and inline objects alike) has a dcg counterpart."""
    rev = revisions[revision]
    defs = rev.document.get("$defs") or rev.document["definitions"]
    compared_defs = [p for p in rev.reading.objects if p.count("/") == 2]
    assert len(compared_defs) >= len(defs) // 2
    inline_structs = [s for s in rev.model.structs() if s.pointer.count("/") > 2 and s.fields]
    assert inline_structs and all(s.pointer in rev.reading.objects for s in inline_structs)


# ---------------------------------------------------------------- the oracle is live


def _tweaked(document: dict[str, Any], tweak: Any) -> str:
    doc = copy.deepcopy(document)
    tweak(doc)
    return json.dumps(doc)


def test_a_required_list_mcpgen_misreads_is_caught(revisions: dict[str, Revision], facts: Facts) -> None:
    """Give mcpgen a copy whose ``Tool.required`` lost ``name`` and gained ``title``, and dcg
    the shipped file: exactly those two fields are reported, naming the definition."""
    rev = revisions["2025-11-25"]

    def tweak(doc: dict[str, Any]) -> None:
        required = doc["$defs"]["Tool"]["required"]
        required.remove("name")
        required.append("title")

    model = _build(_tweaked(rev.document, tweak), "tweaked", "2025-11-25")
    problems = compare(model, rev.reading, rev.document, facts)
    assert problems == [
        "Tool (mcpgen Tool): field 'name' is required for dcg, optional for mcpgen",
        "Tool (mcpgen Tool): field 'title' is optional for dcg, required for mcpgen",
    ]


def test_a_lost_or_renamed_property_is_caught(revisions: dict[str, Revision], facts: Facts) -> None:
    """A property missing on one side, in a definition and in an inline object, is named."""
    rev = revisions["2025-11-25"]

    def tweak(doc: dict[str, Any]) -> None:
        doc["$defs"]["Implementation"]["properties"].pop("websiteUrl")
        caps = doc["$defs"]["ClientCapabilities"]["properties"]["roots"]["properties"]
        caps["listchanged"] = caps.pop("listChanged")

    model = _build(_tweaked(rev.document, tweak), "tweaked", "2025-11-25")
    problems = compare(model, rev.reading, rev.document, facts)
    roots = "/$defs/ClientCapabilities/properties/roots (mcpgen ClientCapabilitiesRoots)"
    assert problems == [
        f"{roots}: field 'listChanged' is read by dcg but missing from mcpgen",
        f"{roots}: field 'listchanged' is in mcpgen but dcg reads no such field",
        "Implementation (mcpgen Implementation): field 'websiteUrl' is read by dcg but missing from mcpgen",
    ]


def test_an_object_kept_as_a_dict_needs_a_reason(revisions: dict[str, Revision]) -> None:
    """mcpgen keeping an object with fields as a dict passes only while facts.toml lists it."""
    rev = revisions["2025-11-25"]
    model = _build(rev.text, "copy", "2025-11-25")
    tool = model.types["Tool"]
    model.types["Tool"] = AliasDef("Tool", DictOf(Prim("Any")), tool.pointer)

    listed = Facts.load()
    listed.open_definitions["Tool"] = "a test's reason"
    assert compare(model, rev.reading, rev.document, listed) == []

    problems = compare(model, rev.reading, rev.document, Facts.load())
    assert len(problems) == 1 and problems[0].startswith("Tool: dcg reads an object with fields ['_meta',")
    assert "facts.toml [open_definitions] does not list 'Tool'" in problems[0]


def test_inline_open_objects_are_accounted_for_by_facts(revisions: dict[str, Revision]) -> None:
    """``Tool.inputSchema`` is an object with fields for dcg and a dict for mcpgen; it passes
    because facts.toml lists it, and without that entry the disagreement is reported."""
    rev = revisions["2025-11-25"]
    facts = Facts.load()
    assert "Tool.inputSchema" in facts.open_objects
    del facts.open_objects["Tool.inputSchema"]
    problems = compare(rev.model, rev.reading, rev.document, facts)
    assert len(problems) == 1 and problems[0].startswith("/$defs/Tool/properties/inputSchema: dcg reads")
    assert "does not list 'Tool.inputSchema'" in problems[0]
