"""The Python code of the wire forms of untagged unions (:mod:`mcpgen.codegen.wire`).

Two pieces, printed by ``types.py.j2``: the ``__post_init__`` of a struct whose fields hold
wire structs after decoding, and one function per union that builds the arm a wire struct
stands for. Both run on the decoding hot path: attribute reads, class identity tests and one
constructor call; msgspec is called only for values the wire struct kept as plain JSON
whose type has no cheap test.
"""

from __future__ import annotations

from collections.abc import Callable

from mcpgen.codegen import naming
from mcpgen.codegen.ir import Check, Const, ListOf, Prim, TypeExpr, UnionOf, WireSlot, WireUnion, WireValue

Sym = Callable[[str], str]  # how generated code spells an imported name
PyType = Callable[[TypeExpr], str]  # a type expression as Python source


def converter(union: str) -> str:
    return f"_{naming.snake(union)}_from_wire"


def post_init(slots: list[WireSlot], wires: dict[str, WireUnion], sym: Sym, literal: Callable[[object], str]) -> str:
    """The method ``__post_init__``, indented as if at module level."""
    lines = [
        "def __post_init__(self) -> None:",
        "    # Decoding leaves the wire struct of an untagged union here: build the arm it stands for.",
    ]
    body: list[str] = []
    for slot in slots:
        f, wire, build = slot.field, wires[slot.union].struct.name, converter(slot.union)
        var = f"{f.py_name}_"
        where = literal(f"$.{f.wire_name}")
        if slot.shape == "one":
            body += [
                f"{var}: {sym('Any')} = self.{f.py_name}",
                f"if {var}.__class__ is {wire}:",
                "    try:",
                f"        self.{f.py_name} = {build}({var})",
                "    except ValueError as exc:",
                f"        raise {sym('wire_error')}(exc, {where}) from None",
            ]
            continue
        if slot.shape == "list":
            plain = f.wire_name.isidentifier()  # else the name goes in as a literal, unformatted
            at = f'f"$.{f.wire_name}[{{i}}]"' if plain else f'{where} + f"[{{i}}]"'
            container, key, items = "list", "i", f"enumerate({var})"
        else:  # msgspec shows a dict value's place as [...], so do we
            container, key, items, at = "dict", "key", f"{var}.items()", literal(f"$.{f.wire_name}[...]")
        body += [
            f"{var}: {sym('Any')} = self.{f.py_name}",
            f"if {var}.__class__ is {container}:",
            f"    for {key}, value in {items}:",
            f"        if value.__class__ is {wire}:",
            "            try:",
            f"                {var}[{key}] = {build}(value)",
            "            except ValueError as exc:",
            f"                raise {sym('wire_error')}(exc, {at}) from None",
        ]
    return "\n".join(lines + ["    " + line for line in body])


def converter_function(w: WireUnion, sym: Sym, literal: Callable[[object], str], py_type: PyType) -> str:
    """The function that builds ``w.union``'s arm from its decoded wire struct."""
    lines = [
        f"def {converter(w.union)}(wire: {sym('Any')}) -> {sym('Any')}:",
        f'    """The {w.union} a decoded {w.struct.name} stands for: picked, checked, built."""',
    ]
    for arm in w.arms:
        pad = "    "
        if arm.condition is not None:
            lines.append(f"    if {_test(arm.condition, w, sym, literal)}:")
            pad = "        "
        args = []
        for v in arm.values:
            steps = _value_steps(v, sym, literal, py_type)
            lines += [pad + s for s in steps]
            args.append(f"{v.py_name}={f'v_{v.py_name}' if steps else f'wire.{v.attr}'}")
        lines.append(f"{pad}return {arm.struct}({', '.join(args)})")
    return "\n".join(lines)


def _test(check: Check, w: WireUnion, sym: Sym, literal: Callable[[object], str]) -> str:
    """A rule's check of the raw JSON object, asked of the wire struct instead."""
    head, *rest = check.path
    field = w.struct.field_by_wire(head)
    assert field is not None
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
    if isinstance(expr, UnionOf):
        tests = [_fast_test(m, decoded_as, var, literal) for m in expr.members]
        if all(t is not None for t in tests):
            return " or ".join(f"({t})" for t in tests if t is not None)
    return None
