"""The stateless era (2026-07-28 on): every request names its protocol version and the
client's capabilities in its own ``_meta``; there is no handshake and no session.

:class:`StatelessServer` serves one request at a time for any transport: it checks the
request in the order the protocol asks (``_meta`` -> HTTP headers -> version -> method ->
capabilities), decodes the params with the stateless-era bindings, runs the same
:class:`~mcpgen.runtime.server.Server` handlers the handshake era runs, and stamps the
result with ``resultType``, caching hints and the server's identity. Request-scoped
notifications (progress, logs) go to a sink the transport gives (the stdio connection, or
the request's own SSE stream over HTTP). Asking the client for input goes through
:mod:`mcpgen.runtime.input_required`; change notifications through
:mod:`mcpgen.runtime.listen`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import UNSET

from mcpgen.runtime import headers as http_headers
from mcpgen.runtime.caching import CacheHint
from mcpgen.runtime.errors import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    MISSING_CAPABILITY,
    RESOURCE_NOT_FOUND,
    UNSUPPORTED_VERSION,
    McpError,
)
from mcpgen.runtime.framing import Envelope, RequestId, error_frame
from mcpgen.runtime.input_required import InputRequired, InputScope, StateSealer
from mcpgen.runtime.session import NOT_NOW, RequestContext, current_request
from mcpgen.runtime.versions import LATEST, LATEST_STATELESS, SUPPORTED, bindings, era_of, method_exists

if TYPE_CHECKING:
    from mcpgen.runtime.server import Server

log = logging.getLogger("mcpgen")

META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
META_SUBSCRIPTION = "io.modelcontextprotocol/subscriptionId"

Sink = Callable[[bytes], Awaitable[None]]
"""Where a request's own notifications go (progress, logs, listen events)."""

# The tasks extension's methods (mcpgen.runtime.tasks): not in the core schema.
_TASK_METHODS = ("tasks/get", "tasks/update", "tasks/cancel")
_LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
# Status codes of the Streamable HTTP binding for errors the stateless era defines.
_HTTP_STATUS = {
    METHOD_NOT_FOUND: 404,
    INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    MISSING_CAPABILITY: 400,
    UNSUPPORTED_VERSION: 400,
    -32600: 400,
    -32700: 400,
}


def http_status(code: int) -> int:
    """The HTTP status that carries a JSON-RPC error of this code in the stateless era."""
    return _HTTP_STATUS.get(code, 200)


class Refused(McpError):
    """A request refused before any handler ran."""


@dataclass(slots=True)
class StatelessRequest:
    """What the stateless era knows about the request being served (its scope)."""

    id: RequestId
    method: str
    version: str
    capabilities: dict[str, Any]
    client_info: dict[str, Any] | None
    log_level: str | None
    sink: Sink | None
    inputs: InputScope | None = None
    # The request's params as sent, while its input scope is not built: a request that
    # carries no answers and no state gets one only if its handler asks the client (the
    # scope's digest of the params costs as much as the rest of the checks).
    unasked: Any = None


class StatelessServer:
    """Serves stateless-era requests for one :class:`Server`."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.package = bindings(LATEST_STATELESS)
        # The core's requests, and those the server's extensions add (Server.add_extension_method).
        self.table = {**self.package.CLIENT_TO_SERVER, **server.extension_methods}
        # The handlers are written against the handshake era's types (isinstance checks
        # included): params are checked against this era's schema, then handed over as
        # those types. Both eras spell the fields the handlers read alike.
        self.handshake = bindings(LATEST)
        self.sealer = StateSealer(server.state_key)
        self._result_classes: dict[str, type | None] = {}

    # ------------------------------------------------------------ entry points

    async def handle(
        self, env: Envelope, *, sink: Sink | None = None, headers: Mapping[str, str] | None = None
    ) -> tuple[bytes, int | None]:
        """The response frame for one request and, for an error, its code (``headers``:
        the HTTP request's, lower-cased, when it came over HTTP)."""
        answer = self.handle_now(env, sink=sink, headers=headers)
        return answer if isinstance(answer, tuple) else await answer

    def handle_now(
        self, env: Envelope, *, sink: Sink | None = None, headers: Mapping[str, str] | None = None
    ) -> tuple[bytes, int | None] | Coroutine[Any, Any, tuple[bytes, int | None]]:
        """:meth:`handle` without waiting when nothing needs to wait: a request refused
        before any handler runs, or one whose handler answers on the spot (a tool declared
        ``blocking=False``; the handshake era serves those without a task too). Otherwise
        a coroutine that serves the request, for the transport to run as a task (closed
        unawaited, it runs nothing: no handler has started)."""
        rid: RequestId = env.id
        try:
            request, params = self.admit(env, sink, headers)
            frame = self.dispatch_now(request, params)
        except Exception as exc:
            return self._failure(rid, env.method, exc)
        if frame is None:
            return self._served(request, params)
        return frame, None

    async def _served(self, request: StatelessRequest, params: Any) -> tuple[bytes, int | None]:
        # The server's handler_timeout bounds each handler, as in the handshake era (a
        # listen stream is meant to stay open, so it is not bounded).
        limit = self.server.session_options.get("handler_timeout")
        try:
            if limit is None or request.method == "subscriptions/listen":
                return await self.dispatch(request, params), None
            async with asyncio.timeout(limit):
                return await self.dispatch(request, params), None
        except TimeoutError:
            log.error("mcpgen: %s handler timed out after %s s", request.method, limit)
            return error_frame(
                INTERNAL_ERROR, f"Internal error: no result within {limit:g} s", request.id
            ), INTERNAL_ERROR
        except Exception as exc:
            return self._failure(request.id, request.method, exc)

    def _failure(self, rid: RequestId, method: str, exc: Exception) -> tuple[bytes, int | None]:
        """The answer to a request refused, asking for input, or whose handler failed."""
        if isinstance(exc, InputRequired):
            return self.input_required_frame(rid, exc), None
        if isinstance(exc, McpError):
            return error_frame(exc.code, exc.message, rid, exc.data), exc.code
        if isinstance(exc, NotImplementedError):
            return error_frame(METHOD_NOT_FOUND, f"Method not found: {method}", rid), METHOD_NOT_FOUND
        log.error("mcpgen: %s failed", method, exc_info=exc)
        return error_frame(INTERNAL_ERROR, "Internal error", rid), INTERNAL_ERROR

    def admit(
        self, env: Envelope, sink: Sink | None, headers: Mapping[str, str] | None
    ) -> tuple[StatelessRequest, Any]:
        """Check a request in the protocol's order and decode its params, or raise the
        error that refuses it."""
        method: str = env.method
        raw = _params_object(env.params)  # parsed once: _meta and headers are read from it
        meta = raw.get("_meta")
        if not isinstance(meta, dict) or META_VERSION not in meta or not isinstance(meta.get(META_CAPABILITIES), dict):
            raise Refused(
                INVALID_PARAMS,
                "Invalid params: _meta needs io.modelcontextprotocol/protocolVersion and clientCapabilities",
            )
        version = meta[META_VERSION]
        if headers is not None:
            http_headers.check_request(headers, method, raw, version, self.tool_headers)
        if not isinstance(version, str) or era_of(version) != "stateless":
            raise Refused(
                UNSUPPORTED_VERSION,
                f"Unsupported protocol version: {version!r}",
                {"supported": list(SUPPORTED), "requested": version if isinstance(version, str) else str(version)},
            )
        if method in _TASK_METHODS and self.server.offers_tasks:
            return self.server.tasks.admit(self, env, raw, headers, sink)
        spec = self.table.get(method)
        if (
            spec is None
            or spec.kind != "request"
            or (not method_exists("c2s", method, version) and method not in self.server.extension_methods)
        ):
            raise Refused(METHOD_NOT_FOUND, f"Method not found: {method}")
        if spec.capability is not None and not self.server.declares(spec.capability.removeprefix("server.")):
            raise Refused(METHOD_NOT_FOUND, f"Method not found: {method} ({spec.capability} not offered)")
        level = meta.get(META_LOG_LEVEL)
        if level is not None and level not in _LOG_LEVELS:
            raise Refused(INVALID_PARAMS, f"Invalid params: unknown log level {level!r}")
        params = self._convert(spec, raw)
        info = meta.get(META_CLIENT_INFO)
        request = StatelessRequest(
            id=env.id,
            method=method,
            version=version,
            capabilities=meta[META_CAPABILITIES],
            client_info=info if isinstance(info, dict) else None,
            log_level=level,
            sink=sink,
        )
        if spec.input_required:
            if "requestState" in raw or "inputResponses" in raw:
                request.inputs = InputScope.for_retry(self.sealer, request.capabilities, method, raw)
            else:
                # Nothing to check now: built from the params as sent if the handler asks.
                request.unasked = env.params
        return request, params

    def tool_headers(self, name: str) -> Mapping[str, str]:
        """The x-mcp-header annotations of a tool's arguments: argument -> header name."""
        return self.server.tool_headers(name)

    def _convert(self, spec: Any, raw: dict[str, Any]) -> Any:
        try:
            checked = self.package.convert(raw, spec.params_type)
            same = self.handshake.CLIENT_TO_SERVER.get(spec.method)
            if same is None:  # only in this era (discover, listen): served here
                return checked
            return self.handshake.convert(raw, same.params_type)
        except msgspec.ValidationError as exc:
            raise Refused(INVALID_PARAMS, f"Invalid params: {exc}") from None
        except RecursionError:
            raise Refused(INVALID_PARAMS, "Invalid params: nested too deeply") from None

    # ------------------------------------------------------------ dispatch

    async def dispatch(self, request: StatelessRequest, params: Any) -> bytes:
        method = request.method
        if method == "server/discover":
            return self.result_frame(request, self.discover_result(), cache=self.server.cache_hint("server/discover"))
        if method == "subscriptions/listen":
            return await self.server.listeners.listen(self, request, params)
        if method in _TASK_METHODS:
            return await self.server.tasks.serve(self, request, params)
        if method == "tools/call" and self.server.task_support(params.name) is not None:
            frame = await self.server.tasks.call_tool(self, request, params)
            if frame is not None:
                return frame
        handler = getattr(self.server, self.table[method].handler)
        with self._serving(request, params):
            result = await handler(params)
        return self._result(request, params, result)

    def dispatch_now(self, request: StatelessRequest, params: Any) -> bytes | None:
        """:meth:`dispatch` on the spot, when the server has a synchronous handler for the
        method and it answers this request at once; None when it must be awaited."""
        if request.method in _TASK_METHODS:
            return None
        immediate = self.server.immediate_handler(self.table[request.method].handler)
        if immediate is None:
            return None
        with self._serving(request, params):
            result = immediate(params)
        if result is NOT_NOW:
            return None
        return self._result(request, params, result)

    @contextlib.contextmanager
    def _serving(self, request: StatelessRequest, params: Any) -> Iterator[None]:
        """Around a handler: the request context it sees, and the era's resource-not-found
        code (-32602; the handshake era's -32002 is what the handlers raise)."""
        token = current_request.set(self.context(request, params))
        try:
            yield
        except McpError as exc:
            if exc.code == RESOURCE_NOT_FOUND:
                raise McpError(INVALID_PARAMS, exc.message, exc.data) from None
            raise
        finally:
            current_request.reset(token)

    def _result(self, request: StatelessRequest, params: Any, result: Any) -> bytes:
        """The result frame, once the handler's result is checked to be of its method's type
        (as the handshake era does: a wrong type never reaches the wire)."""
        method = request.method
        expected = self._result_class(method)
        if expected is not None and not isinstance(result, expected):
            log.error("mcpgen: %s handler returned %s, not %s", method, type(result).__name__, expected.__name__)
            raise McpError(INTERNAL_ERROR, "Internal error")
        cache = self.server.cache_hint(method, params) if self.table[method].cacheable else None
        return self.result_frame(request, result, cache=cache)

    def _result_class(self, method: str) -> type | None:
        """What a handler's result must be an instance of (its handshake-era type)."""
        if method not in self._result_classes:
            spec = self.handshake.CLIENT_TO_SERVER.get(method)
            found = getattr(spec.result_type, "__origin__", spec.result_type) if spec is not None else None
            self._result_classes[method] = found if isinstance(found, type) else None
        return self._result_classes[method]

    def context(self, request: StatelessRequest, params: Any) -> RequestContext:
        """The request context handlers (and :class:`Context`) see for this request."""
        meta = getattr(params, "meta", None)
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        return RequestContext(
            StatelessPeer(self, request), request.id, request.method, meta if isinstance(meta, dict) else UNSET, token
        )

    def discover_result(self) -> dict[str, Any]:
        result: dict[str, Any] = {
            "supportedVersions": list(SUPPORTED),
            "capabilities": msgspec.to_builtins(self.server.capabilities()),
        }
        if self.server.offers_tasks:
            from mcpgen.runtime.tasks import TASKS_EXTENSION

            result["capabilities"].setdefault("extensions", {})[TASKS_EXTENSION] = {}
        if self.server.instructions:
            result["instructions"] = self.server.instructions
        return result

    # ------------------------------------------------------------ results

    def result_frame(self, request: StatelessRequest, result: Any, *, cache: CacheHint | None = None) -> bytes:
        """``{"jsonrpc":"2.0","id":...,"result":{...}}`` with the result stamped."""
        body = self.stamp(result, "complete", cache)
        return b'{"jsonrpc":"2.0","id":' + msgspec.json.encode(request.id) + b',"result":' + body + b"}"

    def stamp(self, result: Any, result_type: str, cache: CacheHint | None) -> bytes:
        """The result's JSON with ``resultType``, caching hints and the server's identity
        added (the handlers build results of the handshake era's types, which have none of
        them: older clients ignore the keys, so one set of handlers serves both eras)."""
        meta = getattr(result, "meta", UNSET) if not isinstance(result, dict) else result.get("_meta", UNSET)
        extra: dict[str, Any] = {"resultType": result_type}
        if cache is not None:
            extra["ttlMs"] = cache.ttl_ms
            extra["cacheScope"] = cache.scope
        if isinstance(meta, dict):
            if META_SERVER_INFO not in meta:
                merged = {**meta, META_SERVER_INFO: self.server.info}
                result = (
                    {**result, "_meta": merged}
                    if isinstance(result, dict)
                    else msgspec.structs.replace(result, meta=merged)
                )
        else:
            extra["_meta"] = {META_SERVER_INFO: self.server.info}
        head = msgspec.json.encode(extra)
        body = msgspec.json.encode(result)
        if body == b"{}":
            return head
        # Both are JSON objects: join their members.
        return head[:-1] + b"," + body[1:]

    def input_required_frame(self, rid: RequestId, asked: InputRequired) -> bytes:
        body = self.stamp(asked.result(), "input_required", None)
        return b'{"jsonrpc":"2.0","id":' + msgspec.json.encode(rid) + b',"result":' + body + b"}"

    # ------------------------------------------------------------ notifications

    async def notify(self, request: StatelessRequest, method: str, params: Any) -> None:
        """Send a notification on the request's own stream (dropped when it has none)."""
        if request.sink is not None:
            frame = msgspec.json.encode({"jsonrpc": "2.0", "method": method, "params": params})
            await request.sink(frame)


class StatelessPeer:
    """What :class:`~mcpgen.runtime.context.Context` talks to while a stateless request is
    served: it stands where a handshake-era session stands (sending notifications on the
    request's stream; the client's capabilities come from this request's ``_meta``; asking
    the client for input becomes an InputRequiredResult)."""

    asks_inputs = True
    # No session transport: the request's own stream is all there is. Code that reaches for
    # a handshake-era session's transport (http_server.close_current_stream) finds None
    # and leaves the stream alone rather than failing with AttributeError.
    transport: Any = None

    def __init__(self, server: StatelessServer, request: StatelessRequest) -> None:
        self._server = server
        self.request = request

    @property
    def own_caps(self) -> Any:
        return self._server.server.declared

    @property
    def peer_caps(self) -> Any:
        from mcpgen.runtime.capabilities import Declared

        return Declared(self.request.capabilities)

    def logs(self, level: str) -> bool:
        """Log messages go out only when the request named a level, at it or above."""
        chosen = self.request.log_level
        return chosen is not None and _LOG_LEVELS.index(level) >= _LOG_LEVELS.index(chosen)

    async def send_notification(self, method: str, params: Any, **_: Any) -> None:
        await self._server.notify(self.request, method, msgspec.to_builtins(params))

    async def create_message(self, *, key: str | None = None, **params: Any) -> Any:
        typed = self._server.handshake.CreateMessageRequestParams(**params)
        return await self._scope().ask("sampling/createMessage", typed, key)

    async def elicit(self, params: Any, key: str | None = None) -> Any:
        return await self._scope().ask("elicitation/create", params, key)

    async def send_request(self, method: str, params: Any, result_type: Any, key: str | None = None, **_: Any) -> Any:
        if method != "roots/list":
            raise McpError(METHOD_NOT_FOUND, f"a server does not send {method} in the stateless era")
        return await self._scope().ask("roots/list", params, key)

    def _scope(self) -> InputScope:
        request = self.request
        if request.inputs is None and request.unasked is not None:
            raw = _params_object(request.unasked)
            request.inputs = InputScope.for_retry(self._server.sealer, request.capabilities, request.method, raw)
        if request.inputs is None:
            raise McpError(INVALID_PARAMS, f"{request.method} cannot ask the client for input")
        return request.inputs


def _params_object(params: Any) -> dict[str, Any]:
    """The params of a request as parsed JSON (an object, or refused)."""
    if params is UNSET:
        return {}
    try:
        value = msgspec.json.decode(params)
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
        raise Refused(INVALID_PARAMS, "Invalid params: not readable JSON (or not UTF-8)") from None
    if not isinstance(value, dict):
        raise Refused(INVALID_PARAMS, "Invalid params: params must be an object")
    return value
