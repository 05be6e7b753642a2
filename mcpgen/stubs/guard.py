"""The last guard of ``mcpgen stubs``: a module whose statements are not the template's is
refused, whatever the server's text did on its way in.

Every server string reaches the module through an escaper (:mod:`mcpgen.stubs.render`);
this checks the result instead of trusting the escapers. The same model is rendered a second
time with every string that is not a plain name (letters, digits, underscores) replaced by
a neutral one (``"~1"``, ``"~2"``, the same string always by the same stand-in, so that
every comparison the template makes comes out the same). That copy holds no server text,
so its statements are exactly the template's. The module to write is then parsed with
:mod:`ast` and walked in step with the copy: every node must be of the same kind with the
same names, operators and number of children; only the values of constants may differ
(strings stay strings, numbers numbers). A quote that closed a docstring, a line break
that ended a comment, a NUL, anything that adds, removes or changes one statement or
expression, makes them differ, and nothing is written.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import gc
import re
from collections.abc import Iterator
from typing import Any

from mcpgen.stubs.model import Description, StubModel

_PLAIN = re.compile(r"[A-Za-z0-9_]*")


class UnsafeModule(ValueError):
    """The rendered module's statements are not the template's: it is not written."""


def neutral(stubs: StubModel) -> StubModel:
    """A copy of ``stubs`` with every string that is not a plain name replaced by a
    stand-in (the same stand-in for the same string). The server's raw JSON is left out:
    only its name and version reach the module."""
    stand_ins: dict[str, str] = {}
    described = stubs.description
    copy = _Neutral(stand_ins).value(dataclasses.replace(stubs, description=Description("", "")))
    assert isinstance(copy, StubModel)
    named = Description(_stand_in(described.name, stand_ins), _stand_in(described.version, stand_ins))
    return dataclasses.replace(copy, description=named)


def _stand_in(text: str, stand_ins: dict[str, str]) -> str:
    if _PLAIN.fullmatch(text):
        return text  # a name (or "", or digits): safe anywhere, and equal to what it was
    found = stand_ins.get(text)
    if found is None:
        found = stand_ins[text] = f"~{len(stand_ins) + 1}"
    return found


class _Neutral:
    def __init__(self, stand_ins: dict[str, str]) -> None:
        self.stand_ins = stand_ins
        self.done: dict[int, Any] = {}  # id -> copy: a type shared by two fields stays shared

    def value(self, value: Any) -> Any:
        if isinstance(value, str):
            return _stand_in(value, self.stand_ins)
        if value is None or isinstance(value, (bool, int, float)):
            return value
        key = id(value)
        if key in self.done:
            return self.done[key]
        copy: Any
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            changes = {}
            for f in dataclasses.fields(value):
                old = getattr(value, f.name)
                new = self.value(old)
                if new is not old and f.init:
                    changes[f.name] = new
            # Nothing to replace (a name, a primitive type): the same object serves.
            copy = dataclasses.replace(value, **changes) if changes else value
        elif isinstance(value, dict):
            copy = {self.value(k): self.value(v) for k, v in value.items()}
        elif isinstance(value, (list, tuple, set, frozenset)):
            copy = type(value)(self.value(v) for v in value)
        else:
            raise TypeError(f"cannot neutralize a {type(value).__name__}")
        self.done[key] = copy
        return copy


def check(source: str, skeleton: str) -> None:
    """Raise :class:`UnsafeModule` unless ``source`` has ``skeleton``'s statements."""
    with _collector_paused():
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError) as exc:  # ValueError: a NUL in the source
            raise UnsafeModule(f"refusing to write the module: it does not parse ({exc})") from None
        differs = _first_difference(tree, ast.parse(skeleton))
    if differs is not None:
        line = getattr(differs, "lineno", None)
        where = f" (line {line})" if line is not None else ""
        raise UnsafeModule(
            f"refusing to write the module: its statements are not the template's{where}; "
            "the server's text was not escaped as it should have been"
        )


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off while two syntax trees are built and walked: they
    are a million objects with no cycle between them, and the collections their creation
    sets off took half the guard's time."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _first_difference(got: ast.AST, want: ast.AST) -> ast.AST | None:
    """The first node of ``got`` that differs from its place in ``want`` (None: the same
    tree but for the values of constants). One pass over both, without recursion (a
    module of 16,000 types has about half a million nodes)."""
    pending: list[tuple[Any, Any, ast.AST]] = [(got, want, got)]
    constant, node_type = ast.Constant, ast.AST
    while pending:
        a, b, parent = pending.pop()
        if type(a) is not type(b):
            return parent
        if not isinstance(a, node_type):
            if a != b:  # a name, an operator's field, a list of names
                return parent
            continue
        if type(a) is constant:
            if type(a.value) is not type(b.value):  # a string stays a string, a number a number
                return a
            continue
        for name in a._fields:
            x, y = getattr(a, name, None), getattr(b, name, None)
            if type(x) is list:
                if type(y) is not list or len(x) != len(y):
                    return a
                pending.extend((item, other, a) for item, other in zip(x, y, strict=True))
            else:
                pending.append((x, y, a))
    return None


__all__ = ["UnsafeModule", "check", "neutral"]
