"""A tool's arguments on the command line: ``-a key=value`` typed by the tool's
``inputSchema``, checked against it before anything is sent (every problem at once, with
"did you mean" for a misspelt name), and shown as a signature in ``mcpgen call``'s listing.

The schema comes from the server; a ``$ref`` is followed inside the schema only (``#/$defs/...``),
a bounded number of hops, so a cycle or a reference to nowhere types nothing.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable
from typing import Any

from mcpgen.cli.errors import CallError

MAX_PROBLEMS = 20  # reported at once; more are counted
_HOPS = 16  # $ref hops followed when typing one argument
_ENUM_SHOWN = 6  # values of an enum spelled out in a signature
_REQUIRED = re.compile(r'^"(.*)" is a required property$')
_UNEXPECTED = re.compile(r"^Additional properties are not allowed")
_ALTERNATIVES = "is not valid under any of the schemas"  # anyOf/oneOf: say what was expected


def closest(word: str, options: Iterable[str]) -> str | None:
    """The option ``word`` most likely misspells, if one is close enough."""
    found = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return found[0] if found else None


def did_you_mean(word: str, options: Iterable[str]) -> str:
    """``"; did you mean 'add'?"``, or nothing."""
    match = closest(word, options)
    return f"; did you mean {match!r}?" if match is not None else ""


def resolve(schema: Any, root: Any, hops: int = _HOPS) -> Any:
    """``schema`` with its local ``$ref`` followed (``#/$defs/X``, ``#/definitions/X``, any
    ``#/...`` pointer into ``root``); ``{}`` when it leads nowhere."""
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
        if hops <= 0:
            return {}
        hops -= 1
        pointer = schema["$ref"]
        if not pointer.startswith("#"):
            return {}  # a remote reference is never fetched
        target: Any = root
        for part in pointer[1:].split("/")[1:]:
            key = part.replace("~1", "/").replace("~0", "~")
            target = target.get(key) if isinstance(target, dict) else None
        schema = target if isinstance(target, dict) else {}
    return schema


def kinds(schema: Any, root: Any, hops: int = _HOPS) -> set[str]:
    """The JSON types an argument's schema admits (``string``, ``null``, ...; an enum or
    const that is not text counts as ``other``)."""
    schema = resolve(schema, root, hops)
    if not isinstance(schema, dict):
        return set()
    found: set[str] = set()
    kind = schema.get("type")
    if isinstance(kind, str):
        found.add(kind)
    elif isinstance(kind, list):
        found.update(k for k in kind if isinstance(k, str))
    for values in (schema.get("enum"), [schema["const"]] if "const" in schema else None):
        if isinstance(values, list):
            found.update("string" if isinstance(v, str) else "other" for v in values)
    for combinator in ("anyOf", "oneOf", "allOf"):
        subs = schema.get(combinator)
        for sub in subs if isinstance(subs, list) and hops > 0 else []:
            found |= kinds(sub, root, hops - 1)
    return found


def shown(schema: Any, root: Any, hops: int = _HOPS) -> str:
    """How an argument's type reads in a signature: ``integer``, ``array|null``, ``object``
    (also for a ``$ref`` to one), ``"red"|"green"`` for an enum."""
    schema = resolve(schema, root, hops)
    if not isinstance(schema, dict):
        return "any"
    parts: list[str] = []
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        values = [json.dumps(v, ensure_ascii=False) for v in schema["enum"]]
        parts += values[:_ENUM_SHOWN] + (["…"] if len(values) > _ENUM_SHOWN else [])
    elif "const" in schema:
        parts.append(json.dumps(schema["const"], ensure_ascii=False))
    elif isinstance(schema.get("type"), str):
        parts.append(schema["type"])
    elif isinstance(schema.get("type"), list):
        parts += [k for k in schema["type"] if isinstance(k, str)]
    for combinator in ("anyOf", "oneOf", "allOf"):
        subs = schema.get(combinator)
        for sub in subs if isinstance(subs, list) and hops > 0 else []:
            parts += shown(sub, root, hops - 1).split("|")
    if not parts and isinstance(schema.get("properties"), dict):
        parts.append("object")
    unique = list(dict.fromkeys(p for p in parts if p != "any"))
    return "|".join(unique) or "any"


def signature(schema: Any) -> str:
    """``a: integer, [b: string]``: the parameters, optional ones in brackets."""
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return ""
    required = set(schema.get("required") or []) if isinstance(schema.get("required"), list) else set()
    parts = []
    for key, sub in schema["properties"].items():
        part = f"{key}: {shown(sub, schema)}"
        parts.append(part if key in required else f"[{part}]")
    return ", ".join(parts)


def read_args(pairs: list[str], schema: dict[str, Any] | None = None) -> tuple[dict[str, Any], list[str], set[str]]:
    """``key=value`` pairs, typed by the tool's ``inputSchema``, and what is wrong with them.
    A parameter that takes a string keeps the text as it is (``zip=02134`` stays "02134");
    any other is parsed as JSON (``n=3`` is 3, ``tags=["a"]`` a list). A parameter the
    schema does not describe is JSON when it parses as JSON, else text. Returns the
    arguments, the problems, and the names of the arguments the problems are about."""
    schema = schema or {}
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    out: dict[str, Any] = {}
    problems: list[str] = []
    wrong: set[str] = set()
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            problems.append(f"--arg takes key=value, got {pair!r}")
            continue
        types = kinds(properties.get(key), schema)
        if "string" in types and not (value == "null" and "null" in types):
            out[key] = value
            continue
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            if "array" in types or "object" in types:
                example = """'tags=["a", "b"]'""" if "array" in types else """'point={"x": 1}'"""
                kind = "an array" if "array" in types else "an object"
                problems.append(f"--arg {key} takes {kind}, written as JSON: e.g. -a {example}")
                wrong.add(key)
            out[key] = value  # the server says what it expected
    return out, problems, wrong


def parse_args(pairs: list[str], schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """:func:`read_args`, raising :class:`CallError` with every problem at once."""
    arguments, problems, _ = read_args(pairs, schema)
    if problems:
        raise CallError(summary(problems))
    return arguments


def check(arguments: dict[str, Any], schema: Any, said: Iterable[str] = ()) -> list[str]:
    """Every way ``arguments`` break the tool's ``inputSchema``, one line each (an unknown
    name with the one it likely misspells; each missing or mistyped value), except for the
    arguments already ``said`` to be wrong. A schema that cannot be used (broken, remote
    references) checks nothing: the server will."""
    if not isinstance(schema, dict):
        return []
    found = schema.get("properties")
    properties: dict[str, Any] = found if isinstance(found, dict) else {}
    closed = schema.get("additionalProperties") is False
    problems = []
    for key in arguments:
        if properties and key not in properties:
            match = closest(key, properties)
            if match is not None:
                problems.append(f"{key}: no such argument (did you mean {match!r}?)")
            elif closed:
                problems.append(f"{key}: no such argument (it takes {', '.join(properties)})")
    from mcpgen.runtime.shared.jsonschema import SchemaValidationError, compile_schema, errors

    try:
        compile_schema(schema)
    except SchemaValidationError:
        return problems
    misspelt = {p.split(":", 1)[0] for p in problems}
    skip = set(said)
    for error in errors(arguments, schema, limit=MAX_PROBLEMS):
        path = error.path.removeprefix("$").removeprefix(".")
        if not path and _UNEXPECTED.match(error.message) and misspelt:
            continue  # said above, name by name
        missing = _REQUIRED.match(error.message)
        name = missing[1] if missing and not path else re.split(r"[.\[]", path, maxsplit=1)[0]
        if name in skip:
            continue
        if missing and not path:
            problems.append(f"{name}: missing (required)")
        elif path == name and name in properties and _ALTERNATIVES in error.message:
            value = json.dumps(arguments.get(name), ensure_ascii=False)
            problems.append(f"{name}: expected {shown(properties[name], schema)}, got {value}")
        else:
            problems.append(f"{path}: {error.message}" if path else error.message)
    return problems


def summary(problems: list[str]) -> str:
    """Problems as one line: the first :data:`MAX_PROBLEMS`, and how many more."""
    shown_ = problems[:MAX_PROBLEMS]
    more = f"; and {len(problems) - MAX_PROBLEMS} more" if len(problems) > MAX_PROBLEMS else ""
    return "; ".join(shown_) + more


__all__ = [
    "MAX_PROBLEMS",
    "check",
    "closest",
    "did_you_mean",
    "kinds",
    "parse_args",
    "read_args",
    "resolve",
    "shown",
    "signature",
    "summary",
]
