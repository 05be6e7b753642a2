"""The server API users meet: decorators, configuration and ``run``.

    server = Server("demo")

    @server.tool          # or @server.tool(name=..., title=..., ...)
    def add(a: int, b: int) -> int:
        "Add two numbers."
        return a + b

    if __name__ == "__main__":
        server.run()      # stdio; server.run("http") for Streamable HTTP

One :class:`Server` serves many sessions at once, in both protocol eras, from the same
handlers (:class:`~.handlers.Handlers`, which also says where each kind of function runs).
What it offers is registered in its :class:`~.catalog.Catalog`; what serves it (connections,
the stateless front, the HTTP endpoints) sees its :class:`~.features.Features`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, overload

from msgspec import UNSET

from mcpgen.protocol.v2025_11_25 import Icon, Implementation, MethodSpec, ServerCapabilities, ToolAnnotations
from mcpgen.runtime.jsonrpc.transport import Transport
from mcpgen.runtime.server import running
from mcpgen.runtime.server.caching import CacheHint
from mcpgen.runtime.server.features import Features
from mcpgen.runtime.server.handlers import Handlers
from mcpgen.runtime.server.input_required import checked_state_key
from mcpgen.runtime.server.lifespan import LifespanRunner
from mcpgen.runtime.server.registry import ToolError, split_first
from mcpgen.runtime.server.threads import DEFAULT_MAX_THREADS, ThreadPool
from mcpgen.runtime.shared.extension import Extension, declared_settings
from mcpgen.runtime.shared.meta import TASKS_EXTENSION
from mcpgen.runtime.versions import served

if TYPE_CHECKING:
    from mcpgen.protocol.ext_apps import McpUiResourceCsp, McpUiResourcePermissions
    from mcpgen.runtime.auth.bearer import BearerAuth
    from mcpgen.runtime.middleware.chain import Middleware, RequestHook
    from mcpgen.runtime.server.apps import HtmlSource, Visibility
    from mcpgen.runtime.server.http_server import McpHttpApp
    from mcpgen.runtime.server.session import ServerSession
    from mcpgen.runtime.server.tasks import TaskManager, TaskStart, TaskSupport
    from mcpgen.runtime.stores.task_store import TaskStore

F = TypeVar("F", bound=Callable[..., Any])
M = TypeVar("M", bound="Middleware | RequestHook")
E = TypeVar("E", bound=Extension)
Lifespan = Callable[["Server"], AbstractAsyncContextManager[Any]]

__all__ = ["Server", "ToolError"]


class Server(Handlers):
    """An MCP server built from decorated functions, serving both protocol eras (its protocol
    handlers are :class:`~.handlers.Handlers`', which it inherits)."""

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
        extensions: Sequence[Extension] = (),
        versions: Sequence[str] | None = None,
    ) -> None:
        """``request_timeout`` bounds our requests to the client (sampling, elicitation);
        ``handler_timeout`` bounds each handler that runs in a task (-32603 when exceeded;
        a handler in a worker thread runs on, unheard, see
        :mod:`mcpgen.runtime.server.threads`); at most ``max_concurrency`` requests of one
        session run at once, four times as many wait in order, and more are refused
        (-32000, "server busy"); ``max_message`` bytes is the largest frame accepted over
        stdio; ``max_threads`` worker threads, for all sessions together, run the plain
        ``def`` handlers (calls beyond that wait for a free worker).

        Stateless era (2026-07-28): ``state_key`` seals the ``requestState`` of a request
        that asks the client for input (default: ``$MCPGEN_STATE_KEY``, else a random key
        of this process; several workers behind one endpoint need the same key);
        ``cache`` is the caching hint of every cacheable result (default: ``ttl_ms=0``,
        ``"private"``), ``list_cache`` overrides it per method (``"tools/list"``,
        ``"server/discover"``, ...), and a resource may carry its own; ``task_store`` keeps
        the tasks of task-capable tools (default: in this process; see
        :mod:`mcpgen.runtime.server.tasks`).

        ``middleware`` wraps every request (outermost first; see :meth:`middleware` and
        :mod:`mcpgen.runtime.middleware`); ``extensions`` are served as :meth:`extend` does;
        ``versions`` limits the protocol versions served (``["2025-11-25"]``: the handshake era
        only), the others refused as a server that does not speak them refuses them."""
        info = Implementation(
            name=name, version=version, title=title or UNSET, website_url=website_url or UNSET, icons=icons or UNSET
        )
        self.features = Features(
            self,
            info,
            instructions=instructions,
            page_size=page_size,
            session_options={
                "request_timeout": request_timeout,
                "handler_timeout": handler_timeout,
                "max_concurrency": max_concurrency,
            },
            max_message=max_message,
            threads=ThreadPool(max_threads),
            state_key=checked_state_key(state_key if state_key is not None else os.environ.get("MCPGEN_STATE_KEY")),
            cache=cache if cache is not None else CacheHint(),
            list_cache=dict(list_cache or {}),
            auth=auth,
            task_store=task_store,
            versions=served(versions),
        )
        self.lifespan_runner: LifespanRunner | None = None  # see lifespan()
        for item in middleware or ():
            self.middleware(item)
        for extension in extensions:
            self.extend(extension)

    # ------------------------------------------------------------ what the server is

    @property
    def info(self) -> Implementation:
        """The server's identity (``serverInfo``)."""
        return self.features.info

    @property
    def instructions(self) -> str | None:
        return self.features.instructions

    @property
    def auth(self) -> BearerAuth | None:
        """The OAuth protection it was made with (``Server(auth=...)``), or None."""
        return self.features.auth

    @property
    def sessions(self) -> set[ServerSession]:
        """The handshake-era sessions open now."""
        return self.features.sessions

    @property
    def tasks(self) -> TaskManager:
        """The tasks extension's manager (see :mod:`mcpgen.runtime.server.tasks`)."""
        return self.features.tasks

    def capabilities(self) -> ServerCapabilities:
        """What the server declares (``initialize``, ``server/discover``)."""
        return self.features.capabilities()

    @property
    def extensions(self) -> dict[str, dict[str, Any]]:
        """The extensions declared under ``capabilities.extensions``, with their settings."""
        return declared_settings(self.features.extensions, "server")

    # ------------------------------------------------------------ middleware, extensions, lifespan

    def middleware(self, item: M) -> M:
        """Add a middleware (a :class:`~mcpgen.runtime.middleware.chain.Middleware`, or an
        ``async def hook(call, call_next)``, or a plain ``def`` one that never waits),
        innermost of those added so far; usable as a decorator. Add them before serving: a
        session that has started keeps the routes it made."""
        from mcpgen.runtime.middleware.chain import Chain

        chain = self.features.middleware_chain or Chain()
        chain.add(item)
        self.features.use_middleware(chain)
        return item

    def extend(self, extension: E) -> E:
        """Serve an extension (SEP-2133; see :class:`~mcpgen.runtime.shared.extension.Extension`):
        declare it under ``capabilities.extensions`` in both eras, serve the requests it
        adds in both eras, and let it register what it serves."""
        self.features.add_extension(extension)
        extension.attach(self)
        return extension

    def declare_extension(self, identifier: str, settings: dict[str, Any] | None = None) -> None:
        """Declare an extension under ``capabilities.extensions`` (its settings inline)."""
        found = self.features.extension(identifier)
        if found is None:
            self.extend(Extension(identifier, settings or {}))
        else:
            self.features.configure(found, settings or {})

    def add_extension_method(self, spec: MethodSpec) -> None:
        """Serve a request an extension adds, in both eras: ``spec.handler`` names this
        server's coroutine for it, ``spec.params_type`` decodes its params (an
        :class:`~mcpgen.runtime.shared.extension.Extension` says both at once)."""
        self.features.add_extension_method(spec)

    def lifespan(self, fn: Lifespan) -> Lifespan:
        """Decorate an async context manager factory run once around serving (stdio, HTTP,
        each worker): set-up before the first request, clean-up after the last. What it
        yields is ``Context.lifespan`` in every handler::

            @server.lifespan
            @contextlib.asynccontextmanager
            async def resources(server):
                async with make_pool() as pool:
                    yield {"pool": pool}
        """
        self.lifespan_runner = LifespanRunner(fn, self, self.features)
        return fn

    # ------------------------------------------------------------ tools

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
            from mcpgen.runtime.server.apps import ensure_apps, link_tool

            meta = link_tool(meta, ui, visibility)
            ensure_apps(self)
        if task not in (None, "optional", "required") or task_start not in ("call", "explicit"):
            raise ValueError("task must be 'optional', 'required' or None, task_start 'call' or 'explicit'")
        if task is not None and self.features.extension(TASKS_EXTENSION) is None:
            from mcpgen.runtime.server.tasks import Tasks

            self.extend(Tasks())

        def register(fn: F) -> F:
            self.catalog.add_tool(
                fn, name, title=title, description=description, annotations=annotations, icons=icons, meta=meta,
                input_schema=input_schema, blocking=blocking, scopes=scopes, task=task, task_start=task_start,
            )  # fmt: skip
            return fn

        return register(fn) if fn is not None else register

    def remove_tool(self, name: str) -> None:
        self.catalog.remove("tools", name)

    # ------------------------------------------------------------ resources

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
        for :meth:`tool`; ``cache``: the caching hint of its reads (stateless era). Without
        ``mime_type``, a ``-> str`` function's resource is ``text/plain``."""
        fn, given = split_first(uri, "resource", "its URI", optional=False)

        def register(fn: F) -> F:
            self.catalog.add_resource(
                fn, given, name=name, title=title, description=description, mime_type=mime_type, size=size,
                icons=icons, blocking=blocking, cache=cache, scopes=scopes, meta=meta,
            )  # fmt: skip
            return fn

        return register(fn) if fn is not None else register

    def remove_resource(self, uri: str) -> None:
        self.catalog.remove("resources", uri)

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
        from mcpgen.runtime.server.apps import check_ui_uri, ensure_apps, resource_meta, ui_reader
        from mcpgen.runtime.shared.meta import UI_MIME

        check_ui_uri(uri)
        meta = resource_meta(csp, permissions, domain, prefers_border)
        read, blocks = ui_reader(uri, html, meta)
        name = name or uri.removeprefix("ui://")
        self.catalog.add_resource(read, uri, name=name, title=title, description=description, mime_type=UI_MIME,
                                  blocking=blocks, cache=cache, meta=meta)  # fmt: skip
        ensure_apps(self)

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
            self.catalog.add_template(
                fn, given, name=name, title=title, description=description, mime_type=mime_type, blocking=blocking,
                scopes=scopes, allow_traversal=allow_traversal,
            )  # fmt: skip
            return fn

        return register(fn) if fn is not None else register

    def directory(
        self, root: str | os.PathLike[str], *, uri_prefix: str = "file:///", name: str = "files", listed: bool = True
    ) -> None:
        """Serve the files under ``root`` as resources ``<uri_prefix><relative path>``
        (a resource template, and each file listed when ``listed``). Paths that would leave
        ``root`` (``..``, absolute, symlinks pointing out) are answered "not found"."""
        self.catalog.add_directory(Path(root), uri_prefix, name, listed)

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
        from mcpgen.runtime.server.skills import serve_skills

        serve_skills(self, root, prefix, directory_read, page_size or self.page_size)

    # ------------------------------------------------------------ prompts, completion

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
            self.catalog.add_prompt(
                fn, name, title=title, description=description, icons=icons, blocking=blocking, scopes=scopes
            )
            return fn

        return register(fn) if fn is not None else register

    def remove_prompt(self, name: str) -> None:
        self.catalog.remove("prompts", name)

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
            self.catalog.add_completer(fn, key, blocking)  # type: ignore[arg-type]
            return fn

        return register

    def mount(self, other: Server, namespace: str | None = None) -> None:
        """Serve ``other``'s tools, resources, prompts and completions as this server's, live,
        named under ``namespace`` (``ns_tool``, ``scheme://ns/path``; see :mod:`.mount`)."""
        from mcpgen.runtime.server.mount import mount

        mount(self, other, namespace)

    # ------------------------------------------------------------ notifications

    async def notify_resource_updated(self, uri: str) -> None:
        """Tell every client subscribed to ``uri`` that it changed."""
        await self.features.notify_resource_updated(uri)

    # ------------------------------------------------------------ serving

    async def serve(self, transport: Transport) -> None:
        """Serve one client over ``transport`` until it closes."""
        await running.serve(self.features, transport, self.lifespan_runner)

    async def serve_stdio(self) -> None:
        """Serve the client on this process's stdin/stdout (then stop the server's tasks)."""
        await running.serve_stdio(self.features, self.lifespan_runner)

    async def stop_tasks(self) -> None:
        """Stop the tasks this process runs and close the task store."""
        await self.features.stop_tasks()

    def http_app(self, path: str = "/mcp", **options: Any) -> McpHttpApp:
        """An ASGI app serving this server over Streamable HTTP at ``path`` (mount it in
        Starlette or FastAPI, or serve it with any ASGI server). Options: see
        :class:`~mcpgen.runtime.server.http_server.HttpOptions` (sessionless, json_response,
        allowed_hosts, allowed_origins, max_body, session_idle_timeout, max_sessions, ...)."""
        return running.http_app(self.features, path, options, self.lifespan_runner)

    def run(
        self,
        transport: str | running.Runner = "stdio",
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        path: str = "/mcp",
        uds: str | None = None,
        **options: Any,
    ) -> None:
        """Serve until stdin closes or SIGTERM (stdio), or serve HTTP with uvicorn
        (``transport="http"``; binds 127.0.0.1 unless told otherwise, ``port=0`` picks a
        free port; ``uds=PATH`` listens on that Unix domain socket instead; the URL served is
        printed to stderr), or a :class:`~mcpgen.runtime.server.running.Runner`. Without
        the ``http`` extra, ``"http"`` prints the install hint and exits with status 2.

        Over HTTP, besides :meth:`http_app`'s options: ``header_timeout`` (10 s) and
        ``body_timeout`` (30 s) close a connection whose request arrives too slowly,
        ``max_head`` (64 KiB) answers a longer request head 431, and ``max_connections``
        (1,000) closes one more connection at once. A port in use or an address it cannot
        listen on: one line, exit status 2. Both: on SIGTERM (or a first Ctrl-C) the requests
        in progress get ``shutdown_timeout`` (10 s) to finish, then are cancelled (over
        stdio, answered with an error, and the exit status is 1); Python's garbage collector
        is tuned for serving unless told ``tune_gc=False``."""
        running.run(self, transport, host, port, path, uds, options)
