"""The context object a server's tool, resource or prompt function can ask for.

Declare a parameter annotated :class:`Context` and it is passed in (and left out of the
tool's input schema). Through it a handler reports progress, logs to the client, checks
for cancellation and asks the client for sampling, elicitation or its roots.

Its methods that talk to the client are coroutines. A synchronous handler running in the
server's thread pool calls them through :meth:`Context.wait`, which runs one on the event
loop and blocks its thread until it is done.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec
from msgspec import UNSET, UnsetType

from mcpgen.protocol.v2025_11_25 import (
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitRequestFormParamsRequestedSchema,
    ElicitRequestURLParams,
    ElicitResult,
    ListRootsResult,
    LoggingLevel,
    LoggingMessageNotificationParams,
    ModelPreferences,
    ProgressNotificationParams,
    RequestParams,
    Root,
    SamplingMessage,
    TextContent,
    Tool,
    ToolChoice,
    decode,
    encode,
)
from mcpgen.runtime.auth.info import AuthInfo, current_auth
from mcpgen.runtime.jsonrpc.context import RequestContext, current_request

if TYPE_CHECKING:
    from mcpgen.runtime.server.session import ServerSession

T = TypeVar("T")


class Context:
    """The request being served: its session, id, metadata and the client behind it."""

    def __init__(
        self,
        request: RequestContext,
        task: asyncio.Task[Any] | None = None,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        self.request = request
        self._task = task
        self._loop = loop if loop is not None else (task.get_loop() if task is not None else None)
        self._abandoned = False

    @classmethod
    def current(cls) -> Context:
        """The context of the request this task (or this handler's worker thread) is serving."""
        handed = handler_context.get()
        if handed is not None:
            return handed  # in a worker thread: the context made for it on the event loop
        request = current_request.get()
        if request is None:
            raise RuntimeError("no MCP request is being served here")
        return cls(request, asyncio.current_task(), asyncio.get_running_loop())

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The event loop serving this request."""
        return self._loop

    @property
    def session(self) -> ServerSession:
        session: ServerSession = self.request.session
        return session

    @property
    def request_id(self) -> str | int:
        return self.request.request_id

    @property
    def meta(self) -> dict[str, Any]:
        meta = self.request.meta
        return meta if isinstance(meta, dict) else {}

    @property
    def lifespan(self) -> Any:
        """What the server's lifespan yielded (``@server.lifespan``), or None without one."""
        return getattr(self.request.session, "lifespan_state", None)

    @property
    def auth(self) -> AuthInfo | None:
        """Who this request acts for, on a server protected with ``Server(auth=...)``: the
        verified access token's subject, client, scopes and claims (never the token).
        None on an unprotected server, and over stdio."""
        return current_auth.get()

    # ------------------------------------------------------------ cancellation

    @property
    def cancelled(self) -> bool:
        """True once the client cancelled this request, or nobody waits for its answer any
        more (its handler timed out; the session closed). A handler in a worker thread
        cannot be stopped from outside: a long one should look here now and then."""
        return self._abandoned or (self._task is not None and self._task.cancelling() > 0)

    def check_cancelled(self) -> None:
        if self.cancelled:
            raise asyncio.CancelledError

    def abandon(self) -> None:
        """Mark the request as no longer awaited (the runtime calls this when it stops
        waiting for a handler running in a worker thread)."""
        self._abandoned = True

    def wait(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """From a synchronous handler in the server's thread pool: run one of this
        context's coroutines on the event loop and return its result, e.g.
        ``ctx.wait(ctx.report_progress(1, 10))`` or ``ctx.wait(ctx.sample("..."))``.

        Raises :class:`asyncio.CancelledError` once the request is cancelled, and
        :class:`RuntimeError` on the event loop itself (waiting there would stop the loop
        that has to do the work: ``await`` the coroutine instead)."""
        loop = self._loop
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if loop is None or running is loop or loop.is_closed():
            coroutine.close()
            where = "the event loop: await it instead" if running is loop else "no running server"
            raise RuntimeError(f"ctx.wait() is for synchronous handlers in worker threads, not {where}")
        if self.cancelled:
            coroutine.close()
            raise asyncio.CancelledError
        # The coroutine runs as a task made in this thread's context: it sees the request
        # being served, so what it sends is related to that request (HTTP: its stream).
        return asyncio.run_coroutine_threadsafe(coroutine, loop).result()

    # ------------------------------------------------------------ progress and logs

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Tell the client how far along the request is (only if it asked, with a
        progress token). ``progress`` must grow with every call."""
        token = self.request.progress_token
        if token is None:
            return
        last = self.request.last_progress
        if last is not None and progress <= last:
            raise ValueError(f"progress must increase: {progress} after {last}")
        self.request.last_progress = progress
        params = ProgressNotificationParams(
            progress_token=token,
            progress=progress,
            total=total if total is not None else UNSET,
            message=message if message is not None else UNSET,
        )
        await self.session.send_notification("notifications/progress", params)

    async def log(self, level: LoggingLevel, data: Any, logger: str | None = None) -> None:
        """Send a log message to the client, if it passes the level the client set."""
        if not self.session.own_caps.has("logging") or not self.session.logs(level):
            return
        params = LoggingMessageNotificationParams(level=level, data=data, logger=logger or UNSET)
        await self.session.send_notification("notifications/message", params)

    async def debug(self, data: Any, logger: str | None = None) -> None:
        await self.log("debug", data, logger)

    async def info(self, data: Any, logger: str | None = None) -> None:
        await self.log("info", data, logger)

    async def warning(self, data: Any, logger: str | None = None) -> None:
        await self.log("warning", data, logger)

    async def error(self, data: Any, logger: str | None = None) -> None:
        await self.log("error", data, logger)

    # ------------------------------------------------------------ asking the client

    async def sample(
        self,
        messages: str | list[SamplingMessage],
        *,
        max_tokens: int = 1024,
        system_prompt: str | None = None,
        temperature: float | None = None,
        tools: list[Tool] | None = None,
        tool_choice: ToolChoice | None = None,
        model_preferences: ModelPreferences | None = None,
        stop_sequences: list[str] | None = None,
        key: str | None = None,
    ) -> CreateMessageResult:
        """Ask the client's model for a message (``sampling/createMessage``).

        ``key`` names the question in the stateless era, where it travels in an
        InputRequiredResult (default: ``sampling-1``, ``sampling-2``, ... in the order
        asked); the handshake era sends it as a request and ignores the key."""
        if isinstance(messages, str):
            messages = [SamplingMessage(role="user", content=TextContent(text=messages))]
        if tools is not None and not self.session.peer_caps.has("sampling.tools") and not self._asks_inputs:
            raise ValueError("the client did not declare sampling.tools")
        return await self.session.create_message(
            **self._key(key),
            messages=messages,
            max_tokens=max_tokens,
            system_prompt=_opt(system_prompt),
            temperature=_opt(temperature),
            tools=_opt(tools),
            tool_choice=_opt(tool_choice),
            model_preferences=_opt(model_preferences),
            stop_sequences=_opt(stop_sequences),
        )

    async def elicit(self, message: str, schema: type | dict[str, Any], *, key: str | None = None) -> ElicitResult:
        """Ask the user for structured input through a form (``elicitation/create``).

        ``schema`` is a flat msgspec Struct, dataclass or TypedDict of primitive fields, or
        a requested-schema dict as the spec defines it. ``key``: as for :meth:`sample`.
        """
        requested = schema if isinstance(schema, dict) else form_schema(schema)
        params = ElicitRequestFormParams(
            message=message,
            requested_schema=decode(encode(requested), ElicitRequestFormParamsRequestedSchema),
        )
        return await self.session.elicit(params=params, **self._key(key))

    async def elicit_url(self, message: str, url: str, elicitation_id: str) -> ElicitResult:
        """Send the user to a URL (``elicitation/create`` in URL mode)."""
        if not self.session.peer_caps.has("elicitation.url"):
            raise ValueError("the client did not declare URL-mode elicitation")
        params = ElicitRequestURLParams(message=message, url=url, elicitation_id=elicitation_id)
        return await self.session.elicit(params=params)

    async def list_roots(self, *, key: str | None = None) -> list[Root]:
        """The client's roots (``roots/list``). ``key``: as for :meth:`sample`."""
        result: ListRootsResult = await self.session.send_request(
            "roots/list", RequestParams(), ListRootsResult, **self._key(key)
        )
        return result.roots

    # ------------------------------------------------------------ tasks extension

    async def continue_as_task(self) -> None:
        """In a tool declared ``task_start="explicit"`` (tasks extension): answer the
        request with a task handle now and go on as that task; questions asked before
        were InputRequiredResult rounds, questions after park the task. Anywhere else (no
        task, or already one) it does nothing, and the tool simply goes on."""
        begin = getattr(self.session, "continue_as_task", None)
        if begin is not None:
            await begin()

    @property
    def client_capabilities(self) -> dict[str, Any]:
        """What the client declared: at ``initialize`` (handshake era) or on this very
        request (stateless era), as plain JSON data."""
        tree: dict[str, Any] = self.session.peer_caps.tree
        return tree

    @property
    def _asks_inputs(self) -> bool:
        """Whether questions to the client travel in an InputRequiredResult (stateless era)."""
        return getattr(self.session, "asks_inputs", False) is True

    def _key(self, key: str | None) -> dict[str, Any]:
        return {"key": key} if key is not None and self._asks_inputs else {}


def form_schema(schema: type) -> dict[str, Any]:
    """The requested schema of an elicitation form, from a flat Struct/dataclass/TypedDict."""
    (ref,), components = msgspec.json.schema_components([schema], ref_template="{name}")
    body = components[ref["$ref"]]
    return {
        "type": "object",
        "properties": body.get("properties", {}),
        **({"required": body["required"]} if body.get("required") else {}),
    }


handler_context: ContextVar[Context | None] = ContextVar("mcpgen_handler_context", default=None)
"""Set only inside a worker thread's copy of the request's context variables."""


def _opt(value: Any) -> Any:
    return UNSET if value is None else value


__all__ = ["Context", "form_schema", "UnsetType"]
