"""Serving a generated project's tools on its ``Server``, and code mode.

:func:`register` puts one middleware (:class:`OpenApiTools`) in front of the server. It
answers ``tools/list`` with one tool per operation, built from the tables when first
listed (the document's descriptions, input and output schemas and annotations, verbatim),
and ``tools/call`` of those tools: the arguments are checked against the tool's input
schema, then the generated function of that operation (or your override) runs. Nothing
is registered per tool, so a server of a thousand operations answers its first
``tools/list`` as fast as one of three. Tools the server registers itself (``@server.tool``
in server.py) are listed after these.

In code mode the server gets three ordinary tools instead: search the operations (BM25
over their text), describe one, call one (its arguments checked the same way).

The user's hooks module may define ``on_request(operation, request)``,
``on_response(operation, response)`` (coroutines), ``OVERRIDES`` (tool name -> an
``async def`` of yours that replaces the generated one, taking the same arguments) and
``EXCLUDED`` (tool names not to offer).
"""

from __future__ import annotations

import logging
import math
import re
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any

import msgspec

from mcpgen.generated import CallToolResult, TextContent, Tool, ToolAnnotations
from mcpgen.openapi.runtime.auth import CallerToken
from mcpgen.openapi.runtime.upstream import Api
from mcpgen.runtime.errors import INVALID_PARAMS, McpError
from mcpgen.runtime.middleware.chain import Middleware

if TYPE_CHECKING:
    from mcpgen.runtime.middleware.chain import Call, CallNext
    from mcpgen.runtime.server.server import Server

log = logging.getLogger("mcpgen.openapi")
MAX_RESULTS = 50
CURSOR = "openapi:"
_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
ToolFunction = Callable[..., Awaitable[Any]]


def register(server: Server, tools: ModuleType, hooks: ModuleType | None = None) -> Api:
    """Offer the generated module ``tools``' operations on ``server``; returns its ``Api``."""
    api: Api = tools.API
    if hooks is not None:
        api.on_request = getattr(hooks, "on_request", None)
        api.on_response = getattr(hooks, "on_response", None)
    overrides: dict[str, ToolFunction] = dict(getattr(hooks, "OVERRIDES", {}) or {})
    excluded = set(getattr(hooks, "EXCLUDED", ()) or ())
    if api.tables.mode == "code":
        CodeMode(api).register(server)
        return api
    functions = {fn.__mcp_tool__: fn for fn in tools.TOOLS}
    functions.update({name: fn for name, fn in overrides.items() if name in functions})
    for name in excluded:
        functions.pop(name, None)
    server.middleware(OpenApiTools(api, functions, server.page_size))
    return api


def tool(name: str) -> Callable[[ToolFunction], ToolFunction]:
    """Mark a generated function with the tool it is (its wire name may not be a Python name)."""

    def mark(fn: ToolFunction) -> ToolFunction:
        fn.__mcp_tool__ = name  # type: ignore[attr-defined]
        return fn

    return mark


class Checks:
    """Each tool's input schema compiled (jsonschema-rs) when the tool is first called."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self._compiled: dict[str, Callable[[Any], None]] = {}

    def problem(self, name: str, arguments: Any) -> str | None:
        import jsonschema_rs

        validate = self._compiled.get(name)
        if validate is None:
            try:
                validate = jsonschema_rs.validator_for(self.api.tables.tools[name].input_schema).validate
            except (jsonschema_rs.ValidationError, ValueError) as exc:  # the generator drops what cannot compile
                return f"the input schema cannot be checked ({exc}); regenerate the project"
            self._compiled[name] = validate
        try:
            validate(arguments)
        except jsonschema_rs.ValidationError as exc:
            path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in exc.instance_path)
            return f"{exc.message} (at ${path})"
        return None


class OpenApiTools(Middleware):
    """Lists and calls the operations' tools (see the module docstring)."""

    def __init__(self, api: Api, functions: Mapping[str, ToolFunction], page_size: int = 100) -> None:
        self.api = api
        self.functions = dict(functions)
        self.names = [name for name in api.tables.tools if name in self.functions]
        self.page_size = max(1, page_size)
        self.checks = Checks(api)
        self._listed: dict[str, Tool] = {}

    async def on_request(self, call: Call, call_next: CallNext) -> Any:
        if call.method == "tools/call":
            fn = self.functions.get(getattr(call.params, "name", ""))
            if fn is not None:
                return await self.call(call.params.name, fn, call.params.arguments)
        elif call.method == "tools/list":
            return await self.list(call, call_next)
        return await call_next(call)

    async def call(self, name: str, fn: ToolFunction, arguments: Any) -> CallToolResult:
        given = arguments if isinstance(arguments, dict) else {}
        problem = self.checks.problem(name, given)
        if problem is not None:
            return _error(f"Invalid arguments for {name}: {problem}")
        try:
            result = await fn(**given)
        except McpError:
            raise
        except Exception as exc:  # the message may hold secrets: it goes to the log only
            log.error("mcpgen.openapi: tool %s failed", name, exc_info=exc)
            return _error(f"Tool {name} failed with an internal error ({type(exc).__name__})")
        return result if isinstance(result, CallToolResult) else _error(f"Tool {name} returned no result")

    async def list(self, call: Call, call_next: CallNext) -> Any:
        cursor = getattr(call.params, "cursor", msgspec.UNSET)
        if isinstance(cursor, str) and not cursor.startswith(CURSOR):
            return await call_next(call)  # a page of the server's own tools
        start = 0
        if isinstance(cursor, str):
            digits = cursor[len(CURSOR) :]
            if not digits.isdigit() or int(digits) > len(self.names):
                raise McpError(INVALID_PARAMS, "Invalid params: unknown cursor")
            start = int(digits)
        if call.params is not None and cursor is not msgspec.UNSET:
            call.params = msgspec.structs.replace(call.params, cursor=msgspec.UNSET)
        own = await call_next(call)  # the server's first page: its type is the era's
        end = start + self.page_size
        page = [self.tool(name) for name in self.names[start:end]]
        if end < len(self.names):
            return msgspec.structs.replace(own, tools=page, next_cursor=f"{CURSOR}{end}")
        return msgspec.structs.replace(own, tools=page + list(own.tools))

    def tool(self, name: str) -> Tool:
        listed = self._listed.get(name)
        if listed is None:
            info = self.api.tables.tools[name]
            listed = self._listed[name] = Tool(
                name=name,
                title=info.title or msgspec.UNSET,
                description=info.description,
                input_schema=info.input_schema,
                output_schema=info.output_schema if info.output_schema is not None else msgspec.UNSET,
                annotations=msgspec.convert(info.annotations, ToolAnnotations),
            )
        return listed


def _error(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(text=text)], is_error=True)


# ---------------------------------------------------------------- code mode


def words(text: str) -> list[str]:
    """Lowercase words, camelCase and snake_case split, plurals made singular the simple
    way: ``listPetsByTag`` -> list, pet, by, tag."""
    found = [w.lower() for w in _WORD.findall(text)]
    return [w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in found]


class Bm25:
    """Okapi BM25 (k1 1.2, b 0.75) over short documents: a few dozen lines instead of a
    dependency on numpy, for a server that starts in well under a second."""

    def __init__(self, documents: dict[str, str], k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.terms = {key: Counter(words(text)) for key, text in documents.items()}
        self.lengths = {key: sum(c.values()) for key, c in self.terms.items()}
        self.average = (sum(self.lengths.values()) / len(self.lengths)) if self.lengths else 0.0
        frequency: Counter[str] = Counter()
        for counts in self.terms.values():
            frequency.update(counts.keys())
        n = len(self.terms)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in frequency.items()}

    def search(self, query: str, limit: int) -> list[tuple[str, float]]:
        wanted = [t for t in dict.fromkeys(words(query)) if t in self.idf]
        scores: list[tuple[str, float]] = []
        for key, counts in self.terms.items():
            score = 0.0
            norm = self.k1 * (1 - self.b + self.b * self.lengths[key] / (self.average or 1))
            for term in wanted:
                tf = counts.get(term, 0)
                if tf:
                    score += self.idf[term] * tf * (self.k1 + 1) / (tf + norm)
            if score > 0:
                scores.append((key, score))
        scores.sort(key=lambda s: (-s[1], s[0]))
        return scores[:limit]


class CodeMode:
    """Three tools for a large API instead of one per operation."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self._index: Bm25 | None = None
        self.checks = Checks(api)

    @property
    def index(self) -> Bm25:
        if self._index is None:
            self._index = Bm25({name: info.search_text for name, info in self.api.tables.tools.items()})
        return self._index

    def register(self, server: Server) -> None:
        title = self.api.tables.title
        server.tool(
            "search_operations",
            description=f"Search the operations of {title} by what they do; answers their names and summaries. "
            "Then describe_operation one to see its arguments, and call_operation it.",
            annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
        )(self.search_operations)
        server.tool(
            "describe_operation",
            description=f"The arguments (JSON Schema) and the answer of one operation of {title}, by name.",
            annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
        )(self.describe_operation)
        server.tool(
            "call_operation",
            description=f"Call one operation of {title} by name with its arguments (as describe_operation gives "
            "them); they are checked before any request is made.",
            annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=True),
        )(self.call_operation)

    async def search_operations(self, query: str, limit: int = 10) -> dict[str, Any]:
        """Search the operations by what they do."""
        found = []
        for name, score in self.index.search(query, max(1, min(limit, MAX_RESULTS))):
            op = self.api.tables.operations[name]
            info = self.api.tables.tools[name]
            found.append(
                {
                    "name": name,
                    "method": op.method,
                    "path": op.path,
                    "summary": info.title or "",
                    "score": round(score, 3),
                }
            )
        return {"operations": found}

    async def describe_operation(self, name: str) -> dict[str, Any]:
        """One operation: what it does, its arguments and its answer."""
        info = self.api.tables.tools.get(name)
        if info is None:
            raise LookupError(f"no operation named {name!r}: search_operations finds them")
        op = self.api.tables.operations[name]
        described: dict[str, Any] = {
            "name": name,
            "method": op.method,
            "path": op.path,
            "description": info.description,
            "arguments": info.input_schema,
            "annotations": info.annotations,
        }
        if info.output_schema is not None:
            described["answer"] = info.output_schema
        return described

    async def call_operation(self, name: str, arguments: dict[str, Any] | None = None) -> CallToolResult:
        """Call one operation by name with its arguments."""
        info = self.api.tables.tools.get(name)
        if info is None:
            return CallToolResult(
                content=[TextContent(text=f"no operation named {name!r}: search_operations finds them")], is_error=True
            )
        given = arguments or {}
        problem = self.checks.problem(name, given)
        if problem is not None:
            return CallToolResult(content=[TextContent(text=f"invalid arguments for {name}: {problem}")], is_error=True)
        return await self.api.call(name, given)


__all__ = ["Api", "Bm25", "CallerToken", "Checks", "CodeMode", "OpenApiTools", "register", "tool", "words"]
