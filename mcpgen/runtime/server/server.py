"""The friendly server API: decorators, and the handlers both protocol eras call.

    server = Server("demo")

    @server.tool          # or @server.tool(name=..., title=..., ...)
    def add(a: int, b: int) -> int:
        "Add two numbers."
        return a + b

    if __name__ == "__main__":
        server.run()      # stdio; server.run("http") for Streamable HTTP

One :class:`Server` can serve many sessions at once (each client over stdio, or many over
HTTP); per-client state (log level, subscriptions) lives in the session.

Where handlers run: ``async def`` ones on the event loop. A plain ``def`` may block, so it
runs in the server's thread pool (``max_threads`` workers; see
:mod:`mcpgen.runtime.server.threads`), unless declared ``blocking=False``: it is then called on
the event loop, and such a tool without a :class:`Context` parameter is even answered on
the spot, without a task (the fastest path: use it for quick pure-Python work only, since
while it runs every session of the server waits).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import re
import typing
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, overload

import msgspec
from msgspec import UNSET

from mcpgen.generated import (
    AudioContent,
    CallToolRequestParams,
    CallToolResult,
    CompleteRequestParams,
    CompleteResult,
    CompleteResultCompletion,
    EmbeddedResource,
    GetPromptRequestParams,
    GetPromptResult,
    Icon,
    ImageContent,
    Implementation,
    InitializeRequestParams,
    InitializeResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    MethodSpec,
    PaginatedRequestParams,
    Prompt,
    PromptArgument,
    PromptReference,
    ReadResourceRequestParams,
    ReadResourceResult,
    Resource,
    ResourceLink,
    ResourceTemplate,
    ServerCapabilities,
    SetLevelRequestParams,
    SubscribeRequestParams,
    TextContent,
    Tool,
    ToolAnnotations,
    UnsubscribeRequestParams,
)
from mcpgen.runtime.errors import INTERNAL_ERROR, INVALID_PARAMS, CapabilityError, McpError, ResourceNotFound
from mcpgen.runtime.extras import require
from mcpgen.runtime.jsonrpc.capabilities import Declared
from mcpgen.runtime.jsonrpc.context import current_request
from mcpgen.runtime.jsonrpc.kernel import NOT_NOW, Route
from mcpgen.runtime.jsonrpc.session import runtime_class
from mcpgen.runtime.jsonrpc.transport import Transport
from mcpgen.runtime.server import running
from mcpgen.runtime.server.caching import CacheHint
from mcpgen.runtime.server.content import to_content, to_contents, to_messages
from mcpgen.runtime.server.context import Context
from mcpgen.runtime.server.input_required import InputRequired, checked_state_key
from mcpgen.runtime.server.listen import ListenHub
from mcpgen.runtime.server.registry import (
    ASYNC_BLOCKING,
    CompleterEntry,
    PromptEntry,
    ResourceEntry,
    TemplateEntry,
    ToolEntry,
    as_callable,
    check_resource_value,
    check_template_variables,
    compile_template,
    decode_cursor,
    directory_entries,
    encode_cursor,
    positional,
    runs_in_thread,
    split_first,
)
from mcpgen.runtime.server.session import ServerSession
from mcpgen.runtime.server.signature import ArgumentError, Signature, signature_of
from mcpgen.runtime.server.threads import DEFAULT_MAX_THREADS, ThreadPool
from mcpgen.runtime.shared.files import leaves_root
from mcpgen.runtime.shared.headers import annotated_params
from mcpgen.runtime.shared.jsonschema import SchemaValidationError, compile_schema

if TYPE_CHECKING:
    from mcpgen.protocol.ext_apps import McpUiResourceCsp, McpUiResourcePermissions
    from mcpgen.runtime.auth.bearer import BearerAuth
    from mcpgen.runtime.middleware.chain import Chain, Middleware, RequestHook
    from mcpgen.runtime.server.apps import HtmlSource, Visibility
    from mcpgen.runtime.server.http_server import McpHttpApp
    from mcpgen.runtime.server.skills import GetSkillParams, ListSkillsParams, ReadDirectoryParams, SkillSet
    from mcpgen.runtime.server.stateless import StatelessServer
    from mcpgen.runtime.server.tasks import TaskManager, TaskStart, TaskSupport
    from mcpgen.runtime.stores.task_store import TaskStore

log = logging.getLogger("mcpgen")
F = TypeVar("F", bound=Callable[..., Any])
M = TypeVar("M", bound="Middleware | RequestHook")
TOOL_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,128}")
# Return types sent as content, not structured output: text, bytes and content blocks.
_CONTENT_TYPES: tuple[type, ...] = (
    str,
    bytes,
    TextContent,
    ImageContent,
    AudioContent,
    ResourceLink,
    EmbeddedResource,
    CallToolResult,
)


class ToolError(Exception):
    """Raise in a tool to report a failure to the model (``isError: true``) with this text."""


class Server:
    """An MCP server built from decorated functions.

    It serves both protocol eras from the same handlers (its ``list_tools``,
    ``call_tool``, ... coroutines, named as in the generated ``ServerHandlers`` stubs but not
    inheriting any revision's): the handshake era through a session, the stateless era
    through :attr:`stateless`. A method it has no coroutine for is answered "method not
    found"; a notification it has none for is ignored."""

    def __init__(
        self,
        name: str,
        version: str = "0.1.0",
        *,
        title: str | None = None,
        instructions: str | None = None,
        website_url: str | None = None,
        icons: list[Icon] | None = None,
        page_size: int = 100,
        request_timeout: float | None = 60.0,
        handler_timeout: float | None = None,
        max_concurrency: int = 1024,
        max_message: int = 16 * 1024 * 1024,
        max_threads: int = DEFAULT_MAX_THREADS,
        state_key: bytes | str | None = None,
        cache: CacheHint | None = None,
        list_cache: dict[str, CacheHint] | None = None,
        auth: BearerAuth | None = None,
        task_store: TaskStore | None = None,
        middleware: Sequence[Middleware | RequestHook] | None = None,
    ) -> None:
        """``request_timeout`` bounds our requests to the client (sampling, elicitation);
        ``handler_timeout`` bounds each handler (-32603 when exceeded; a handler in a
        worker thread runs on, unheard, see :mod:`mcpgen.runtime.server.threads`); at most
        ``max_concurrency`` requests of one session run at once, four times as many wait
        in order, and more are refused (-32000, "server busy");
        ``max_message`` bytes is the largest frame accepted over stdio; ``max_threads``
        worker threads, for all sessions together, run the plain ``def`` handlers (calls
        beyond that wait for a free worker).

        Stateless era (2026-07-28): ``state_key`` seals the ``requestState`` of a request
        that asks the client for input (default: ``$MCPGEN_STATE_KEY``, else a random key
        of this process; several workers behind one endpoint need the same key);
        ``cache`` is the caching hint of every cacheable result (default: ``ttl_ms=0``,
        ``"private"``), ``list_cache`` overrides it per method (``"tools/list"``,
        ``"server/discover"``, ...), and a resource may carry its own; ``task_store`` keeps
        the tasks of task-capable tools (default: in this process; see
        :mod:`mcpgen.runtime.server.tasks`).

        ``middleware`` wraps every request (outermost first; see :meth:`middleware` and
        :mod:`mcpgen.runtime.middleware`)."""
        self.info = Implementation(
            name=name,
            version=version,
            title=title or UNSET,
            website_url=website_url or UNSET,
            icons=icons or UNSET,
        )
        self.instructions = instructions
        self.page_size = page_size
        self.request_timeout = request_timeout
        self.max_message = max_message
        self.session_options: dict[str, Any] = {
            "request_timeout": request_timeout,
            "handler_timeout": handler_timeout,
            "max_concurrency": max_concurrency,
        }
        self._tools: dict[str, ToolEntry] = {}
        self._resources: dict[str, ResourceEntry] = {}
        self._templates: list[TemplateEntry] = []
        self._prompts: dict[str, PromptEntry] = {}
        self._completers: dict[tuple[str, str, str], CompleterEntry] = {}
        self.sessions: set[ServerSession] = set()
        self.threads = ThreadPool(max_threads)
        self.state_key = checked_state_key(state_key if state_key is not None else os.environ.get("MCPGEN_STATE_KEY"))
        self.cache = cache if cache is not None else CacheHint()
        self.list_cache = dict(list_cache or {})
        self.listeners = ListenHub(self)
        self._stateless: StatelessServer | None = None
        self._declared: Declared | None = None
        self._tool_headers: dict[str, dict[str, str]] = {}
        # OAuth (HTTP only; mcpgen.runtime.auth.bearer): the scopes each tool, resource,
        # prompt or template declares, checked before its handler runs.
        self._scopes: dict[tuple[str, str], tuple[str, ...]] = {}
        self._template_scopes: dict[int, tuple[str, ...]] = {}  # id(UriTemplate) -> scopes
        self.auth = auth
        if auth is not None:
            auth.attach(self)
        self._task_store = task_store
        self._tasks: TaskManager | None = None
        # Extensions (SEP-2133): their settings, declared under capabilities.extensions in
        # both eras, and the requests they add (served in both eras, as the core's are).
        self.extensions: dict[str, dict[str, Any]] = {}
        self.extension_methods: dict[str, MethodSpec] = {}
        self._skills: SkillSet | None = None
        # None without middleware: a route then pays nothing for it, and nothing is imported.
        self.middleware_chain: Chain | None = None
        self._routes: dict[str, Route] = {}  # method -> how it is served (see route())
        for item in middleware or ():
            self.middleware(item)

    # ------------------------------------------------------------ registration

    def middleware(self, item: M) -> M:
        """Add a middleware (a :class:`~mcpgen.runtime.middleware.chain.Middleware`, or an
        ``async def hook(call, call_next)``), innermost of those added so far; usable as a
        decorator. Add them before serving: a session that has started keeps its way of
        answering synchronous tools on the spot, which a chain turns off."""
        from mcpgen.runtime.middleware.chain import Chain

        if self.middleware_chain is None:
            self.middleware_chain = Chain()
        self.middleware_chain.add(item)
        self._routes.clear()  # made again with it
        if self._stateless is not None:
            self._stateless.forget_routes()
        return item

    @overload
    def tool(self, name: F, /) -> F: ...

    @overload
    def tool(
        self,
        name: str | None = None,
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
        ui: str | None = None,
        visibility: Sequence[Visibility] | None = None,
    ) -> Callable[[F], F]: ...

    def tool(
        self,
        name: str | F | None = None,
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
        ui: str | None = None,
        visibility: Sequence[Visibility] | None = None,
    ) -> F | Callable[[F], F]:
        """Register a function as a tool (``@server.tool`` or ``@server.tool(...)``). Its
        parameters' type hints make the input schema; its return annotation, when it is
        structured data, the output schema. ``input_schema`` replaces the derived schema
        verbatim (arguments are then checked against it before the type hints convert
        them). ``blocking=False`` declares a plain ``def`` quick and non-blocking: it runs
        on the event loop instead of the thread pool (see the module's docstring).

        ``task="optional"`` or ``"required"`` makes it a tasks-extension tool (SEP-2663):
        a client declaring the extension gets a task handle at once and polls for the
        result; ``task_start="explicit"`` runs it inside the request until it awaits
        ``ctx.continue_as_task()`` (see :mod:`mcpgen.runtime.server.tasks`).

        ``ui="ui://..."`` links an MCP Apps interface (see :meth:`ui_resource`);
        ``visibility=["app"]`` (or ``["model"]``) says who may call the tool there."""
        fn, name = split_first(name, "tool", "its name")
        if ui is not None or visibility is not None:
            from mcpgen.runtime.server.apps import link_tool
            from mcpgen.runtime.shared.meta import UI_EXTENSION

            meta = link_tool(meta, ui, visibility)
            self.declare_extension(UI_EXTENSION)
        if task not in (None, "optional", "required") or task_start not in ("call", "explicit"):
            raise ValueError("task must be 'optional', 'required' or None, task_start 'call' or 'explicit'")

        def register(fn: F) -> F:
            sig = signature_of(as_callable(fn, "tool"), inject_types=(Context,), content_types=_CONTENT_TYPES)
            check = compile_schema(input_schema) if input_schema is not None else None
            tool_name = name or sig.name
            if not TOOL_NAME.fullmatch(tool_name):
                raise ValueError(f"invalid tool name {tool_name!r}: use 1-128 of A-Z a-z 0-9 _ - .")
            if tool_name in self._tools:
                raise ValueError(f"a tool named {tool_name!r} is already registered")
            definition = Tool(
                name=tool_name,
                title=title or UNSET,
                description=_text(description or sig.description),
                input_schema=input_schema if input_schema is not None else sig.input_schema,
                output_schema=sig.output_schema if sig.output_schema is not None else UNSET,
                annotations=annotations or UNSET,
                icons=icons or UNSET,
                meta=meta or UNSET,
            )
            self._declare_scopes("tools/call", tool_name, scopes)
            returns = typing.get_type_hints(fn).get("return") if sig.output_schema is not None else None
            self._tools[tool_name] = ToolEntry(
                fn, sig, runs_in_thread(sig, blocking), definition, returns, check, (task, task_start) if task else None
            )
            self._changed("tools")
            return fn

        return register(fn) if fn is not None else register

    def remove_tool(self, name: str) -> None:
        del self._tools[name]
        self._changed("tools")

    def remove_prompt(self, name: str) -> None:
        del self._prompts[name]
        self._changed("prompts")

    def remove_resource(self, uri: str) -> None:
        del self._resources[uri]
        self._changed("resources")

    @overload
    def resource(self, uri: F, /) -> F: ...

    @overload
    def resource(
        self,
        uri: str,
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
    ) -> Callable[[F], F]: ...

    def resource(
        self,
        uri: str | F,
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
    ) -> F | Callable[[F], F]:
        """Register a function that returns the contents of the resource at ``uri``
        (``str`` for text, ``bytes`` for binary, or resource contents). Bare, as
        ``@server.resource``, the URI is ``resource://<function name>``. ``blocking``: as
        for :meth:`tool`; ``cache``: the caching hint of its reads (stateless era)."""
        fn, given = split_first(uri, "resource", "its URI", optional=False)

        def register(fn: F) -> F:
            sig = signature_of(as_callable(fn, "resource"), inject_types=(Context,))
            needs = sig.input_schema.get("required", [])
            if needs:
                raise TypeError(
                    f"resource function `{sig.name}` requires {', '.join(needs)}: a resource is read without "
                    "arguments; for URIs with variables use @server.resource_template"
                )
            resource_uri = given if given is not None else f"resource://{sig.name}"
            definition = Resource(
                uri=resource_uri,
                name=name or sig.name,
                title=title or UNSET,
                description=_text(description or sig.description),
                mime_type=mime_type or UNSET,
                size=size if size is not None else UNSET,
                icons=icons or UNSET,
                meta=meta or UNSET,
            )
            self._resources[resource_uri] = ResourceEntry(fn, sig, runs_in_thread(sig, blocking), definition, cache)
            self._declare_scopes("resources/read", resource_uri, scopes)
            self._changed("resources")
            return fn

        return register(fn) if fn is not None else register

    def ui_resource(
        self,
        uri: str,
        html: HtmlSource,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        csp: McpUiResourceCsp | dict[str, Any] | None = None,
        permissions: McpUiResourcePermissions | dict[str, Any] | None = None,
        domain: str | None = None,
        prefers_border: bool | None = None,
        cache: CacheHint | None = None,
    ) -> None:
        """Serve an MCP Apps interface at ``uri`` (``ui://...``): ``html`` is the document,
        a path to it, or a function returning it (read at each ``resources/read``). ``csp``,
        ``permissions``, ``domain`` and ``prefers_border`` are its ``_meta.ui`` as the
        extension defines them; ``cache``: the caching hint of its reads (stateless era).
        Declares ``io.modelcontextprotocol/ui``; link it with ``@server.tool(ui=uri)``."""
        from mcpgen.runtime.server.apps import check_ui_uri, resource_meta, ui_reader
        from mcpgen.runtime.shared.meta import UI_EXTENSION, UI_MIME

        check_ui_uri(uri)
        meta = resource_meta(csp, permissions, domain, prefers_border)
        read, blocks = ui_reader(uri, html, meta)
        name = name or uri.removeprefix("ui://")
        self.resource(uri, name=name, title=title, description=description, mime_type=UI_MIME, blocking=blocks,
                      cache=cache, meta=meta)(read)  # fmt: skip
        self.declare_extension(UI_EXTENSION)

    @overload
    def resource_template(self, uri_template: F, /) -> F: ...

    @overload
    def resource_template(
        self,
        uri_template: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        blocking: bool | None = None,
        scopes: Iterable[str] | None = None,
        allow_traversal: bool = False,
    ) -> Callable[[F], F]: ...

    def resource_template(
        self,
        uri_template: str | F,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        blocking: bool | None = None,
        scopes: Iterable[str] | None = None,
        allow_traversal: bool = False,
    ) -> F | Callable[[F], F]:
        """Register a function serving every URI that matches an RFC 6570 template; the
        template's variables are passed as keyword arguments. Bare, as
        ``@server.resource_template``, the template is ``resource://<function
        name>/{<parameter>}/...`` over the function's parameters in order. ``blocking``:
        as for :meth:`tool`.

        Variables arrive percent-decoded, so ``file:///{path}`` would hand a handler
        ``../outside`` for ``file:///..%2Foutside``: a URI whose variables decode to a
        ``..`` segment or an absolute path is not served ("resource not found", the
        handler never runs). ``allow_traversal=True`` hands such values over, for a
        handler that checks them itself."""
        fn, given = split_first(uri_template, "resource_template", "its URI template", optional=False)

        def register(fn: F) -> F:
            sig = signature_of(as_callable(fn, "resource_template"), inject_types=(Context,))
            if given is not None:
                uri_text = given
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
                description=_text(description or sig.description),
                mime_type=mime_type or UNSET,
            )
            entry = TemplateEntry(fn, sig, runs_in_thread(sig, blocking), template, definition, allow_traversal)
            self._templates.append(entry)
            if scopes:
                self._template_scopes[id(template)] = tuple(scopes)
            self._changed("resources")
            return fn

        return register(fn) if fn is not None else register

    def skills(
        self,
        root: str | os.PathLike[str],
        *,
        prefix: str = "",
        directory_read: bool = True,
        page_size: int | None = None,
    ) -> None:
        """Serve the Agent Skills under ``root`` (the skills extension, SEP-2640): each
        directory holding a ``SKILL.md`` is a skill, listed by ``skills/list``, described
        by ``skills/get`` (its frontmatter and every file's digest and size), and its
        files are ``skill://<prefix/><path>`` resources (each SKILL.md also listed by
        ``resources/list``). ``directory_read`` adds ``resources/directory/read``;
        ``page_size`` (default: the server's) bounds both listings. What is served follows
        the files on disk, request by request, and paths that would leave ``root`` are
        refused as for :meth:`directory`; see :mod:`mcpgen.runtime.server.skills`."""
        from mcpgen.runtime.server.skills import SkillSet, skill_entries
        from mcpgen.runtime.shared.skill_format import EXTENSION

        if self._skills is not None:
            raise ValueError("this server already serves a skills directory")
        require("yaml", "skills", "Serving skills")
        skill_set = SkillSet(root, prefix=prefix, page_size=page_size or self.page_size)
        self._skills = skill_set
        template, methods = skill_entries(skill_set, directory_read)
        self._templates.append(template)
        for spec in methods:
            self.add_extension_method(spec)
        self.declare_extension(EXTENSION, {"directoryRead": True} if directory_read else {})
        self._changed("resources")

    def declare_extension(self, identifier: str, settings: dict[str, Any] | None = None) -> None:
        """Declare an extension under ``capabilities.extensions`` (its settings inline)."""
        self.extensions[identifier] = dict(settings or {})
        self._declared = None

    def add_extension_method(self, spec: MethodSpec) -> None:
        """Serve a request an extension adds, in both eras: ``spec.handler`` names this
        server's coroutine for it, ``spec.params_type`` decodes its params."""
        self.extension_methods[spec.method] = spec
        if self._stateless is not None:
            self._stateless.table[spec.method] = spec

    def directory(
        self, root: str | os.PathLike[str], *, uri_prefix: str = "file:///", name: str = "files", listed: bool = True
    ) -> None:
        """Serve the files under ``root`` as resources ``<uri_prefix><relative path>``
        (a resource template, and each file listed when ``listed``). Paths that would leave
        ``root`` (``..``, absolute, symlinks pointing out) are answered "not found"."""
        template, files = directory_entries(Path(root), uri_prefix, name, listed)
        self._templates.append(template)
        self._resources.update(files)
        self._changed("resources")

    @overload
    def prompt(self, name: F, /) -> F: ...

    @overload
    def prompt(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        icons: list[Icon] | None = None,
        blocking: bool | None = None,
        scopes: Iterable[str] | None = None,
    ) -> Callable[[F], F]: ...

    def prompt(
        self,
        name: str | F | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        icons: list[Icon] | None = None,
        blocking: bool | None = None,
        scopes: Iterable[str] | None = None,
    ) -> F | Callable[[F], F]:
        """Register a prompt (``@server.prompt`` or ``@server.prompt(...)``): a function
        of string arguments returning text, messages or a ``GetPromptResult``.
        ``blocking``: as for :meth:`tool`."""
        fn, name = split_first(name, "prompt", "its name")

        def register(fn: F) -> F:
            sig = signature_of(as_callable(fn, "prompt"), inject_types=(Context,))
            props = sig.input_schema.get("properties", {})
            required = set(sig.input_schema.get("required", []))
            arguments = [
                PromptArgument(
                    name=arg,
                    description=_text(spec.get("description")),
                    required=arg in required,
                )
                for arg, spec in props.items()
            ]
            prompt_name = name or sig.name
            definition = Prompt(
                name=prompt_name,
                title=title or UNSET,
                description=_text(description or sig.description),
                arguments=arguments or UNSET,
                icons=icons or UNSET,
            )
            self._prompts[prompt_name] = PromptEntry(fn, sig, runs_in_thread(sig, blocking), definition)
            self._declare_scopes("prompts/get", prompt_name, scopes)
            self._changed("prompts")
            return fn

        return register(fn) if fn is not None else register

    def completion(
        self,
        *,
        argument: str,
        prompt: str | None = None,
        template: str | None = None,
        blocking: bool | None = None,
    ) -> Callable[[F], F]:
        """Register the completer of a prompt's or resource template's argument:
        ``fn(value: str, arguments: dict[str, str]) -> list[str]`` (sync or async).
        It has no bare form: which argument it completes must be said
        (``@server.completion(argument="city", prompt="weather")``). ``blocking``: as for
        :meth:`tool`."""
        if not isinstance(argument, str):
            raise TypeError(
                f"@server.completion: argument= is the argument's name (a str), not {type(argument).__name__}"
            )
        for given in (prompt, template):
            if given is not None and not isinstance(given, str):
                raise TypeError(f"@server.completion: prompt= and template= are strings, not {type(given).__name__}")
        if (prompt is None) == (template is None):
            raise ValueError("give exactly one of prompt= or template=")
        key = ("ref/prompt", prompt, argument) if prompt is not None else ("ref/resource", template, argument)

        def register(fn: F) -> F:
            as_callable(fn, "completion")
            # B004: __call__ is read to see whether an instance's call is async, not to test callability.
            is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004
            if is_async and blocking:
                raise TypeError(ASYNC_BLOCKING.format(name=getattr(fn, "__name__", "completer")))
            self._completers[key] = CompleterEntry(fn, not is_async and blocking is not False)  # type: ignore[index]
            return fn

        return register

    # ------------------------------------------------------------ change notifications

    def _changed(self, feature: str) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            self._announce(feature)
            return
        # Off the event loop: a handler in a worker thread registered something (its
        # sessions are told on its event loop), or the application did before serving.
        try:
            loop = Context.current().loop
        except RuntimeError:
            return
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._announce, feature)

    def _announce(self, feature: str) -> None:
        if feature == "tools":
            self._tool_headers.clear()
        self.listeners.list_changed(feature)
        method = f"notifications/{feature}/list_changed"
        for session in list(self.sessions):
            if session.state == "ready" and session.own_caps.has(f"{feature}.listChanged"):
                session._spawn(session.send_notification(method, {}))  # noqa: SLF001

    async def notify_resource_updated(self, uri: str) -> None:
        """Tell every client subscribed to ``uri`` that it changed."""
        self.listeners.resource_updated(uri)
        for session in list(self.sessions):
            if uri in session.subscriptions:
                await session.send_notification("notifications/resources/updated", {"uri": uri})

    # ------------------------------------------------------------ capabilities

    def capabilities(self) -> ServerCapabilities:
        declared: dict[str, Any] = {
            "logging": {},
            "completions": {},
            "tools": {"listChanged": True},
            "resources": {"subscribe": True, "listChanged": True},
            "prompts": {"listChanged": True},
        }
        if not self.extensions:
            return msgspec.convert(declared, ServerCapabilities)
        from mcpgen.runtime.shared.extensions import ExtendedServerCapabilities

        declared["extensions"] = self.extensions
        return msgspec.convert(declared, ExtendedServerCapabilities)

    @property
    def declared(self) -> Declared:
        """What :meth:`capabilities` declares, for lookups by path (``tools.listChanged``)."""
        if self._declared is None:
            self._declared = Declared(self.capabilities())
        return self._declared

    def declares(self, path: str) -> bool:
        return self.declared.has(path)

    # ------------------------------------------------------------ stateless era

    @property
    def stateless(self) -> StatelessServer:
        """The server's stateless-era front (made on the first such request: a server that
        only ever meets handshake-era clients never loads the 2026-07-28 bindings)."""
        if self._stateless is None:
            from mcpgen.runtime.server.stateless import StatelessServer

            self._stateless = StatelessServer(self)
        return self._stateless

    def cache_hint(self, method: str, params: Any = None) -> CacheHint:
        """The caching hint of a cacheable result: the resource's own for a read, else the
        method's from ``list_cache``, else the server's default."""
        if method == "resources/read" and params is not None:
            resource = self._resources.get(getattr(params, "uri", ""))
            if resource is not None and resource.cache is not None:
                return resource.cache
        return self.list_cache.get(method, self.cache)

    @property
    def tasks(self) -> TaskManager:
        """The tasks extension's manager (made on first use, over ``task_store``)."""
        if self._tasks is None:
            from mcpgen.runtime.server.tasks import TaskManager

            self._tasks = TaskManager(self, self._task_store)
        return self._tasks

    async def stop_tasks(self) -> None:
        """Stop the tasks this process runs (each is recorded ``failed``) and close the task
        store: the HTTP app does so at shutdown, stdio when its client leaves."""
        if self._tasks is not None:
            await self._tasks.aclose()

    @property
    def offers_tasks(self) -> bool:
        """Whether any tool is task-capable (then discover declares the tasks extension)."""
        return any(tool.task is not None for tool in list(self._tools.values()))

    def task_support(self, name: str) -> tuple[TaskSupport, TaskStart] | None:
        entry = self._tools.get(name)
        return entry.task if entry is not None else None

    # ------------------------------------------------------------ OAuth scopes

    def _declare_scopes(self, method: str, name: str, scopes: Iterable[str] | None) -> None:
        if isinstance(scopes, str):
            raise TypeError(f"scopes= is a list of scope names, not the string {scopes!r}")
        if scopes:
            self._scopes[(method, name)] = tuple(scopes)
        else:
            self._scopes.pop((method, name), None)

    def required_scopes(self, method: str, name: str) -> tuple[str, ...]:
        """The scopes a request must carry, beyond the server's own, to call this tool
        (``tools/call``), get this prompt (``prompts/get``) or read or subscribe to this
        resource URI (``resources/read``, ``resources/subscribe``): what its decorator
        declared with ``scopes=``. A URI no fixed resource has needs those of every
        template matching it."""
        if method == "resources/subscribe":
            method = "resources/read"
        found = self._scopes.get((method, name))
        if found is not None or method != "resources/read" or name in self._resources or not self._template_scopes:
            return found or ()
        needed: list[str] = []
        for template in list(self._templates):
            scopes = self._template_scopes.get(id(template.template))
            if scopes and template.template.match(name) is not None:
                needed.extend(s for s in scopes if s not in needed)
        return tuple(needed)

    def completion_scopes(self, ref_type: str, name: str) -> tuple[str, ...]:
        """The scopes a ``completion/complete`` request must carry, beyond the server's own:
        those of the prompt (``ref/prompt``, by name) or resource template (``ref/resource``,
        by its URI template; a fixed resource by its URI) whose argument it completes. A
        completer's values come from what it completes, so they are guarded alike."""
        if ref_type == "ref/prompt":
            return self._scopes.get(("prompts/get", name), ())
        if ref_type == "ref/resource":
            for template in list(self._templates):
                if template.definition.uri_template == name:
                    return self._template_scopes.get(id(template.template), ())
            return self._scopes.get(("resources/read", name), ())
        return ()

    def declared_scopes(self) -> list[str]:
        """Every scope a tool, resource, template or prompt declares (for the protected
        resource metadata's ``scopes_supported``)."""
        found: dict[str, None] = {}
        for scopes in [*self._scopes.values(), *self._template_scopes.values()]:
            found.update(dict.fromkeys(scopes))
        return list(found)

    def tool_headers(self, name: str) -> dict[str, str]:
        """The tool's ``x-mcp-header`` annotations: argument -> header name."""
        found = self._tool_headers.get(name)
        if found is None:
            entry = self._tools.get(name)
            schema = msgspec.to_builtins(entry.definition.input_schema) if entry is not None else {}
            found = self._tool_headers[name] = annotated_params(schema) or {}
        return found

    # ------------------------------------------------------------ handlers

    async def initialize(self, params: InitializeRequestParams) -> InitializeResult:
        return InitializeResult(
            protocol_version=params.protocol_version,
            capabilities=self.capabilities(),
            server_info=self.info,
            instructions=self.instructions or UNSET,
        )

    # The list_* handlers copy with list() first: one step a handler registering from a
    # worker thread cannot interleave with.
    async def list_tools(self, params: PaginatedRequestParams) -> ListToolsResult:
        page, cursor = self._page([t.definition for t in list(self._tools.values())], params.cursor)
        return ListToolsResult(tools=page, next_cursor=cursor)

    async def call_tool(self, params: CallToolRequestParams) -> CallToolResult:
        started = self._tool_call(params)
        if isinstance(started, CallToolResult):
            return started  # the arguments were refused
        return await self._run_tool(*started)

    async def _run_tool(self, entry: ToolEntry, kwargs: dict[str, Any]) -> CallToolResult:
        """Run a tool whose arguments are decoded, and make its result."""
        try:
            sig = entry.signature
            if sig.is_async and sig.context_param is None:
                # The common case (an async def without a Context) awaited right here: no
                # coroutine of _invoke's between, no label formatted for it.
                value = await entry.fn(**kwargs)
            else:
                value = await self._invoke(entry.fn, sig, entry.in_thread, kwargs, f"tool {entry.definition.name}")
        except Exception as exc:
            return self._tool_failed(entry, exc)
        return self._tool_result(entry, value)

    def call_tool_now(self, params: CallToolRequestParams) -> CallToolResult:
        """``call_tool`` without awaiting anything, for the session to call as it reads the
        request: the result of a tool declared ``blocking=False`` (or the error refusing
        the arguments of any tool); for any other tool, a partial making the coroutine that
        runs it, its arguments decoded (the session awaits it in the request's own task: no
        ``call_handler``, ``dispatch`` and ``call_tool`` coroutines in between, the same
        steps as ``call_tool``'s otherwise); :data:`NOT_NOW` for a task-capable tool (the
        tasks extension decides how it runs) and an unknown one (``call_tool`` says so)."""
        entry = self._tools.get(params.name)
        if entry is not None and entry.task is not None:
            return NOT_NOW  # type: ignore[no-any-return]
        started = self._tool_call(params, entry)
        if isinstance(started, CallToolResult):
            return started
        found, kwargs = started
        if not found.now:
            return partial(self._run_tool, found, kwargs)  # type: ignore[return-value]
        try:
            value = found.fn(**kwargs)
        except Exception as exc:
            return self._tool_failed(found, exc)
        return self._tool_result(found, value)

    def route(self, spec: MethodSpec) -> Route:
        """How the requests of ``spec``'s method are served, in either era, over any
        transport: the coroutine the method table names (``list_tools``, ``call_tool``,
        ...), what answers on the spot (``call_tool_now``: a subclass overriding ``call_tool``
        loses it, so that its override sees every call), the handler timeout, and every
        middleware around them. Made once per method."""
        found = self._routes.get(spec.method)
        if found is None:
            handler = getattr(self, spec.handler, None)
            run = handler if handler is not None else partial(_not_implemented, spec.method)
            now = None
            if spec.method == "tools/call" and type(self).call_tool is Server.call_tool:
                now = self.call_tool_now
            base = Route(run, now, runtime_class(spec), timeout=self.session_options["handler_timeout"])
            found = self._routes[spec.method] = self.wrap(spec.method, base)
        return found

    def wrap(self, method: str, base: Route) -> Route:
        """``base`` with every middleware around it (for the routes a connection or the
        stateless front serves themselves: ``initialize``, ``ping``, ``server/discover``,
        ``subscriptions/listen``, ``tasks/*``)."""
        if self.middleware_chain is None:
            return base
        run, now = self.middleware_chain.compose("server", method, base.run, base.now)
        return msgspec.structs.replace(base, run=run, now=now)

    async def dispatch(self, spec: MethodSpec, params: Any) -> Any:
        """Serve one request of ``spec``'s method with the request's context already set
        (``current_request``): its route's handler, middleware included (a task's tool call
        runs so, for the task's whole life)."""
        return await self.route(spec).run(params)

    def _tool_call(
        self, params: CallToolRequestParams, entry: ToolEntry | None = None
    ) -> tuple[ToolEntry, dict[str, Any]] | CallToolResult:
        """The tool and its decoded arguments, or the error result refusing them (``entry``:
        the tool, when the caller has just looked it up)."""
        if entry is None:
            entry = self._tools.get(params.name)
        if entry is None:
            raise McpError(INVALID_PARAMS, f"Unknown tool: {params.name}")
        arguments = params.arguments if params.arguments is not UNSET else None
        try:
            if entry.check_input is not None:
                entry.check_input(arguments or {})
            return entry, entry.signature.decode_arguments(arguments)
        except (ArgumentError, SchemaValidationError) as exc:
            return _tool_error(f"Invalid arguments for {params.name}: {exc}")

    def _tool_failed(self, entry: ToolEntry, exc: Exception) -> CallToolResult:
        name = entry.definition.name
        if isinstance(exc, InputRequired):
            raise exc  # the tool asked the client a question: the request answers with it
        if isinstance(exc, (ToolError, CapabilityError)):
            # A tool that needs sampling from a client without it failed, the call did not.
            return _tool_error(exc.message if isinstance(exc, McpError) else str(exc))
        if isinstance(exc, McpError):
            raise exc
        # The message may hold paths or secrets: it goes to the log, not to the peer.
        log.error("mcpgen: tool %s failed", name, exc_info=exc)
        return _tool_error(f"Tool {name} failed with an internal error ({type(exc).__name__})")

    def _tool_result(self, entry: ToolEntry, value: Any) -> CallToolResult:
        if isinstance(value, CallToolResult):
            return value
        if entry.signature.output_schema is None:
            if isinstance(value, dict):  # structured data without a declared schema
                return CallToolResult(
                    content=[TextContent(text=msgspec.json.encode(value).decode())],
                    structured_content=msgspec.to_builtins(value),
                )
            return CallToolResult(content=to_content(value))
        try:
            if entry.signature.dump is not None:  # a pydantic type: pydantic checks and dumps it
                value = entry.signature.dump(value)
            elif entry.returns is not None:
                value = msgspec.convert(msgspec.to_builtins(value), entry.returns)
        except msgspec.ValidationError as exc:
            log.error(
                "mcpgen: tool %s returned data that does not match its output schema: %s", entry.definition.name, exc
            )
            return _tool_error(f"Tool {entry.definition.name} returned invalid output: {exc}")
        data = msgspec.to_builtins(value)
        structured = {"result": data} if entry.signature.wrap_result else data
        text = msgspec.json.encode(structured).decode()
        return CallToolResult(content=[TextContent(text=text)], structured_content=structured)

    async def list_resources(self, params: PaginatedRequestParams) -> ListResourcesResult:
        listed = [r.definition for r in list(self._resources.values())]
        if self._skills is not None:  # each SKILL.md, as the files are now
            found = await self.threads.run(self._skills.resources, {}, Context.current(), "skills")
            listed += msgspec.convert(found, list[Resource])
        page, cursor = self._page(listed, params.cursor)
        return ListResourcesResult(resources=page, next_cursor=cursor)

    async def list_resource_templates(self, params: PaginatedRequestParams) -> ListResourceTemplatesResult:
        page, cursor = self._page([t.definition for t in list(self._templates)], params.cursor)
        return ListResourceTemplatesResult(resource_templates=page, next_cursor=cursor)

    async def read_resource(self, params: ReadResourceRequestParams) -> ReadResourceResult:
        uri = params.uri
        resource = self._resources.get(uri)
        if resource is not None:
            value = await self._explained(resource.fn, resource.signature, resource.in_thread, {}, f"resource {uri}")
            check_resource_value(uri, resource.signature, value)
            return ReadResourceResult(contents=to_contents(uri, value, resource.definition.mime_type))
        for template in self._templates:
            values = template.template.match(uri)
            if values is None or (not template.allow_traversal and _leaves_root(values)):
                continue
            try:
                kwargs = template.signature.decode_arguments(values)
            except ArgumentError:
                continue
            label = f"resource {uri}"
            value = await self._explained(template.fn, template.signature, template.in_thread, kwargs, label)
            check_resource_value(uri, template.signature, value)
            return ReadResourceResult(contents=to_contents(uri, value, template.definition.mime_type))
        raise ResourceNotFound(uri)

    async def subscribe(self, params: SubscribeRequestParams) -> dict[str, Any]:
        self._current_session().subscriptions.add(params.uri)
        return {}

    async def unsubscribe(self, params: UnsubscribeRequestParams) -> dict[str, Any]:
        self._current_session().subscriptions.discard(params.uri)
        return {}

    async def list_prompts(self, params: PaginatedRequestParams) -> ListPromptsResult:
        page, cursor = self._page([p.definition for p in list(self._prompts.values())], params.cursor)
        return ListPromptsResult(prompts=page, next_cursor=cursor)

    async def get_prompt(self, params: GetPromptRequestParams) -> GetPromptResult:
        entry = self._prompts.get(params.name)
        if entry is None:
            raise McpError(INVALID_PARAMS, f"Unknown prompt: {params.name}")
        arguments = params.arguments if params.arguments is not UNSET else None
        try:
            kwargs = entry.signature.decode_arguments(arguments)
        except ArgumentError as exc:
            raise McpError(INVALID_PARAMS, f"Invalid arguments for prompt {params.name}: {exc}") from None
        value = await self._explained(entry.fn, entry.signature, entry.in_thread, kwargs, f"prompt {params.name}")
        if isinstance(value, GetPromptResult):
            return value
        return GetPromptResult(messages=to_messages(value), description=entry.definition.description)

    async def complete(self, params: CompleteRequestParams) -> CompleteResult:
        ref = params.ref
        target = ref.name if isinstance(ref, PromptReference) else ref.uri
        completer = self._completers.get((ref.type, target, params.argument.name))
        values: list[str] = []
        if completer is not None:
            context = params.context.arguments if params.context is not UNSET else UNSET
            args = {"value": params.argument.value, "arguments": context if context is not UNSET else {}}
            if completer.in_thread:
                label = f"completer of {params.argument.name}"
                outcome = await self.threads.run(positional(completer.fn), args, Context.current(), label)
            else:
                outcome = completer.fn(*args.values())
            if inspect.isawaitable(outcome):
                outcome = await outcome
            values = list(outcome)
        return CompleteResult(
            completion=CompleteResultCompletion(values=values[:100], total=len(values), has_more=len(values) > 100)
        )

    async def set_level(self, params: SetLevelRequestParams) -> dict[str, Any]:
        return {}  # the session records the level

    # The skills extension (Server.skills): the catalog is read from disk, in the thread pool.

    async def list_skills(self, params: ListSkillsParams) -> dict[str, Any]:
        kwargs = {"cursor": params.cursor}
        found: dict[str, Any] = await self.threads.run(self._skill_set().list_page, kwargs, Context.current(), "skills")
        return found

    async def get_skill(self, params: GetSkillParams) -> dict[str, Any]:
        found: dict[str, Any] = await self.threads.run(
            self._skill_set().get, {"uri": params.uri}, Context.current(), "skills"
        )
        return found

    async def read_directory(self, params: ReadDirectoryParams) -> dict[str, Any]:
        kwargs = {"uri": params.uri, "cursor": params.cursor}
        found: dict[str, Any] = await self.threads.run(
            self._skill_set().read_directory, kwargs, Context.current(), "resources/directory/read"
        )
        return found

    def _skill_set(self) -> SkillSet:
        if self._skills is None:
            raise NotImplementedError("no skills are served")
        return self._skills

    # ------------------------------------------------------------ plumbing

    def _page(self, items: list[Any], cursor: str | Any) -> tuple[list[Any], Any]:
        start = 0
        if cursor is not UNSET:
            start = decode_cursor(cursor)
            if start > len(items):
                raise McpError(INVALID_PARAMS, "Invalid params: unknown cursor")
        end = start + self.page_size
        return items[start:end], (encode_cursor(end) if end < len(items) else UNSET)

    async def _invoke(
        self, fn: Callable[..., Any], sig: Signature, in_thread: bool, kwargs: dict[str, Any], label: str
    ) -> Any:
        """Call a handler: awaited, in the thread pool, or (``blocking=False``) right here."""
        if in_thread:
            context = Context.current()
            if sig.context_param is not None:
                kwargs[sig.context_param] = context
            return await self.threads.run(fn, kwargs, context, label)
        if sig.context_param is not None:
            kwargs[sig.context_param] = Context.current()
        if sig.is_async:
            return await fn(**kwargs)
        return fn(**kwargs)

    async def _explained(
        self, fn: Callable[..., Any], sig: Signature, in_thread: bool, kwargs: dict[str, Any], label: str
    ) -> Any:
        """:meth:`_invoke` for a resource or a prompt: what the function raises, unless an
        McpError, is answered -32603 naming the function and the exception's class (as a
        tool's failure is); its message may hold paths or secrets, so it goes to the log."""
        try:
            return await self._invoke(fn, sig, in_thread, kwargs, label)
        except (McpError, InputRequired):
            raise  # an answer (an error, or the stateless era's questions), not a crash
        except Exception as exc:
            log.error("mcpgen: %s failed", label, exc_info=exc)
            what = label[:1].upper() + label[1:]
            raise McpError(INTERNAL_ERROR, f"{what} failed with an internal error ({type(exc).__name__})") from None

    @staticmethod
    def _current_session() -> ServerSession:
        request = current_request.get()
        assert request is not None
        session: ServerSession = request.session
        return session

    async def serve(self, transport: Transport) -> None:
        """Serve one client over ``transport`` until it closes."""
        await running.serve(self, transport)

    async def serve_stdio(self) -> None:
        """Serve the client on this process's stdin/stdout (then stop the server's tasks)."""
        await running.serve_stdio(self)

    def http_app(self, path: str = "/mcp", **options: Any) -> McpHttpApp:
        """An ASGI app serving this server over Streamable HTTP at ``path`` (mount it in
        Starlette or FastAPI, or serve it with any ASGI server). Options: see
        :class:`~mcpgen.runtime.server.http_server.HttpOptions` (stateless, json_response,
        allowed_hosts, allowed_origins, max_body, session_idle_timeout, max_sessions, ...)."""
        return running.http_app(self, path, options)

    def run(
        self,
        transport: str = "stdio",
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        path: str = "/mcp",
        **options: Any,
    ) -> None:
        """Serve until stdin closes or SIGTERM (stdio), or serve HTTP with uvicorn
        (``transport="http"``; binds 127.0.0.1 unless told otherwise, ``port=0`` picks a
        free port; the URL served is printed to stderr). Without the ``http`` extra,
        ``"http"`` prints the one-line install hint and exits with status 2.

        Over HTTP, besides :meth:`http_app`'s options: ``header_timeout`` (10 s) and
        ``body_timeout`` (30 s) close a connection whose request arrives too slowly, and
        ``max_connections`` (1,000) closes one more connection at once. On SIGTERM or a
        first Ctrl-C the server stops accepting, waits up to ``shutdown_timeout`` (10 s) for
        the requests in progress (saying how many), then cancels them; a second Ctrl-C stops
        at once. A port in use or an address it cannot listen on: one line, exit status 2."""
        running.run(self, transport, host, port, path, options)


def _text(value: str | None) -> Any:
    return value if value else UNSET


async def _not_implemented(method: str, params: Any) -> Any:
    raise NotImplementedError(method)  # an extension's method whose handler was never defined


def _tool_error(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(text=message)], is_error=True)


def _leaves_root(values: dict[str, str | list[str]]) -> bool:
    """Whether any template variable decodes to a path that leaves its root."""
    return any(
        leaves_root(value) if isinstance(value, str) else any(leaves_root(item) for item in value)
        for value in values.values()
    )
