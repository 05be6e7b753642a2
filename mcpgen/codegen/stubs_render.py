"""Render a :class:`~mcpgen.codegen.stubs.StubModel` into one formatted Python module, and
tell what changed between two such modules (``mcpgen stubs --check``).

The module is printed by ``templates/stubs.py.j2`` with the protocol generator's own
filters (types, fields, docstrings) and formatted by the same pinned ruff run, so the
same description gives the same bytes on every machine.
"""

from __future__ import annotations

import ast
import difflib
import textwrap
from dataclasses import dataclass, field
from typing import Any

from mcpgen.codegen import render
from mcpgen.codegen.stubs import Argument, PromptStub, StubModel, TemplateStub, ToolStub


def render_stubs(stubs: StubModel, command: str) -> str:
    model = stubs.model
    render.use_symbols(set(model.types) | {stubs.class_name})
    env = _environment()
    text = env.get_template("stubs.py.j2").render(
        d=stubs.description,
        m=stubs,
        command=command,
        structs=stubs.structs(),
        typedefs=render.ordered_aliases(model),
        names=sorted([*model.types, stubs.class_name, "ToolCallFailed"]),
    )
    return render.format_files({"stubs.py": text})["stubs.py"]


def _environment() -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(render.TEMPLATES),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
    )
    env.filters.update(
        literal=render.py_literal,
        py_type=render.py_type,
        docstring=render.docstring,
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
            parts.append(f"{arg.py_name}: {annotation} = {render.py_literal(arg.default)}")
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
    wrapped = []
    for line in lines:
        indent = "    " if line.startswith("  ") else ""
        wrapped.append(textwrap.fill(line.strip(), width=84, initial_indent=indent, subsequent_indent=indent + "  "))
    paragraphs = [wrapped[0], *(["\n".join(wrapped[1:])] if len(wrapped) > 1 else [])]
    body = "\n\n".join(paragraphs).replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    body = textwrap.indent(body, " " * 8).lstrip()
    return f'"""{body}\n        """' if "\n" in body else f'"""{body}"""'


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


__all__ = ["drift", "render_stubs", "shape_of", "text_diff"]
