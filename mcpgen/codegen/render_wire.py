"""The Python code of the wire forms of untagged unions (:mod:`mcpgen.codegen.wire`).

One piece, printed by ``types.py.j2``: the ``__post_init__`` of a struct whose fields hold
wire structs after decoding, which builds the arm each wire struct stands for. It runs on
the decoding hot path: attribute reads, class identity tests and one constructor call per
value; msgspec is called only for values the wire struct kept as plain JSON whose type has
no cheap test.
"""

from __future__ import annotations

from collections.abc import Callable

from mcpgen.codegen.ir import Check, Const, ListOf, Prim, TypeExpr, UnionOf, WireSlot, WireUnion, WireValue

Sym = Callable[[str], str]  # how generated code spells an imported name
PyType = Callable[[TypeExpr], str]  # a type expression as Python source


def post_init(
    slots: list[WireSlot], wires: dict[str, WireUnion], sym: Sym, literal: Callable[[object], str], py_type: PyType
) -> str:
    """The method ``__post_init__``, indented as if at module level.

    Each union's rules are written out here rather than called as a function: this runs
    once per decoded value, and a Python call is a measurable part of its cost (see
    bench/codec.py). A union held by several fields is written out once for each.
    """
    lines = [
        "def __post_init__(self) -> None:",
        "    # Decoding leaves the wire struct of an untagged union here: build the arm it stands for.",
        "    # (`wire` is declared apart from `value`, whose class test narrows it for type checkers.)",
        f"    value: {sym('Any')}",
        f"    wire: {sym('Any')}",
    ]
    body: list[str] = []
    for slot in slots:
        f, w = slot.field, wires[slot.union]
        where = literal(f"$.{f.wire_name}")
        if slot.shape == "one":
            body += [
                f"value = self.{f.py_name}",
                f"if value.__class__ is {w.struct.name}:",
                "    wire = value",
                "    try:",
                *_indent(_build(w, f"self.{f.py_name}", sym, literal, py_type), 8),
                "    except ValueError as exc:",
                f"        raise {sym('wire_error')}(exc, {where}) from None",
            ]
            continue
        var = f"{f.py_name}_"
        if slot.shape == "list":
            plain = f.wire_name.isidentifier()  # else the name goes in as a literal, unformatted
            at = f'f"$.{f.wire_name}[{{i}}]"' if plain else f'{where} + f"[{{i}}]"'
            container, key, loop = "list", "i", [f"    for i, value in enumerate({var}):"]
        else:  # msgspec shows a dict value's place as [...], so do we
            container, key, at = "dict", "key", literal(f"$.{f.wire_name}[...]")
            # Keys, then each value: no (key, value) tuple per item (~60 ns less a value, measured).
            loop = [f"    for key in {var}:", f"        value = {var}[key]"]
        body += [
            f"{var}: {sym('Any')} = self.{f.py_name}",
            f"if {var}.__class__ is {container}:",
            *loop,
            f"        if value.__class__ is {w.struct.name}:",
            "            wire = value",
            "            try:",
            *_indent(_build(w, f"{var}[{key}]", sym, literal, py_type), 16),
            "            except ValueError as exc:",
            f"                raise {sym('wire_error')}(exc, {at}) from None",
        ]
    return "\n".join(lines + ["    " + line for line in body])


def _indent(lines: list[str], by: int) -> list[str]:
    return [" " * by + line for line in lines]


def _build(w: WireUnion, target: str, sym: Sym, literal: Callable[[object], str], py_type: PyType) -> list[str]:
    """Statements that pick the arm a decoded wire struct (``wire``) stands for by the
    union's rules, check what msgspec could not, and store the built arm in ``target``.
    """
    lines: list[str] = []
    for n, arm in enumerate(w.arms):
        pad = "    "
        if arm.condition is not None:
            lines.append(f"{'if' if n == 0 else 'elif'} {_test(arm.condition, w, sym, literal)}:")
        elif n > 0:
            lines.append("else:")
        else:
            pad = ""
        args = []
        for v in arm.values:
            steps = _value_steps(v, sym, literal, py_type)
            lines += [pad + s for s in steps]
            args.append(f"{v.py_name}={f'v_{v.py_name}' if steps else f'wire.{v.attr}'}")
        lines.append(f"{pad}{target} = {arm.struct}({', '.join(args)})")
        if arm.condition is None:
            break  # a rule that always picks (or the fallback): later arms are unreachable
    return lines


def needs_lookup(wires: list[WireUnion]) -> bool:
    """Whether some rule tests a key more than one level down (written with ``lookup``)."""
    checks = [arm.condition for w in wires for arm in w.arms if arm.condition is not None]
    return any(len(c.path) > 2 or (len(c.path) == 2 and c.op != "has") for c in checks)


def _test(check: Check, w: WireUnion, sym: Sym, literal: Callable[[object], str]) -> str:
    """A rule's check of the raw JSON object, asked of the wire struct instead."""
    head, *rest = check.path
    field = w.struct.field_by_wire(head)
    assert field is not None
    if check.op == "has" and len(rest) == 1:  # the common nested test, without a call
        return f"(wire.{field.py_name}.__class__ is dict and {literal(rest[0])} in wire.{field.py_name})"
    if rest:  # the wire struct keeps the first key as plain JSON (see wire.py)
        value = f"{sym('lookup')}(wire.{field.py_name}, {', '.join(literal(p) for p in rest)})"
        absent = sym("MISSING")
    else:
        value, absent = f"wire.{field.py_name}", sym("UNSET")
    if check.op == "has":
        return f"{value} is not {absent}"
    if check.op == "eq":
        return f"{value} == {literal(check.value)}"
    options = [literal(v) for v in check.value]
    return f"{value} in ({', '.join(options)}{',' if len(options) == 1 else ''})"


def _value_steps(v: WireValue, sym: Sym, literal: Callable[[object], str], py_type: PyType) -> list[str]:
    """Statements that leave the arm's value in ``v_<name>`` (none when ``wire.<attr>`` is it)."""
    if v.missing == "unset" and v.check is None:
        return []
    var, unset = f"v_{v.py_name}", sym("UNSET")
    steps = [f"{var} = wire.{v.attr}"]
    if v.missing == "error":
        message = literal(f"Object missing required field `{v.wire_name}`")  # msgspec's words
        steps += [f"if {var} is {unset}:", f"    raise ValueError({message})"]
    elif v.missing == "default":
        steps += [f"if {var} is {unset}:", f"    {var} = {literal(v.default)}"]
    if v.check is not None:
        fast = _fast_test(v.check, v.checked_as, var, literal)
        slow = f"{var} = {sym('wire_value')}({var}, {py_type(v.check)}, {literal(v.wire_name)})"
        if v.missing == "unset":
            present = f"{var} is not {unset}"
            steps += [f"if {present} and not ({fast}):" if fast else f"if {present}:", f"    {slow}"]
        else:
            steps += [f"elif not ({fast}):" if fast else "else:", f"    {slow}"]
    return steps


_CLASS_OF = {"str": ("str",), "int": ("int",), "bool": ("bool",), "float": ("float", "int")}


def _fast_test(expr: TypeExpr, decoded_as: TypeExpr | None, var: str, literal: Callable[[object], str]) -> str | None:
    """A cheap test that ``var`` (plain JSON, or a value of ``decoded_as``) is a valid
    ``expr``, or None when only msgspec can tell. Classes are compared exactly: a JSON
    boolean is never an int."""
    if isinstance(expr, Prim) and not expr.constrained:
        if expr.name == "None":
            return f"{var} is None"
        if expr.name == "Any":
            return "True"
        return " or ".join(f"{var}.__class__ is {c}" for c in _CLASS_OF[expr.name])
    if isinstance(expr, Const) and all(isinstance(v, str) for v in expr.values):
        options = [literal(v) for v in expr.values]
        return f"{var} in ({', '.join(options)}{',' if len(options) == 1 else ''})"
    if isinstance(expr, ListOf) and isinstance(decoded_as, UnionOf) and expr in decoded_as.members:
        return f"{var}.__class__ is list"  # msgspec checked the items (one list type in the union)
    if isinstance(expr, ListOf) and not expr.min_items and expr.max_items is None:
        item = expr.item
        if isinstance(item, Prim) and not item.constrained and item.name in _CLASS_OF:
            # Every item's class, exactly, in one C-level pass (msgspec.convert costs ~3x).
            return f"{var}.__class__ is list and {{{', '.join(_CLASS_OF[item.name])}}}.issuperset(map(type, {var}))"
    if isinstance(expr, UnionOf):
        tests = [_fast_test(m, decoded_as, var, literal) for m in expr.members]
        if all(t is not None for t in tests):
            return " or ".join(f"({t})" for t in tests if t is not None)
    return None
