"""JSON Schema validation of tool arguments and results, done by jsonschema-rs.

MCP clients check a tool's ``structuredContent`` against its ``outputSchema``, and a
server checks arguments against an ``inputSchema`` given verbatim.  Both compile a
schema once and call the result for every message, so the validator is the kept Rust
library ``jsonschema-rs`` (drafts 4, 6, 7, 2019-09 and 2020-12; it passes the official
JSON-Schema-Test-Suite, see ``tests/runtime/shared/test_jsonschema_suite.py``) rather than code of our
own.  What stays here is what MCP asks of it:

* the draft comes from ``$schema``; a schema without one is 2020-12, MCP's default;
* a remote ``$ref`` is never fetched: a tool's schema comes from a peer, and following
  its links would let that peer make us open connections anywhere.  Such a schema fails
  to compile, like any other broken schema;
* compiled validators are cached by the schema's JSON text, since a client compiles
  every listed tool's schema again on each ``tools/list``;
* errors are :class:`SchemaValidationError`, one line ``"<path>: <message>"`` whose
  path is a JSON path into the instance (``$.items[2].name``) or, for a broken schema,
  a JSON pointer into the schema (``#/properties/a``).

Nesting: the library recurses on the native stack.  Instances that come off the wire
are decoded by msgspec, which refuses nesting deeper than Python's recursion limit
(1,000), and at that depth the library needs well under 1 MiB of the 8 MiB a thread gets
(``tests/runtime/shared/test_jsonschema.py`` checks it in a thread with 1 MiB); ``$ref`` cycles end.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final, NoReturn

import msgspec

if TYPE_CHECKING:
    import jsonschema_rs

__all__ = ["SchemaValidationError", "compile_schema", "errors", "validate"]

#: How many compiled schemas the cache keeps (oldest dropped first): a peer that keeps
#: sending new schemas costs compile time, never unbounded memory.
CACHE_SIZE: Final = 512

#: Longest message kept whole; the library quotes the failing value, which may be big.
_MESSAGE_LIMIT: Final = 240

Retrieve = Callable[[str], Any]


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
# Turning the library's errors into ours
# --------------------------------------------------------------------------

_IDENT: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _json_path(segments: list[str | int]) -> str:
    parts = ["$"]
    for seg in segments:
        if isinstance(seg, int):
            parts.append(f"[{seg}]")
        elif _IDENT.match(seg):
            parts.append("." + seg)
        else:
            import json  # error paths only: not imported before a server's first answer

            parts.append("[" + json.dumps(seg, ensure_ascii=False) + "]")
    return "".join(parts)


def _json_pointer(segments: list[str | int]) -> str:
    return "#" + "".join("/" + str(seg).replace("~", "~0").replace("/", "~1") for seg in segments)


# A number spelled out in more digits than anyone reads (the library prints 1e308 in full
# from jsonschema-rs 0.61 on, and quotes a huge integer as it came).
_LONG_NUMBER: Final = re.compile(r"\d{25,}(?:\.\d+)?")


def _short_number(match: re.Match[str]) -> str:
    digits = match.group().partition(".")[0]
    return f"{digits[0]}.{digits[1:6]}e+{len(digits) - 1}"


def _one_line(message: str) -> str:
    """The message on one line and of bounded length: the library quotes the failing
    value in full, and these messages go back to the peer that sent it. Long numbers are
    written short first, so that what is wrong (the keyword and its limit) survives."""
    text = " ".join(message.split())
    if len(text) <= _MESSAGE_LIMIT:
        return text
    text = _LONG_NUMBER.sub(_short_number, text)
    if len(text) <= _MESSAGE_LIMIT:
        return text
    # The head names the value, the tail says what is wrong with it: keep both.
    return text[: _MESSAGE_LIMIT * 2 // 3] + " ... " + text[-(_MESSAGE_LIMIT // 3) :]


def _instance_error(exc: jsonschema_rs.ValidationError) -> SchemaValidationError:
    return SchemaValidationError(_json_path(exc.instance_path), _one_line(exc.message))


def _not_json(exc: ValueError) -> SchemaValidationError:
    # Raised by the library for values it cannot read as JSON (a set, an object of some
    # class, a dict with int keys) and for comparisons nested beyond its own limit.
    return SchemaValidationError("$", _one_line(f"cannot check this value: {exc}"))


# --------------------------------------------------------------------------
# Compiling
# --------------------------------------------------------------------------


class RemoteRefRefused(Exception):
    pass


def _refuse(uri: str) -> NoReturn:
    raise RemoteRefRefused(f"remote $ref {uri!r} is not fetched; a tool's schema must be self-contained")


def _plain(value: Any) -> Any:
    # Schemas may be any Mapping (e.g. a read-only MappingProxyType); JSON text needs dicts.
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"a schema cannot hold {type(value).__name__} values")


_encoder: Final = msgspec.json.Encoder(enc_hook=_plain)
_cache: dict[tuple[bytes, bool], jsonschema_rs.Validator] = {}
_cache_lock: Final = threading.Lock()


@cache
def _library() -> ModuleType:
    """jsonschema_rs, imported on first use: most servers and clients start without ever
    compiling a schema, and the import is a good part of a cold start (about 7 ms)."""
    import jsonschema_rs

    return jsonschema_rs


def _vocabulary_drafts() -> tuple[type, ...]:
    """Drafts whose ``format`` the library treats as an annotation unless the schema's
    meta-schema asks for the format-assertion vocabulary."""
    lib = _library()
    return (lib.Draft201909Validator, lib.Draft202012Validator)


def _build(schema: Any, format_assertion: bool, retrieve: Retrieve) -> jsonschema_rs.Validator:
    # Unless asked, ``format`` is an annotation, as for the official SDK's validator: a
    # peer's "format": "email" must not reject what the SDK accepts. For drafts 4-7 the
    # library would check formats by default, so say False; for 2019-09 and later, None
    # leaves the choice to the schema's vocabularies (annotation by default).
    lib = _library()
    try:
        formats: bool | None = True
        if not format_assertion:
            formats = None if lib.validator_cls_for(schema) in _vocabulary_drafts() else False
        validator: jsonschema_rs.Validator = lib.validator_for(schema, validate_formats=formats, retriever=retrieve)
        return validator
    except lib.ValidationError as exc:
        # The schema fails its meta-schema (the path points into the schema), or a $ref
        # does not resolve (no path; the message names the reference).
        raise SchemaValidationError(
            _json_pointer(exc.instance_path), _one_line(f"invalid schema: {exc.message}")
        ) from None
    except ValueError as exc:
        raise SchemaValidationError("#", _one_line(f"invalid schema: {exc}")) from None


def _compiled(
    schema: Mapping[str, Any] | bool, format_assertion: bool, retrieve: Retrieve | None
) -> jsonschema_rs.Validator:
    try:
        text = _encoder.encode(schema)
    except (TypeError, RecursionError, msgspec.EncodeError) as exc:
        raise SchemaValidationError("#", _one_line(f"invalid schema: not JSON data ({exc})")) from None
    # A dict or bool goes to the library as it is (faster than JSON text); other
    # Mappings as their JSON round trip.
    plain = schema if isinstance(schema, (dict, bool)) else msgspec.json.decode(text)
    if retrieve is not None:  # documents from the caller: their answers may change, so no cache
        return _build(plain, format_assertion, retrieve)
    key = (text, format_assertion)
    found = _cache.get(key)
    if found is not None:
        return found
    compiled = _build(plain, format_assertion, _refuse)
    with _cache_lock:
        if len(_cache) >= CACHE_SIZE:
            del _cache[next(iter(_cache))]
        _cache[key] = compiled
    return compiled


# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------


def compile_schema(
    schema: Mapping[str, Any] | bool, *, format_assertion: bool = False, retrieve: Retrieve | None = None
) -> Callable[[Any], None]:
    """Compile ``schema`` once; the result raises SchemaValidationError on the first problem.

    Problems with the schema itself (not valid against its draft's meta-schema, a
    ``$ref`` that does not resolve, a remote ``$ref``) raise SchemaValidationError here.
    ``format_assertion`` makes ``format`` ("date-time", "email", "uri", ...) a check
    instead of an annotation.  ``retrieve(uri)``, for tests and trusted local use only,
    returns the document for a remote ``$ref``; by default none is fetched.
    """
    check = _compiled(schema, format_assertion, retrieve).validate
    failure = _library().ValidationError

    def validator(instance: Any) -> None:
        try:
            check(instance)
        except failure as exc:
            raise _instance_error(exc) from None
        except ValueError as exc:
            raise _not_json(exc) from None

    return validator


def validate(instance: Any, schema: Mapping[str, Any] | bool, *, format_assertion: bool = False) -> None:
    """Raise SchemaValidationError unless ``instance`` matches ``schema``."""
    compile_schema(schema, format_assertion=format_assertion)(instance)


def errors(
    instance: Any, schema: Mapping[str, Any] | bool, limit: int = 10, *, format_assertion: bool = False
) -> list[SchemaValidationError]:
    """Problems with ``instance`` (at most ``limit``), in the library's order; [] when valid.

    Inside anyOf/oneOf/not/if/contains only the verdict matters, so those report one
    problem for the whole keyword rather than one per failing alternative.
    """
    if limit <= 0:
        return []
    found: list[SchemaValidationError] = []
    try:
        for exc in _compiled(schema, format_assertion, None).iter_errors(instance):
            found.append(_instance_error(exc))
            if len(found) >= limit:
                break
    except ValueError as exc:
        return [_not_json(exc)]
    return found
