"""Render the model through the Jinja templates into a formatted Python package."""

from __future__ import annotations

import json
import multiprocessing
import os
import textwrap
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import black
import jinja2

from mcpgen import __version__
from mcpgen.codegen import naming
from mcpgen.codegen.ir import (
    AliasDef,
    Check,
    Const,
    DictOf,
    Field,
    ListOf,
    Method,
    Model,
    Named,
    Prim,
    StructDef,
    TypeDef,
    TypeExpr,
    UnionDef,
    UnionOf,
)

TEMPLATES = Path(__file__).parent / "templates"
# Output file -> template. Every file of a generated package comes from one template.
FILES = {
    "__init__.py": "__init__.py.j2",
    "_support.py": "_support.py.j2",
    "types.py": "types.py.j2",
    "codec.py": "codec.py.j2",
    "methods.py": "methods.py.j2",
    "server.py": "server.py.j2",
    "client.py": "client.py.j2",
    "py.typed": None,
}
SPEC_BASE = "https://modelcontextprotocol.io/specification"
# Names the generated modules import. A schema type with one of these names (2024-11-05
# has a type called `Annotated`) keeps its name; the import is renamed instead.
IMPORTED = ("Annotated", "Any", "ClassVar", "Literal", "TypeAlias", "TYPE_CHECKING", "UNSET",
            "Meta", "UnsetType", "field", "SchemaStruct", "UntaggedUnion", "TypeVar")  # fmt: skip
_SYMBOLS: dict[str, str] = {}


def sym(name: str) -> str:
    """How generated code spells an imported name (renamed when a schema type has it)."""
    return _SYMBOLS.get(name, name)


def imports(*names: str) -> str:
    """``A, B as _B`` for an import line."""
    return ", ".join(n if sym(n) == n else f"{n} as {sym(n)}" for n in names)


class FormatError(Exception):
    """black could not format a rendered file; the raw text is kept for debugging."""


@dataclass
class Rendered:
    files: dict[str, str]  # relative path -> text


def render_package(model: Model) -> Rendered:
    _SYMBOLS.clear()
    _SYMBOLS.update({n: f"_{n}" for n in IMPORTED if n in model.types})
    env = _environment(model)
    context = _context(model)
    raw = {
        name: env.get_template(template).render(**context) if template else ""
        for name, template in FILES.items()
    }
    return Rendered(_format_all(raw))


def _format_all(raw: dict[str, str]) -> dict[str, str]:
    """black every file; on a multi-core Linux box, two at a time (types.py alone takes
    most of the time, so the rest format beside it)."""
    names = sorted((n for n in raw if raw[n]), key=lambda n: -len(raw[n]))
    formatted = {n: "" for n in raw}
    if "fork" in multiprocessing.get_all_start_methods() and (os.cpu_count() or 1) > 1:
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=2, mp_context=context) as pool:
            for name, text in zip(names, pool.map(_format, names, [raw[n] for n in names])):
                formatted[name] = text
    else:
        for name in names:
            formatted[name] = _format(name, raw[name])
    return formatted


def write_package(rendered: Rendered, out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in rendered.files.items():
        path = out_dir / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def _format(name: str, raw: str) -> str:
    try:
        return black.format_str(raw, mode=black.Mode(line_length=100))
    except Exception as exc:  # black raises several types; all mean the same here
        dump = Path(f"/tmp/mcpgen-unformatted-{name}")
        dump.write_text(raw, encoding="utf-8")
        raise FormatError(f"black failed on {name} ({exc}); unformatted text in {dump}") from None


# ------------------------------------------------------------------ template context


def _context(model: Model) -> dict[str, Any]:
    structs = model.structs()
    return {
        "model": model,
        "version": __version__,
        "structs": structs,
        "typedefs": _ordered_aliases(model),
        "untagged": [u for u in model.unions() if not u.native],
        "plain_variants": _plain_variants(model),
        "names": sorted(model.types),
        "c2s": model.methods_for("c2s"),
        "s2c": model.methods_for("s2c"),
        "spec_root": f"{SPEC_BASE}/{model.revision if model.revision != 'unknown' else 'latest'}",
    }


def _plain_variants(model: Model) -> list[TypeExpr]:
    """Variants of untagged unions that contain no untagged union themselves: msgspec
    converts them without the hook, which is about twice as fast."""
    memo: dict[str, bool] = {}

    def needs_hook(expr: TypeExpr) -> bool:
        names = _named_in(expr)
        return any(named_needs_hook(n) for n in names)

    def named_needs_hook(name: str) -> bool:
        if name not in memo:
            memo[name] = False  # a recursive reference adds nothing new
            typedef = model.types[name]
            if isinstance(typedef, UnionDef):
                memo[name] = not typedef.native or any(needs_hook(m) for m in typedef.members)
            elif isinstance(typedef, StructDef):
                memo[name] = any(needs_hook(f.type) for f in typedef.fields)
            else:
                memo[name] = needs_hook(typedef.target)
        return memo[name]

    variants: dict[str, TypeExpr] = {}
    for union in model.unions():
        if union.native:
            continue
        for expr in [r.variant for r in union.rules] + ([union.fallback] if union.fallback else []):
            if not needs_hook(expr):
                variants.setdefault(py_type(expr), expr)
    return [variants[k] for k in sorted(variants)]


def _ordered_aliases(model: Model) -> list[TypeDef]:
    """Aliases and unions in an order where each follows the ones it refers to (they are
    evaluated at import time; structs come first and are referred to lazily)."""
    pending = {t.name: t for t in model.types.values() if not isinstance(t, StructDef)}
    done: list[TypeDef] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        if name in seen or name not in pending:
            return
        seen.add(name)
        typedef = pending[name]
        exprs = typedef.members if isinstance(typedef, UnionDef) else [typedef.target]
        for expr in exprs:
            for dep in _named_in(expr):
                visit(dep)
        done.append(typedef)

    for name in sorted(pending):
        visit(name)
    return done


def _named_in(expr: TypeExpr) -> list[str]:
    if isinstance(expr, Named):
        return [expr.name]
    if isinstance(expr, ListOf):
        return _named_in(expr.item)
    if isinstance(expr, DictOf):
        return _named_in(expr.value)
    if isinstance(expr, UnionOf):
        return [n for m in expr.members for n in _named_in(m)]
    return []


# ------------------------------------------------------------------ filters


def _environment(model: Model) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
    )
    env.filters.update(
        py_type=py_type,
        variant_class=lambda e: variant_class(model, e),
        literal=py_literal,
        docstring=docstring,
        snake=naming.snake,
        test=check_expr,
        field_line=field_line,
        union_expr=union_expr,
        page_url=lambda t: f"{_context_root(model)}/{t.page}",
        call_args=lambda m: call_args(model, m),
        call_params=lambda m: call_params(model, m),
        params_type=lambda m: py_type(m.params_type) if m.params_type else "None",
        result_type=lambda m: m.result_type or "None",
    )
    env.globals["ordered_checks"] = lambda u: _split_rules(model, u)
    env.globals["sym"] = sym
    env.globals["imports"] = imports
    return env


def _context_root(model: Model) -> str:
    return f"{SPEC_BASE}/{model.revision if model.revision != 'unknown' else 'latest'}"


def py_literal(value: Any) -> str:
    """A Python literal for a JSON scalar (strings with double quotes, as black prints)."""
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


def py_type(expr: TypeExpr) -> str:
    """The annotation for a type expression, as the type checker sees it."""
    if isinstance(expr, Prim):
        meta = _meta_args(expr)
        # A JSON number decodes as int when it has no fraction, so 30 stays 30 (not 30.0)
        # on a round trip; type checkers read `int | float` as plain `float`.
        bases = ["int", "float"] if expr.name == "float" else [sym(expr.name)]
        if meta:
            return " | ".join(f"{sym('Annotated')}[{b}, {sym('Meta')}({meta})]" for b in bases)
        return " | ".join(bases)
    if isinstance(expr, ListOf):
        inner = f"list[{py_type(expr.item)}]"
        bounds = []
        if expr.min_items is not None:
            bounds.append(f"min_length={expr.min_items}")
        if expr.max_items is not None:
            bounds.append(f"max_length={expr.max_items}")
        return f"{sym('Annotated')}[{inner}, {sym('Meta')}({', '.join(bounds)})]" if bounds else inner
    if isinstance(expr, DictOf):
        return f"dict[str, {py_type(expr.value)}]"
    if isinstance(expr, Const):
        return f"{sym('Literal')}[{', '.join(py_literal(v) for v in expr.values)}]"
    if isinstance(expr, Named):
        return expr.name
    return " | ".join(py_type(m) for m in expr.members)


def _meta_args(p: Prim) -> str:
    pairs = [
        ("ge", p.ge), ("le", p.le), ("gt", p.gt), ("lt", p.lt),
        ("min_length", p.min_length), ("max_length", p.max_length), ("pattern", p.pattern),
    ]  # fmt: skip
    return ", ".join(f"{k}={py_literal(v)}" for k, v in pairs if v is not None)


def variant_class(model: Model, expr: TypeExpr) -> str:
    """The class ``isinstance`` checks for one variant of an untagged union."""
    if isinstance(expr, Named):
        typedef = model.types[expr.name]
        if isinstance(typedef, StructDef):
            return typedef.name
        if isinstance(typedef, AliasDef):
            return variant_class(model, typedef.target)
        return typedef.name
    if isinstance(expr, ListOf):
        return "list"
    if isinstance(expr, DictOf):
        return "dict"
    if isinstance(expr, Prim):
        return {"None": "type(None)", "Any": "object"}.get(expr.name, expr.name)
    if isinstance(expr, Const):
        return {str: "str", bool: "bool", int: "int", float: "float"}.get(type(expr.values[0]), "object")
    return "object"


def docstring(text: str | None, *, link: str | None = None, indent: int = 4) -> str:
    """A triple-quoted docstring body, wrapped, with an optional spec link."""
    parts = []
    if text:
        clean = " ".join(text.split())
        parts.append(textwrap.fill(clean, width=92 - indent))
    if link:
        parts.append(f"Spec: {link}")
    body = "\n\n".join(parts) or "(undocumented)"
    body = body.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    pad = " " * indent
    body = textwrap.indent(body, pad).lstrip()
    if "\n" in body:
        return f'"""{body}\n{pad}"""'
    return f'"""{body}"""'


def field_line(f: Field, struct: StructDef) -> str:
    """One struct attribute: annotation, default and wire name."""
    annotation = py_type(f.type)
    options: list[str] = []
    if not f.required:
        annotation = f"{annotation} | {sym('UnsetType')}"
        options.append(f"default={sym('UNSET')}")
    elif f.is_const:
        options.append(f"default={py_literal(f.const_value)}")
    if f.wire_name != f.py_name:
        options.append(f"name={py_literal(f.wire_name)}")
    if not options:
        return f"{f.py_name}: {annotation}"
    if options == [o for o in options if o.startswith("default=")]:
        return f"{f.py_name}: {annotation} = {options[0][len('default='):]}"
    return f"{f.py_name}: {annotation} = {sym('field')}({', '.join(options)})"


def check_expr(check: Check) -> str:
    """A Python test of ``raw`` (already known to be a dict for key checks)."""
    if check.op == "kind":
        return {
            "object": "isinstance(raw, dict)",
            "array": "isinstance(raw, list)",
            "string": "isinstance(raw, str)",
            "integer": "isinstance(raw, int) and not isinstance(raw, bool)",
            "number": "isinstance(raw, (int, float)) and not isinstance(raw, bool)",
            "boolean": "isinstance(raw, bool)",
            "null": "raw is None",
        }[check.value]
    head, *rest = check.path
    if rest:
        value = f"lookup(raw, {', '.join(py_literal(p) for p in check.path)})"
        present = f"{value} is not MISSING"
    else:
        # A JSON null is never what a check looks for, so a missing key can read as None.
        value = f"raw.get({py_literal(head)})"
        present = f"{py_literal(head)} in raw"
    if check.op == "has":
        return present
    if check.op == "eq":
        return f"{value} == {py_literal(check.value)}"
    options = [py_literal(v) for v in check.value]
    return f"{value} in ({', '.join(options)}{',' if len(options) == 1 else ''})"


def _split_rules(model: Model, union: UnionDef) -> dict[str, Any]:
    """Rules grouped for the picker: key checks run inside ``if isinstance(raw, dict)``."""
    keyed = [r for r in union.rules if r.check.op != "kind"]
    kinds = [r for r in union.rules if r.check.op == "kind"]
    object_default = None
    for r in list(kinds):
        if r.check.value == "object":
            object_default = r
            kinds.remove(r)
    return {"keyed": keyed, "object_default": object_default, "kinds": kinds}


def _struct_kwargs(model: Model, method: Method) -> StructDef | None:
    if isinstance(method.params_type, Named):
        typedef = model.types.get(method.params_type.name)
        if isinstance(typedef, StructDef):
            return typedef
    return None


def union_expr(members: list[TypeExpr], indent: int = 0) -> str:
    """``A | B``, or one member a line in parentheses when that would be long."""
    parts = [py_type(m) for m in members]
    flat = " | ".join(parts)
    if len(flat) + indent < 70:
        return flat
    pad = " " * (indent + 4)
    return "(\n" + "".join(f"{pad}{'| ' if i else ''}{p}\n" for i, p in enumerate(parts)) + " " * indent + ")"


def call_args(model: Model, method: Method) -> str:
    """The parameter list of a typed call: ``self`` and the params struct's fields as
    keywords (one a line, as black would print them), or a single ``params``."""
    args = ["self"] + _call_args(model, method)
    if len(args) <= 2 and sum(len(a) for a in args) < 60:
        return ", ".join(args)
    return "\n" + "".join(f"        {a},\n" for a in args) + "    "


def _call_args(model: Model, method: Method) -> list[str]:
    struct = _struct_kwargs(model, method)
    if method.params_type is None:
        return []
    if struct is None:
        default = "" if method.params_required else " | None = None"
        return [f"params: {py_type(method.params_type)}{default}"]
    args = ["*"]
    fields = [f for f in struct.fields if not (f.is_const and f.wire_name == struct.tag_field)]
    # Required first, then optional, `_meta` last: the order a caller reads them in.
    for f in sorted(fields, key=lambda f: (not f.required or f.is_const, f.wire_name == "_meta")):
        if f.is_const:
            continue
        if f.required:
            args.append(f"{f.py_name}: {py_type(f.type)}")
        else:
            args.append(f"{f.py_name}: {py_type(f.type)} | {sym('UnsetType')} = {sym('UNSET')}")
    return args if len(args) > 1 else []


def call_params(model: Model, method: Method) -> str:
    """The expression that builds the params value inside a typed call."""
    struct = _struct_kwargs(model, method)
    if method.params_type is None:
        return "None"
    if struct is None:
        return "params"
    names = [f.py_name for f in struct.fields if not f.is_const]
    return f"{struct.name}({', '.join(f'{n}={n}' for n in names)})"


__all__ = ["render_package", "write_package", "FormatError"]
