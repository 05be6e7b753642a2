"""What a server offers: its tools, resources, templates, prompts and completers, the
scopes each declares, and the lists its ``*/list`` methods page through.

The decorators of :class:`~mcpgen.runtime.server.server.Server` register here; the
handlers (:mod:`.handlers`) read from here; every change is announced through
``on_change`` (the server tells its sessions and listen streams).
"""

from __future__ import annotations

import logging
import re
import typing
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import UNSET

from mcpgen.protocol.v2025_11_25 import (
    AudioContent,
    CallToolResult,
    EmbeddedResource,
    Icon,
    ImageContent,
    Prompt,
    PromptArgument,
    Resource,
    ResourceLink,
    ResourceTemplate,
    TextContent,
    Tool,
    ToolAnnotations,
)
from mcpgen.runtime.server.caching import CacheHint
from mcpgen.runtime.server.context import Context
from mcpgen.runtime.server.registry import (
    ASYNC_BLOCKING,
    CompleterEntry,
    PromptEntry,
    ResourceEntry,
    TemplateEntry,
    ToolEntry,
    as_callable,
    check_template_variables,
    compile_template,
    default_mime,
    directory_entries,
    in_thread,
    runs_in_thread,
    text_or_unset,
)
from mcpgen.runtime.server.signature import check_shape, is_coroutine_function, signature_of
from mcpgen.runtime.shared.headers import annotated_params
from mcpgen.runtime.shared.jsonschema import compile_schema

if TYPE_CHECKING:
    from mcpgen.runtime.server.tasks import TaskStart, TaskSupport

log = logging.getLogger("mcpgen")
TOOL_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,128}")
# Return types sent as content, not structured output: text, bytes and content blocks.
CONTENT_TYPES: tuple[type, ...] = (
    str,
    bytes,
    TextContent,
    ImageContent,
    AudioContent,
    ResourceLink,
    EmbeddedResource,
    CallToolResult,
)


class Catalog:
    """The registered features of one server."""

    def __init__(self, on_change: Callable[[str], None]) -> None:
        self.on_change = on_change  # "tools", "resources" or "prompts" changed
        self.tools: dict[str, ToolEntry] = {}
        self.resources: dict[str, ResourceEntry] = {}
        self.templates: list[TemplateEntry] = []
        self.prompts: dict[str, PromptEntry] = {}
        self.completers: dict[tuple[str, str, str], CompleterEntry] = {}
        # OAuth (HTTP only; mcpgen.runtime.auth.bearer): the scopes each tool, resource,
        # prompt or template declares, checked before its handler runs.
        self.scopes: dict[tuple[str, str], tuple[str, ...]] = {}
        self.template_scopes: dict[int, tuple[str, ...]] = {}  # id(UriTemplate) -> scopes
        self._tool_headers: dict[str, dict[str, str]] = {}
        # The definitions each list method pages through, made once per change (a page is
        # a slice of it: listing N tools a page at a time costs O(N), not a copy per page).
        self._lists: dict[str, list[Any]] = {}

    def changed(self, feature: str) -> None:
        self._lists.pop(feature, None)
        if feature == "tools":
            self._tool_headers.clear()
        self.on_change(feature)

    # ------------------------------------------------------------ registering

    def add_tool(
        self,
        fn: Callable[..., Any],
        name: str | None,
        *,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | None = None,
        icons: list[Icon] | None = None,
        meta: dict[str, Any] | None = None,
        input_schema: dict[str, Any] | None = None,
        blocking: bool | None = None,
        scopes: Iterable[str] | None = None,
        task: TaskSupport | None = None,
        task_start: TaskStart = "call",
    ) -> None:
        as_callable(fn, "tool")
        tool_name: str = name or getattr(fn, "__name__", None) or type(fn).__name__
        if not TOOL_NAME.fullmatch(tool_name):
            raise ValueError(f"invalid tool name {tool_name!r}: use 1-128 of A-Z a-z 0-9 _ - .")
        if tool_name in self.tools:
            raise ValueError(f"a tool named {tool_name!r} is already registered")
        check_shape(fn)  # what can be told without reading the annotations: at once
        if isinstance(scopes, str):
            raise TypeError(f"scopes= is a list of scope names, not the string {scopes!r}")
        threaded = in_thread(is_coroutine_function(fn), tool_name, blocking)

        def build() -> tuple[Any, Tool, Any, Callable[[Any], None] | None]:
            sig = signature_of(fn, inject_types=(Context,), content_types=CONTENT_TYPES)
            definition = Tool(
                name=tool_name,
                title=title or UNSET,
                description=text_or_unset(description or sig.description),
                input_schema=input_schema if input_schema is not None else sig.input_schema,
                output_schema=sig.output_schema if sig.output_schema is not None else UNSET,
                annotations=annotations or UNSET,
                icons=icons or UNSET,
                meta=meta or UNSET,
            )
            returns = typing.get_type_hints(fn).get("return") if sig.output_schema is not None else None
            return sig, definition, returns, compile_schema(input_schema) if input_schema is not None else None

        if input_schema is not None:
            compile_schema(input_schema)  # a schema that cannot be used is refused at once
        self._declare_scopes("tools/call", tool_name, scopes)
        tasked = (task, task_start) if task else None
        self.tools[tool_name] = ToolEntry(fn, tool_name, threaded, tasked, build)
        self.changed("tools")

    def add_resource(
        self,
        fn: Callable[..., Any],
        uri: str | None,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        size: int | None = None,
        icons: list[Icon] | None = None,
        blocking: bool | None = None,
        cache: CacheHint | None = None,
        scopes: Iterable[str] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> None:
        sig = signature_of(as_callable(fn, "resource"), inject_types=(Context,))
        needs = sig.input_schema.get("required", [])
        if needs:
            raise TypeError(
                f"resource function `{sig.name}` requires {', '.join(needs)}: a resource is read without "
                "arguments; for URIs with variables use @server.resource_template"
            )
        resource_uri = uri if uri is not None else f"resource://{sig.name}"
        definition = Resource(
            uri=resource_uri,
            name=name or sig.name,
            title=title or UNSET,
            description=text_or_unset(description or sig.description),
            mime_type=mime_type or default_mime(sig) or UNSET,
            size=size if size is not None else UNSET,
            icons=icons or UNSET,
            meta=meta or UNSET,
        )
        self.resources[resource_uri] = ResourceEntry(fn, sig, runs_in_thread(sig, blocking), definition, cache)
        self._declare_scopes("resources/read", resource_uri, scopes)
        self.changed("resources")

    def add_template(
        self,
        fn: Callable[..., Any],
        uri_template: str | None,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        blocking: bool | None = None,
        scopes: Iterable[str] | None = None,
        allow_traversal: bool = False,
    ) -> None:
        sig = signature_of(as_callable(fn, "resource_template"), inject_types=(Context,))
        if uri_template is not None:
            uri_text = uri_template
        else:
            variables = list(sig.input_schema.get("properties", {}))
            if not variables:
                raise TypeError(
                    f"resource template function `{sig.name}` has no parameters to fill "
                    "from a URI: use @server.resource for a fixed URI"
                )
            uri_text = f"resource://{sig.name}" + "".join(f"/{{{v}}}" for v in variables)
        template = compile_template(uri_text)
        check_template_variables(uri_text, template.variables, sig)
        definition = ResourceTemplate(
            uri_template=uri_text,
            name=name or sig.name,
            title=title or UNSET,
            description=text_or_unset(description or sig.description),
            mime_type=mime_type or default_mime(sig) or UNSET,
        )
        self.templates.append(
            TemplateEntry(fn, sig, runs_in_thread(sig, blocking), template, definition, allow_traversal)
        )
        if scopes:
            self.template_scopes[id(template)] = tuple(scopes)
        self.changed("resources")

    def add_prompt(
        self,
        fn: Callable[..., Any],
        name: str | None,
        *,
        title: str | None = None,
        description: str | None = None,
        icons: list[Icon] | None = None,
        blocking: bool | None = None,
        scopes: Iterable[str] | None = None,
    ) -> None:
        sig = signature_of(as_callable(fn, "prompt"), inject_types=(Context,))
        props = sig.input_schema.get("properties", {})
        required = set(sig.input_schema.get("required", []))
        arguments = [
            PromptArgument(name=arg, description=text_or_unset(spec.get("description")), required=arg in required)
            for arg, spec in props.items()
        ]
        prompt_name = name or sig.name
        definition = Prompt(
            name=prompt_name,
            title=title or UNSET,
            description=text_or_unset(description or sig.description),
            arguments=arguments or UNSET,
            icons=icons or UNSET,
        )
        self.prompts[prompt_name] = PromptEntry(fn, sig, runs_in_thread(sig, blocking), definition)
        self._declare_scopes("prompts/get", prompt_name, scopes)
        self.changed("prompts")

    def add_completer(self, fn: Callable[..., Any], key: tuple[str, str, str], blocking: bool | None) -> None:
        import inspect

        as_callable(fn, "completion")
        # B004: __call__ is read to see whether an instance's call is async, not to test callability.
        is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004
        if is_async and blocking:
            raise TypeError(ASYNC_BLOCKING.format(name=getattr(fn, "__name__", "completer")))
        self.completers[key] = CompleterEntry(fn, not is_async and blocking is not False)

    def add_directory(self, root: Path, uri_prefix: str, name: str, listed: bool) -> None:
        template, files = directory_entries(root, uri_prefix, name, listed)
        self.templates.append(template)
        self.resources.update(files)
        self.changed("resources")

    def remove(self, feature: str, key: str) -> None:
        found: dict[str, Any] = (
            self.tools if feature == "tools" else self.prompts if feature == "prompts" else self.resources
        )
        del found[key]
        self.changed(feature)

    # ------------------------------------------------------------ listing

    def listed(self, feature: str) -> list[Any]:
        """The definitions ``feature``'s list method pages through, as of the last change
        (copied in one step: a handler registering from a worker thread cannot interleave)."""
        found = self._lists.get(feature)
        if found is None:
            if feature == "tools":
                found = [t for t in map(_built_definition, list(self.tools.values())) if t is not None]
            elif feature == "prompts":
                found = [p.definition for p in list(self.prompts.values())]
            elif feature == "templates":
                found = [t.definition for t in list(self.templates)]
            else:
                found = [r.definition for r in list(self.resources.values())]
            self._lists[feature] = found
        return found

    # ------------------------------------------------------------ what the fronts ask

    @property
    def offers_tasks(self) -> bool:
        """Whether any tool is task-capable (then discover declares the tasks extension)."""
        return any(tool.task is not None for tool in list(self.tools.values()))

    def task_support(self, name: str) -> tuple[TaskSupport, TaskStart] | None:
        entry = self.tools.get(name)
        return entry.task if entry is not None else None

    def tool_headers(self, name: str) -> dict[str, str]:
        """The tool's ``x-mcp-header`` annotations: argument -> header name."""
        found = self._tool_headers.get(name)
        if found is None:
            entry = self.tools.get(name)
            schema = msgspec.to_builtins(entry.definition.input_schema) if entry is not None else {}
            found = annotated_params(schema) or {}
            if entry is not None:  # only what is registered is kept: a peer's made-up name is not
                self._tool_headers[name] = found
        return found

    def cache_hint(self, method: str, params: Any, default: CacheHint) -> CacheHint:
        """A resource's own caching hint for its reads, else ``default``."""
        if method == "resources/read" and params is not None:
            resource = self.resources.get(getattr(params, "uri", ""))
            if resource is not None and resource.cache is not None:
                return resource.cache
        return default

    def _declare_scopes(self, method: str, name: str, scopes: Iterable[str] | None) -> None:
        if isinstance(scopes, str):
            raise TypeError(f"scopes= is a list of scope names, not the string {scopes!r}")
        if scopes:
            self.scopes[(method, name)] = tuple(scopes)
        else:
            self.scopes.pop((method, name), None)

    def required_scopes(self, method: str, name: str) -> tuple[str, ...]:
        """The scopes a request must carry, beyond the server's own, to call this tool
        (``tools/call``), get this prompt (``prompts/get``) or read or subscribe to this
        resource URI (``resources/read``, ``resources/subscribe``): what its decorator
        declared with ``scopes=``. A URI no fixed resource has needs those of every
        template matching it."""
        if method == "resources/subscribe":
            method = "resources/read"
        found = self.scopes.get((method, name))
        if found is not None or method != "resources/read" or name in self.resources or not self.template_scopes:
            return found or ()
        needed: list[str] = []
        for template in list(self.templates):
            scopes = self.template_scopes.get(id(template.template))
            if scopes and template.template.match(name) is not None:
                needed.extend(s for s in scopes if s not in needed)
        return tuple(needed)

    def completion_scopes(self, ref_type: str, name: str) -> tuple[str, ...]:
        """The scopes a ``completion/complete`` request must carry, beyond the server's own:
        those of the prompt (``ref/prompt``, by name) or resource template (``ref/resource``,
        by its URI template; a fixed resource by its URI) whose argument it completes. A
        completer's values come from what it completes, so they are guarded alike."""
        if ref_type == "ref/prompt":
            return self.scopes.get(("prompts/get", name), ())
        if ref_type == "ref/resource":
            for template in list(self.templates):
                if template.definition.uri_template == name:
                    return self.template_scopes.get(id(template.template), ())
            return self.scopes.get(("resources/read", name), ())
        return ()

    def declared_scopes(self) -> list[str]:
        """Every scope a tool, resource, template or prompt declares (for the protected
        resource metadata's ``scopes_supported``)."""
        found: dict[str, None] = {}
        for scopes in [*self.scopes.values(), *self.template_scopes.values()]:
            found.update(dict.fromkeys(scopes))
        return list(found)


def _built_definition(entry: ToolEntry) -> Tool | None:
    """A tool's definition, made now if it was not; a tool that cannot be made is left out
    of the list, with the reason in the log (its calls are answered with that reason)."""
    try:
        return entry.definition
    except (TypeError, ValueError, NameError) as exc:
        log.error("mcpgen: tool %s cannot be served: %s", entry.name, exc)
        return None
