"""The protocol's handlers for what a server offers: list, call, read, get and complete,
served alike in both eras (named as the method tables name them: ``list_tools``,
``call_tool``, ...).

Where a function runs: ``async def`` ones on the event loop; a plain ``def`` in the server's
thread pool (:mod:`.threads`) unless declared ``blocking=False``, then on the event loop, and
such a tool without a :class:`~mcpgen.runtime.server.context.Context` parameter is answered
on the spot (:meth:`Handlers.call_tool_now`: no task at all).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import msgspec
from msgspec import UNSET

from mcpgen.protocol.v2025_11_25 import (
    CallToolRequestParams,
    CallToolResult,
    CompleteRequestParams,
    CompleteResult,
    CompleteResultCompletion,
    GetPromptRequestParams,
    GetPromptResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    PaginatedRequestParams,
    PromptReference,
    ReadResourceRequestParams,
    ReadResourceResult,
    Resource,
    SetLevelRequestParams,
    SubscribeRequestParams,
    TextContent,
    UnsubscribeRequestParams,
)
from mcpgen.runtime.errors import INTERNAL_ERROR, INVALID_PARAMS, CapabilityError, McpError, ResourceNotFound
from mcpgen.runtime.jsonrpc.context import current_request
from mcpgen.runtime.jsonrpc.kernel import NOT_NOW, Later
from mcpgen.runtime.server.catalog import Catalog
from mcpgen.runtime.server.content import to_content, to_contents, to_messages
from mcpgen.runtime.server.context import Context
from mcpgen.runtime.server.input_required import InputRequired
from mcpgen.runtime.server.registry import (
    ToolEntry,
    ToolError,
    check_resource_value,
    decode_cursor,
    encode_cursor,
    positional,
)
from mcpgen.runtime.server.signature import ArgumentError, Signature
from mcpgen.runtime.server.threads import ThreadPool
from mcpgen.runtime.shared.files import leaves_root
from mcpgen.runtime.shared.jsonschema import SchemaValidationError

log = logging.getLogger("mcpgen")

Listing = Callable[[], Awaitable[list[Resource]]]
"""Resources an extension lists beside the registered ones, read at each ``resources/list``."""


class Handlers:
    """The protocol handlers of a server's features (its :class:`~.catalog.Catalog`):
    :class:`~mcpgen.runtime.server.server.Server` inherits them. A subclass may override
    one and call ``super()`` to wrap it (overriding ``call_tool`` turns off the on-the-spot
    answer, so that the override sees every call); a middleware is the usual way."""

    catalog: Catalog
    threads: ThreadPool
    page_size: int
    listings: list[Listing]

    def init_handlers(self, catalog: Catalog, threads: ThreadPool, page_size: int) -> None:
        self.catalog = catalog
        self.threads = threads
        self.page_size = page_size
        self.listings = []

    # ------------------------------------------------------------ tools

    async def list_tools(self, params: PaginatedRequestParams) -> ListToolsResult:
        page, cursor = self._page(self.catalog.listed("tools"), params.cursor)
        return ListToolsResult(tools=page, next_cursor=cursor)

    async def call_tool(self, params: CallToolRequestParams) -> CallToolResult:
        started = self._tool_call(params)
        if isinstance(started, CallToolResult):
            return started  # the arguments were refused
        return await self._run_tool(*started)

    def call_tool_now(self, params: CallToolRequestParams) -> Any:
        """``call_tool`` without awaiting anything, for the kernel to call as it reads the
        request: the result of a tool declared ``blocking=False`` (or the error refusing
        the arguments of any tool); for any other tool, a partial making the coroutine that
        runs it, its arguments decoded (the request's task awaits it: no ``call_tool``
        coroutine between, the same steps otherwise); :data:`NOT_NOW` for a task-capable
        tool (the tasks extension decides how it runs) and an unknown one (``call_tool``
        says so)."""
        entry = self.catalog.tools.get(params.name)
        if entry is not None and entry.task is not None:
            return NOT_NOW
        started = self._tool_call(params, entry)
        if isinstance(started, CallToolResult):
            return started
        found, kwargs = started
        if not found.now:
            sig = found.signature
            if sig.is_async and sig.context_param is None:
                # The common case (an async def without a Context): its task awaits the
                # function itself, then makes the result (no coroutine of ours between).
                return Later(found.fn, kwargs, self._tool_result, self._tool_failed, found)
            return partial(self._run_tool, found, kwargs)
        try:
            value = found.fn(**kwargs)
        except Exception as exc:
            return self._tool_failed(found, exc)
        return self._tool_result(found, value)

    async def _run_tool(self, entry: ToolEntry, kwargs: dict[str, Any]) -> CallToolResult:
        """Run a tool whose arguments are decoded, and make its result."""
        try:
            sig = entry.signature
            if sig.is_async and sig.context_param is None:
                # The common case (an async def without a Context) awaited right here: no
                # coroutine of _invoke's between, no label formatted for it.
                value = await entry.fn(**kwargs)
            else:
                value = await self._invoke(entry.fn, sig, entry.in_thread, kwargs, f"tool {entry.name}")
        except Exception as exc:
            return self._tool_failed(entry, exc)
        return self._tool_result(entry, value)

    def _tool_call(
        self, params: CallToolRequestParams, entry: ToolEntry | None = None
    ) -> tuple[ToolEntry, dict[str, Any]] | CallToolResult:
        """The tool and its decoded arguments, or the error result refusing them (``entry``:
        the tool, when the caller has just looked it up)."""
        if entry is None:
            entry = self.catalog.tools.get(params.name)
        if entry is None:
            raise McpError(INVALID_PARAMS, f"Unknown tool: {params.name}")
        try:
            check = entry.check_input  # made on the tool's first use (what registration left to it)
        except (TypeError, ValueError, NameError) as exc:
            log.error("mcpgen: tool %s cannot be served: %s", entry.name, exc)
            return tool_error(f"Tool {entry.name} cannot be served: {exc}")
        arguments = params.arguments if params.arguments is not UNSET else None
        try:
            if check is not None:
                check(arguments or {})
            return entry, entry.signature.decode_arguments(arguments)
        except (ArgumentError, SchemaValidationError) as exc:
            return tool_error(f"Invalid arguments for {params.name}: {exc}")

    def _tool_failed(self, entry: ToolEntry, exc: Exception) -> CallToolResult:
        name = entry.name
        if isinstance(exc, InputRequired):
            raise exc  # the tool asked the client a question: the request answers with it
        if isinstance(exc, (ToolError, CapabilityError)):
            # A tool that needs sampling from a client without it failed, the call did not.
            return tool_error(exc.message if isinstance(exc, McpError) else str(exc))
        if isinstance(exc, McpError):
            raise exc
        # The message may hold paths or secrets: it goes to the log, not to the peer.
        log.error("mcpgen: tool %s failed", name, exc_info=exc)
        return tool_error(f"Tool {name} failed with an internal error ({type(exc).__name__})")

    def _tool_result(self, entry: ToolEntry, value: Any) -> CallToolResult:
        if isinstance(value, CallToolResult):
            return value
        name = entry.name
        try:
            if entry.signature.output_schema is None:
                if isinstance(value, dict):  # structured data without a declared schema
                    return CallToolResult(
                        content=[TextContent(text=msgspec.json.encode(value).decode())],
                        structured_content=msgspec.to_builtins(value),
                    )
                return CallToolResult(content=to_content(value))
            if entry.signature.dump is not None:  # a pydantic type: pydantic checks and dumps it
                value = entry.signature.dump(value)
            elif entry.returns is not None:
                value = msgspec.convert(msgspec.to_builtins(value), entry.returns)
        except msgspec.ValidationError as exc:
            log.error("mcpgen: tool %s returned data that does not match its output schema: %s", name, exc)
            return tool_error(f"Tool {name} returned invalid output: {exc}")
        except (TypeError, ValueError, msgspec.EncodeError) as exc:
            # What the tool returned cannot be sent (an object msgspec cannot encode): the
            # tool failed, not the request.
            log.error("mcpgen: tool %s returned what cannot be sent: %s", name, exc)
            return tool_error(f"Tool {name} returned a value that cannot be sent ({type(value).__name__})")
        data = msgspec.to_builtins(value)
        structured = {"result": data} if entry.signature.wrap_result else data
        text = msgspec.json.encode(structured).decode()
        return CallToolResult(content=[TextContent(text=text)], structured_content=structured)

    # ------------------------------------------------------------ resources

    async def list_resources(self, params: PaginatedRequestParams) -> ListResourcesResult:
        listed = self.catalog.listed("resources")
        for listing in self.listings:  # an extension's (each skill's SKILL.md, as the files are now)
            listed = [*listed, *await listing()]
        page, cursor = self._page(listed, params.cursor)
        return ListResourcesResult(resources=page, next_cursor=cursor)

    async def list_resource_templates(self, params: PaginatedRequestParams) -> ListResourceTemplatesResult:
        page, cursor = self._page(self.catalog.listed("templates"), params.cursor)
        return ListResourceTemplatesResult(resource_templates=page, next_cursor=cursor)

    async def read_resource(self, params: ReadResourceRequestParams) -> ReadResourceResult:
        uri = params.uri
        resource = self.catalog.resources.get(uri)
        if resource is not None:
            value = await self._explained(resource.fn, resource.signature, resource.in_thread, {}, f"resource {uri}")
            check_resource_value(uri, resource.signature, value)
            return ReadResourceResult(contents=to_contents(uri, value, resource.definition.mime_type))
        for template in self.catalog.templates:
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
        _current_session().subscriptions.add(params.uri)
        return {}

    async def unsubscribe(self, params: UnsubscribeRequestParams) -> dict[str, Any]:
        _current_session().subscriptions.discard(params.uri)
        return {}

    # ------------------------------------------------------------ prompts, completion, logging

    async def list_prompts(self, params: PaginatedRequestParams) -> ListPromptsResult:
        page, cursor = self._page(self.catalog.listed("prompts"), params.cursor)
        return ListPromptsResult(prompts=page, next_cursor=cursor)

    async def get_prompt(self, params: GetPromptRequestParams) -> GetPromptResult:
        entry = self.catalog.prompts.get(params.name)
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
        completer = self.catalog.completers.get((ref.type, target, params.argument.name))
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


def tool_error(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(text=message)], is_error=True)


def _current_session() -> Any:
    request = current_request.get()
    assert request is not None
    return request.session


def _leaves_root(values: dict[str, str | list[str]]) -> bool:
    """Whether any template variable decodes to a path that leaves its root."""
    return any(
        leaves_root(value) if isinstance(value, str) else any(leaves_root(item) for item in value)
        for value in values.values()
    )
