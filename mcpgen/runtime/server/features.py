"""A server as its connections, the stateless front, the HTTP endpoints and the runner see
it: its identity and capabilities, how each method is served (its route, middleware
included), its extensions, and the change notifications it sends.

:class:`~mcpgen.runtime.server.server.Server` is what users meet (decorators, ``run``,
configuration); it hands this object to everything that serves it. The protocol handlers
are :class:`~.handlers.Handlers`, over the registered :class:`~.catalog.Catalog`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import UNSET

from mcpgen.protocol.v2025_11_25 import (
    Implementation,
    InitializeRequestParams,
    InitializeResult,
    MethodSpec,
    ServerCapabilities,
)
from mcpgen.runtime.jsonrpc.capabilities import Declared
from mcpgen.runtime.jsonrpc.kernel import Route
from mcpgen.runtime.jsonrpc.session import runtime_class
from mcpgen.runtime.server.caching import CacheHint
from mcpgen.runtime.server.catalog import Catalog
from mcpgen.runtime.server.context import Context
from mcpgen.runtime.server.handlers import Handlers
from mcpgen.runtime.server.listen import ListenHub
from mcpgen.runtime.server.threads import ThreadPool
from mcpgen.runtime.shared.extension import Extension, declared_settings

if TYPE_CHECKING:
    from mcpgen.runtime.auth.bearer import BearerAuth
    from mcpgen.runtime.middleware.chain import Chain
    from mcpgen.runtime.server.session import ServerSession
    from mcpgen.runtime.server.stateless import StatelessServer
    from mcpgen.runtime.server.tasks import TaskManager, TaskStart, TaskSupport
    from mcpgen.runtime.stores.task_store import TaskStore

log = logging.getLogger("mcpgen")


class Features:
    """One server's features, for what serves it (see the module's docstring)."""

    def __init__(
        self,
        owner: Handlers,
        info: Implementation,
        *,
        instructions: str | None,
        page_size: int,
        session_options: dict[str, Any],
        max_message: int,
        threads: ThreadPool,
        state_key: bytes | str | None,
        cache: CacheHint,
        list_cache: dict[str, CacheHint],
        auth: BearerAuth | None,
        task_store: TaskStore | None,
    ) -> None:
        # The Server users made (what its lifespan is given, what its handlers are).
        self.owner = owner
        self.info = info
        self.instructions = instructions
        self.session_options = session_options
        self.max_message = max_message
        self.threads = threads
        self.state_key = state_key
        self.cache = cache
        self.list_cache = list_cache
        self.auth = auth
        self.catalog = Catalog(self.changed)
        # The protocol handlers: the Server's own (it inherits them; a subclass may wrap one).
        self.handlers: Handlers = owner
        self.handlers.init_handlers(self.catalog, threads, page_size)
        self.sessions: set[ServerSession] = set()
        self.listeners = ListenHub(self)
        # Extensions (SEP-2133): declared under capabilities.extensions in both eras, and
        # the requests they add (served in both eras, as the core's are).
        self.extensions: list[Extension] = []
        self.extension_methods: dict[str, MethodSpec] = {}
        self.handshake_methods: dict[str, MethodSpec] = {}  # those served in the handshake era too
        self.named_params: dict[str, str] = {}  # method -> the param Mcp-Name mirrors
        self._extension_handlers: dict[str, Callable[[Any], Any]] = {}
        # None without middleware: a route then pays nothing for it, and nothing is imported.
        self.middleware_chain: Chain | None = None
        self._routes: dict[str, Route] = {}  # method -> how it is served (see route())
        self._declared: Declared | None = None
        self._stateless: StatelessServer | None = None
        self._task_store = task_store
        self._tasks: TaskManager | None = None
        self.lifespan_state: Any = None  # what the server's lifespan yielded (Context.lifespan)
        if auth is not None:
            auth.attach(self.catalog)

    # ------------------------------------------------------------ capabilities

    def capabilities(self, era: str = "handshake") -> ServerCapabilities:
        """What the server declares in ``era`` (``initialize``, ``server/discover``)."""
        declared: dict[str, Any] = {
            "logging": {},
            "completions": {},
            "tools": {"listChanged": True},
            "resources": {"subscribe": True, "listChanged": True},
            "prompts": {"listChanged": True},
        }
        extensions = declared_settings(self.extensions, "server", era)
        if not extensions:
            return msgspec.convert(declared, ServerCapabilities)
        from mcpgen.runtime.shared.extensions import ExtendedServerCapabilities

        declared["extensions"] = extensions
        return msgspec.convert(declared, ExtendedServerCapabilities)

    @property
    def declared(self) -> Declared:
        """What :meth:`capabilities` declares, for lookups by path (``tools.listChanged``)."""
        if self._declared is None:
            self._declared = Declared(self.capabilities())
        return self._declared

    def declares(self, path: str) -> bool:
        return self.declared.has(path)

    async def initialize(self, params: InitializeRequestParams) -> InitializeResult:
        return InitializeResult(
            protocol_version=params.protocol_version,
            capabilities=self.capabilities(),
            server_info=self.info,
            instructions=self.instructions or UNSET,
        )

    # ------------------------------------------------------------ routes

    def route(self, spec: MethodSpec) -> Route:
        """How the requests of ``spec``'s method are served, in either era, over any
        transport: its handler (an extension's, else the server's own, else the
        :class:`~.handlers.Handlers`'), what answers on the spot (``call_tool_now``; a
        Server subclass overriding ``call_tool`` loses it, so that its override sees every
        call), the handler timeout, and every middleware around them. Made once per method."""
        found = self._routes.get(spec.method)
        if found is None:
            handler = self._extension_handlers.get(spec.method) or getattr(self.handlers, spec.handler, None)
            run = handler if handler is not None else partial(_not_implemented, spec.method)
            now = None
            if spec.method == "tools/call" and type(self.handlers).call_tool is Handlers.call_tool:
                now = self.handlers.call_tool_now
            base = Route(run, now, runtime_class(spec), timeout=self.session_options["handler_timeout"])
            found = self._routes[spec.method] = self.wrap(spec.method, base)
        return found

    def wrap(self, method: str, base: Route) -> Route:
        """``base`` with every middleware around it (for the routes a connection or the
        stateless front serves themselves: ``initialize``, ``ping``, ``server/discover``,
        ``subscriptions/listen``)."""
        if self.middleware_chain is None:
            return base
        run, now = self.middleware_chain.compose("server", method, base.run, base.now)
        return msgspec.structs.replace(base, run=run, now=now)

    def intercepted(self, method: str, route: Route, era: str) -> Route:
        """``route`` as the extensions of ``era`` change it (outside any middleware)."""
        for extension in self.extensions:
            if era in extension.eras:
                route = extension.intercept(method, route, era)
        return route

    async def dispatch(self, spec: MethodSpec, params: Any) -> Any:
        """Serve one request of ``spec``'s method with the request's context already set
        (``current_request``): its route's handler, middleware included (a task's tool call
        runs so, for the task's whole life)."""
        return await self.route(spec).run(params)

    def use_middleware(self, chain: Chain) -> None:
        self.middleware_chain = chain
        self._forget_routes()

    def _forget_routes(self) -> None:
        self._routes.clear()  # made again on next use
        if self._stateless is not None:
            self._stateless.forget_routes()

    # ------------------------------------------------------------ extensions

    def add_extension(self, extension: Extension) -> None:
        """Declare ``extension`` and serve the requests it adds (in both eras)."""
        if any(found.identifier == extension.identifier for found in self.extensions):
            raise ValueError(f"the extension {extension.identifier} is added already")
        self.extensions.append(extension)
        self._declared = None
        for method in extension.methods():
            self._extension_handlers[method.method] = method.handler
            if method.named is not None:
                self.named_params[method.method] = method.named
            self.add_extension_method(method.spec(), handshake="handshake" in extension.eras)

    def configure(self, extension: Extension, settings: dict[str, Any]) -> None:
        """Declare ``extension`` with these settings from now on."""
        extension.configure(settings)
        self._declared = None

    def extension(self, identifier: str) -> Extension | None:
        return next((found for found in self.extensions if found.identifier == identifier), None)

    def add_extension_method(self, spec: MethodSpec, *, handshake: bool = True) -> None:
        self.extension_methods[spec.method] = spec
        if handshake:
            self.handshake_methods[spec.method] = spec
        self._routes.pop(spec.method, None)
        if self._stateless is not None:
            self._stateless.table[spec.method] = spec
            self._stateless.forget_routes()

    # ------------------------------------------------------------ the stateless era, tasks

    @property
    def stateless(self) -> StatelessServer:
        """The stateless-era front (made on the first such request: a server that only ever
        meets handshake-era clients never loads the 2026-07-28 bindings)."""
        if self._stateless is None:
            from mcpgen.runtime.server.stateless import StatelessServer

            self._stateless = StatelessServer(self)
        return self._stateless

    def cache_hint(self, method: str, params: Any = None) -> CacheHint:
        """The caching hint of a cacheable result: the resource's own for a read, else the
        method's from ``list_cache``, else the server's default."""
        return self.catalog.cache_hint(method, params, self.list_cache.get(method, self.cache))

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

    def task_support(self, name: str) -> tuple[TaskSupport, TaskStart] | None:
        return self.catalog.task_support(name)

    def tool_headers(self, name: str) -> dict[str, str]:
        return self.catalog.tool_headers(name)

    # ------------------------------------------------------------ change notifications

    def changed(self, feature: str) -> None:
        """``feature`` ("tools", "resources", "prompts") changed: tell who follows it."""
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
        self.listeners.list_changed(feature)
        method = f"notifications/{feature}/list_changed"
        for session in list(self.sessions):
            if session.state == "ready" and session.own_caps.has(f"{feature}.listChanged"):
                session.spawn(session.send_notification(method, {}))

    async def notify_resource_updated(self, uri: str) -> None:
        """Tell every client subscribed to ``uri`` that it changed."""
        self.listeners.resource_updated(uri)
        for session in list(self.sessions):
            if uri in session.subscriptions:
                await session.send_notification("notifications/resources/updated", {"uri": uri})


async def _not_implemented(method: str, params: Any) -> Any:
    raise NotImplementedError(method)  # an extension's method whose handler was never defined
