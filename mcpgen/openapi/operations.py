"""Every decision about the tools: which operations become tools (curation), their names,
arguments, schemas, annotations, how their answers are read, their credentials and their
pagination. The result is :class:`~mcpgen.openapi.runtime.spec.Tables` plus what the Python
module needs (:class:`ToolCode`); templates only print it.
"""

from __future__ import annotations

import copy
import fnmatch
import hashlib
import json
import keyword
import re
from dataclasses import dataclass, field
from typing import Any

import msgspec

from mcpgen.codegen import naming
from mcpgen.openapi.loader import OpenApiError, pointer_escape, resolve_pointer
from mcpgen.openapi.runtime.spec import Body, BodyKind, Operation, Pagination, Param, SecurityScheme, Tables, ToolInfo
from mcpgen.openapi.schemas import Components

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
MAX_TOOL_NAME = 64
_TOOL_CHARS = re.compile(r"[^A-Za-z0-9_.-]+")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_CURSOR_PARAMS = {"cursor", "after", "next_token", "nexttoken", "page_token", "pagetoken", "continuation_token"}
_CURSOR_PARAMS |= {"continuationtoken", "starting_after", "marker", "next_cursor", "nextcursor"}
_CURSOR_FIELDS = ("next_cursor", "nextCursor", "next_page_token", "nextPageToken", "cursor", "next", "nextToken")
_PAGE_PARAMS = {"page", "page_number", "pagenumber"}
_OFFSET_PARAMS = {"offset", "skip", "start"}
# Argument names a generated function keeps for itself.
_RESERVED_ARGS = frozenset({"self", "api", "ctx", "arguments"})
LINK_CURSOR = "page_cursor"


@dataclass
class Curation:
    """Which operations become tools: globs over tags, paths (``/pets/*``) and operation
    ids or tool names. With any include, an operation must match one; an exclude always
    wins. ``x-mcp: false`` (document, path or operation; the nearest says) leaves one out
    unless an include names it, ``x-mcp: true`` brings one back in."""

    include_tags: list[str] = field(default_factory=list)
    exclude_tags: list[str] = field(default_factory=list)
    include_paths: list[str] = field(default_factory=list)
    exclude_paths: list[str] = field(default_factory=list)
    include_ops: list[str] = field(default_factory=list)
    exclude_ops: list[str] = field(default_factory=list)

    @property
    def includes(self) -> bool:
        return bool(self.include_tags or self.include_paths or self.include_ops)


@dataclass
class ArgCode:
    """One argument of a generated function: its Python annotation and whether it is required."""

    name: str
    annotation: str
    required: bool


@dataclass
class ToolCode:
    tool: str
    function: str
    summary: str
    args: list[ArgCode]


@dataclass
class Built:
    tables: Tables
    code: list[ToolCode]
    notes: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "METHOD PATH: why"


def clean_text(value: Any) -> str:
    """Document text as it may reach a description: control characters and lone surrogates
    out (they would break a terminal, a docstring or a UTF-8 file), whitespace trimmed."""
    return _CONTROL.sub(" ", value).strip() if isinstance(value, str) else ""


def build_operations(
    document: dict[str, Any],
    source: str,
    sha256: str,
    *,
    env_prefix: str,
    base_url: str,
    curation: Curation | None = None,
    mode: str = "tools",
) -> Built:
    builder = _Builder(document, source, env_prefix, curation or Curation())
    builder.run()
    info = _dict(document.get("info"))
    tables = Tables(
        title=clean_text(info.get("title")) or "API",
        version=clean_text(str(info.get("version", ""))) or "0",
        sha256=sha256,
        base_url=base_url,
        env_prefix=env_prefix,
        operations=builder.operations,
        tools=builder.tools,
        security=builder.used_schemes(),
        mode="code" if mode == "code" else "tools",
    )
    return Built(tables, builder.code, builder.notes, builder.skipped)


class _Builder:
    def __init__(self, document: dict[str, Any], source: str, env_prefix: str, curation: Curation) -> None:
        self.doc = document
        self.source = source
        self.env_prefix = env_prefix
        self.curation = curation
        components = _dict(document.get("components"))
        self.components = Components(_dict(components.get("schemas")), source)
        self.schemes_raw = _dict(components.get("securitySchemes"))
        self.schemes: dict[str, SecurityScheme] = {}
        self.operations: dict[str, Operation] = {}
        self.tools: dict[str, ToolInfo] = {}
        self.code: list[ToolCode] = []
        self.notes: list[str] = []
        self.skipped: list[str] = []
        self.functions: set[str] = set()
        self.used: set[str] = set()

    # ------------------------------------------------------------ the walk

    def run(self) -> None:
        paths = self.doc.get("paths")
        if paths is not None and not isinstance(paths, dict):
            raise OpenApiError(self.source, "/paths", "must be an object")
        doc_flag = self.doc.get("x-mcp")
        for path in sorted(_dict(paths)):
            item = self.deref(_dict(paths)[path], f"/paths/{pointer_escape(path)}")
            if not isinstance(item, dict):
                continue
            path_flag = item.get("x-mcp", doc_flag)
            for method in METHODS:
                op = item.get(method)
                if not isinstance(op, dict):
                    continue
                where = f"/paths/{pointer_escape(path)}/{method}"
                if not self.wanted(op, path, op.get("x-mcp", path_flag)):
                    continue
                self.operation(path, method, item, op, where)

    def wanted(self, op: dict[str, Any], path: str, flag: Any) -> bool:
        c = self.curation
        tags = [t for t in op.get("tags") or [] if isinstance(t, str)]
        ids = [x for x in (op.get("operationId"),) if isinstance(x, str)]

        def hits(patterns: list[str], values: list[str]) -> bool:
            return any(fnmatch.fnmatchcase(v, p) for p in patterns for v in values)

        included = hits(c.include_tags, tags) or hits(c.include_paths, [path]) or hits(c.include_ops, ids)
        if hits(c.exclude_tags, tags) or hits(c.exclude_paths, [path]) or hits(c.exclude_ops, ids):
            return False
        if c.includes:
            return included
        return flag is not False

    def deref(self, node: Any, where: str) -> Any:
        """A non-schema object with local references followed (parameters, bodies, ...)."""
        seen: list[str] = []
        while isinstance(node, dict) and isinstance(node.get("$ref"), str):
            ref = node["$ref"]
            if ref in seen:
                raise OpenApiError(self.source, where, f"a cycle of references: {' -> '.join([*seen, ref])}")
            seen.append(ref)
            if not ref.startswith("#"):
                raise OpenApiError(self.source, where, f"unbundled reference {ref!r}")
            node = resolve_pointer(self.doc, ref[1:], self.source)
        return node

    # ------------------------------------------------------------ one operation

    def operation(self, path: str, method: str, item: dict[str, Any], op: dict[str, Any], where: str) -> None:
        try:
            self.build_one(path, method, item, op, where)
        except OpenApiError as exc:
            self.skipped.append(f"{method.upper()} {path}: {exc.problem} (at {exc.pointer})")

    def build_one(self, path: str, method: str, item: dict[str, Any], op: dict[str, Any], where: str) -> None:
        tool = self.tool_name(op, method, path)
        args: set[str] = set(_RESERVED_ARGS)
        properties: dict[str, Any] = {}
        required: list[str] = []
        params: list[Param] = []
        code_args: list[ArgCode] = []
        merged: dict[tuple[str, str], dict[str, Any]] = {}
        for i, raw in enumerate([*(item.get("parameters") or []), *(op.get("parameters") or [])]):
            p = self.deref(raw, f"{where}/parameters/{i}")
            if (
                isinstance(p, dict)
                and isinstance(p.get("name"), str)
                and p.get("in") in ("path", "query", "header", "cookie")
            ):
                merged[(p["name"], p["in"])] = p
        for (name, location), p in merged.items():
            if location == "header" and name.lower() in ("accept", "content-type", "authorization"):
                continue  # OpenAPI: these are described elsewhere and ignored here
            param, schema = self.parameter(p, location, args, where)
            params.append(param)
            properties[param.arg] = schema
            if param.required:
                required.append(param.arg)
            code_args.append(
                ArgCode(param.arg, _annotation(self.components.resolve(_unwrap(schema), where)), param.required)
            )
        body = self.body(op, args, where)
        if body is not None:
            spec, schema = body
            properties[spec.arg] = schema
            if spec.required:
                required.append(spec.arg)
            code_args.append(
                ArgCode(spec.arg, _annotation(self.components.resolve(_unwrap(schema), where)), spec.required)
            )
        output, media, out_schema = self.response(op, where)
        pagination = self.pagination(op, params, out_schema, where)
        if pagination is not None and pagination.style == "link":
            link_arg = _unique(LINK_CURSOR, args)
            args.add(link_arg)
            pagination = Pagination(style="link", param=link_arg)
            properties[link_arg] = {
                "type": "string",
                "description": "The next page, as the previous answer gave it (its `next page` cursor).",
            }
            code_args.append(ArgCode(link_arg, "str", False))
        root: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
        if required:
            root["required"] = required
        input_schema = self.components.bundle(root, "input", where)
        _compiles(input_schema, where, self.source)
        output_schema = None
        if out_schema is not None and output == "json" and self.components.is_object(out_schema, where):
            # MCP wants an object schema at the top: a reference there is replaced by what it names.
            root_out = self.components.resolve(out_schema, where)
            top = {**root_out, "type": root_out.get("type", "object")}
            output_schema = self.components.bundle(top, "output", where)
        security = self.security(op, where)
        description = self.description(op, method, path, pagination)
        summary = clean_text(op.get("summary"))
        servers = op.get("servers") or item.get("servers")
        server = None
        if isinstance(servers, list) and servers and isinstance(servers[0], dict):
            server = _server_url(servers[0])
        described = [method, path, op, item.get("parameters")]
        digest = hashlib.sha256(msgspec.json.encode(described, order="sorted")).hexdigest()[:16]
        self.operations[tool] = Operation(
            tool=tool,
            method=method.upper(),
            path=path,
            params=tuple(params),
            body=body[0] if body is not None else None,
            output=output,  # type: ignore[arg-type]
            output_media=media,
            structured=output_schema is not None,
            security=security,
            pagination=pagination,
            server=server,
            digest=digest,
        )
        # What code mode searches: the name and summary count twice, the description's
        # start once (a long description would otherwise drown what the operation is).
        text = " ".join(
            [tool, tool, summary, summary, method.upper(), path, *map(str, op.get("tags") or [])]
            + [p.name for p in params]
            + [clean_text(op.get("description"))[:300]]
        )
        self.tools[tool] = ToolInfo(
            description=description,
            input_schema=input_schema,
            output_schema=output_schema,
            annotations=_annotations(method, summary),
            title=summary[:200] or None,
            search_text=text[:4000],
        )
        function = _unique(_py_name(tool), self.functions)
        self.functions.add(function)
        required_first = sorted(code_args, key=lambda a: not a.required)
        self.code.append(ToolCode(tool, function, (summary or f"{method.upper()} {path}")[:200], required_first))

    def tool_name(self, op: dict[str, Any], method: str, path: str) -> str:
        op_id = op.get("operationId")
        base = _TOOL_CHARS.sub("_", op_id).strip("_.-") if isinstance(op_id, str) else ""
        if not base:
            base = re.sub(r"_{2,}", "_", _TOOL_CHARS.sub("_", f"{method}_{path}")).strip("_.-") or method
        if len(base) > MAX_TOOL_NAME:
            tail = hashlib.sha256(base.encode()).hexdigest()[:8]
            base = f"{base[: MAX_TOOL_NAME - 9].rstrip('_.-')}_{tail}"
        name, n = base, 2
        while name in self.operations:
            suffix = f"_{n}"
            name, n = f"{base[: MAX_TOOL_NAME - len(suffix)]}{suffix}", n + 1
        return name

    def parameter(self, p: dict[str, Any], location: str, args: set[str], where: str) -> tuple[Param, dict[str, Any]]:
        name = p["name"]
        arg = _unique(_arg_name(name), args)
        args.add(arg)
        is_json = False
        schema = p.get("schema")
        content = p.get("content")
        if schema is None and isinstance(content, dict) and content:
            media, entry = next(iter(content.items()))
            schema = entry.get("schema") if isinstance(entry, dict) else None
            is_json = "json" in str(media)
        schema = copy.deepcopy(schema) if isinstance(schema, dict) else {}
        description = clean_text(p.get("description"))
        if description:
            schema = (
                {"allOf": [schema], "description": description}
                if "$ref" in schema
                else {**schema, "description": description}
            )
        if arg != name:
            note = f"Sent as the {location} parameter {json.dumps(name, ensure_ascii=False)}."
            schema["description"] = f"{schema.get('description', '')} {note}".strip()
        default_style = {"query": "form", "cookie": "form", "path": "simple", "header": "simple"}[location]
        style = str(p.get("style") or default_style)
        explode = p.get("explode")
        param = Param(
            arg=arg,
            name=name,
            location=location,  # type: ignore[arg-type]
            style=style,
            explode=bool(explode) if explode is not None else style == "form",
            required=bool(p.get("required")) or location == "path",
            allow_reserved=bool(p.get("allowReserved")),
            json=is_json,
        )
        return param, schema

    def body(self, op: dict[str, Any], args: set[str], where: str) -> tuple[Body, dict[str, Any]] | None:
        raw = op.get("requestBody")
        if raw is None:
            return None
        body = self.deref(raw, f"{where}/requestBody")
        content = body.get("content") if isinstance(body, dict) else None
        if not isinstance(content, dict) or not content:
            return None
        media = _pick_media(list(content))
        entry = _dict(content[media])
        schema: dict[str, Any] = copy.deepcopy(_dict(entry.get("schema")))
        base = media.split(";")[0].strip().lower()
        kind: BodyKind
        binary_fields: tuple[str, ...] = ()
        if "json" in base:
            kind = "json"
        elif base == "multipart/form-data":
            kind = "multipart"
            resolved = self.components.resolve(schema, where)
            props = resolved.get("properties") if isinstance(resolved, dict) else None
            if isinstance(props, dict):
                binary_fields = tuple(
                    k for k, v in props.items() if isinstance(v, dict) and _is_binary(self.components.resolve(v, where))
                )
        elif base == "application/x-www-form-urlencoded":
            kind = "form"
        elif base.startswith("text/") or base in ("application/xml",):
            kind, schema = "text", {"type": "string"}
        else:
            kind, schema = "binary", {"type": "string", "contentEncoding": "base64"}
        description = clean_text(body.get("description"))
        if kind == "binary":
            description = f"{description} The bytes to send ({base}), base64-encoded.".strip()
        if description:
            schema = (
                {"allOf": [schema], "description": description}
                if "$ref" in schema
                else {**schema, "description": description}
            )
        arg = _unique("body", args)
        args.add(arg)
        spec = Body(
            arg=arg, media_type=media, kind=kind, required=bool(body.get("required")), binary_fields=binary_fields
        )
        return spec, schema

    def response(self, op: dict[str, Any], where: str) -> tuple[str, str | None, dict[str, Any] | None]:
        responses = op.get("responses")
        if not isinstance(responses, dict):
            return "empty", None, None
        codes = sorted(str(c) for c in responses if str(c).startswith("2"))
        chosen = codes[0] if codes else ("default" if "default" in responses else None)
        if chosen is None:
            return "empty", None, None
        raw = responses.get(chosen, responses.get(int(chosen) if chosen.isdigit() else chosen))
        response = self.deref(raw, f"{where}/responses/{chosen}")
        content = response.get("content") if isinstance(response, dict) else None
        if not isinstance(content, dict) or not content:
            return "empty", None, None
        media = _pick_media(list(content))
        base = media.split(";")[0].strip().lower()
        entry = _dict(content[media])
        schema = entry.get("schema") if isinstance(entry.get("schema"), dict) else None
        if "json" in base or base == "*/*" and schema is not None and not _is_binary(schema):
            return "json", media, schema
        if base.startswith("text/") or base in ("application/xml", "application/yaml"):
            return "text", media, None
        return "binary", media, None

    def pagination(
        self, op: dict[str, Any], params: list[Param], out_schema: dict[str, Any] | None, where: str
    ) -> Pagination | None:
        declared = op.get("x-mcp-pagination")
        by_name = {p.name: p for p in params if p.location == "query"}
        if isinstance(declared, dict) and declared.get("style") in ("cursor", "page", "offset", "link"):
            param = by_name.get(str(declared.get("param")))
            nxt = declared.get("next")
            return Pagination(
                style=declared["style"],
                param=param.arg if param else None,
                next=nxt if isinstance(nxt, str) else None,
            )
        for p in params:
            if p.location != "query":
                continue
            low = p.name.lower()
            if low in _CURSOR_PARAMS:
                return Pagination(style="cursor", param=p.arg, next=self.next_field(out_schema, where))
        for code, raw in _dict(op.get("responses")).items():
            if str(code).startswith("2"):
                headers = self.deref(raw, where).get("headers") if isinstance(self.deref(raw, where), dict) else None
                if isinstance(headers, dict) and any(str(h).lower() == "link" for h in headers):
                    return Pagination(style="link")
        for p in params:
            if p.location == "query" and p.name.lower() in _PAGE_PARAMS:
                return Pagination(style="page", param=p.arg)
            if p.location == "query" and p.name.lower() in _OFFSET_PARAMS:
                return Pagination(style="offset", param=p.arg)
        return None

    def next_field(self, schema: dict[str, Any] | None, where: str) -> str | None:
        node = self.components.resolve(schema, where) if schema is not None else None
        props = node.get("properties") if isinstance(node, dict) else None
        if not isinstance(props, dict):
            return None
        for name in _CURSOR_FIELDS:
            if name in props:
                return f"/{pointer_escape(name)}"
        for outer in ("meta", "pagination", "page_info", "pageInfo", "response_metadata"):
            inner = self.components.resolve(props.get(outer), where)
            inner_props = inner.get("properties") if isinstance(inner, dict) else None
            if isinstance(inner_props, dict):
                for name in _CURSOR_FIELDS:
                    if name in inner_props:
                        return f"/{pointer_escape(outer)}/{pointer_escape(name)}"
        return None

    def security(self, op: dict[str, Any], where: str) -> tuple[dict[str, list[str]], ...]:
        requirements = op.get("security", self.doc.get("security"))
        if not isinstance(requirements, list):
            return ()
        out: list[dict[str, list[str]]] = []
        for requirement in requirements:
            if not isinstance(requirement, dict):
                continue
            names = {str(k): [str(s) for s in v] if isinstance(v, list) else [] for k, v in requirement.items()}
            if all(self.scheme(n, where) is not None for n in names):
                out.append(names)
                self.used.update(names)
        return tuple(out)

    def scheme(self, name: str, where: str) -> SecurityScheme | None:
        if name in self.schemes:
            return self.schemes[name]
        raw = self.deref(self.schemes_raw.get(name), where)
        if not isinstance(raw, dict):
            self.notes.append(f"{where}: security scheme {name!r} is not defined; ignored")
            return None
        key = f"{self.env_prefix}_{_env_part(name)}"
        kind = raw.get("type")
        scheme: SecurityScheme | None = None
        if kind == "apiKey" and raw.get("in") in ("header", "query", "cookie") and isinstance(raw.get("name"), str):
            scheme = SecurityScheme(kind="apiKey", location=raw["in"], name=raw["name"], env={"value": key})
        elif kind == "http" and str(raw.get("scheme", "")).lower() == "basic":
            scheme = SecurityScheme(
                kind="http", scheme="basic", env={"username": f"{key}_USERNAME", "password": f"{key}_PASSWORD"}
            )
        elif kind == "http":
            scheme = SecurityScheme(
                kind="http", scheme=str(raw.get("scheme", "bearer")).lower(), env={"token": f"{key}_TOKEN"}
            )
        elif kind == "oauth2":
            flows = _dict(raw.get("flows"))
            cc = flows.get("clientCredentials") if isinstance(flows.get("clientCredentials"), dict) else None
            env = {"token": f"{key}_TOKEN"}
            if cc is not None:
                env |= {
                    "client_id": f"{key}_CLIENT_ID",
                    "client_secret": f"{key}_CLIENT_SECRET",
                    "token_url": f"{key}_TOKEN_URL",
                }
            scheme = SecurityScheme(
                kind="oauth2",
                token_url=str(cc["tokenUrl"]) if cc and isinstance(cc.get("tokenUrl"), str) else None,
                scopes=tuple(sorted(cc.get("scopes") or {})) if cc and isinstance(cc.get("scopes"), dict) else (),
                env=env,
            )
        elif kind == "openIdConnect":
            scheme = SecurityScheme(kind="openIdConnect", env={"token": f"{key}_TOKEN"})
        else:
            self.notes.append(f"{where}: security scheme {name!r} ({kind}) is not supported; ignored")
        if scheme is not None:
            self.schemes[name] = scheme
        return scheme

    def used_schemes(self) -> dict[str, SecurityScheme]:
        return {name: self.schemes[name] for name in sorted(self.used) if name in self.schemes}

    def description(self, op: dict[str, Any], method: str, path: str, pagination: Pagination | None) -> str:
        parts = [clean_text(op.get("summary")), clean_text(op.get("description"))]
        text = "\n\n".join(dict.fromkeys(p for p in parts if p)) or f"{method.upper()} {path}"
        if op.get("deprecated") is True:
            text = f"Deprecated. {text}"
        if pagination is not None:
            hint = {
                "cursor": f"Answers one page; the answer names the next cursor: pass it as `{pagination.param}`.",
                "page": f"Answers one page; ask for the next with `{pagination.param}`.",
                "offset": f"Answers one page; ask for the next with `{pagination.param}`.",
                "link": f"Answers one page; the answer names the next page: pass it as `{pagination.param}`.",
            }[pagination.style]
            text = f"{text}\n\n{hint}"
        return text[:8000]


def _compiles(schema: dict[str, Any], where: str, source: str) -> None:
    """The input schema as the server will check it (jsonschema-rs): one it cannot compile
    leaves the operation out, with the reason."""
    import jsonschema_rs

    try:
        jsonschema_rs.validator_for(schema)
    except (jsonschema_rs.ValidationError, ValueError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise OpenApiError(source, where, f"its input schema is not valid JSON Schema 2020-12: {first}") from None


def _dict(value: Any) -> dict[str, Any]:
    """``value`` when it is an object, else an empty one (documents leave things out)."""
    return value if isinstance(value, dict) else {}


def _pick_media(media: list[str]) -> str:
    for m in media:
        base = m.split(";")[0].strip().lower()
        if base == "application/json" or base.endswith("+json"):
            return m
    for m in media:
        if "json" in m.lower():
            return m
    return media[0]


def _is_binary(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("contentEncoding") == "base64"


def _unwrap(schema: Any) -> Any:
    """A ``{allOf: [one], description}`` wrapper (how a described reference is written) unwrapped."""
    if isinstance(schema, dict) and set(schema) <= {"allOf", "description", "title"}:
        parts = schema.get("allOf")
        if isinstance(parts, list) and len(parts) == 1:
            return parts[0]
    return schema


def _annotation(schema: Any) -> str:
    """The Python type of an argument, as the function declares it (the inputSchema, which
    is checked first, is the exact one)."""
    if not isinstance(schema, dict):
        return "Any"
    kind = schema.get("type")
    simple = {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        if len(kinds) == 1 and kinds[0] in simple:
            return f"{simple[kinds[0]]} | None"
        return "Any"
    if kind in simple and not any(k in schema for k in ("anyOf", "oneOf", "allOf")):
        return simple[kind]
    if kind == "array":
        return "list[Any]"
    if kind == "object" and not any(k in schema for k in ("anyOf", "oneOf", "allOf")):
        return "dict[str, Any]"
    return "Any"


def _annotations(method: str, summary: str) -> dict[str, Any]:
    m = method.lower()
    notes: dict[str, Any] = {"openWorldHint": True}
    if m in ("get", "head", "options", "trace"):
        notes["readOnlyHint"] = True
    else:
        notes["readOnlyHint"] = False
        notes["destructiveHint"] = m in ("delete", "put", "patch")
        notes["idempotentHint"] = m in ("put", "delete")
    if summary:
        notes["title"] = summary[:200]
    return notes


def _arg_name(wire: str) -> str:
    name = naming.field_name(wire)
    if not name.isidentifier() or not name.isascii():
        name = "arg_" + hashlib.sha256(wire.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return name


def _py_name(tool: str) -> str:
    name = naming.snake(tool) or "operation"
    if name[0].isdigit() or keyword.iskeyword(name) or not name.isidentifier():
        name = f"op_{name}"
    return name


def _unique(name: str, taken: set[str]) -> str:
    candidate, n = name, 2
    while candidate in taken:
        candidate, n = f"{name}_{n}", n + 1
    return candidate


def _env_part(name: str) -> str:
    part = re.sub(r"[^A-Za-z0-9]+", "_", naming.snake(name)).strip("_").upper()
    return part or "AUTH"


def _server_url(server: dict[str, Any]) -> str | None:
    url = server.get("url")
    if not isinstance(url, str):
        return None
    for name, var in _dict(server.get("variables")).items():
        if isinstance(var, dict) and "default" in var:
            url = url.replace("{" + str(name) + "}", str(var["default"]))
    return url


def base_url_of(document: dict[str, Any]) -> str:
    """The document's first server, its variables at their defaults ("" when it has none)."""
    servers = document.get("servers")
    if isinstance(servers, list) and servers and isinstance(servers[0], dict):
        return _server_url(servers[0]) or ""
    return ""


__all__ = ["ArgCode", "Built", "Curation", "ToolCode", "base_url_of", "build_operations", "clean_text"]
