"""Registering a generated project's tools on its ``Server``, and code mode.

:func:`register` adds one tool per operation (the generated functions, with the tables'
descriptions, input schemas and annotations) or, in code mode, three: search the
operations (BM25 over their text), describe one, call one (its arguments checked against
its input schema before any request). Output schemas are added to ``tools/list`` by a
middleware, as the document states them (``Server.tool`` derives an output schema from a
return annotation, which could not hold the document's references).

The user's hooks module may define ``on_request(operation, request)``,
``on_response(operation, response)`` (coroutines), ``OVERRIDES`` (tool name -> a function
of yours that replaces the generated one, taking the same arguments) and ``EXCLUDED``
(tool names not to offer).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

import msgspec

from mcpgen.generated import CallToolResult, TextContent, ToolAnnotations
from mcpgen.openapi.runtime.auth import CallerToken
from mcpgen.openapi.runtime.upstream import Api

if TYPE_CHECKING:
    from mcpgen.runtime.middleware.chain import Call, CallNext
    from mcpgen.runtime.server.server import Server

MAX_RESULTS = 50
_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def register(server: Server, tools: ModuleType, hooks: ModuleType | None = None) -> Api:
    """Offer the generated module ``tools``' operations on ``server``; returns its ``Api``."""
    api: Api = tools.API
    if hooks is not None:
        api.on_request = getattr(hooks, "on_request", None)
        api.on_response = getattr(hooks, "on_response", None)
    overrides: dict[str, Callable[..., Any]] = dict(getattr(hooks, "OVERRIDES", {}) or {})
    excluded = set(getattr(hooks, "EXCLUDED", ()) or ())
    if api.tables.mode == "code":
        CodeMode(api).register(server)
        return api
    schemas: dict[str, dict[str, Any]] = {}
    for fn in tools.TOOLS:
        name = fn.__mcp_tool__
        if name in excluded:
            continue
        info = api.tables.tools[name]
        server.tool(
            name,
            title=info.title,
            description=info.description,
            input_schema=info.input_schema,
            annotations=msgspec.convert(info.annotations, ToolAnnotations),
        )(overrides.get(name, fn))
        if info.output_schema is not None:
            schemas[name] = info.output_schema
    if schemas:
        server.middleware(OutputSchemas(schemas))
    return api


class OutputSchemas:
    """Adds each tool's ``outputSchema`` to what ``tools/list`` answers."""

    def __init__(self, schemas: dict[str, dict[str, Any]]) -> None:
        self.schemas = schemas

    async def __call__(self, call: Call, call_next: CallNext) -> Any:
        result = await call_next(call)
        if call.method == "tools/list" and hasattr(result, "tools"):
            listed = [
                msgspec.structs.replace(t, output_schema=self.schemas[t.name]) if t.name in self.schemas else t
                for t in result.tools
            ]
            result = msgspec.structs.replace(result, tools=listed)
        return result


def tool(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a generated function with the tool it is (its wire name may not be a Python name)."""

    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn.__mcp_tool__ = name  # type: ignore[attr-defined]
        return fn

    return mark


# ---------------------------------------------------------------- code mode


def words(text: str) -> list[str]:
    """Lowercase words, camelCase and snake_case split: ``listPetsByTag`` -> list, pets, by, tag."""
    return [w.lower() for w in _WORD.findall(text)]


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
        self._checks: dict[str, Callable[[Any], None]] = {}

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
        problem = self.check(name, info.input_schema, given)
        if problem is not None:
            return CallToolResult(content=[TextContent(text=f"invalid arguments for {name}: {problem}")], is_error=True)
        return await self.api.call(name, given)

    def check(self, name: str, schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
        import jsonschema_rs

        validate = self._checks.get(name)
        if validate is None:
            validate = jsonschema_rs.validator_for(schema).validate
            self._checks[name] = validate
        try:
            validate(arguments)
        except jsonschema_rs.ValidationError as exc:
            path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in exc.instance_path)
            return f"{exc.message} (at ${path})"
        return None


__all__ = ["Api", "Bm25", "CallerToken", "CodeMode", "OutputSchemas", "register", "tool", "words"]
