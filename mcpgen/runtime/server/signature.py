"""Turn a Python callable into an MCP tool/prompt description and argument decoder.

Everything is delegated to msgspec: the parameters become one keyword-only ``Struct``
(made on the first call: a server of thousands of tools starts without making one each),
the JSON Schema of its fields becomes the ``inputSchema``, and decoding a ``tools/call`` is
a single ``msgspec.convert``. The schema of each parameter type is made once per type, so
registering many tools over the same types costs little each.
"""

from __future__ import annotations

import functools
import inspect
import re
import sys
import types
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Annotated, Any, Union

import msgspec

__all__ = ["ArgumentError", "Signature", "signature_of"]

_REF_PREFIX = "#/$defs/"
# Defaults of these exact types are immutable and always JSON-encodable, so
# msgspec can hold them directly; anything else goes through a factory.
_PLAIN_DEFAULT_TYPES = (type(None), bool, int, float, str)
# Schema keywords whose values are data, not subschemas: never hunt "$ref" there.
_DATA_KEYWORDS = frozenset({"default", "const", "enum", "examples"})
# Containers a tool may return a bunch of content blocks in.
_SEQUENCE_ORIGINS = (list, tuple, Sequence, Iterable)


class ArgumentError(ValueError):
    """The arguments of a call do not match the callable's parameters."""


class Signature(msgspec.Struct, frozen=True):
    """What MCP needs to know about a tool or prompt function."""

    # A frozen msgspec Struct, not a frozen dataclass: every server imports this module,
    # and a frozen dataclass takes ~0.7 ms to create at import.

    name: str
    description: str | None
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    wrap_result: bool
    context_param: str | None
    is_async: bool
    _arguments: _Arguments  # makes the parameters' Struct (in repr and ==: it is per function)
    returns: Any = None  # the return annotation, resolved; None when there is none
    # Parameters pydantic checks (pydantic_types): name -> the validator run after msgspec's
    # decode, on the arguments the caller sent. None (the usual case) costs one test per call.
    validators: dict[str, Callable[[Any], Any]] | None = None
    # A return pydantic describes: the function that turns the value into JSON data.
    dump: Callable[[Any], Any] | None = None

    def decode_arguments(self, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        """Validate and convert JSON ``arguments`` into keyword arguments for the call."""
        if arguments is None:
            arguments = {}
        elif not isinstance(arguments, dict) and isinstance(arguments, Mapping):
            arguments = dict(arguments)  # msgspec.convert reads JSON objects from dicts only
        try:
            decoded = msgspec.convert(arguments, self._arguments.ready or self._arguments.struct())
        except msgspec.ValidationError as exc:
            raise ArgumentError(_argument_message(str(exc))) from None
        # Shallow, keyed by __struct_fields__: nested Structs/dataclasses stay as they are.
        values = msgspec.structs.asdict(decoded)
        if self.validators is not None:
            for key, validate in self.validators.items():
                if key in arguments:  # a default is the author's, not checked
                    try:
                        values[key] = validate(values[key])
                    except ValueError as exc:
                        raise ArgumentError(str(exc)) from None
        return values


# Annotations written as text (``from __future__ import annotations``), evaluated once per
# module and text: a generated server's thousands of tools share a handful of annotations
# ("str", "int | None"), and evaluating each again was a third of a first tools/list.
# The module's globals are kept beside the value, so an id is never reused while cached.
_EVALUATED: dict[tuple[int, str], tuple[dict[str, Any], Any]] = {}
_MAX_EVALUATED = 4096


def _resolved_signature(fn: Callable[..., Any]) -> inspect.Signature:
    """``inspect.signature(fn, eval_str=True)``, each annotation's text evaluated once per
    module (plain functions; anything else the way inspect does it)."""
    if type(fn) is not types.FunctionType or hasattr(fn, "__wrapped__"):
        return inspect.signature(fn, eval_str=True)
    sig = inspect.signature(fn)
    scope = fn.__globals__
    params = [
        p.replace(annotation=_evaluated(p.annotation, scope)) if isinstance(p.annotation, str) else p
        for p in sig.parameters.values()
    ]
    returned = sig.return_annotation
    if isinstance(returned, str):
        returned = _evaluated(returned, scope)
    return sig.replace(parameters=params, return_annotation=returned)


def _evaluated(text: str, scope: dict[str, Any]) -> Any:
    if "(" in text:  # a call (``Field(ge=1)``) makes new objects each time, as inspect's eval does
        return eval(text, scope)  # noqa: S307
    key = (id(scope), text)
    found = _EVALUATED.get(key)
    if found is not None and found[0] is scope:
        return found[1]
    value = eval(text, scope)  # noqa: S307 (what inspect's eval_str does: the function's own annotation)
    if len(_EVALUATED) >= _MAX_EVALUATED:
        _EVALUATED.clear()
    _EVALUATED[key] = (scope, value)
    return value


def signature_of(
    fn: Callable[..., Any],
    *,
    inject_types: tuple[type, ...] = (),
    content_types: tuple[type, ...] = (),
) -> Signature:
    """Describe ``fn``: schemas, docstring summary, injected context parameter, decoder.

    ``inject_types`` mark the parameter the runtime fills itself (e.g. a request
    context); ``content_types`` are return types that are sent as MCP content
    rather than structured output.
    """
    name: str = getattr(fn, "__name__", type(fn).__name__)
    try:
        sig = _resolved_signature(fn)
    except NameError as exc:
        raise TypeError(f"cannot resolve the annotations of `{name}`: {exc}") from exc

    context_param: str | None = None
    fields: list[tuple[str, Any] | tuple[str, Any, Any]] = []
    defaults: dict[str, Any] = {}
    # Only when the user's code imported pydantic: its models and Field()s are its to check.
    pydantic = "pydantic" in sys.modules
    validators: dict[str, Callable[[Any], Any]] = {}
    pydantic_schemas: dict[str, dict[str, Any]] = {}
    pydantic_defs: dict[str, Any] = {}
    for param in sig.parameters.values():
        _check_kind(name, param)
        annotation = Any if param.annotation is param.empty else param.annotation
        if inject_types and _mentions(annotation, inject_types, through_sequences=False):
            if context_param is not None:
                raise TypeError(f"`{name}` has two context parameters: `{context_param}` and `{param.name}`")
            context_param = param.name
        elif pydantic and _pydantic_parameter(param, annotation, fields, validators, pydantic_schemas, pydantic_defs):
            pass
        elif param.default is param.empty:
            fields.append((param.name, annotation))
        else:
            defaults[param.name] = param.default
            fields.append((param.name, annotation, _struct_default(param.default)))

    arguments = _Arguments(name, fields)
    try:
        root, defs = _fields_schema(fields)
    except TypeError as exc:
        raise TypeError(f"unsupported parameter type in `{name}`: {exc}") from exc
    except _Clash:  # two parameter types' $defs share a name: msgspec names them apart together
        root, defs = _schema(arguments.struct())
    properties: dict[str, Any] = root.get("properties", {})
    properties.update(pydantic_schemas)
    defs = {**defs, **pydantic_defs}
    for param_name, default in defaults.items():
        json_default = _json_value(default)
        if json_default is not _NOT_JSON:
            properties[param_name]["default"] = json_default
    input_schema = _with_defs(
        {
            "type": "object",
            "properties": properties,
            "required": root.get("required", []),
            "additionalProperties": False,
        },
        defs,
    )

    dump = None
    output_schema: dict[str, Any] | None
    if pydantic and _involves_pydantic(sig.return_annotation):
        output_schema, wrap_result, dump = _pydantic_output(sig.return_annotation)
    else:
        output_schema, wrap_result = _output_schema(sig.return_annotation, content_types)
    return Signature(
        name=name,
        description=_summary(getattr(fn, "__doc__", None)),
        input_schema=input_schema,
        output_schema=output_schema,
        wrap_result=wrap_result,
        context_param=context_param,
        # B004: __call__ is read to see whether an instance's call is async, not to test callability.
        is_async=inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None)),  # noqa: B004
        _arguments=arguments,
        returns=None if sig.return_annotation is sig.empty else sig.return_annotation,
        validators=validators or None,
        dump=dump,
    )


class _Arguments:
    """The parameters' Struct, made on first use. Keyword-only lets required and defaulted
    parameters interleave in any order; placing the Struct in this module keeps msgspec's
    $defs naming from ever clashing with a user type of the same name."""

    __slots__ = ("name", "fields", "ready")

    def __init__(self, name: str, fields: list[tuple[str, Any] | tuple[str, Any, Any]]) -> None:
        self.name = name
        self.fields = fields
        self.ready: type[msgspec.Struct] | None = None  # the Struct, once made

    def struct(self) -> type[msgspec.Struct]:
        found = self.ready
        if found is None:
            found = self.ready = msgspec.defstruct(
                f"{self.name}_arguments", self.fields, kw_only=True, forbid_unknown_fields=True, module=__name__
            )
        return found

    def __repr__(self) -> str:
        return f"<arguments of {self.name}>"


class _Clash(Exception):
    pass


def _fields_schema(fields: list[tuple[str, Any] | tuple[str, Any, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The schema of an object of these fields (as msgspec makes one of a Struct of them),
    from each type's schema made once; raises _Clash when two types' $defs share a name."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    defs: dict[str, Any] = {}
    for field in fields:
        root, found = _type_schema(field[1])
        properties[field[0]] = dict(root)  # its own: a default may be added to it
        if len(field) == 2:
            required.append(field[0])
        for key, value in found.items():
            if defs.setdefault(key, value) is not value and defs[key] != value:
                raise _Clash(key)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema, defs


def _type_schema(tp: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """msgspec's schema of one type (a field's), and its ``$defs``: shared, never changed."""
    try:
        return _cached_type_schema(tp)
    except TypeError as exc:
        if "unhashable" not in str(exc):
            raise
        (root,), defs = msgspec.json.schema_components((tp,), ref_template=_REF_PREFIX + "{name}")
        return root, defs


@functools.lru_cache(maxsize=4096)
def _cached_type_schema(tp: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    (root,), defs = msgspec.json.schema_components((tp,), ref_template=_REF_PREFIX + "{name}")
    return root, defs


def check_shape(fn: Callable[..., Any]) -> None:
    """Refuse at once what no annotation can mend: ``*args``, ``**kwargs``, positional-only
    parameters (read off a plain function's code, without resolving its annotations)."""
    code = getattr(fn, "__code__", None)
    if code is None or not inspect.isfunction(fn):
        return  # another callable: signature_of checks it when the tool is built
    name = getattr(fn, "__name__", "function")
    names = code.co_varnames
    positional = code.co_argcount + code.co_kwonlyargcount
    if code.co_posonlyargcount:
        raise TypeError(f"parameter `{names[0]}` of `{name}` is positional-only; MCP passes arguments by name")
    if code.co_flags & inspect.CO_VARARGS:
        raise TypeError(f"`{name}` takes *{names[positional]}; MCP arguments are named, declare each parameter")
    if code.co_flags & inspect.CO_VARKEYWORDS:
        star = positional + (1 if code.co_flags & inspect.CO_VARARGS else 0)
        raise TypeError(f"`{name}` takes **{names[star]}; declare each argument so it has a schema")


def is_coroutine_function(fn: Callable[..., Any]) -> bool:
    # B004: __call__ is read to see whether an instance's call is async, not to test callability.
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004


def _involves_pydantic(annotation: Any, default: Any = None) -> bool:
    from mcpgen.runtime.server import pydantic_types

    return pydantic_types.involves(annotation, default)


def _pydantic_parameter(
    param: inspect.Parameter,
    annotation: Any,
    fields: list[tuple[str, Any] | tuple[str, Any, Any]],
    validators: dict[str, Callable[[Any], Any]],
    schemas: dict[str, dict[str, Any]],
    defs: dict[str, Any],
) -> bool:
    """A parameter pydantic checks: msgspec takes any JSON value for it, pydantic gives its
    schema and validates it. False when the parameter does not involve pydantic."""
    from mcpgen.runtime.server import pydantic_types

    if not pydantic_types.involves(annotation, param.default):
        return False
    spec = pydantic_types.parameter(param.name, annotation, param.default, param.empty)
    if spec.default is pydantic_types.REQUIRED:
        fields.append((param.name, Any))
    else:
        fields.append((param.name, Any, _struct_default(spec.default)))
    validators[param.name] = spec.validate
    schemas[param.name] = spec.schema
    defs.update(spec.defs)
    return True


def _pydantic_output(annotation: Any) -> tuple[dict[str, Any], bool, Callable[[Any], Any]]:
    from mcpgen.runtime.server import pydantic_types

    root, defs, dump = pydantic_types.output(annotation)
    if root.get("type") == "object":
        return _with_defs(root, defs), False, dump
    wrapped = {"type": "object", "properties": {"result": root}, "required": ["result"]}
    return _with_defs(wrapped, defs), True, dump


def _check_kind(fn_name: str, param: inspect.Parameter) -> None:
    # MCP arguments are one JSON object of named values, so every parameter must
    # be passable by keyword and there is nothing to feed *args/**kwargs from
    # without giving up the schema.
    if param.kind is param.VAR_POSITIONAL:
        raise TypeError(f"`{fn_name}` takes *{param.name}; MCP arguments are named, declare each parameter")
    if param.kind is param.VAR_KEYWORD:
        raise TypeError(f"`{fn_name}` takes **{param.name}; declare each argument so it has a schema")
    if param.kind is param.POSITIONAL_ONLY:
        raise TypeError(f"parameter `{param.name}` of `{fn_name}` is positional-only; MCP passes arguments by name")


def _struct_default(default: Any) -> Any:
    if type(default) in _PLAIN_DEFAULT_TYPES:
        return default
    # msgspec refuses mutable defaults (lists, dicts, Structs...). A factory that
    # hands back the very same object keeps plain Python semantics, where one
    # default object is shared by every call.
    return msgspec.field(default_factory=lambda: default)


class _NotJson:
    pass


_NOT_JSON = _NotJson()


def _json_value(value: Any) -> Any:
    """``value`` as JSON data (as msgspec would encode it), or ``_NOT_JSON``."""
    try:
        return msgspec.json.decode(msgspec.json.encode(value))
    except (TypeError, ValueError):
        return _NOT_JSON


def _mentions(annotation: Any, targets: tuple[type, ...], *, through_sequences: bool) -> bool:
    """Whether ``annotation`` is one of ``targets``, seen through Annotated and unions
    (and list/tuple/Sequence when ``through_sequences``)."""
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return _mentions(annotation.__origin__, targets, through_sequences=through_sequences)
    if origin is Union or origin is types.UnionType or (through_sequences and origin in _SEQUENCE_ORIGINS):
        args = typing.get_args(annotation)
        return any(_mentions(arg, targets, through_sequences=through_sequences) for arg in args)
    candidate = origin if isinstance(origin, type) else annotation  # Ctx[T] counts as Ctx
    return isinstance(candidate, type) and issubclass(candidate, targets)


def _output_schema(annotation: Any, content_types: tuple[type, ...]) -> tuple[dict[str, Any] | None, bool]:
    """The ``outputSchema`` for a return annotation, and whether results need wrapping."""
    if annotation is inspect.Signature.empty or annotation is None or annotation is type(None):
        return None, False
    if content_types and _mentions(annotation, content_types, through_sequences=True):
        return None, False
    try:
        root, defs = _type_schema(annotation)
    except TypeError:
        # msgspec cannot describe it (an arbitrary class): the runtime sends such
        # results as plain content, so advertise no structured output.
        return None, False
    if set(root) == {"$ref"}:
        root = defs[root["$ref"].removeprefix(_REF_PREFIX)]
    root = dict(root)  # its own: _with_defs may add to it
    if root.get("type") == "object":
        return _with_defs(root, defs), False
    # Structured content must be a JSON object, so anything else is boxed.
    wrapped = {"type": "object", "properties": {"result": root}, "required": ["result"]}
    return _with_defs(wrapped, defs), True


def _schema(tp: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """msgspec's schema for ``tp`` with a top-level ``$ref`` resolved, plus its ``$defs``."""
    (root,), defs = msgspec.json.schema_components((tp,), ref_template=_REF_PREFIX + "{name}")
    if set(root) == {"$ref"}:
        root = dict(defs[root["$ref"].removeprefix(_REF_PREFIX)])
    return root, defs


def _with_defs(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """Attach the ``$defs`` that ``schema`` (transitively) refers to, and no others."""
    if not defs:
        return schema  # nothing it could refer to (the common case: plain parameter types)
    needed: dict[str, Any] = {}
    pending = list(_refs(schema))
    while pending:
        ref = pending.pop()
        if ref not in needed:
            needed[ref] = defs[ref]
            pending.extend(_refs(defs[ref]))
    if needed:
        schema["$defs"] = {key: needed[key] for key in defs if key in needed}  # stable order
    return schema


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value.removeprefix(_REF_PREFIX)
            elif key not in _DATA_KEYWORDS:
                yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


def _summary(doc: str | None) -> str | None:
    """First paragraph of a docstring on one line."""
    if not doc or not doc.strip():
        return None
    first = re.split(r"\n\s*\n", doc.strip(), maxsplit=1)[0]
    return " ".join(first.split())


_MISSING = re.compile(r"Object missing required field `(?P<name>[^`]*)`")
_UNKNOWN = re.compile(r"Object contains unknown field `(?P<name>[^`]*)`")


def _argument_message(message: str) -> str:
    """msgspec's error, reworded when it concerns the argument object itself.

    Errors inside an argument already end in "- at `$.name...`", which names it.
    """
    if missing := _MISSING.fullmatch(message):
        return f"missing required argument `{missing['name']}`"
    if unknown := _UNKNOWN.fullmatch(message):
        return f"unknown argument `{unknown['name']}`"
    if message.startswith("Expected `object`") and " - at " not in message:
        return f"arguments must be a JSON object: {message}"
    return message
