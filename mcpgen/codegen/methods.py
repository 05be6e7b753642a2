"""The method table, derived from the schema's message groups.

The facts table names the definitions that list each direction's messages (``[messages]``:
``ClientRequest`` is what a client sends as requests, ``ServerNotification`` what a server
sends as notifications, ``InputRequest`` what a server embeds in an InputRequiredResult, and
so on): a union of message structs, or a single message struct. Each message is a struct
whose ``method`` is a const and whose ``params`` field gives the params type. A request's
result is the ``result`` of its ``<X>ResultResponse`` envelope where the schema has one
(2026-07-28: possibly a union with InputRequiredResult), else ``<X>Result``, or what the
facts table says.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

from mcpgen.codegen.discriminate import leaves_of
from mcpgen.codegen.facts import Facts
from mcpgen.codegen.ir import (
    AliasDef,
    DictOf,
    Direction,
    ListOf,
    Method,
    MethodKind,
    Model,
    Named,
    Report,
    StructDef,
    TypeExpr,
    UnionDef,
    UnionOf,
)
from mcpgen.codegen.naming import method_py_name

RESULT_UNIONS = {"c2s": "ServerResult", "s2c": "ClientResult"}
BASE_PAGE = "basic"


def build_methods(model: Model, defs: dict[str, Any], facts: Facts) -> None:
    cacheable = _trait_fields(model, facts, "cacheable")
    for group_name, group in facts.messages.items():
        typedef = model.types.get(group_name)
        if typedef is None:
            continue
        facts.used.add(("messages", group_name))
        direction, kind = group.split()
        members = typedef.members if isinstance(typedef, UnionDef) else [_canonical(model, group_name)]
        for member in members:
            method = _method_from(model, facts, member, cast(Direction, direction), cast(MethodKind, kind))
            if method is not None:
                method.cacheable = cacheable is not None and _has_fields(model, facts, method.result_type, cacheable)
                model.methods.append(method)
    for table in ("messages", "results", "capabilities"):
        for key in facts.unused(table):
            model.reports.append(Report("info", f"facts.toml [{table}] {key!r} matched nothing"))


def _method_from(model: Model, facts: Facts, member: TypeExpr, direction: Direction, kind: MethodKind) -> Method | None:
    struct = model.types.get(member.name) if isinstance(member, Named) else None
    where = getattr(member, "name", repr(member))
    if not isinstance(struct, StructDef):
        model.reports.append(Report("warning", f"{where}: a message group member must be a struct"))
        return None
    method_field = struct.field_by_wire("method")
    if method_field is None or not isinstance(method_field.const_value, str):
        model.reports.append(Report("warning", f"{struct.name}: no const `method`; skipped"))
        return None
    method = method_field.const_value
    params = struct.field_by_wire("params")
    result = None
    input_required = False
    if kind != "notification":
        result = facts.result_for(struct.name) or _named_result(model, struct.name)
        if result is None:
            model.reports.append(Report("warning", f"{struct.name}: no result type; add it to facts.toml [results]"))
            result = "Result" if "Result" in model.types else None
        else:
            input_required = _may_ask_for_input(model, facts, result)
            if kind == "request":
                _check_listed(model, struct.name, result, RESULT_UNIONS[direction])
    py_name = method_py_name(struct.name)
    return Method(
        method=method,
        kind=kind,
        direction=direction,
        message_type=struct.name,
        params_type=params.type if params else None,
        params_required=bool(params and params.required),
        result_type=result,
        capability=facts.capability_for(direction, method),
        py_name=py_name if kind != "notification" else f"on_{py_name}",
        input_required=input_required,
    )


def _canonical(model: Model, group_name: str) -> Named:
    """A group that is a single message struct (2026-07-28's ClientNotification) stands for
    the definition of that message, where the schema has one of the same shape."""
    group = model.types[group_name]
    if isinstance(group, StructDef):
        shape = [(f.wire_name, f.type, f.required) for f in group.fields]
        for struct in model.structs():
            if struct is not group and [(f.wire_name, f.type, f.required) for f in struct.fields] == shape:
                return Named(struct.name)
    return Named(group_name)


def _named_result(model: Model, request_type: str) -> str | None:
    """``FooRequest`` -> the ``result`` of ``FooResultResponse``, else ``FooResult``."""
    if not request_type.endswith("Request"):
        return None
    candidate = request_type[: -len("Request")] + "Result"
    envelope = model.types.get(candidate + "Response")
    if isinstance(envelope, StructDef):
        result = envelope.field_by_wire("result")
        if result is not None and isinstance(result.type, Named):
            return result.type.name
    return candidate if candidate in model.types else None


def _may_ask_for_input(model: Model, facts: Facts, result: str) -> bool:
    """Whether one variant of the result carries a reserved ``resultType`` (not complete)."""
    leaves = leaves_of(model, [Named(result)])
    return len(leaves) > 1 and any(
        leaf.struct is not None and facts.result_type_value(leaf.struct.name) is not None for leaf in leaves
    )


def _check_listed(model: Model, request: str, result: str, union_name: str) -> None:
    union = model.types.get(union_name)
    if not isinstance(union, UnionDef):
        return
    listed = {m.name for m in union.members if isinstance(m, Named)}
    for leaf in leaves_of(model, [Named(result)]):
        name = leaf.expr.name if isinstance(leaf.expr, Named) else None
        if name is not None and name not in listed and not _alias_of_listed(model, name, listed):
            model.reports.append(Report("info", f"{request}: {name} is not listed in {union_name}"))


def _alias_of_listed(model: Model, name: str, listed: set[str]) -> bool:
    # EmptyResult is an alias of Result, which the unions list directly.
    target = model.types.get(name)
    return isinstance(target, AliasDef) and isinstance(target.target, Named) and target.target.name in listed


def _trait_fields(model: Model, facts: Facts, trait: str) -> set[str] | None:
    """The required properties of the definition that stands for ``trait``, if present."""
    name = facts.trait_definition(trait)
    typedef = model.types.get(name) if name else None
    if not isinstance(typedef, StructDef):
        return None
    return {f.wire_name for f in typedef.fields if f.required}


def _has_fields(model: Model, facts: Facts, result: str | None, wanted: set[str]) -> bool:
    """Whether the complete variant(s) of ``result`` require every one of ``wanted``."""
    if result is None:
        return False
    structs = [leaf.struct for leaf in leaves_of(model, [Named(result)]) if leaf.struct is not None]
    complete = [s for s in structs if facts.result_type_value(s.name) is None]
    return bool(complete) and all(wanted <= {f.wire_name for f in s.fields if f.required} for s in complete)


def referenced_names(model: Model, expr: TypeExpr | None) -> Iterator[str]:
    """Names of the types a type expression mentions directly."""
    if isinstance(expr, Named):
        yield expr.name
    elif isinstance(expr, ListOf):
        yield from referenced_names(model, expr.item)
    elif isinstance(expr, DictOf):
        yield from referenced_names(model, expr.value)
    elif isinstance(expr, UnionOf):
        for m in expr.members:
            yield from referenced_names(model, m)


def children(model: Model, name: str) -> Iterator[str]:
    typedef = model.types.get(name)
    if isinstance(typedef, StructDef):
        for f in typedef.fields:
            yield from referenced_names(model, f.type)
    elif isinstance(typedef, UnionDef):
        for m in typedef.members:
            yield from referenced_names(model, m)
    elif isinstance(typedef, AliasDef):
        yield from referenced_names(model, typedef.target)


def assign_pages(model: Model, facts: Facts) -> None:
    """Give every type the spec page of the first method (in facts order) reaching it."""
    by_method: dict[str, list[Method]] = {}
    for m in model.methods:
        by_method.setdefault(m.method, []).append(m)
    for method_name in facts.page_order(model.revision):
        page = facts.page_for(method_name, model.revision) if method_name in by_method else None
        if page is None:
            continue
        for m in by_method[method_name]:
            message = model.types.get(m.message_type)
            if message is not None and not message.page:
                message.page = page
            # Descend from params and result only: the envelope's id/method/jsonrpc
            # types belong to the base protocol, not to this method's page.
            stack = [*referenced_names(model, m.params_type), *([m.result_type] if m.result_type else [])]
            while stack:
                name = stack.pop()
                typedef = model.types.get(name)
                if typedef is None or typedef.page:
                    continue
                typedef.page = page
                stack.extend(children(model, name))
    for typedef in model.types.values():
        typedef.page = typedef.page or BASE_PAGE
    for key in facts.unused("pages"):
        model.reports.append(Report("info", f"facts.toml [pages] {key!r} matched nothing"))
