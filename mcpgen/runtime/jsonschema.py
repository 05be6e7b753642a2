"""A small, dependency-free JSON Schema validator.

MCP clients must check a tool's ``structuredContent`` against its ``outputSchema``
and servers may check elicitation answers, but the runtime must not depend on the
``jsonschema`` package.  This module implements the assertions of JSON Schema
draft 2020-12 (with the draft-07/draft-04 spellings that still occur in the wild)
for schemas contained in a single document.

A schema is compiled once into nested closures; the resulting callable raises
:class:`SchemaValidationError` on the first problem.  Failures travel as a cheap
internal exception whose instance path is assembled while it unwinds, so the
success path never builds path strings.

Not implemented: remote ``$ref`` (rejected at compile time), ``$dynamicRef``
dynamic scoping (it is resolved statically, like ``$ref``), ``unevaluated*``,
``content*`` and most formats (``format`` is an annotation unless asked for).
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
import threading
from collections.abc import Callable, Hashable, Iterator, Mapping
from fractions import Fraction
from typing import Any, Final, TypeAlias, TypeGuard
from urllib.parse import unquote, urldefrag, urljoin

__all__ = ["MAX_DEPTH", "SchemaValidationError", "compile_schema", "errors", "validate"]

#: Deepest schema nesting accepted at compile time, and deepest chain of active
#: ``$ref`` evaluations at validation time.  Beyond it we report an error instead
#: of letting Python raise RecursionError (or loop forever on ``{"$ref": "#"}``).
#: Each level of recursive data costs a few Python frames, so the interpreter's
#: own recursion limit may trip first; that is caught and reported the same way.
MAX_DEPTH: Final = 256

Schema: TypeAlias = "Mapping[str, Any] | bool"
Validator: TypeAlias = Callable[[Any], None]
_Seg: TypeAlias = "str | int"


class SchemaValidationError(ValueError):
    """An instance does not match its schema, or the schema itself is unusable.

    ``str()`` is one line, ``"<path>: <message>"``.  For instance problems ``path``
    is a JSON path such as ``$.items[2].name``; for schema problems found while
    compiling it is a JSON pointer into the schema such as ``#/properties/a``.
    """

    path: str
    message: str

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


# --------------------------------------------------------------------------
# Internal failure signalling
# --------------------------------------------------------------------------


class _Fail(Exception):
    """A validation failure on its way up.

    ``problems`` holds (path segments innermost-first, message).  Segments are
    appended by each enclosing property/item as the exception unwinds, which is
    far cheaper than threading a path through every successful call.  In
    fail-fast mode there is exactly one problem; in collecting mode several.
    """

    def __init__(self, message: str) -> None:
        self.problems: list[tuple[list[_Seg], str]] = [([], message)]


class _TooDeep(Exception):
    """Nesting limit exceeded.

    Deliberately not a :class:`_Fail`: ``not``/``anyOf``/``if`` treat a _Fail as
    "did not match" and would otherwise turn a resource guard into a verdict.
    """


def _prefix(fail: _Fail, seg: _Seg) -> _Fail:
    for segs, _ in fail.problems:
        segs.append(seg)
    return fail


def _gather(acc: _Fail | None, fail: _Fail, limit: int) -> _Fail:
    """Merge ``fail`` into ``acc`` (collecting mode); stop early once ``limit`` is hit."""
    if acc is None:
        acc = fail
    else:
        acc.problems.extend(fail.problems)
    if len(acc.problems) >= limit:
        raise acc
    return acc


_IDENT: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _format_path(segs: list[_Seg]) -> str:
    parts = ["$"]
    for seg in reversed(segs):
        if isinstance(seg, int):
            parts.append(f"[{seg}]")
        elif _IDENT.match(seg):
            parts.append("." + seg)
        else:
            parts.append("[" + json.dumps(seg, ensure_ascii=False) + "]")
    return "".join(parts)


def _show(value: Any) -> str:
    """A short rendering for messages; containers are named, never dumped (size)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        text = json.dumps(value, ensure_ascii=False)
        return text if len(text) <= 60 else text[:57] + "..."
    return _type_name(value)


def _show_all(values: Any) -> str:
    shown = ", ".join(_show(v) for v in values)
    return shown if len(shown) <= 120 else shown[:117] + "..."


# --------------------------------------------------------------------------
# JSON data model helpers
# --------------------------------------------------------------------------


def _is_number(v: Any) -> bool:
    # bool is an int subclass in Python, but JSON true is not the number 1.
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_integer(v: Any) -> bool:
    # The spec defines "integer" as a number with a zero fractional part, so 1.0 counts.
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return True
    return isinstance(v, float) and v.is_integer()


def _is_array(v: Any) -> bool:
    return isinstance(v, (list, tuple))


def _is_object(v: Any) -> bool:
    return isinstance(v, dict)


def _is_string(v: Any) -> bool:
    return isinstance(v, str)


def _is_boolean(v: Any) -> bool:
    return isinstance(v, bool)


def _is_null(v: Any) -> bool:
    return v is None


_TYPE_CHECKS: Final[dict[str, Callable[[Any], bool]]] = {
    "null": _is_null,
    "boolean": _is_boolean,
    "integer": _is_integer,
    "number": _is_number,
    "string": _is_string,
    "array": _is_array,
    "object": _is_object,
}


def _type_name(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, (list, tuple)):
        return "array"
    if isinstance(v, dict):
        return "object"
    return type(v).__name__


_BOOL_TAG: Final = "\x00bool"
_ARRAY_TAG: Final = "\x00array"
_OBJECT_TAG: Final = "\x00object"
_OTHER_TAG: Final = "\x00other"


def _freeze(v: Any, depth: int = 0) -> Hashable:
    """A hashable key such that keys are equal exactly when values are JSON-equal.

    Python already says 1 == 1.0 (and hashes them alike), which is JSON equality;
    but it also says True == 1, which JSON does not, so booleans get a tag.
    Strings, numbers and null stand for themselves; no tuple equals them.
    """
    if depth > MAX_DEPTH:
        raise _TooDeep(f"value nested deeper than {MAX_DEPTH} levels")
    if isinstance(v, bool):
        return (_BOOL_TAG, v)
    if v is None or isinstance(v, (str, int, float)):
        return v
    if isinstance(v, (list, tuple)):
        return (_ARRAY_TAG, tuple(_freeze(x, depth + 1) for x in v))
    if isinstance(v, dict):
        return (_OBJECT_TAG, frozenset((k, _freeze(x, depth + 1)) for k, x in v.items()))
    # Not JSON; equal only to itself.
    return (_OTHER_TAG, id(v))


def _fraction(x: int | float) -> Fraction | None:
    # Go through the shortest repr so that 0.1 means the decimal 1/10 its author
    # wrote, not the binary float 0.1000000000000000055...; then 0.3 is a
    # multiple of 0.1, as a reader of the schema expects.
    if isinstance(x, int):
        return Fraction(x)
    if not math.isfinite(x):
        return None
    return Fraction(repr(x))


# --------------------------------------------------------------------------
# Formats (asserted only on request)
# --------------------------------------------------------------------------

_DATE_RE: Final = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})\Z")
_DATE_TIME_RE: Final = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.[0-9]+)?"
    r"(?:[Zz]|[+-]([0-9]{2}):([0-9]{2}))\Z"
)
# Deliberately loose: something@something, no whitespace.
_EMAIL_RE: Final = re.compile(r"[^@\s]+@[^@\s]+\Z")
# Deliberately loose: a scheme, then no whitespace.
_URI_RE: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:\S*\Z")


def _valid_date(year: str, month: str, day: str) -> bool:
    try:
        _dt.date(int(year), int(month), int(day))
    except ValueError:
        return False
    return True


def _is_date(s: str) -> bool:
    m = _DATE_RE.match(s)
    return m is not None and _valid_date(*m.groups())


def _is_date_time(s: str) -> bool:
    m = _DATE_TIME_RE.match(s)
    if m is None:
        return False
    year, month, day, hour, minute, second, off_h, off_m = m.groups()
    return (
        _valid_date(year, month, day)
        and int(hour) < 24
        and int(minute) < 60
        and int(second) <= 60  # RFC 3339 allows a leap second
        and (off_h is None or (int(off_h) < 24 and int(off_m) < 60))
    )


def _is_email(s: str) -> bool:
    return _EMAIL_RE.match(s) is not None


def _is_uri(s: str) -> bool:
    return _URI_RE.match(s) is not None


_FORMATS: Final[dict[str, Callable[[str], bool]]] = {
    "date-time": _is_date_time,
    "date": _is_date,
    "email": _is_email,
    "uri": _is_uri,
}


# --------------------------------------------------------------------------
# Trivial validators and the $ref depth guard
# --------------------------------------------------------------------------


def _accept(instance: Any) -> None:
    return None


def _reject(instance: Any) -> None:
    raise _Fail("no value is allowed here (false schema)")


def _unresolved(instance: Any) -> None:  # pragma: no cover - replaced before use
    raise AssertionError("$ref target used before it was compiled")


class _RefDepth(threading.local):
    # Per thread, so one compiled validator can be shared between threads.
    depth = 0


_ref_depth: Final = _RefDepth()

# Schemas that say they are draft-07 or older: there, "$ref" overrides its siblings.
_LEGACY_RE: Final = re.compile(r"draft-0[0-7]\b")
# Base URI for a root without "$id"; relative refs resolve against it and miss.
_DEFAULT_BASE: Final = "urn:mcpgen:schema-root"

# Keywords whose values are subschemas, by shape (used to find "$id"/"$anchor").
_SCHEMA_VALUED: Final = (
    "additionalProperties",
    "propertyNames",
    "items",
    "additionalItems",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
)
_LIST_VALUED: Final = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
_MAP_VALUED: Final = (
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
)

_MISSING: Final = object()


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _is_schema(value: Any) -> TypeGuard[Schema]:
    return isinstance(value, (bool, Mapping))


def _subschemas(schema: Mapping[str, Any], where: str) -> Iterator[tuple[Schema, str]]:
    for key in _SCHEMA_VALUED:
        value = schema.get(key)
        if _is_schema(value):
            yield value, f"{where}/{key}"
    for key in _LIST_VALUED:
        value = schema.get(key)
        if isinstance(value, list):
            for i, sub in enumerate(value):
                if _is_schema(sub):
                    yield sub, f"{where}/{key}/{i}"
    for key in _MAP_VALUED:
        value = schema.get(key)
        if isinstance(value, Mapping):
            for name, sub in value.items():
                if _is_schema(sub):
                    yield sub, f"{where}/{key}/{_escape(str(name))}"


# --------------------------------------------------------------------------
# The compiler
# --------------------------------------------------------------------------


class _Compiler:
    """Turns one schema document into a tree (or, through $ref, a graph) of closures.

    ``$ref`` never compiles its target on the spot: it takes a *cell* that a
    worklist fills once the current subtree is done.  That makes self-referential
    schemas compile in finite time, while every reachable target is still
    compiled (and its errors, e.g. a bad regex, reported) by compile_schema.
    """

    def __init__(self, root: Schema, *, format_assertion: bool, collect: bool, limit: int) -> None:
        if not _is_schema(root):
            raise SchemaValidationError("#", "a schema must be an object or a boolean")
        self.format_assertion = format_assertion
        self.collect = collect
        self.limit = limit
        declared = root.get("$schema") if isinstance(root, Mapping) else None
        self.legacy = isinstance(declared, str) and _LEGACY_RE.search(declared) is not None
        self.resources: dict[str, Schema] = {}
        self.anchors: dict[tuple[str, str], Schema] = {}
        # id(subschema) -> base URI in force where the subschema sits (before its own $id).
        self.bases: dict[int, str] = {}
        self.cells: dict[int, list[Validator]] = {}
        self.pending: list[tuple[Schema, str, str, list[Validator]]] = []
        self.root = root
        self.resources[_DEFAULT_BASE] = root
        self._index(root, _DEFAULT_BASE, "#", 0)

    # -- errors ---------------------------------------------------------------

    @staticmethod
    def _error(where: str, message: str) -> SchemaValidationError:
        return SchemaValidationError(where, f"invalid schema: {message}")

    # -- indexing: where do "$id" and "$anchor" point? -----------------------

    def _own_base(self, schema: Mapping[str, Any], base: str) -> str:
        sid = schema.get("$id")
        if not isinstance(sid, str) or sid.startswith("#"):
            return base
        if self.legacy and "$ref" in schema:
            return base  # draft-07: every sibling of $ref, $id included, is ignored
        return urldefrag(urljoin(base, sid)).url

    def _index(self, schema: Schema, base: str, where: str, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise self._error(where, f"schema nested deeper than {MAX_DEPTH} levels")
        if not isinstance(schema, Mapping):
            return
        self.bases.setdefault(id(schema), base)
        sid = schema.get("$id")
        if isinstance(sid, str) and sid.startswith("#") and len(sid) > 1:
            # draft-07 spelled anchors as a fragment-only "$id".
            self.anchors.setdefault((base, sid[1:]), schema)
        new_base = self._own_base(schema, base)
        if new_base != base:
            # Refs that spell out this URI (the root's own included) are local too.
            self.resources.setdefault(new_base, schema)
        for key in ("$anchor", "$dynamicAnchor"):
            anchor = schema.get(key)
            if isinstance(anchor, str):
                self.anchors.setdefault((new_base, anchor), schema)
        for sub, sub_where in _subschemas(schema, where):
            self._index(sub, new_base, sub_where, depth + 1)

    # -- $ref resolution -----------------------------------------------------

    def _resolve(self, ref: str, base: str, where: str) -> tuple[Schema, str]:
        if ref.startswith("#"):
            uri, fragment = base, ref[1:]
        else:
            uri, fragment = urldefrag(urljoin(base, ref))
        resource = self.resources.get(uri)
        if resource is None:
            raise SchemaValidationError(where, f"remote $ref not supported: {ref!r}")
        fragment = unquote(fragment)
        if fragment == "":
            return resource, self.bases.get(id(resource), uri)
        if fragment.startswith("/"):
            target = self._pointer(resource, fragment, ref, where)
            return target, self.bases.get(id(target), uri)
        anchored = self.anchors.get((uri, fragment))
        if anchored is None:
            raise self._error(where, f"$ref {ref!r}: no such $anchor")
        return anchored, self.bases.get(id(anchored), uri)

    def _pointer(self, resource: Schema, pointer: str, ref: str, where: str) -> Schema:
        node: Any = resource
        for raw in pointer.split("/")[1:]:
            # RFC 6901: "~1" before "~0", so that "~01" means "~1" and not "/".
            token = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping) and token in node:
                node = node[token]
            elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
                node = node[int(token)]
            else:
                raise self._error(where, f"$ref {ref!r} does not resolve")
        if not _is_schema(node):
            raise self._error(where, f"$ref {ref!r} does not point to a schema")
        result: Schema = node
        return result

    def _cell(self, target: Schema, base: str, where: str) -> list[Validator]:
        cell = self.cells.get(id(target))
        if cell is None:
            cell = [_unresolved]
            self.cells[id(target)] = cell
            self.pending.append((target, base, where, cell))
        return cell

    def compile_root(self) -> Validator:
        root_cell = self._cell(self.root, _DEFAULT_BASE, "#")
        while self.pending:
            target, base, where, cell = self.pending.pop()
            cell[0] = self.compile(target, base, where, 0)
        return root_cell[0]

    def _ref(self, ref: Any, base: str, where: str) -> Validator:
        if not isinstance(ref, str):
            raise self._error(where, "$ref must be a string")
        target, target_base = self._resolve(ref, base, where)
        cell = self._cell(target, target_base, where)
        state = _ref_depth

        def check_ref(instance: Any) -> None:
            # Only $ref can make evaluation deeper than the schema, so this is the
            # one place that needs counting (cycles like {"$ref": "#"} included).
            depth = state.depth
            if depth >= MAX_DEPTH:
                raise _TooDeep(f"$ref nesting deeper than {MAX_DEPTH} levels")
            state.depth = depth + 1
            try:
                cell[0](instance)
            finally:
                state.depth = depth

        return check_ref

    # -- schema-valued keyword helpers -----------------------------------------

    def _number(self, schema: Mapping[str, Any], key: str, where: str) -> int | float | None:
        value = schema.get(key)
        if value is None:
            return None
        if not _is_number(value):
            raise self._error(f"{where}/{key}", "must be a number")
        result: int | float = value
        return result

    def _count(self, schema: Mapping[str, Any], key: str, where: str) -> int | None:
        value = schema.get(key)
        if value is None:
            return None
        if not _is_integer(value) or value < 0:
            raise self._error(f"{where}/{key}", "must be a non-negative integer")
        return int(value)

    def _regex(self, pattern: Any, where: str) -> re.Pattern[str]:
        if not isinstance(pattern, str):
            raise self._error(where, "a pattern must be a string")
        try:
            return re.compile(pattern)
        except re.error as exc:
            raise self._error(where, f"bad regular expression {pattern!r}: {exc}") from None

    def _schema_list(self, schema: Mapping[str, Any], key: str, base: str, where: str, depth: int) -> list[Validator]:
        value = schema[key]
        # An empty list is against the metaschema, but its meaning is clear enough
        # (allOf: no-op; anyOf/oneOf: nothing matches) to accept a sloppy server's schema.
        if not isinstance(value, list):
            raise self._error(f"{where}/{key}", "must be an array of schemas")
        return [self.compile(sub, base, f"{where}/{key}/{i}", depth + 1) for i, sub in enumerate(value)]

    def _schema_map(self, value: Any, where: str) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self._error(where, "must be an object")
        return value

    # -- the main entry --------------------------------------------------------

    def compile(self, schema: Schema, base: str, where: str, depth: int) -> Validator:
        if depth > MAX_DEPTH:
            raise self._error(where, f"schema nested deeper than {MAX_DEPTH} levels")
        if schema is True:
            return _accept
        if schema is False:
            return _reject
        if not isinstance(schema, Mapping):
            raise self._error(where, "a schema must be an object or a boolean")
        base = self._own_base(schema, base)

        checks: list[Validator] = []
        if "$ref" in schema:
            checks.append(self._ref(schema["$ref"], base, f"{where}/$ref"))
            if self.legacy:
                return checks[0]
        if "$dynamicRef" in schema:
            # Static approximation: resolves like $ref, ignoring the dynamic scope.
            checks.append(self._ref(schema["$dynamicRef"], base, f"{where}/$dynamicRef"))
        self._generic(schema, where, checks)
        self._numeric(schema, where, checks)
        self._string(schema, where, checks)
        self._array(schema, base, where, depth, checks)
        self._object(schema, base, where, depth, checks)
        self._combinators(schema, base, where, depth, checks)
        return self._all(checks)

    def _all(self, checks: list[Validator]) -> Validator:
        checks = [c for c in checks if c is not _accept]
        if not checks:
            return _accept
        if len(checks) == 1:
            return checks[0]  # one frame less per level: matters for deep data
        run = tuple(checks)
        if not self.collect:

            def check_all(instance: Any) -> None:
                for check in run:
                    check(instance)

            return check_all

        limit = self.limit

        def collect_all(instance: Any) -> None:
            acc: _Fail | None = None
            for check in run:
                try:
                    check(instance)
                except _Fail as fail:
                    acc = _gather(acc, fail, limit)
            if acc is not None:
                raise acc

        return collect_all

    # -- type, enum, const -----------------------------------------------------

    def _generic(self, schema: Mapping[str, Any], where: str, checks: list[Validator]) -> None:
        if "type" in schema:
            checks.append(self._type(schema["type"], f"{where}/type"))

        if "enum" in schema:
            options = schema["enum"]
            if not isinstance(options, list):
                raise self._error(f"{where}/enum", "must be an array")
            allowed = frozenset(self._freeze_literal(v, f"{where}/enum") for v in options)
            enum_msg = f"must be one of {_show_all(options)}"

            def check_enum(instance: Any) -> None:
                if _freeze(instance) not in allowed:
                    raise _Fail(f"{_show(instance)} is not allowed; {enum_msg}")

            checks.append(check_enum)

        if "const" in schema:
            const = schema["const"]
            const_msg = f"must be {_show(const)}"
            if isinstance(const, str):
                # Fast path for discriminators like {"const": "text"}.
                def check_const_str(instance: Any) -> None:
                    if instance != const:
                        raise _Fail(f"{_show(instance)} is not allowed; {const_msg}")

                checks.append(check_const_str)
            else:
                frozen = self._freeze_literal(const, f"{where}/const")

                def check_const(instance: Any) -> None:
                    if _freeze(instance) != frozen:
                        raise _Fail(f"{_show(instance)} is not allowed; {const_msg}")

                checks.append(check_const)

    def _freeze_literal(self, value: Any, where: str) -> Hashable:
        try:
            return _freeze(value)
        except _TooDeep as exc:
            raise self._error(where, str(exc)) from None

    def _type(self, spec: Any, where: str) -> Validator:
        names = [spec] if isinstance(spec, str) else spec
        if not isinstance(names, list) or not names:
            raise self._error(where, "must be a type name or a non-empty array of them")
        for name in names:
            if not isinstance(name, str) or name not in _TYPE_CHECKS:
                raise self._error(where, f"unknown type {name!r}")
        expected = " or ".join(names)
        if len(names) == 1:
            is_type = _TYPE_CHECKS[names[0]]

            def check_type(instance: Any) -> None:
                if not is_type(instance):
                    raise _Fail(f"expected {expected}, got {_type_name(instance)}")

            return check_type

        predicates = tuple(_TYPE_CHECKS[n] for n in names)

        def check_types(instance: Any) -> None:
            for is_type in predicates:
                if is_type(instance):
                    return
            raise _Fail(f"expected {expected}, got {_type_name(instance)}")

        return check_types

    # -- numbers ---------------------------------------------------------------

    def _numeric(self, schema: Mapping[str, Any], where: str, checks: list[Validator]) -> None:
        minimum = self._number(schema, "minimum", where)
        maximum = self._number(schema, "maximum", where)
        ex_min: Any = schema.get("exclusiveMinimum")
        ex_max: Any = schema.get("exclusiveMaximum")
        # draft-04: exclusiveMinimum/Maximum are booleans that sharpen minimum/maximum.
        if isinstance(ex_min, bool):
            if ex_min and minimum is not None:
                ex_min, minimum = minimum, None
            else:
                ex_min = None
        else:
            ex_min = self._number(schema, "exclusiveMinimum", where)
        if isinstance(ex_max, bool):
            if ex_max and maximum is not None:
                ex_max, maximum = maximum, None
            else:
                ex_max = None
        else:
            ex_max = self._number(schema, "exclusiveMaximum", where)

        if minimum is not None:
            low = minimum

            def check_minimum(instance: Any) -> None:
                if _is_number(instance) and instance < low:
                    raise _Fail(f"{_show(instance)} is less than the minimum {_show(low)}")

            checks.append(check_minimum)
        if maximum is not None:
            high = maximum

            def check_maximum(instance: Any) -> None:
                if _is_number(instance) and instance > high:
                    raise _Fail(f"{_show(instance)} is greater than the maximum {_show(high)}")

            checks.append(check_maximum)
        if ex_min is not None:
            ex_low: int | float = ex_min

            def check_exclusive_minimum(instance: Any) -> None:
                if _is_number(instance) and instance <= ex_low:
                    raise _Fail(f"{_show(instance)} must be greater than {_show(ex_low)}")

            checks.append(check_exclusive_minimum)
        if ex_max is not None:
            ex_high: int | float = ex_max

            def check_exclusive_maximum(instance: Any) -> None:
                if _is_number(instance) and instance >= ex_high:
                    raise _Fail(f"{_show(instance)} must be less than {_show(ex_high)}")

            checks.append(check_exclusive_maximum)

        divisor = self._number(schema, "multipleOf", where)
        if divisor is not None:
            exact = _fraction(divisor)
            if exact is None or exact <= 0:
                raise self._error(f"{where}/multipleOf", "must be a number greater than 0")
            int_divisor = divisor if isinstance(divisor, int) else None
            step: Fraction = exact

            def check_multiple_of(instance: Any) -> None:
                if not _is_number(instance):
                    return
                if int_divisor is not None and isinstance(instance, int):
                    ok = instance % int_divisor == 0  # exact, and the common case
                else:
                    value = _fraction(instance)
                    ok = value is not None and value % step == 0
                if not ok:
                    raise _Fail(f"{_show(instance)} is not a multiple of {_show(divisor)}")

            checks.append(check_multiple_of)

    # -- strings ---------------------------------------------------------------

    def _string(self, schema: Mapping[str, Any], where: str, checks: list[Validator]) -> None:
        # len() of a Python str counts code points, which is what the spec asks
        # for (not UTF-16 units): "😀" has length 1.
        min_length = self._count(schema, "minLength", where)
        if min_length is not None and min_length > 0:
            shortest = min_length

            def check_min_length(instance: Any) -> None:
                if isinstance(instance, str) and len(instance) < shortest:
                    raise _Fail(f"string is shorter than {shortest} characters")

            checks.append(check_min_length)
        max_length = self._count(schema, "maxLength", where)
        if max_length is not None:
            longest = max_length

            def check_max_length(instance: Any) -> None:
                if isinstance(instance, str) and len(instance) > longest:
                    raise _Fail(f"string is longer than {longest} characters")

            checks.append(check_max_length)
        if "pattern" in schema:
            regex = self._regex(schema["pattern"], f"{where}/pattern")

            def check_pattern(instance: Any) -> None:
                # search, not match: JSON Schema patterns are not anchored.
                if isinstance(instance, str) and regex.search(instance) is None:
                    raise _Fail(f"{_show(instance)} does not match pattern {regex.pattern!r}")

            checks.append(check_pattern)
        fmt = schema.get("format")
        if self.format_assertion and isinstance(fmt, str) and fmt in _FORMATS:
            conforms = _FORMATS[fmt]
            fmt_name = fmt

            def check_format(instance: Any) -> None:
                if isinstance(instance, str) and not conforms(instance):
                    raise _Fail(f"{_show(instance)} is not a valid {fmt_name}")

            checks.append(check_format)

    # -- arrays ----------------------------------------------------------------

    def _array(self, schema: Mapping[str, Any], base: str, where: str, depth: int, checks: list[Validator]) -> None:
        collect, limit = self.collect, self.limit
        items = schema.get("items")
        positional: list[Validator] = []
        rest: Validator | None = None
        if isinstance(items, list):
            # draft-07 tuple form: "items" is positional, "additionalItems" the rest.
            positional = [self.compile(s, base, f"{where}/items/{i}", depth + 1) for i, s in enumerate(items)]
            if "additionalItems" in schema:
                rest = self.compile(schema["additionalItems"], base, f"{where}/additionalItems", depth + 1)
        else:
            if "prefixItems" in schema:
                positional = self._schema_list(schema, "prefixItems", base, where, depth)
            if items is not None:
                rest = self.compile(items, base, f"{where}/items", depth + 1)
            # A schema-valued "items" covers everything, so "additionalItems" has nothing left.

        # Positional schemas that accept anything still matter when "items" follows
        # them: they decide where "items" starts.
        if (rest is not None and rest is not _accept) or any(p is not _accept for p in positional):
            checks.append(self._items_check(positional, rest, collect, limit))

        if "contains" in schema:
            checks.append(self._contains(schema, base, where, depth))

        min_items = self._count(schema, "minItems", where)
        if min_items is not None and min_items > 0:
            fewest = min_items

            def check_min_items(instance: Any) -> None:
                if _is_array(instance) and len(instance) < fewest:
                    raise _Fail(f"array has {len(instance)} items, fewer than {fewest}")

            checks.append(check_min_items)
        max_items = self._count(schema, "maxItems", where)
        if max_items is not None:
            most = max_items

            def check_max_items(instance: Any) -> None:
                if _is_array(instance) and len(instance) > most:
                    raise _Fail(f"array has {len(instance)} items, more than {most}")

            checks.append(check_max_items)
        if schema.get("uniqueItems") is True:

            def check_unique_items(instance: Any) -> None:
                if not _is_array(instance) or len(instance) < 2:
                    return
                seen: dict[Hashable, int] = {}
                for i, item in enumerate(instance):
                    first = seen.setdefault(_freeze(item), i)
                    if first != i:
                        raise _Fail(f"array items [{first}] and [{i}] are equal; items must be unique")

            checks.append(check_unique_items)

    @staticmethod
    def _items_check(positional: list[Validator], rest: Validator | None, collect: bool, limit: int) -> Validator:
        heads = tuple(positional)
        n_heads = len(heads)
        if rest is _accept:
            rest = None
        forbid_rest = rest is _reject

        def check_items(instance: Any) -> None:
            if not _is_array(instance):
                return
            acc: _Fail | None = None
            size = len(instance)
            for i in range(min(size, n_heads)):
                try:
                    heads[i](instance[i])
                except _Fail as fail:
                    _prefix(fail, i)
                    if not collect:
                        raise
                    acc = _gather(acc, fail, limit)
            if rest is not None and size > n_heads:
                if forbid_rest:
                    # One clear message instead of "false schema" at each extra index.
                    too_many = _Fail(f"array has {size} items, at most {n_heads} allowed")
                    if not collect:
                        raise too_many
                    acc = _gather(acc, too_many, limit)
                else:
                    for i in range(n_heads, size):
                        try:
                            rest(instance[i])
                        except _Fail as fail:
                            _prefix(fail, i)
                            if not collect:
                                raise
                            acc = _gather(acc, fail, limit)
            if acc is not None:
                raise acc

        return check_items

    def _contains(self, schema: Mapping[str, Any], base: str, where: str, depth: int) -> Validator:
        matches = self.compile(schema["contains"], base, f"{where}/contains", depth + 1)
        min_count = self._count(schema, "minContains", where)
        at_least = 1 if min_count is None else min_count
        at_most = self._count(schema, "maxContains", where)

        def check_contains(instance: Any) -> None:
            if not _is_array(instance):
                return
            count = 0
            for item in instance:
                try:
                    matches(item)
                except _Fail:
                    continue
                count += 1
                if at_most is None:
                    if count >= at_least:
                        return  # nothing more can change the verdict
                elif count > at_most:
                    raise _Fail(f"array contains more than {at_most} matching items")
            if count < at_least:
                if at_least == 1:
                    raise _Fail("array contains no matching item")
                raise _Fail(f"array contains {count} matching items, fewer than {at_least}")

        return check_contains

    # -- objects ---------------------------------------------------------------

    def _object(self, schema: Mapping[str, Any], base: str, where: str, depth: int, checks: list[Validator]) -> None:
        collect, limit = self.collect, self.limit

        names: frozenset[str] = frozenset()
        if "properties" in schema:
            props = self._schema_map(schema["properties"], f"{where}/properties")
            names = frozenset(props)
            compiled = [
                (name, self.compile(sub, base, f"{where}/properties/{_escape(name)}", depth + 1))
                for name, sub in props.items()
            ]
            per_name = tuple((n, c) for n, c in compiled if c is not _accept)
            if per_name:

                def check_properties(instance: Any) -> None:
                    if not isinstance(instance, dict):
                        return
                    acc: _Fail | None = None
                    for name, check in per_name:
                        value = instance.get(name, _MISSING)
                        if value is _MISSING:
                            continue
                        try:
                            check(value)
                        except _Fail as fail:
                            _prefix(fail, name)
                            if not collect:
                                raise
                            acc = _gather(acc, fail, limit)
                    if acc is not None:
                        raise acc

                checks.append(check_properties)

        patterns: tuple[re.Pattern[str], ...] = ()
        if "patternProperties" in schema:
            pattern_map = self._schema_map(schema["patternProperties"], f"{where}/patternProperties")
            by_pattern = tuple(
                (
                    self._regex(p, f"{where}/patternProperties/{_escape(p)}"),
                    self.compile(sub, base, f"{where}/patternProperties/{_escape(p)}", depth + 1),
                )
                for p, sub in pattern_map.items()
            )
            patterns = tuple(rx for rx, _ in by_pattern)

            def check_pattern_properties(instance: Any) -> None:
                if not isinstance(instance, dict):
                    return
                acc: _Fail | None = None
                for key, value in instance.items():
                    if not isinstance(key, str):
                        continue
                    for regex, check in by_pattern:
                        if regex.search(key) is None:
                            continue
                        try:
                            check(value)
                        except _Fail as fail:
                            _prefix(fail, key)
                            if not collect:
                                raise
                            acc = _gather(acc, fail, limit)
                if acc is not None:
                    raise acc

            checks.append(check_pattern_properties)

        if "additionalProperties" in schema:
            extra = self.compile(schema["additionalProperties"], base, f"{where}/additionalProperties", depth + 1)
            if extra is not _accept:
                checks.append(self._additional(names, patterns, extra, collect, limit))

        if "propertyNames" in schema:
            key_check = self.compile(schema["propertyNames"], base, f"{where}/propertyNames", depth + 1)

            def check_property_names(instance: Any) -> None:
                if not isinstance(instance, dict):
                    return
                acc: _Fail | None = None
                for key in instance:
                    try:
                        key_check(key)
                    except _Fail as fail:
                        # A name has no location of its own; report it on the object.
                        fail.problems = [([], f"property name {_show(key)}: {m}") for _, m in fail.problems]
                        if not collect:
                            raise
                        acc = _gather(acc, fail, limit)
                if acc is not None:
                    raise acc

            checks.append(check_property_names)

        if "required" in schema:
            required = schema["required"]
            if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
                raise self._error(f"{where}/required", "must be an array of strings")
            if required:
                checks.append(self._required(tuple(required), ""))

        dependent: dict[str, Any] = {}
        if "dependencies" in schema:  # draft-07: arrays and schemas mixed under one keyword
            dependent.update(self._schema_map(schema["dependencies"], f"{where}/dependencies"))
        if "dependentRequired" in schema:
            dependent.update(self._schema_map(schema["dependentRequired"], f"{where}/dependentRequired"))
        for trigger, needed in dependent.items():
            if isinstance(needed, list):
                if needed:
                    checks.append(self._required(tuple(needed), trigger))
        dependent_schemas: dict[str, Any] = {k: v for k, v in dependent.items() if not isinstance(v, list)}
        if "dependentSchemas" in schema:
            dependent_schemas.update(self._schema_map(schema["dependentSchemas"], f"{where}/dependentSchemas"))
        for trigger, sub in dependent_schemas.items():
            check = self.compile(sub, base, f"{where}/dependentSchemas/{_escape(trigger)}", depth + 1)
            if check is not _accept:
                checks.append(self._when_present(trigger, check))

        min_props = self._count(schema, "minProperties", where)
        if min_props is not None and min_props > 0:
            fewest = min_props

            def check_min_properties(instance: Any) -> None:
                if isinstance(instance, dict) and len(instance) < fewest:
                    raise _Fail(f"object has {len(instance)} properties, fewer than {fewest}")

            checks.append(check_min_properties)
        max_props = self._count(schema, "maxProperties", where)
        if max_props is not None:
            most = max_props

            def check_max_properties(instance: Any) -> None:
                if isinstance(instance, dict) and len(instance) > most:
                    raise _Fail(f"object has {len(instance)} properties, more than {most}")

            checks.append(check_max_properties)

    @staticmethod
    def _additional(
        names: frozenset[str],
        patterns: tuple[re.Pattern[str], ...],
        extra: Validator,
        collect: bool,
        limit: int,
    ) -> Validator:
        forbidden = extra is _reject

        def check_additional(instance: Any) -> None:
            if not isinstance(instance, dict):
                return
            if not patterns and names.issuperset(instance):
                return  # the usual case, decided in C
            acc: _Fail | None = None
            for key, value in instance.items():
                if key in names:
                    continue
                if isinstance(key, str) and any(rx.search(key) for rx in patterns):
                    continue
                if forbidden:
                    fail = _Fail(f"additional property {_show(key)} is not allowed")
                else:
                    try:
                        extra(value)
                        continue
                    except _Fail as caught:
                        fail = _prefix(caught, key)
                if not collect:
                    raise fail
                acc = _gather(acc, fail, limit)
            if acc is not None:
                raise acc

        return check_additional

    def _required(self, needed: tuple[Any, ...], trigger: str) -> Validator:
        because = f" (required by {_show(trigger)})" if trigger else ""

        def check_required(instance: Any) -> None:
            if not isinstance(instance, dict):
                return
            if trigger and trigger not in instance:
                return
            for name in needed:
                if name not in instance:
                    missing = [n for n in needed if n not in instance]
                    noun = "property" if len(missing) == 1 else "properties"
                    raise _Fail(f"missing required {noun} {_show_all(missing)}{because}")

        return check_required

    @staticmethod
    def _when_present(trigger: str, check: Validator) -> Validator:
        def check_dependent_schema(instance: Any) -> None:
            if isinstance(instance, dict) and trigger in instance:
                check(instance)

        return check_dependent_schema

    # -- in-place applicators ----------------------------------------------------

    def _combinators(
        self, schema: Mapping[str, Any], base: str, where: str, depth: int, checks: list[Validator]
    ) -> None:
        if "allOf" in schema:
            # allOf is just more checks on the same instance.
            checks.extend(self._schema_list(schema, "allOf", base, where, depth))

        if "anyOf" in schema:
            any_of = tuple(self._schema_list(schema, "anyOf", base, where, depth))
            any_msg = f"matches none of the {len(any_of)} anyOf alternatives"

            def check_any_of(instance: Any) -> None:
                for alternative in any_of:
                    try:
                        alternative(instance)
                    except _Fail:
                        continue
                    return
                raise _Fail(any_msg)

            checks.append(check_any_of)

        if "oneOf" in schema:
            one_of = tuple(self._schema_list(schema, "oneOf", base, where, depth))
            none_msg = f"matches none of the {len(one_of)} oneOf alternatives"

            def check_one_of(instance: Any) -> None:
                matched = -1
                for i, alternative in enumerate(one_of):
                    try:
                        alternative(instance)
                    except _Fail:
                        continue
                    if matched >= 0:
                        raise _Fail(f"matches oneOf alternatives {matched} and {i}; exactly one must match")
                    matched = i
                if matched < 0:
                    raise _Fail(none_msg)

            checks.append(check_one_of)

        if "not" in schema:
            negated = self.compile(schema["not"], base, f"{where}/not", depth + 1)

            def check_not(instance: Any) -> None:
                try:
                    negated(instance)
                except _Fail:
                    return
                raise _Fail("must not match the schema in 'not'")

            checks.append(check_not)

        if "if" in schema:
            condition = self.compile(schema["if"], base, f"{where}/if", depth + 1)
            then = self.compile(schema.get("then", True), base, f"{where}/then", depth + 1)
            otherwise = self.compile(schema.get("else", True), base, f"{where}/else", depth + 1)
            if then is not _accept or otherwise is not _accept:

                def check_if(instance: Any) -> None:
                    try:
                        condition(instance)
                    except _Fail:
                        otherwise(instance)
                        return
                    then(instance)

                checks.append(check_if)


# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------


def _build(schema: Schema, *, format_assertion: bool, collect: bool, limit: int) -> Validator:
    try:
        compiler = _Compiler(schema, format_assertion=format_assertion, collect=collect, limit=limit)
        return compiler.compile_root()
    except RecursionError:
        # Backstop: MAX_DEPTH should trigger first, but the caller's own stack depth counts too.
        raise SchemaValidationError("#", "invalid schema: nested too deeply") from None


def _too_deep(exc: BaseException) -> SchemaValidationError:
    detail = str(exc) if isinstance(exc, _TooDeep) else "instance or $ref recursion nested too deeply"
    return SchemaValidationError("$", detail)


def compile_schema(schema: Mapping[str, Any] | bool, *, format_assertion: bool = False) -> Callable[[Any], None]:
    """Compile ``schema`` once; the result raises SchemaValidationError on the first problem.

    Problems with the schema itself (bad regex, unresolvable or remote ``$ref``,
    ...) raise SchemaValidationError here, with a JSON pointer into the schema as
    the path.  ``format_assertion`` turns "date-time", "date", "email" and "uri"
    from annotations into (loose) checks.
    """
    node = _build(schema, format_assertion=format_assertion, collect=False, limit=1)

    def validator(instance: Any) -> None:
        try:
            node(instance)
        except _Fail as fail:
            segs, message = fail.problems[0]
            raise SchemaValidationError(_format_path(segs), message) from None
        except (_TooDeep, RecursionError) as exc:
            raise _too_deep(exc) from None

    return validator


def validate(instance: Any, schema: Mapping[str, Any] | bool, *, format_assertion: bool = False) -> None:
    """Raise SchemaValidationError unless ``instance`` matches ``schema``."""
    compile_schema(schema, format_assertion=format_assertion)(instance)


def errors(
    instance: Any, schema: Mapping[str, Any] | bool, limit: int = 10, *, format_assertion: bool = False
) -> list[SchemaValidationError]:
    """Every problem with ``instance`` (at most ``limit``), in a fixed keyword order; [] when valid.

    Inside anyOf/oneOf/not/if/contains only the verdict matters, so those report
    one problem for the whole keyword rather than one per failing alternative.
    """
    if limit <= 0:
        return []
    node = _build(schema, format_assertion=format_assertion, collect=True, limit=limit)
    try:
        node(instance)
    except _Fail as fail:
        return [SchemaValidationError(_format_path(segs), message) for segs, message in fail.problems[:limit]]
    except (_TooDeep, RecursionError) as exc:
        return [_too_deep(exc)]
    return []
