"""The friendly client API.

    async with Client.stdio("python", "server.py") as client:
        tools = await client.list_tools()
        result = await client.call_tool("add", {"a": 1, "b": 2})

``Client(server)`` connects to an in-process :class:`~mcpgen.runtime.server.Server` for
tests. The generated typed calls stay at hand as ``client.session`` (a ``ClientCalls``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec
from msgspec import UNSET

from mcpgen import __version__
from mcpgen.generated import (
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
from mcpgen.runtime.client_session import ClientSession
from mcpgen.runtime.errors import INVALID_PARAMS, METHOD_NOT_FOUND, McpError
from mcpgen.runtime.extras import require
from mcpgen.runtime.files import check_root_uri
from mcpgen.runtime.jsonschema import SchemaValidationError, compile_schema
from mcpgen.runtime.session import ProgressCallback
from mcpgen.runtime.transport import Transport, memory_pair

if TYPE_CHECKING:
    import httpx

    from mcpgen.runtime.server import Server

log = logging.getLogger("mcpgen")
T = TypeVar("T")
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
            raise NotImplementedError
        if params.tools is not UNSET and not self.client.sampling_tools:
            raise McpError(INVALID_PARAMS, "this client did not declare sampling.tools")
        return await self.client.sampling(params)

    async def elicit(self, params: ElicitRequestParams) -> ElicitResult:
        if self.client.elicitation is None:
            raise NotImplementedError
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
        server: Server | None = None,
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
    ) -> None:
        if (server is None) == (connect is None):
            raise TypeError("give a Server to connect to in-process, or use Client.stdio(...)")
        self._server = server
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
            from mcpgen.runtime.stdio import ProcessTransport

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
        **options: Any,
    ) -> Client:
        """A client for a server at a Streamable HTTP endpoint (``http://host/mcp``);
        ``auth=OAuthClient(...)`` authorizes with OAuth 2.1 when the server asks. Without
        the ``http`` extra this raises :class:`~mcpgen.runtime.extras.MissingExtra` (a
        ``ModuleNotFoundError``) whose message is the one-line install hint."""
        require("httpx", "http", "Client.http")

        async def connect() -> Transport:
            from mcpgen.runtime.http_client import HttpTransport

            return HttpTransport(url, headers=headers, auth=auth, standalone_stream=standalone_stream)

        return cls(connect=connect, **options)

    @classmethod
    def sse(cls, url: str, *, headers: dict[str, str] | None = None, **options: Any) -> Client:
        """A client for a server speaking the 2024-11-05 HTTP+SSE transport (``.../sse``);
        without the ``http`` extra, raises as :meth:`http` does."""
        require("httpx", "http", "Client.sse")

        async def connect() -> Transport:
            from mcpgen.runtime.legacy_sse_client import LegacySseTransport

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
        if self.on_notification is not None:
            session.add_notification_listener(self.on_notification)
        self._session = session
        self._tasks.append(asyncio.get_running_loop().create_task(session.run()))
        try:
            self.initialize_result = await session.start(self.capabilities(), self.info)
        except ConnectionError as exc:
            # A stdio server that died on start: say how (exit status, last stderr lines)
            # rather than only that the connection closed.
            explain = getattr(transport, "exit_error", None)
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

    async def ping(self) -> None:
        await self.session.ping()

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        on_progress: ProgressCallback | None = None,
        timeout: float | None = None,
    ) -> CallToolResult:
        """Call a tool. Its structuredContent is checked against the outputSchema the
        server listed for it (after ``list_tools``)."""
        from mcpgen.generated import CallToolRequestParams

        params = CallToolRequestParams(name=name, arguments=arguments if arguments is not None else UNSET)
        result = await self.session.send_request(
            "tools/call", params, CallToolResult,
            timeout=timeout if timeout is not None else self.request_timeout, on_progress=on_progress,
        )  # fmt: skip
        check = self._output_checks.get(name)
        if check is not None and self.check_output and not result.is_error:
            if result.structured_content is UNSET:
                raise OutputSchemaError(INVALID_PARAMS, f"tool {name} declared an outputSchema but sent no structuredContent")
            try:
                check(result.structured_content)
            except SchemaValidationError as exc:
                raise OutputSchemaError(INVALID_PARAMS, f"tool {name} sent structuredContent that fails its outputSchema: {exc}") from None
        return result

    async def list_tools(self) -> list[Tool]:
        tools = await self._all_pages(self.session.list_tools, "tools")
        for tool in tools:
            if tool.output_schema is not UNSET:
                try:
                    self._output_checks[tool.name] = compile_schema(tool.output_schema)
                except SchemaValidationError as exc:
                    log.warning("mcpgen: tool %s has an outputSchema we cannot check: %s", tool.name, exc)
        return tools

    async def list_resources(self) -> list[Resource]:
        return await self._all_pages(self.session.list_resources, "resources")

    async def list_resource_templates(self) -> list[ResourceTemplate]:
        return await self._all_pages(self.session.list_resource_templates, "resource_templates")

    async def list_prompts(self) -> list[Prompt]:
        return await self._all_pages(self.session.list_prompts, "prompts")

    async def read_resource(self, uri: str) -> ReadResourceResult:
        return await self.session.read_resource(uri=uri)

    async def get_prompt(self, name: str, arguments: dict[str, str] | None = None) -> GetPromptResult:
        return await self.session.get_prompt(name=name, arguments=arguments if arguments is not None else UNSET)

    async def complete(
        self,
        ref: PromptReference | ResourceTemplateReference,
        argument: str,
        value: str,
        context: dict[str, str] | None = None,
    ) -> CompleteResult:
        from mcpgen.generated import CompleteRequestParamsArgument, CompleteRequestParamsContext

        return await self.session.complete(
            ref=ref,
            argument=CompleteRequestParamsArgument(name=argument, value=value),
            context=CompleteRequestParamsContext(arguments=context) if context is not None else UNSET,
        )

    async def set_logging_level(self, level: LoggingLevel) -> None:
        await self.session.set_level(level=level)

    async def subscribe(self, uri: str) -> None:
        await self.session.subscribe(uri=uri)

    async def unsubscribe(self, uri: str) -> None:
        await self.session.unsubscribe(uri=uri)

    async def notify_roots_changed(self) -> None:
        await self.session.notify_roots_list_changed()

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


__all__ = ["Client", "OutputSchemaError"]
