"""The friendly client API.

    async with Client.stdio("python", "server.py") as client:
        tools = await client.list_tools()
        result = await client.call_tool("add", {"a": 1, "b": 2})

``Client(server)`` connects to an in-process :class:`~mcpgen.runtime.server.server.Server` for
tests. The generated typed calls stay at hand as ``client.session`` (a ``ClientCalls``).

Either protocol era: ``era="auto"`` (the default) probes with ``server/discover`` and
speaks the stateless era (2026-07-28) to a server that proves modern, else falls back to
``initialize``; ``era="handshake"`` or ``"stateless"`` pins the era, and a version string
(``"2025-06-18"``, ``"2026-07-28"``) pins that version. The verdict is kept per HTTP
endpoint for the life of the process (a stdio server is probed once per process it runs
in). The same calls work in both eras: in the stateless era the server's questions
(sampling, elicitation, roots) are answered by the same handlers and the request retried,
list and read results are cached as their ``ttlMs`` allows (``cache=False`` turns that
off), ``set_logging_level`` sets the level each request asks for, ``ping`` is a fresh
``server/discover``, and ``subscribe``/``on_notification`` are served by a
``subscriptions/listen`` stream. :meth:`Client.listen` follows changes in either era.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec
from msgspec import UNSET

from mcpgen.protocol.v2025_11_25 import (
    CallToolResult,
    ClientCapabilities,
    ClientHandlers,
    CompleteResult,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitRequestURLParams,
    ElicitResult,
    GetPromptResult,
    Implementation,
    InitializeResult,
    ListRootsResult,
    LoggingLevel,
    LoggingMessageNotificationParams,
    Prompt,
    PromptReference,
    ReadResourceResult,
    RequestParams,
    Resource,
    ResourceTemplate,
    ResourceTemplateReference,
    Root,
    Tool,
)
from mcpgen.runtime.client import era as eras
from mcpgen.runtime.client.handshake_tasks import HandshakeTaskHandle, open_handshake_task
from mcpgen.runtime.client.handshake_tasks import offered as handshake_tasks_offered
from mcpgen.runtime.client.listen import Listener, subscription_filter
from mcpgen.runtime.client.session import ClientSession
from mcpgen.runtime.client.skills import (
    DirectoryPage,
    LoadedSkill,
    SkillEntry,
    SkillResult,
    SkillsPage,
)
from mcpgen.runtime.client.skills import load as load_skill
from mcpgen.runtime.client.skills import load_file as load_skill_file
from mcpgen.runtime.client.stateless import StatelessCallToolResult
from mcpgen.runtime.client.tasks import (
    TASKS_META,
    StatusCallback,
    TaskCancelled,
    TaskFailed,
    TaskHandle,
    TaskRequired,
    TaskStatus,
    TasksUnavailable,
    names_tasks,
    open_task,
    watch_progress,
)
from mcpgen.runtime.errors import HEADER_MISMATCH, INVALID_PARAMS, METHOD_NOT_FOUND, McpError
from mcpgen.runtime.extras import require
from mcpgen.runtime.jsonrpc.session import ProgressCallback
from mcpgen.runtime.jsonrpc.transport import Servable, Transport, memory_pair
from mcpgen.runtime.shared.files import check_root_uri
from mcpgen.runtime.shared.headers import annotated_params, render
from mcpgen.runtime.shared.jsonschema import SchemaValidationError, compile_schema
from mcpgen.version import __version__

if TYPE_CHECKING:
    import httpx

    from mcpgen.runtime.client.apps import Interface, UiTool
    from mcpgen.runtime.middleware.chain import Chain, Middleware, RequestHook
    from mcpgen.runtime.shared.extension import Extension


log = logging.getLogger("mcpgen")
T = TypeVar("T")
DEFAULT_ERA = "auto"
"""The era a Client speaks unless told (``era=``): probe, then speak what the server
proves it speaks."""
SamplingHandler = Callable[[CreateMessageRequestParams], Awaitable[CreateMessageResult]]
ElicitationHandler = Callable[[ElicitRequestParams], Awaitable[ElicitResult]]
RootsProvider = Callable[[], Awaitable[list[Root]]]
NotificationHandler = Callable[[str, Any], Awaitable[None] | None]
LogHandler = Callable[[LoggingMessageNotificationParams], Awaitable[None] | None]


class OutputSchemaError(McpError):
    """A tool's structuredContent does not match the outputSchema it declared."""


class _Handlers(ClientHandlers):
    """Routes the server's requests to the callbacks the client was given."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def create_message(self, params: CreateMessageRequestParams) -> CreateMessageResult:
        if self.client.sampling is None:
            raise McpError(
                METHOD_NOT_FOUND, "Method not found: sampling/createMessage (this client declared no sampling)"
            )
        if params.tools is not UNSET and not self.client.sampling_tools:
            raise McpError(INVALID_PARAMS, "this client did not declare sampling.tools")
        return await self.client.sampling(params)

    async def elicit(self, params: ElicitRequestParams) -> ElicitResult:
        if self.client.elicitation is None:
            raise McpError(
                METHOD_NOT_FOUND, "Method not found: elicitation/create (this client declared no elicitation)"
            )
        mode = "url" if isinstance(params, ElicitRequestURLParams) else "form"
        if mode not in self.client.elicitation_modes:
            raise McpError(INVALID_PARAMS, f"this client does not support {mode}-mode elicitation")
        return await self.client.elicitation(params)

    async def list_roots(self, params: RequestParams) -> ListRootsResult:
        roots = self.client.roots
        if roots is None:
            raise McpError(METHOD_NOT_FOUND, "Method not found: roots/list (no roots declared)")
        listed = await roots() if callable(roots) else list(roots)
        for root in listed:
            check_root_uri(root.uri)
        return ListRootsResult(roots=listed)

    async def on_logging_message(self, params: LoggingMessageNotificationParams) -> None:
        if self.client.on_log is not None:
            outcome = self.client.on_log(params)
            if outcome is not None:
                await outcome


class Client:
    """A connection to one MCP server, opened by ``async with``."""

    def __init__(
        self,
        server: Servable | Transport | None = None,
        *,
        connect: Callable[[], Awaitable[Transport]] | None = None,
        name: str = "mcpgen",
        version: str = __version__,
        sampling: SamplingHandler | None = None,
        sampling_tools: bool = False,
        elicitation: ElicitationHandler | None = None,
        elicitation_modes: Sequence[str] = ("form", "url"),
        roots: Sequence[Root] | RootsProvider | None = None,
        on_notification: NotificationHandler | None = None,
        on_log: LogHandler | None = None,
        request_timeout: float | None = 60.0,
        check_output: bool = True,
        era: str = DEFAULT_ERA,
        cache: bool = True,
        probe_timeout: float | None = None,
        apps: bool = False,
        extensions: dict[str, dict[str, Any]] | Sequence[Extension] | None = None,
        middleware: Sequence[Middleware | RequestHook] | None = None,
    ) -> None:
        """``server``: a Server to connect to in process, or a transport already open to one
        (any :class:`~mcpgen.runtime.jsonrpc.transport.Transport`); ``connect``: a coroutine
        function opening one (``Client.stdio``, ``Client.http`` and ``Client.sse`` give it).
        ``apps=True`` declares MCP Apps (``io.modelcontextprotocol/ui`` with HTML
        interfaces: this client is a host that renders them); ``extensions`` declares
        extensions (SEP-2133): :class:`~mcpgen.runtime.shared.extension.Extension` objects
        (their ``client_settings``), or a dict of identifier -> settings."""
        if (server is None) == (connect is None):
            raise TypeError("give a Server to connect to in-process, or use Client.stdio(...)")
        if server is not None and not hasattr(server, "serve") and hasattr(server, "receive"):
            opened: Any = server  # a transport: connect through it as it is

            async def through() -> Transport:
                return opened  # type: ignore[no-any-return]

            server, connect = None, through
        self._server: Servable | None = server  # type: ignore[assignment]  # a Transport was turned into connect
        self._connect = connect
        self.info = Implementation(name=name, version=version)
        self.sampling = sampling
        self.sampling_tools = sampling_tools
        self.elicitation = elicitation
        self.elicitation_modes = tuple(elicitation_modes)
        if roots is not None and not callable(roots):
            for root in roots:
                check_root_uri(root.uri)
        self.roots = roots
        self.on_notification = on_notification
        self.on_log = on_log
        self.request_timeout = request_timeout
        self.check_output = check_output
        self._session: ClientSession | None = None
        self._tasks: list[asyncio.Task[Any]] = []
        self._output_checks: dict[str, Callable[[Any], None]] = {}
        self.initialize_result: InitializeResult | None = None
        self.era = era
        self.cache = cache
        self.probe_timeout = probe_timeout
        self._tool_headers: dict[str, dict[str, str]] = {}  # tool -> argument -> header name
        self._subscribed: list[str] = []  # URIs subscribe() asked for
        self._background: tuple[asyncio.Task[Any], Listener] | None = None
        self._handshake_listeners: set[Listener] = set()
        if isinstance(extensions, dict) or extensions is None:
            self.extensions = dict(extensions or {})
        else:
            from mcpgen.runtime.shared.extension import declared_settings

            self.extensions = declared_settings(list(extensions), "client")
        if apps:
            from mcpgen.runtime.client.apps import UI_SETTINGS
            from mcpgen.runtime.shared.meta import UI_EXTENSION

            self.extensions[UI_EXTENSION] = UI_SETTINGS
        # Every outgoing request passes through these, outermost first (None: no chain, no import).
        self.middleware_chain: Chain | None = None
        if middleware:
            from mcpgen.runtime.middleware.chain import Chain

            self.middleware_chain = Chain(middleware)

    @classmethod
    def stdio(
        cls,
        command: str,
        *args: str,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        on_stderr: Callable[[str], None] | None = None,
        **options: Any,
    ) -> Client:
        """A client for a server started as ``command args...`` and spoken to over stdio.
        The server's stderr goes to ours unless ``on_stderr`` takes its lines; a server
        that exits before answering raises :class:`~mcpgen.runtime.errors.ServerExited`
        with its exit status and last stderr lines."""

        async def connect() -> Transport:
            from mcpgen.runtime.transports.stdio import ProcessTransport

            return await ProcessTransport.spawn(command, args, env=env, cwd=cwd, on_stderr=on_stderr)

        return cls(connect=connect, **options)

    @classmethod
    def http(
        cls,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        auth: httpx.Auth | None = None,
        standalone_stream: bool = True,
        uds: str | None = None,
        **options: Any,
    ) -> Client:
        """A client for a server at a Streamable HTTP endpoint (``http://host/mcp``);
        ``auth=OAuthClient(...)`` authorizes with OAuth 2.1 when the server asks; ``uds``:
        reach it through that Unix domain socket (``Client.http("http://localhost/mcp",
        uds=PATH)``). Without the ``http`` extra this raises
        :class:`~mcpgen.runtime.extras.MissingExtra` (a ``ModuleNotFoundError``) whose message
        is the one-line install hint."""
        require("httpx", "http", "Client.http")

        async def connect() -> Transport:
            from mcpgen.runtime.transports.http_client import HttpTransport

            return HttpTransport(url, headers=headers, auth=auth, standalone_stream=standalone_stream, uds=uds)

        return cls(connect=connect, **options)

    @classmethod
    def sse(cls, url: str, *, headers: dict[str, str] | None = None, **options: Any) -> Client:
        """A client for a server speaking the 2024-11-05 HTTP+SSE transport (``.../sse``);
        without the ``http`` extra, raises as :meth:`http` does. "auto" speaks the handshake
        era there at once: the stateless era has no HTTP+SSE binding, so there is nothing
        to probe for (the transport says so: :mod:`mcpgen.runtime.client.era`)."""
        require("httpx", "http", "Client.sse")
        from mcpgen.runtime.transports.legacy_sse_client import LegacySseTransport

        if options.get("era", DEFAULT_ERA) == eras.AUTO:
            options["era"] = LegacySseTransport.only_era

        async def connect() -> Transport:
            return await LegacySseTransport.connect(url, headers=headers)

        return cls(connect=connect, **options)

    # ------------------------------------------------------------ connection

    def capabilities(self) -> ClientCapabilities:
        caps: dict[str, Any] = {}
        if self.sampling is not None:
            caps["sampling"] = {"tools": {}} if self.sampling_tools else {}
        if self.elicitation is not None:
            caps["elicitation"] = {mode: {} for mode in self.elicitation_modes}
        if self.roots is not None:
            caps["roots"] = {"listChanged": True}
        if self.extensions:
            from mcpgen.runtime.shared.extensions import ExtendedClientCapabilities

            caps["extensions"] = self.extensions
            return msgspec.convert(caps, ExtendedClientCapabilities)
        return msgspec.convert(caps, ClientCapabilities)

    async def __aenter__(self) -> Client:
        await self.open()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def open(self) -> InitializeResult:
        transport = await self._open_transport()
        session = ClientSession(transport, _Handlers(self), request_timeout=self.request_timeout)
        session.use_middleware(self.middleware_chain)
        if self.on_notification is not None:
            session.add_notification_listener(self.on_notification)
        session.add_notification_listener(self._to_listeners)
        if hasattr(transport, "param_headers"):  # e.g. HTTP: Mcp-Param-* headers of a tool's arguments
            transport.param_headers = self._param_headers
        self._session = session
        self._tasks.append(asyncio.get_running_loop().create_task(session.run()))
        endpoint = session.abilities.url
        try:
            self.initialize_result = await session.connect(
                self.capabilities(),
                self.info,
                self.era,
                known_era=session.abilities.only_era or eras.known(endpoint),
                probe_timeout=eras.probe_patience(self.probe_timeout, session.abilities.url),
                cache=self.cache,
            )
            eras.remember(endpoint, self.era, session.era, session.probe_timed_out)
            if session.modern is not None and self.on_log is not None:
                session.modern.log_level = "debug"  # a log handler wants the logs (the level can be raised)
            if session.era == "stateless" and self.on_notification is not None:
                await self._restart_background()
        except ConnectionError as exc:
            # A stdio server that died on start: say how (exit status, last stderr lines)
            # rather than only that the connection closed.
            explain = session.abilities.exit_error
            reason: ConnectionError | None = await explain() if explain is not None else None
            await self.close()
            if reason is not None:
                raise reason from exc
            raise
        except BaseException:
            await self.close()
            raise
        return self.initialize_result

    async def _open_transport(self) -> Transport:
        if self._connect is not None:
            return await self._connect()
        assert self._server is not None
        ours, theirs = memory_pair()
        self._tasks.append(asyncio.get_running_loop().create_task(self._server.serve(theirs)))
        return ours

    async def close(self) -> None:
        if self._background is not None:
            self._background[0].cancel()
            self._background = None
        if self._session is not None:
            await self._session.close()
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=5)
            self._tasks.clear()

    @property
    def session(self) -> ClientSession:
        """The low-level session: every generated typed call (``ClientCalls``)."""
        if self._session is None:
            raise RuntimeError("the client is not connected: use `async with client:`")
        return self._session

    # ------------------------------------------------------------ calls

    @property
    def spoken_era(self) -> str | None:
        """The era this connection speaks: "handshake" or "stateless" (None before open)."""
        return self._session.era if self._session is not None else None

    @property
    def stateless(self) -> bool:
        return self._session is not None and self._session.modern is not None

    @property
    def server_extensions(self) -> dict[str, dict[str, Any]]:
        """The extensions the server declared (SEP-2133), with their settings."""
        found = self.session.peer_caps.tree.get("extensions")
        return dict(found) if isinstance(found, dict) else {}

    async def request(self, method: str, params: Any = None, *, result_type: Any = dict[str, Any]) -> Any:
        """Send any request (an extension's method, say) in the era this connection speaks,
        through the middleware; its result decoded as ``result_type`` (a dict by default:
        the same in both eras, without the stateless era's stamp)."""
        result = await self.session.send_request(method, params if params is not None else {}, result_type)
        if isinstance(result, dict) and self.stateless:
            from mcpgen.runtime.shared.meta import META_SERVER_INFO

            result.pop("resultType", None)
            meta = result.get("_meta")
            if isinstance(meta, dict):
                meta.pop(META_SERVER_INFO, None)
                if not meta:
                    del result["_meta"]
        return result

    async def ping(self) -> None:
        """A liveness round trip (stateless era, which has no ping: a fresh discover)."""
        if self.stateless:
            await self.session.discover(fresh=True)
            return
        await self.session.ping()

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        on_progress: ProgressCallback | None = None,
        timeout: float | None = None,
        task: bool = False,
    ) -> CallToolResult:
        """Call a tool. Its structuredContent is checked against the outputSchema the
        server listed for it (after ``list_tools``).

        ``task=True`` lets the server run the call as a task (the stateless era's tasks
        extension, or 2025-11-25's tasks) and waits for its end: ``timeout`` then bounds the whole wait, and a task the
        caller stops waiting for (timeout, cancellation) is cancelled at the server. A
        server without tasks runs it as a plain call, unless the tool runs only as a task
        (:class:`~mcpgen.runtime.client.tasks.TaskRequired`). :meth:`start_task` gives
        the task's handle instead."""
        if task:
            return await self._call_as_task(name, arguments, on_progress, timeout)
        # A plain dict: the stateless era's session takes params as one (a struct would be
        # converted on every call), and it encodes the same in the handshake era.
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        session = self.session
        # The stateless era allows any JSON value as structuredContent, the handshake era an object.
        expected = StatelessCallToolResult if session.modern is not None else CallToolResult
        limit = timeout if timeout is not None else self.request_timeout
        try:
            # The session is awaited here, not through _send_call: one coroutine less per call.
            try:
                result = await session.send_request(
                    "tools/call", params, expected, timeout=limit, on_progress=on_progress
                )
            except McpError as exc:
                result = await self._after_header_mismatch(exc, name, params, expected, limit, on_progress)
        except McpError as exc:
            if names_tasks(exc):
                raise TaskRequired(
                    exc.code,
                    f"tool {name} runs only as a task: call it with call_tool(..., task=True) or start_task()",
                    exc.data,
                ) from None
            raise
        if result.is_error is UNSET:
            result.is_error = False  # the spec: absent means false; a user reads a bool
        return self._checked(name, result) if self._output_checks else result

    async def _send_call(
        self, name: str, params: Any, expected: type[T], timeout: float | None, on_progress: ProgressCallback | None
    ) -> T:
        limit = timeout if timeout is not None else self.request_timeout
        try:
            return await self.session.send_request(
                "tools/call", params, expected, timeout=limit, on_progress=on_progress
            )
        except McpError as exc:
            return await self._after_header_mismatch(exc, name, params, expected, limit, on_progress)

    async def _after_header_mismatch(
        self,
        exc: McpError,
        name: str,
        params: Any,
        expected: type[T],
        limit: float | None,
        on_progress: ProgressCallback | None,
    ) -> T:
        """A call refused with ``exc``: if for its headers before we knew the tool's
        x-mcp-header annotations, learn them (the spec's advice: list the tools again) and
        try once more; else ``exc`` goes on."""
        if exc.code != HEADER_MISMATCH or not self.stateless or name in self._tool_headers:
            raise exc
        await self.list_tools()
        if name not in self._tool_headers:
            raise exc
        return await self.session.send_request("tools/call", params, expected, timeout=limit, on_progress=on_progress)

    def _checked(self, name: str, result: CallToolResult) -> CallToolResult:
        if result.is_error is UNSET:
            result.is_error = False
        check = self._output_checks.get(name)
        if check is not None and self.check_output and not result.is_error:
            if result.structured_content is UNSET:
                raise OutputSchemaError(
                    INVALID_PARAMS, f"tool {name} declared an outputSchema but sent no structuredContent"
                )
            try:
                check(result.structured_content)
            except SchemaValidationError as exc:
                raise OutputSchemaError(
                    INVALID_PARAMS, f"tool {name} sent structuredContent that fails its outputSchema: {exc}"
                ) from None
        return result

    # ------------------------------------------------------------ tasks

    async def start_task(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        on_progress: ProgressCallback | None = None,
        on_status: StatusCallback | None = None,
    ) -> TaskHandle:
        """Call tool ``name`` letting the server run it as a task and return the task's
        handle as soon as the server made it: ``await handle.wait(timeout=...)`` for the
        result, ``handle.status()``, ``handle.cancel()``. The stateless era's tasks
        extension (SEP-2663) and the handshake era's tasks of 2025-11-25 (SEP-1686) alike
        (:attr:`tasks_offered` says whether this connection has either). The server
        decides: a call it answers at once gives a handle that is already done. Questions
        the task asks are answered, while waiting, by the client's elicitation, sampling
        and roots handlers. ``on_progress`` gets the server's progress notifications for
        the call, ``on_status`` every status (or status message) the client sees."""
        session = self._tasks_session()
        handshake_era = session.modern is None
        meta: dict[str, Any] = {} if handshake_era else dict(TASKS_META)
        release = None
        if on_progress is not None:
            meta["progressToken"], release = watch_progress(session, on_progress)
        params: dict[str, Any] = {"name": name}
        if meta:
            params["_meta"] = meta
        if arguments is not None:
            params["arguments"] = arguments
        if handshake_era:
            params["task"] = {}  # the server's default time to live
        opener = open_handshake_task if handshake_era else open_task
        try:
            raw = await self._send_call(name, params, msgspec.Raw, None, None)
            return await opener(
                session,
                name,
                raw,
                finish=functools.partial(self._checked, name),
                on_status=on_status,
                request_timeout=self.request_timeout,
                release=release,
            )
        except BaseException as exc:
            if release is not None:
                release()
            if isinstance(exc, McpError) and names_tasks(exc):
                raise TaskRequired(
                    exc.code,
                    f"tool {name} runs only as a task, and the server refused this client's tasks extension",
                    exc.data,
                ) from None
            raise

    async def resume_task(self, task_id: str, *, on_status: StatusCallback | None = None) -> TaskHandle:
        """The handle of a task started earlier, by this client or another (its id is all
        it takes: e.g. one kept across a restart), after a first ``tasks/get``. Its result
        is not checked against an outputSchema (the tool is not known)."""
        first = TaskStatus(task_id=task_id, status="working")
        session = self._tasks_session()
        kind = TaskHandle if session.modern is not None else HandshakeTaskHandle
        handle = kind(session, "", first, on_status=on_status, request_timeout=self.request_timeout)
        await handle.status()
        return handle

    @property
    def tasks_offered(self) -> bool:
        """Whether tool calls can run as tasks on this connection: the stateless era (the
        server decides per call), or a handshake-era server of a revision with tasks
        (2025-11-25) that offers them for ``tools/call``."""
        session = self.session
        return session.modern is not None or handshake_tasks_offered(session, self.initialize_result)

    def _tasks_session(self) -> ClientSession:
        session = self.session
        if not self.tasks_offered:
            raise TasksUnavailable(
                f"this server offers no tasks for tools/call (protocol {session.protocol_version}): call the tool "
                "with call_tool(), or connect in the stateless era to a server that has the tasks extension"
            )
        return session

    async def _call_as_task(
        self, name: str, arguments: dict[str, Any] | None, on_progress: ProgressCallback | None, timeout: float | None
    ) -> CallToolResult:
        if not self.tasks_offered:
            # A plain call: if the tool runs only as a task, the server says so in its own words.
            return await self.call_tool(name, arguments, on_progress=on_progress, timeout=timeout)
        handle = await self.start_task(name, arguments, on_progress=on_progress)
        try:
            return await handle.wait(timeout)
        except (TaskFailed, TaskCancelled):
            raise
        except BaseException:
            # The caller stopped waiting (a timeout, a cancellation, a question it cannot
            # answer): nobody will collect the result, so ask the server to stop, as a
            # plain call's cancellation would.
            if not handle.done and self.session.is_open:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(handle.cancel(), 5)
            raise

    async def list_tools(self) -> list[Tool]:
        """Every tool, each ``inputSchema`` exactly as the server sent it (no ``$ref`` is
        followed). Over HTTP in the stateless era a tool whose ``x-mcp-header`` annotations
        are invalid is left out, with a warning: it could not be called correctly."""
        tools = await self._all_pages(self.session.list_tools, "tools")
        if self.stateless and hasattr(self.session.transport, "param_headers"):
            tools = self._check_tool_headers(tools)
        for tool in tools:
            if tool.output_schema is not UNSET:
                try:
                    self._output_checks[tool.name] = compile_schema(tool.output_schema)
                except SchemaValidationError as exc:
                    log.warning("mcpgen: tool %s has an outputSchema we cannot check: %s", tool.name, exc)
        return tools

    def _check_tool_headers(self, tools: list[Tool]) -> list[Tool]:
        kept: list[Tool] = []
        for tool in tools:
            annotated = annotated_params(tool.input_schema)
            if annotated is None:
                log.warning(
                    "mcpgen: leaving out tool %s: its x-mcp-header annotations are invalid "
                    "(empty, not a token, repeated, on a non-string/integer/boolean or nested property)",
                    tool.name,
                )
                self._tool_headers.pop(tool.name, None)
                continue
            self._tool_headers[tool.name] = annotated
            kept.append(tool)
        return kept

    def _param_headers(self, name: str, arguments: Any) -> dict[str, str]:
        """The Mcp-Param-* headers of a call to tool ``name`` (its annotated arguments)."""
        annotated = self._tool_headers.get(name)
        if not annotated or not isinstance(arguments, dict):
            return {}
        headers: dict[str, str] = {}
        for argument, header in annotated.items():
            value = render(arguments.get(argument))
            if value is not None:
                headers[f"Mcp-Param-{header}"] = value
        return headers

    async def list_resources(self) -> list[Resource]:
        return await self._all_pages(self.session.list_resources, "resources")

    async def list_resource_templates(self) -> list[ResourceTemplate]:
        return await self._all_pages(self.session.list_resource_templates, "resource_templates")

    async def list_prompts(self) -> list[Prompt]:
        return await self._all_pages(self.session.list_prompts, "prompts")

    async def read_resource(self, uri: str) -> ReadResourceResult:
        return await self.session.read_resource(uri=uri)

    # ------------------------------------------------------------ MCP Apps (SEP-1865)

    @property
    def server_offers_ui(self) -> bool:
        """Whether the server declared MCP Apps (``io.modelcontextprotocol/ui``)."""
        from mcpgen.runtime.client.apps import declares_ui

        return declares_ui(self.session.peer_caps.tree)

    async def list_ui_tools(self) -> list[UiTool]:
        """The tools that declare ``_meta.ui``: the interface each links and who may call it
        (``for_model``: the agent's tool list; ``for_app``: calls from the interface)."""
        from mcpgen.runtime.client.apps import ui_tools

        return ui_tools(await self.list_tools())

    async def read_interface(self, uri_or_tool: str, *, max_bytes: int | None = None) -> Interface:
        """Fetch an interface by its ``ui://`` URI or by the name of the tool that links it,
        checked as a host must before rendering it (MIME type, size: ``max_bytes``,
        default 4 MiB; metadata); :class:`InterfaceError` if not."""
        from mcpgen.runtime.client.apps import DEFAULT_MAX_BYTES, InterfaceError, checked_interface, ui_tools

        uri = uri_or_tool
        if not uri.startswith("ui://"):
            linked = [t.resource_uri for t in ui_tools(await self.list_tools()) if t.name == uri_or_tool]
            if not linked or linked[0] is None:
                raise InterfaceError(f"no tool {uri_or_tool!r} with an MCP Apps interface")
            uri = linked[0]
        return checked_interface(uri, await self.read_resource(uri), max_bytes or DEFAULT_MAX_BYTES)

    # ------------------------------------------------------------ skills (SEP-2640)

    async def list_skills(self) -> list[SkillEntry]:
        """Every skill the server lists (``skills/list``, all pages). No skill file is
        read: the entries carry what a listing needs (see :mod:`mcpgen.runtime.client.skills`)."""

        async def page(cursor: Any) -> SkillsPage:
            params = {"cursor": cursor} if cursor is not UNSET else {}
            return await self.session.send_request("skills/list", params, SkillsPage)

        return await self._all_pages(page, "skills")

    async def get_skill(self, uri: str) -> SkillEntry:
        """The entry of the skill whose SKILL.md is at ``uri`` (``skills/get``), listed or not."""
        return (await self.session.send_request("skills/get", {"uri": uri}, SkillResult)).skill

    async def read_skill(self, entry: SkillEntry) -> LoadedSkill:
        """Load a skill: read its SKILL.md and check it against ``entry`` (size, digest,
        frontmatter), raising :class:`SkillVerificationError` on any difference."""
        return await load_skill(entry, self.read_resource)

    async def read_skill_file(self, skill: LoadedSkill, path: str) -> str | bytes:
        """Read a file of a loaded skill (relative to its root, or a full URI), checked
        against the skill's entry; a file the entry does not list is refused."""
        return await load_skill_file(skill, path, self.read_resource)

    async def read_directory(self, uri: str) -> list[dict[str, Any]]:
        """The direct children of a directory resource (``resources/directory/read``, all
        pages; servers declaring the skills extension with ``directoryRead``)."""

        async def page(cursor: Any) -> DirectoryPage:
            params = {"uri": uri, "cursor": cursor} if cursor is not UNSET else {"uri": uri}
            return await self.session.send_request("resources/directory/read", params, DirectoryPage)

        return await self._all_pages(page, "resources")

    async def get_prompt(self, name: str, arguments: dict[str, str] | None = None) -> GetPromptResult:
        return await self.session.get_prompt(name=name, arguments=arguments if arguments is not None else UNSET)

    async def complete(
        self,
        ref: PromptReference | ResourceTemplateReference,
        argument: str,
        value: str,
        context: dict[str, str] | None = None,
    ) -> CompleteResult:
        from mcpgen.protocol.v2025_11_25 import CompleteRequestParamsArgument, CompleteRequestParamsContext

        return await self.session.complete(
            ref=ref,
            argument=CompleteRequestParamsArgument(name=argument, value=value),
            context=CompleteRequestParamsContext(arguments=context) if context is not None else UNSET,
        )

    async def set_logging_level(self, level: LoggingLevel) -> None:
        """The least severe log level the server should send (stateless era: named in the
        ``_meta`` of every request from now on)."""
        modern = self.session.modern
        if modern is not None:
            modern.log_level = level
            return
        await self.session.set_level(level=level)

    async def subscribe(self, uri: str) -> None:
        """Updates of ``uri`` reach ``on_notification`` (stateless era: through the
        client's own listen stream, opened again with the new URI)."""
        if not self.stateless:
            await self.session.subscribe(uri=uri)
            return
        if uri not in self._subscribed:
            self._subscribed.append(uri)
            await self._restart_background()

    async def unsubscribe(self, uri: str) -> None:
        if not self.stateless:
            await self.session.unsubscribe(uri=uri)
            return
        if uri in self._subscribed:
            self._subscribed.remove(uri)
            await self._restart_background()

    async def notify_roots_changed(self) -> None:
        """Tell the server the roots changed (stateless era: nothing to send; the server
        asks for roots with each request that needs them)."""
        if not self.stateless:
            await self.session.notify_roots_list_changed()

    # ------------------------------------------------------------ listening

    @contextlib.asynccontextmanager
    async def listen(
        self,
        *,
        tools: bool = False,
        prompts: bool = False,
        resources: bool = False,
        uris: Sequence[str] = (),
        timeout: float | None = None,
    ) -> AsyncIterator[Listener]:
        """Follow changes while the block runs: list changes of tools, prompts or
        resources, and updates of the resources ``uris``. Yields a
        :class:`~mcpgen.runtime.client.listen.Listener` once the server has acknowledged
        it (stateless era; ``timeout``: seconds to wait for that, default the request
        timeout). Changes also make cached results stale and reach ``on_notification``."""
        listener = Listener(subscription_filter(tools, prompts, resources, list(uris)))
        if not self.stateless:
            async with self._handshake_listen(listener):
                yield listener
            return
        task = asyncio.ensure_future(self._run_listen(listener))
        try:
            await asyncio.wait_for(listener.ready.wait(), timeout if timeout is not None else self.request_timeout)
            if task.done():
                task.result()  # refused: raise why
            yield listener
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            listener.end()

    async def _run_listen(self, listener: Listener) -> None:
        try:
            await self.session.listen(listener.wanted, listener.deliver)
        finally:
            listener.end()

    @contextlib.asynccontextmanager
    async def _handshake_listen(self, listener: Listener) -> AsyncIterator[None]:
        """The handshake era's stand-in: filter what the server sends unasked."""
        peer = self.session.peer_caps
        honoured: dict[str, Any] = {
            flag: True
            for flag, feature in (
                ("toolsListChanged", "tools"),
                ("promptsListChanged", "prompts"),
                ("resourcesListChanged", "resources"),
            )
            if listener.wanted.get(flag) and peer.has(f"{feature}.listChanged")
        }
        uris = list(listener.wanted.get("resourceSubscriptions", ()))
        if uris and peer.has("resources.subscribe"):
            honoured["resourceSubscriptions"] = uris
            for uri in uris:
                await self.session.subscribe(uri=uri)
        listener.acknowledged = honoured
        self._handshake_listeners.add(listener)
        try:
            yield
        finally:
            self._handshake_listeners.discard(listener)
            listener.end()
            if "resourceSubscriptions" in honoured and self._session is not None and self._session.is_open:
                for uri in uris:
                    if uri not in self._subscribed:
                        with contextlib.suppress(McpError, ConnectionError):
                            await self.session.unsubscribe(uri=uri)

    def _to_listeners(self, method: str, params: Any) -> None:
        if not self._handshake_listeners:
            return
        data = msgspec.to_builtins(params) if params is not None else {}
        data = data if isinstance(data, dict) else {}
        for listener in list(self._handshake_listeners):
            if listener.wants(method, data):
                listener.deliver(method, data)

    async def _restart_background(self) -> None:
        """(Re)open the client's own listen stream (stateless era), which carries what the
        handshake era would send unasked to ``on_notification``: the list changes the
        server offers, and updates of the URIs ``subscribe`` named."""
        if self._background is not None:
            task, _ = self._background
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            self._background = None
        peer = self.session.peer_caps
        # Its notifications reach on_notification through the session; its own queue is not
        # read, so it keeps only the acknowledgement.
        listener = Listener(
            subscription_filter(
                peer.has("tools.listChanged"),
                peer.has("prompts.listChanged"),
                peer.has("resources.listChanged"),
                self._subscribed if peer.has("resources.subscribe") else [],
            ),
            keep_changes=False,
        )
        if not listener.wanted:
            return
        task = asyncio.ensure_future(self._run_listen(listener))
        self._background = (task, listener)
        try:
            await asyncio.wait_for(listener.ready.wait(), self.request_timeout)
        except TimeoutError:
            log.warning("mcpgen: the server did not acknowledge the client's listen stream")

    @staticmethod
    async def _all_pages(call: Callable[..., Awaitable[Any]], attribute: str) -> list[Any]:
        """Walk every page of a paginated list."""
        items: list[Any] = []
        cursor: Any = UNSET
        seen: set[str] = set()
        while True:
            page = await call(cursor=cursor)
            items.extend(getattr(page, attribute))
            cursor = page.next_cursor
            if cursor is UNSET or cursor in seen:
                return items
            seen.add(cursor)


__all__ = ["Client", "Listener", "OutputSchemaError", "TaskHandle"]
