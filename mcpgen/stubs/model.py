"""Typed client stubs for one MCP server (``mcpgen stubs``): the server's description in,
the model of the module to write out.

A *description* is what a server says about itself: its name and version, its tools (with
``inputSchema`` / ``outputSchema``), prompts and resource templates. It is read from a
live server by the CLI, or from JSON: a ``tools/list`` result, a ``server/discover``
result, ``mcpgen call --json`` output, or a file ``mcpgen stubs --save`` wrote. Its
sha256 (of the canonical JSON) heads the generated module.

Each tool's schemas go through the protocol generator's own JSON Schema -> struct path
(:func:`mcpgen.codegen.build.build_types`), after :mod:`mcpgen.stubs.schema` made
them one bundle; a tool whose schema still cannot be built becomes a free-form dict, with
the reason as a comment.
"""

from __future__ import annotations

import hashlib
import json
import keyword
import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec

from mcpgen.codegen import naming
from mcpgen.codegen.build import build_types
from mcpgen.codegen.ir import Const, Field, Model, Prim, StructDef, TypeDef, TypeExpr, UnionDef
from mcpgen.codegen.loader import LoadedSchema
from mcpgen.codegen.naming import UniqueNames
from mcpgen.stubs.schema import prepare

if TYPE_CHECKING:
    from mcpgen.runtime.client.client import Client

_OPTIONAL = re.compile(r"\{[?&#]([^}]*)\}")
DISCOVER_SERVER_INFO = "io.modelcontextprotocol/serverInfo"  # where server/discover names the server
# Attributes of the generated class a tool's method must not take.
_RESERVED = frozenset({"client", "self", "call_tool", "get_prompt", "read_resource"})
# Names a generated method uses itself (its parameter ``self``, its locals, the module's
# functions it calls): an argument of the same name would hide it, so it gets a trailing
# underscore (the wire name stays). Type names are PascalCase and arguments never are.
_LOCALS = frozenset({"self", "arguments", "result", "uri", "structured", "to_builtins", "convert"})
# Names the generated module defines or imports besides the types: no type may take one.
_MODULE_NAMES = frozenset(
    {"Struct", "Client", "CallToolResult", "TextContent", "GetPromptResult", "ReadResourceResult", "UriTemplate"}
    | {"ToolCallFailed", "SERVER_NAME", "SERVER_VERSION", "DESCRIPTION_SHA256", "TOOLS", "PROMPTS"}
    | {"RESOURCE_TEMPLATES", "convert", "to_builtins"}
)


class DescriptionError(Exception):
    """JSON that is not a server description."""


@dataclass
class Description:
    name: str
    version: str
    tools: list[dict[str, Any]] = field(default_factory=list)
    prompts: list[dict[str, Any]] = field(default_factory=list)
    resource_templates: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The saved form (``mcpgen stubs --save``), items in name order."""
        return {
            "server": {"name": self.name, "version": self.version},
            "tools": sorted(self.tools, key=lambda t: str(t.get("name"))),
            "prompts": sorted(self.prompts, key=lambda p: str(p.get("name"))),
            "resourceTemplates": sorted(self.resource_templates, key=lambda r: str(r.get("uriTemplate"))),
        }

    def dumps(self) -> str:
        # Keys keep the server's order (it is the order of the arguments); the sha256 sorts them.
        text = json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n"
        try:
            text.encode()
        except UnicodeEncodeError:  # a lone surrogate (JSON can escape one, UTF-8 cannot hold it)
            text = json.dumps(self.to_json(), indent=2) + "\n"
        return text

    @property
    def sha256(self) -> str:
        canonical = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def description_from_json(data: Any) -> Description:
    """Any of the JSON forms named in the module docstring (a JSON-RPC response's
    ``result`` is looked into)."""
    if isinstance(data, dict) and isinstance(data.get("result"), dict) and "jsonrpc" in data:
        data = data["result"]
    if not isinstance(data, dict) or not any(
        k in data for k in ("tools", "prompts", "resourceTemplates", "server", "serverInfo", "supportedVersions")
    ):
        raise DescriptionError(
            "not a server description: expected a tools/list or server/discover result, "
            "or a file `mcpgen stubs --save` wrote"
        )
    info = data.get("server") or data.get("serverInfo")
    meta = data.get("_meta")
    if info is None and isinstance(meta, dict):
        info = meta.get(DISCOVER_SERVER_INFO)
    info = info if isinstance(info, dict) else {}
    lists = {}
    for key in ("tools", "prompts", "resourceTemplates"):
        items = data.get(key) or []
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise DescriptionError(f"`{key}` must be a list of objects")
        lists[key] = items
    # A name or version the server gave is kept as given, even "" (the official Python
    # SDK's default version): a live server's description says the same (describe_client).
    name, version = info.get("name"), info.get("version")
    return Description(
        name=name if isinstance(name, str) else "server",
        version=version if isinstance(version, str) else "unknown",
        tools=lists["tools"],
        prompts=lists["prompts"],
        resource_templates=lists["resourceTemplates"],
    )


async def describe_client(client: Client) -> Description:
    """The description of the server an open ``client`` is connected to: what it lists."""
    info = client.initialize_result
    description = Description(
        name=info.server_info.name if info is not None else "server",
        version=info.server_info.version if info is not None else "unknown",
    )
    caps = client.session.peer_caps
    if caps.has("tools"):
        description.tools = [msgspec.to_builtins(t) for t in await client.list_tools()]
    if caps.has("prompts"):
        description.prompts = [msgspec.to_builtins(p) for p in await client.list_prompts()]
    if caps.has("resources"):
        description.resource_templates = [msgspec.to_builtins(r) for r in await client.list_resource_templates()]
    return description


# ---------------------------------------------------------------- the model


@dataclass
class Argument:
    """One keyword argument of a generated method."""

    py_name: str
    wire_name: str
    type: TypeExpr
    required: bool
    default: Any = None  # a JSON scalar default the schema gives, else None with has_default False
    has_default: bool = False
    description: str | None = None


@dataclass
class ToolStub:
    name: str
    method: str
    description: str | None
    input: str | None  # the arguments struct, None when the schema has no properties
    arguments: list[Argument]
    output: str | None  # the structured result's type, None without an outputSchema
    notes: list[str]
    free_form: bool = False  # no properties, but extra keys allowed: takes an arguments dict
    task: bool = False  # the tool runs only as a task (execution.taskSupport "required")


@dataclass
class PromptStub:
    name: str
    method: str
    description: str | None
    arguments: list[Argument]


@dataclass
class TemplateStub:
    name: str
    method: str
    uri_template: str
    description: str | None
    arguments: list[Argument]


@dataclass
class StubModel:
    description: Description
    class_name: str
    types: dict[str, TypeDef]
    tools: list[ToolStub]
    prompts: list[PromptStub]
    templates: list[TemplateStub]

    def structs(self) -> list[StructDef]:
        return [t for t in self.types.values() if isinstance(t, StructDef)]

    @property
    def model(self) -> Model:
        return Model("", self.description.sha256, self.description.name, self.types, [])


def build_stubs(description: Description, class_name: str | None = None) -> StubModel:
    """The model of the module for ``description``; ``class_name`` (``--class``) must be a
    Python identifier (it is the one name the user gives, not the server)."""
    if class_name is not None and (not class_name.isidentifier() or keyword.iskeyword(class_name)):
        raise DescriptionError(f"--class must be a Python identifier, not {class_name!r}")
    types: dict[str, TypeDef] = {}
    methods = UniqueNames(_RESERVED, sep="_")
    bases = UniqueNames()
    tools = []
    for tool in sorted(description.tools, key=lambda t: str(t.get("name"))):
        name = str(tool.get("name", ""))
        base = naming.pascal(name) or "Tool"
        base = bases.claim(f"Tool{base}" if base[0].isdigit() else base)
        while f"{base}Input" in types or f"{base}Output" in types:  # another tool's $defs took it
            base = bases.claim(base)
        tools.append(_tool(tool, name, base, _method(name, "", methods), types))
    for t in types.values():
        if isinstance(t, UnionDef) and not t.native and t.erased is None and not t.description:
            t.description = "untyped (Any): a union msgspec cannot tell apart by a tag"
    prompts = [
        PromptStub(
            str(p.get("name", "")),
            _method(str(p.get("name", "")), "prompt_", methods),
            _text(p.get("description")),
            _prompt_arguments(p.get("arguments")),
        )
        for p in sorted(description.prompts, key=lambda p: str(p.get("name")))
    ]
    templates = [
        _template(r, methods) for r in sorted(description.resource_templates, key=lambda r: str(r.get("name")))
    ]
    return StubModel(
        description=description,
        class_name=class_name or UniqueNames({*types, *_MODULE_NAMES}).claim(_class_name(description.name)),
        types=dict(sorted(types.items())),
        tools=tools,
        prompts=prompts,
        templates=templates,
    )


def _class_name(server: str) -> str:
    """``io.github.alice/weather-tools`` -> ``WeatherToolsClient``."""
    base = naming.pascal(server.rsplit("/", 1)[-1]) or "Server"
    return f"{'Server' if base[0].isdigit() else ''}{base}Client"


def _tool(tool: dict[str, Any], name: str, base: str, method: str, types: dict[str, TypeDef]) -> ToolStub:
    notes: list[str] = []
    input_name: str | None = None
    arguments: list[Argument] = []
    schema = tool.get("inputSchema")
    if isinstance(schema, dict):
        # The arguments object itself: its properties become keywords whatever it says
        # about extra keys (a server that takes more can still be called through .client).
        schema = {k: v for k, v in schema.items() if k != "additionalProperties"}
    built = _build(schema, f"{base}Input", base, notes, f"tool {name} inputSchema", types)
    if built is not None:
        types.update(built.types)
        root = built.types.get(f"{base}Input")
        if isinstance(root, StructDef):
            input_name = root.name
            root.description = root.description or f"The arguments of tool {name}."
            taken = UniqueNames((f.py_name for f in root.fields), sep="_")
            for f in root.fields:
                if f.py_name in _LOCALS:
                    f.py_name = taken.claim(f"{f.py_name}_")
            arguments = [_argument(f, _property(schema, f.wire_name)) for f in root.fields]
        else:
            types.pop(f"{base}Input", None)
    output_name: str | None = None
    if "outputSchema" in tool:
        output_name = f"{base}Output"
        built = _build(tool["outputSchema"], output_name, output_name, notes, f"tool {name} outputSchema", types)
        if built is None:
            types[output_name] = _any_alias(output_name)
        else:
            types.update(built.types)
        types[output_name].description = types[output_name].description or f"The structured result of tool {name}."
    raw = tool.get("inputSchema")
    extra = raw.get("additionalProperties") if isinstance(raw, dict) else True
    # Properties the types could not hold (the notes say why): the method takes a dict.
    listed = isinstance(raw, dict) and isinstance(raw.get("properties"), dict) and bool(raw["properties"])
    execution = tool.get("execution")
    return ToolStub(
        name,
        method,
        _text(tool.get("description")),
        input_name,
        arguments,
        output_name,
        notes,
        free_form=input_name is None and (listed or extra not in (None, False, {})),
        task=isinstance(execution, dict) and execution.get("taskSupport") == "required",
    )


def _build(
    schema: Any, root: str, prefix: str, notes: list[str], where: str, types: dict[str, TypeDef]
) -> Model | None:
    """The types of one schema (None: untyped, with a note), none of them named like one
    of ``types`` (the other tools') or of the module's own names."""
    prepared = prepare(schema, root, prefix, _Reserved(types))
    notes.extend(f"{where} {note}" for note in prepared.notes)
    loaded = LoadedSchema(where, "", "", {"$defs": prepared.definitions}, "$defs")
    try:
        built = build_types(loaded)
    except Exception as exc:  # a schema the builder cannot take: that tool is untyped
        notes.append(f"{where}: not typed ({type(exc).__name__}: {exc})")
        return None
    clash = next((name for name in built.types if name in types), None)
    if clash is not None:  # a name the builder made for an inline type, taken by another tool
        notes.append(f"{where}: not typed (its type {clash} is named like another tool's)")
        return None
    return built


class _Reserved:
    """The names a tool's definitions may not take: the module's own and those of the
    tools before it (looked up in place, not copied for every tool)."""

    def __init__(self, types: dict[str, TypeDef]) -> None:
        self.types = types

    def __contains__(self, name: object) -> bool:
        return name in self.types or name in _MODULE_NAMES


def _any_alias(name: str) -> TypeDef:
    from mcpgen.codegen.ir import AliasDef

    return AliasDef(name, Prim("Any"), "", "untyped (Any): see the notes above")


def _property(schema: Any, wire: str) -> dict[str, Any]:
    props = schema.get("properties") if isinstance(schema, dict) else None
    prop = props.get(wire) if isinstance(props, dict) else None
    return prop if isinstance(prop, dict) else {}


def _argument(f: Field, prop: dict[str, Any]) -> Argument:
    arg = Argument(f.py_name, f.wire_name, f.type, f.required and not f.is_const, description=f.description)
    if f.is_const:
        arg.default, arg.has_default = f.const_value, True
    elif not f.required and "default" in prop and _default_fits(prop["default"], f.type):
        arg.default, arg.has_default = prop["default"], True
    return arg


def _default_fits(value: Any, expr: TypeExpr) -> bool:
    """Whether a schema's default can be the Python default of this type (else UNSET)."""
    if isinstance(expr, Const):
        return value in expr.values and type(value) in {type(v) for v in expr.values}
    if not isinstance(expr, Prim):
        return False
    if isinstance(value, bool):
        return expr.name == "bool"
    if isinstance(value, str):
        return expr.name == "str"
    if isinstance(value, int):
        return expr.name in ("int", "float")
    return isinstance(value, float) and math.isfinite(value) and expr.name == "float"


def _prompt_arguments(raw: Any) -> list[Argument]:
    taken = UniqueNames(sep="_")
    out = []
    for arg in raw if isinstance(raw, list) else []:
        if not isinstance(arg, dict) or not isinstance(arg.get("name"), str):
            continue
        py = taken.claim(_not_local(naming.field_name(arg["name"])))
        out.append(
            Argument(
                py, arg["name"], Prim("str"), bool(arg.get("required")), None, False, _text(arg.get("description"))
            )
        )
    return out


def _template(resource: dict[str, Any], methods: UniqueNames) -> TemplateStub:
    from mcpgen.runtime.shared.uri_template import UriTemplate

    uri = str(resource.get("uriTemplate", ""))
    try:
        variables: tuple[str, ...] = UriTemplate(uri).variables
    except ValueError:
        variables = ()
    # Variables of a query or fragment expression ({?q}, {&q}, {#f}) may be left out.
    optional = {v.split(":")[0].rstrip("*") for op in _OPTIONAL.findall(uri) for v in op.split(",")}
    taken = UniqueNames(sep="_")
    arguments = []
    for var in variables:
        py = taken.claim(_not_local(naming.field_name(var)))
        arguments.append(Argument(py, var, Prim("str"), var not in optional))
    name = str(resource.get("name") or uri)
    return TemplateStub(name, _method(name, "read_", methods), uri, _text(resource.get("description")), arguments)


def _method(name: str, prefix: str, taken: UniqueNames) -> str:
    py = prefix + (naming.snake(name) or "call")
    if py[0].isdigit() or keyword.iskeyword(py):  # soft keywords are names (see naming.field_name)
        py = f"call_{py}"
    return taken.claim(py)


def _not_local(name: str) -> str:
    return f"{name}_" if name in _LOCALS else name


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


__all__ = ["Description", "DescriptionError", "StubModel", "build_stubs", "describe_client", "description_from_json"]
