"""The method table, derived from the schema's four message unions.

``ClientRequest``/``ClientNotification`` list what a client sends (direction ``c2s``),
``ServerRequest``/``ServerNotification`` what a server sends (``s2c``). Each member is a
struct whose ``method`` is a const and whose ``params`` field gives the params type. The
result type comes from the name (``FooRequest`` -> ``FooResult``) or the facts table.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mcpgen.codegen.facts import Facts
from mcpgen.codegen.ir import (
    AliasDef,
    Direction,
    DictOf,
    ListOf,
    Method,
    Model,
    Named,
    Report,
    StructDef,
    TypeExpr,
    UnionDef,
    UnionOf,
)
from mcpgen.codegen.naming import method_py_name

MESSAGE_UNIONS: list[tuple[str, Direction, str]] = [
    ("ClientRequest", "c2s", "request"),
    ("ClientNotification", "c2s", "notification"),
    ("ServerRequest", "s2c", "request"),
    ("ServerNotification", "s2c", "notification"),
]
RESULT_UNIONS = {"c2s": "ServerResult", "s2c": "ClientResult"}
BASE_PAGE = "basic"


def build_methods(model: Model, defs: dict[str, Any], facts: Facts) -> None:
    for union_name, direction, kind in MESSAGE_UNIONS:
        union = model.types.get(union_name)
        if not isinstance(union, UnionDef):
            model.reports.append(
                Report("warning", f"no {union_name} union in the schema: no {direction} {kind}s")
            )
            continue
        for member in union.members:
            method = _method_from(model, facts, member, direction, kind)
            if method is not None:
                model.methods.append(method)
    for table in ("results", "capabilities"):
        for key in facts.unused(table):
            model.reports.append(Report("info", f"facts.toml [{table}] {key!r} matched nothing"))


def _method_from(
    model: Model, facts: Facts, member: TypeExpr, direction: Direction, kind: Any
) -> Method | None:
    struct = model.types.get(member.name) if isinstance(member, Named) else None
    where = getattr(member, "name", repr(member))
    if not isinstance(struct, StructDef):
        model.reports.append(Report("warning", f"{where}: a message union member must be a struct"))
        return None
    method_field = struct.field_by_wire("method")
    if method_field is None or not isinstance(method_field.const_value, str):
        model.reports.append(Report("warning", f"{struct.name}: no const `method`; skipped"))
        return None
    method = method_field.const_value
    params = struct.field_by_wire("params")
    result = None
    if kind == "request":
        result = facts.result_for(struct.name) or _named_result(model, struct.name)
        if result is None:
            model.reports.append(
                Report("warning", f"{struct.name}: no result type; add it to facts.toml [results]")
            )
            result = "Result" if "Result" in model.types else None
        elif not _in_union(model, RESULT_UNIONS[direction], result):
            model.reports.append(
                Report("info", f"{struct.name}: {result} is not listed in {RESULT_UNIONS[direction]}")
            )
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
        py_name=py_name if kind == "request" else f"on_{py_name}",
    )


def _named_result(model: Model, request_type: str) -> str | None:
    if request_type.endswith("Request"):
        candidate = request_type[: -len("Request")] + "Result"
        if candidate in model.types:
            return candidate
    return None


def _in_union(model: Model, union_name: str, name: str) -> bool:
    union = model.types.get(union_name)
    if not isinstance(union, UnionDef):
        return True
    names = {m.name for m in union.members if isinstance(m, Named)}
    if name in names:
        return True
    # EmptyResult is an alias of Result, which the unions list directly.
    target = model.types.get(name)
    return isinstance(target, AliasDef) and isinstance(target.target, Named) and target.target.name in names


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
    for method_name in list(facts.pages):
        page = facts.page_for(method_name) if method_name in by_method else None
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
