"""Cycles of aliases and unions (``JSONValue = JSONObject | list[JSONValue] | ...``).

msgspec resolves a type alias eagerly, so a name that refers back to itself through
aliases and unions alone cannot be decoded; a cycle through a struct is fine (structs are
classes, resolved lazily). Every name on such a cycle is *erased*: at run time it stands for
the plainest type that holds all its values (``dict[str, Any]`` when every variant is an
object, ``list[Any]`` when every one is an array, else ``Any``), so decoding keeps any value
intact, while type checkers still see the exact recursive alias.
"""

from __future__ import annotations

from collections.abc import Iterator

from mcpgen.codegen.ir import (
    AliasDef,
    Const,
    DictOf,
    ListOf,
    Model,
    Named,
    Prim,
    Report,
    StructDef,
    TypeExpr,
    UnionOf,
)


def erase_cycles(model: Model) -> None:
    graph = {
        name: set(_names(t.target if isinstance(t, AliasDef) else UnionOf(tuple(t.members))))
        for name, t in model.types.items()
        if not isinstance(t, StructDef)
    }
    for component in _cycles(graph):
        for name in sorted(component):
            typedef = model.types[name]
            assert not isinstance(typedef, StructDef)
            typedef.erased = _plainest(model, name)
        names = ", ".join(sorted(component))
        model.reports.append(Report("info", f"recursive aliases {names}: checked as written, decoded as plain JSON"))


def _names(expr: TypeExpr) -> Iterator[str]:
    if isinstance(expr, Named):
        yield expr.name
    elif isinstance(expr, ListOf):
        yield from _names(expr.item)
    elif isinstance(expr, DictOf):
        yield from _names(expr.value)
    elif isinstance(expr, UnionOf):
        for member in expr.members:
            yield from _names(member)


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components that contain a cycle (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root] & graph.keys())))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            child = next(edges, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child] & graph.keys()))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph[node]:
                    found.append(component)
    return found


def _plainest(model: Model, name: str) -> TypeExpr:
    kinds = _kinds(model, Named(name), set())
    if kinds == {"object"}:
        return DictOf(Prim("Any"))
    if kinds == {"array"}:
        return ListOf(Prim("Any"))
    return Prim("Any")


def _kinds(model: Model, expr: TypeExpr, seen: set[str]) -> set[str]:
    """The JSON kinds a value of ``expr`` may have."""
    if isinstance(expr, Named):
        if expr.name in seen:
            return set()
        seen.add(expr.name)
        typedef = model.types[expr.name]
        if isinstance(typedef, StructDef):
            return {"object"}
        if isinstance(typedef, AliasDef):
            return _kinds(model, typedef.target, seen)
        return set().union(*(_kinds(model, m, seen) for m in typedef.members))
    if isinstance(expr, UnionOf):
        return set().union(*(_kinds(model, m, seen) for m in expr.members))
    if isinstance(expr, ListOf):
        return {"array"}
    if isinstance(expr, DictOf):
        return {"object"}
    if isinstance(expr, Const):
        return {type(v).__name__ for v in expr.values}
    return {"any"} if expr.name == "Any" else {expr.name}
