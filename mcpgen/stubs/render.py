"""Render a :class:`~mcpgen.stubs.model.StubModel` into one formatted Python module, and
tell what changed between two such modules (``mcpgen stubs --check``).

The module is printed by ``templates/stubs.py.j2`` with the protocol generator's own
filters (types, fields) and formatted by the same pinned ruff run, so the same description
gives the same bytes on every machine.

The server's text is not trusted: it reaches the module only through an escaper. A string
value goes through :func:`literal` (JSON's escaping, which Python reads the same); text in a
docstring through :func:`docstring` / :func:`doc_text` (backslashes doubled, a quote that
could close the string escaped, every character that is not printable, NUL and line breaks
and bidirectional overrides included, written as its escape); text in a comment through
:func:`comment` (nothing that ends a line). Names are made by :mod:`mcpgen.codegen.naming`
from letters, digits and underscores only. As a last guard, :mod:`mcpgen.stubs.guard`
refuses a module whose statements are not the template's.
"""

from __future__ import annotations

import ast
import difflib
import math
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpgen.codegen import render
from mcpgen.stubs import guard as stubs_guard
from mcpgen.stubs.model import Argument, PromptStub, StubModel, TemplateStub, ToolStub

TEMPLATES = Path(__file__).parent / "templates"  # stubs.py.j2, with the generator's filters


def render_stubs(stubs: StubModel, command: str) -> str:
    """The formatted module; :class:`~mcpgen.stubs.guard.UnsafeModule` if its
    statements are not those the template gives a neutral copy of the same model."""
    render.use_symbols(set(stubs.types) | {stubs.class_name})
    env = _environment()
    text = _render(env, stubs, command)
    skeleton = _render(env, stubs_guard.neutral(stubs), "x")
    try:
        formatted = render.format_files({"stubs.py": text})["stubs.py"]
    except render.FormatError:
        stubs_guard.check(text, skeleton)  # a module that does not parse is refused as such
        raise
    stubs_guard.check(formatted, skeleton)  # what is written is what is checked
    return formatted


def _render(env: Any, stubs: StubModel, command: str) -> str:
    model = stubs.model
    return str(
        env.get_template("stubs.py.j2").render(
            d=stubs.description,
            m=stubs,
            command=command,
            structs=stubs.structs(),
            typedefs=render.ordered_aliases(model),
            names=sorted([*model.types, stubs.class_name, "ToolCallFailed"]),
        )
    )


# ---------------------------------------------------------------- escapers for server text


def _escaped(char: str) -> str:
    """The escape sequence of a character, as text (``\\x1b``)."""
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def doc_text(text: str, *, every_quote: bool = True) -> str:
    """``text`` for the inside of a triple-quoted (not raw) string, on one line. Backslashes
    are doubled; a quote is escaped (only where another quote or the end follows, for
    ``every_quote=False``: three in a row are then never unescaped); and every character
    that is not printable (``str.isprintable``: control characters, line breaks, format
    characters such as bidirectional overrides, lone surrogates) is shown as the text of
    its escape (the docstring reads ``\\x1b``, not an escape character that would reach
    the terminal of whoever reads ``help()``; a lone surrogate cannot even be a class's
    docstring)."""
    if text.isprintable() and "\\" not in text and '"' not in text:
        return text
    out = []
    last = len(text) - 1
    for i, char in enumerate(text):
        if char == "\\":
            out.append("\\\\")
        elif char == '"' and (every_quote or i == last or text[i + 1] == '"'):
            out.append('\\"')
        elif not char.isprintable():
            out.append("\\" + _escaped(char))
        else:
            out.append(char)
    return "".join(out)


def comment(text: str) -> str:
    """``text`` for a ``#`` comment: nothing in it ends the line (every character that is
    not printable, line breaks included, is written as its escape)."""
    return text if text.isprintable() else "".join(c if c.isprintable() else _escaped(c) for c in text)


def docstring(text: str | None, *, indent: int = 4) -> str:
    """A whole docstring for server text: its words wrapped, each line escaped."""
    words = " ".join(text.split()) if text else ""
    lines = textwrap.fill(words, width=92 - indent).splitlines() if words else ["(undocumented)"]
    return _triple_quoted([doc_text(line, every_quote=False) for line in lines], indent)


def _triple_quoted(lines: list[str], indent: int) -> str:
    pad = " " * indent
    body = "\n".join(f"{pad}{line}" if line and i else line for i, line in enumerate(lines))
    return f'"""{body}\n{pad}"""' if len(lines) > 1 else f'"""{body}"""'


def literal(value: Any) -> str:
    """A Python literal for a JSON scalar: a string as JSON writes it (ASCII, every quote,
    backslash and control character escaped: valid Python too); a float must be finite
    (Python's json module reads ``Infinity``, which has no literal)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"no literal for {value!r}")
    if value is None or isinstance(value, (str, bool, int, float)):
        return render.py_literal(value)
    raise TypeError(f"no literal for a {type(value).__name__}")


def _environment() -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
    )
    env.filters.update(
        literal=literal,
        py_type=render.py_type,
        docstring=docstring,
        doc_text=doc_text,
        comment=comment,
        field_line=render.field_line,
        union_expr=render.union_expr,
        tool_args=_tool_args,
        str_args=_str_args,
        method_doc=_method_doc,
    )
    from mcpgen.version import __version__

    env.globals.update(version=__version__, sym=render.sym, imports=render.imports)
    return env


def _tool_args(tool: ToolStub) -> str:
    if tool.free_form:
        return f"self, arguments: dict[str, {render.sym('Any')}] | None = None"
    ordered = sorted(tool.arguments, key=lambda a: not a.required)
    parts = ["self", "*"] if ordered else ["self"]
    for arg in ordered:
        annotation = render.py_type(arg.type)
        if arg.required:
            parts.append(f"{arg.py_name}: {annotation}")
        elif arg.has_default:
            parts.append(f"{arg.py_name}: {annotation} = {literal(arg.default)}")
        else:
            parts.append(f"{arg.py_name}: {annotation} | {render.sym('UnsetType')} = {render.sym('UNSET')}")
    return ", ".join(parts)


def _str_args(stub: PromptStub | TemplateStub) -> str:
    ordered = sorted(stub.arguments, key=lambda a: not a.required)
    parts = ["self", "*"] if ordered else ["self"]
    parts += [f"{a.py_name}: str" if a.required else f"{a.py_name}: str | None = None" for a in ordered]
    return ", ".join(parts)


def _method_doc(stub: ToolStub | PromptStub | TemplateStub) -> str:
    """The description, then one line per argument that has one."""
    kind = {ToolStub: "Tool", PromptStub: "Prompt", TemplateStub: "Resource template"}[type(stub)]
    target = stub.uri_template if isinstance(stub, TemplateStub) else stub.name
    lines = [" ".join((stub.description or f"{kind} {target}.").split())]
    if isinstance(stub, TemplateStub):
        lines.append(f"Reads {stub.uri_template}.")
    documented: list[Argument] = [a for a in stub.arguments if a.description]
    if documented:
        lines.append("Arguments:")
        lines += [f"  {a.py_name}: {' '.join((a.description or '').split())}" for a in documented]
    out: list[str] = []
    for n, line in enumerate(lines):
        indent = "    " if line.startswith("  ") else ""
        if n == 1:
            out.append("")  # the description is a paragraph of its own
        wrapped = textwrap.fill(line.strip(), width=84, initial_indent=indent, subsequent_indent=indent + "  ")
        out += [doc_text(part, every_quote=False) for part in wrapped.splitlines()]
    return _triple_quoted(out, 8)


# ---------------------------------------------------------------- drift (--check)


@dataclass
class Shape:
    """What a generated module offers, read back from its source."""

    kinds: dict[str, dict[str, str]] = field(default_factory=dict)  # kind -> wire name -> method
    methods: dict[str, tuple[dict[str, str], str]] = field(default_factory=dict)  # method -> (args, returns)
    structs: dict[str, dict[str, str]] = field(default_factory=dict)  # struct -> field -> annotation
    aliases: dict[str, str] = field(default_factory=dict)


_KINDS = {"TOOLS": "tool", "PROMPTS": "prompt", "RESOURCE_TEMPLATES": "resource template"}


def shape_of(source: str) -> Shape:
    shape = Shape()
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            if node.target.id in _KINDS:
                shape.kinds[_KINDS[node.target.id]] = ast.literal_eval(node.value)
            else:
                shape.aliases[node.target.id] = ast.unparse(node.value)
        elif isinstance(node, ast.ClassDef):
            if any(isinstance(b, ast.Name) and b.id == "Struct" for b in node.bases):
                shape.structs[node.name] = {
                    ast.unparse(item.target): ast.unparse(item.annotation)
                    for item in node.body
                    if isinstance(item, ast.AnnAssign)
                }
            for item in node.body:
                if isinstance(item, ast.AsyncFunctionDef) and not item.name.startswith("__"):
                    args = item.args
                    params = {
                        a.arg: ast.unparse(a.annotation) if a.annotation else ""
                        for a in [*args.args[1:], *args.kwonlyargs]
                    }
                    shape.methods[item.name] = (params, ast.unparse(item.returns) if item.returns else "")
    return shape


def drift(old_source: str, new_source: str) -> list[str]:
    """What a consumer of the old module meets in the new one, one line per change: things
    added or removed, arguments added, removed or retyped, results and structs changed."""
    old, new = shape_of(old_source), shape_of(new_source)
    lines: list[str] = []
    for kind in _KINDS.values():
        before, after = old.kinds.get(kind, {}), new.kinds.get(kind, {})
        for name in sorted(set(before) | set(after)):
            if name not in after:
                lines.append(f"{kind} removed: {name} (method {before[name]})")
            elif name not in before:
                args = ", ".join(f"{k}: {v}" for k, v in new.methods.get(after[name], ({}, ""))[0].items())
                lines.append(f"{kind} added: {name} ({args})")
            else:
                lines += _method_changes(f"{kind} {name}", old.methods.get(before[name]), new.methods.get(after[name]))
    for name in sorted(set(old.structs) | set(new.structs)):
        a, b = old.structs.get(name), new.structs.get(name)
        if a is None or b is None:
            lines.append(f"type {'added' if a is None else 'removed'}: {name}")
            continue
        for key in sorted(set(a) | set(b)):
            if key not in b:
                lines.append(f"type {name}: field removed: {key}")
            elif key not in a:
                lines.append(f"type {name}: field added: {key}: {b[key]}")
            elif a[key] != b[key]:
                lines.append(f"type {name}: field retyped: {key}: {a[key]} -> {b[key]}")
    for name in sorted(set(old.aliases) | set(new.aliases)):
        a_alias, b_alias = old.aliases.get(name), new.aliases.get(name)
        if a_alias != b_alias and name[0].isupper() and not name.isupper():
            lines.append(f"type {name}: {a_alias or '(none)'} -> {b_alias or '(removed)'}")
    return lines


def _method_changes(
    label: str, before: tuple[dict[str, str], str] | None, after: tuple[dict[str, str], str] | None
) -> list[str]:
    if before is None or after is None:
        return []
    (a, a_ret), (b, b_ret) = before, after
    lines = []
    for arg in sorted(set(a) | set(b)):
        if arg not in b:
            lines.append(f"{label}: argument removed: {arg}")
        elif arg not in a:
            lines.append(f"{label}: argument added: {arg}: {b[arg]}")
        elif a[arg] != b[arg]:
            lines.append(f"{label}: argument retyped: {arg}: {a[arg]} -> {b[arg]}")
    if a_ret != b_ret:
        lines.append(f"{label}: result retyped: {a_ret} -> {b_ret}")
    return lines


def text_diff(old_source: str, new_source: str, path: str) -> str:
    return "".join(
        difflib.unified_diff(
            old_source.splitlines(keepends=True), new_source.splitlines(keepends=True), path, f"{path} (fresh)"
        )
    )


__all__ = ["comment", "doc_text", "docstring", "drift", "literal", "render_stubs", "shape_of", "text_diff"]
