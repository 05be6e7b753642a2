"""Tools written for pydantic: ``BaseModel`` parameters and returns, and ``Field()``.

Much MCP code (FastMCP's, the official SDK's) types tools with pydantic models. msgspec
knows nothing of them, so :func:`~mcpgen.runtime.server.signature.signature_of` hands a
parameter or return that involves pydantic to pydantic itself: its own JSON Schema, its own
validation, its own JSON dump. This module is used only when the user's code has imported
pydantic already (``sys.modules``); the runtime never imports it, and a server without
pydantic never loads this module.
"""

from __future__ import annotations

import sys
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

import msgspec

REF_TEMPLATE = "#/$defs/{model}"


def loaded() -> bool:
    """Whether the user's code imported pydantic (then annotations may hold its types)."""
    return "pydantic" in sys.modules


def involves(annotation: Any, default: Any = None) -> bool:
    """Whether a parameter or return needs pydantic: a ``BaseModel`` anywhere in its type,
    or a ``Field()`` as its default or in its ``Annotated`` metadata."""
    if not loaded():
        return False
    from pydantic import BaseModel
    from pydantic.fields import FieldInfo

    if isinstance(default, FieldInfo):
        return True

    def walk(tp: Any) -> bool:
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            return True
        if typing.get_origin(tp) is Annotated:
            if any(isinstance(extra, FieldInfo) for extra in tp.__metadata__):
                return True
            return walk(tp.__origin__)
        return any(walk(arg) for arg in typing.get_args(tp))

    return walk(annotation)


class _Required:
    pass


REQUIRED = _Required()


@dataclass(frozen=True)
class Parameter:
    """A parameter pydantic checks: its schema (with the ``$defs`` it refers to), its
    Python default (``REQUIRED`` when it has none), and the function that validates one
    JSON value into what the tool receives."""

    schema: dict[str, Any]
    defs: dict[str, Any]
    default: Any
    validate: Callable[[Any], Any]


def parameter(name: str, annotation: Any, default: Any, empty: Any) -> Parameter:
    from pydantic import TypeAdapter, ValidationError
    from pydantic.fields import FieldInfo

    if isinstance(default, FieldInfo):
        field = default
        adapter: TypeAdapter[Any] = TypeAdapter(Annotated[annotation, field])
        value = field.get_default(call_default_factory=True)
        python_default = REQUIRED if field.is_required() else value
    else:
        adapter = TypeAdapter(annotation)
        python_default = REQUIRED if default is empty else default
    schema = adapter.json_schema(ref_template=REF_TEMPLATE)
    defs = schema.pop("$defs", {})
    if python_default is not REQUIRED and "default" not in schema:
        try:
            schema["default"] = adapter.dump_python(python_default, mode="json")
        except Exception:  # a default pydantic cannot dump is simply not advertised
            pass

    def validate(value: Any) -> Any:
        try:
            return adapter.validate_python(value)
        except ValidationError as exc:
            raise ValueError(describe(name, exc)) from None

    return Parameter(schema, defs, python_default, validate)


def output(annotation: Any) -> tuple[dict[str, Any], dict[str, Any], Callable[[Any], Any]]:
    """The schema of a return type pydantic describes, its ``$defs``, and the function that
    turns a returned value into JSON data (checked by pydantic: a wrong value raises
    ``msgspec.ValidationError``, which the server reports as invalid output)."""
    from pydantic import TypeAdapter, ValidationError

    adapter: TypeAdapter[Any] = TypeAdapter(annotation)
    schema = adapter.json_schema(mode="serialization", ref_template=REF_TEMPLATE)
    defs = schema.pop("$defs", {})

    def dump(value: Any) -> Any:
        try:
            return adapter.dump_python(adapter.validate_python(value), mode="json")
        except ValidationError as exc:
            raise msgspec.ValidationError(describe("result", exc)) from None

    return schema, defs, dump


def describe(name: str, exc: Any) -> str:
    """pydantic's errors in one line: where (from the parameter's name) and what."""
    parts = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(step) for step in (name, *error.get("loc", ())))
        parts.append(f"{error.get('msg', 'invalid')} - at `{where}`")
    return "; ".join(parts) or str(exc)


__all__ = ["REQUIRED", "Parameter", "describe", "involves", "loaded", "output", "parameter"]
