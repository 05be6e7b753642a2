"""The stateless era (2026-07-28 on): every request names its protocol version and the
client's capabilities in its own ``_meta``; there is no handshake and no session.

:class:`StatelessServer` is the era's admission and its finishing, for any transport. It
checks a request in the order the protocol asks (``_meta`` -> HTTP headers -> version ->
method -> capabilities) and reads its params with the stateless-era bindings, into the
types the handlers take (the handshake era's: one set of handlers serves both eras); the
kernel (:mod:`mcpgen.runtime.jsonrpc.kernel`) then serves it as it serves any request, and
the front's :class:`Rules` stamp the result with ``resultType``, caching hints and the
server's identity. Request-scoped notifications (progress, logs) go to a sink the
transport gives (the stdio connection, or the request's own SSE stream over HTTP). Asking
the client for input goes through :mod:`mcpgen.runtime.server.input_required`; change
notifications through :mod:`mcpgen.runtime.server.listen`; tasks through
:mod:`mcpgen.runtime.server.tasks`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import msgspec
from msgspec import UNSET

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
from mcpgen.runtime.jsonrpc import kernel
from mcpgen.runtime.jsonrpc.context import RequestContext
from mcpgen.runtime.jsonrpc.framing import Envelope, OutResult, RequestId, encode, error_frame
from mcpgen.runtime.jsonrpc.kernel import Incoming, Ready, Reply, Route, Slots
from mcpgen.runtime.server.caching import CacheHint
from mcpgen.runtime.server.input_required import InputRequired, InputScope, StateSealer
from mcpgen.runtime.server.params_merge import decoder as merged_decoder
from mcpgen.runtime.server.params_merge import merged_params
from mcpgen.runtime.server.stamp import Stamper
from mcpgen.runtime.shared import headers as http_headers
from mcpgen.runtime.shared.meta import (
    META_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_VERSION,
)
from mcpgen.runtime.versions import (
    LATEST,
    LATEST_STATELESS,
    STATELESS,
    bindings,
    era_of,
    method_exists,
)

if TYPE_CHECKING:
    from mcpgen.protocol.v2025_11_25 import MethodSpec
    from mcpgen.runtime.jsonrpc.capabilities import Declared

log = logging.getLogger("mcpgen")

Sink = Callable[[bytes], Awaitable[None]]
"""Where a request's own notifications go (progress, logs, listen events)."""


class ListenFront(Protocol):
    """What the front asks of the server's open subscriptions (:mod:`.listen`)."""

    async def listen(self, stateless: StatelessServer, request: StatelessRequest, params: Any) -> Any: ...


class FrontHost(Protocol):
    """What the stateless front, the tasks extension and ``subscriptions/listen`` use of the
    :class:`~mcpgen.runtime.server.server.Server` they serve: declared here so that these
    modules sit below the server and never import it (it satisfies this structurally; typing
    only)."""

    @property
    def info(self) -> Any: ...
    @property
    def instructions(self) -> str | None: ...
    @property
    def state_key(self) -> bytes | str | None: ...
    @property
    def session_options(self) -> dict[str, Any]: ...
    @property
    def extension_methods(self) -> dict[str, MethodSpec]: ...
    @property
    def listeners(self) -> ListenFront: ...
    @property
    def named_params(self) -> dict[str, str]: ...
    @property
    def versions(self) -> tuple[str, ...]: ...
    @property
    def declared(self) -> Declared: ...

    def declares(self, path: str) -> bool: ...
    def capabilities(self, era: str = "handshake") -> Any: ...
    def cache_hint(self, method: str, params: Any = None) -> CacheHint: ...
    def tool_headers(self, name: str) -> dict[str, str]: ...
    def task_support(self, name: str) -> tuple[str, str] | None: ...
    def route(self, spec: MethodSpec) -> Route: ...
    def wrap(self, method: str, base: Route) -> Route: ...
    def intercepted(self, method: str, route: Route, era: str) -> Route: ...
    async def dispatch(self, spec: MethodSpec, params: Any) -> Any: ...


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


# msgspec Structs, not slotted dataclasses: built on the stateless era's first request, a
# dataclass costs ~0.4 ms to create (it compiles its methods), and a Struct is also about
# twice as quick to instantiate (one StatelessRequest per request).
class StatelessRequest(msgspec.Struct):
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


class _Plan(msgspec.Struct):
    """What admitting a request of one method takes, worked out once per method: the hot
    path reads the params straight into their type (one typed decode checks them) instead
    of parsing them to a dict and converting that twice, and looks nothing up by version."""

    spec: Any
    # The stateless-era versions in which the method exists.
    versions: frozenset[str]
    # The server capability the method needs (tools, resources, ...), if any.
    capability: str | None
    # How the kernel serves it.
    route: Route
    # Params bytes -> the handshake era's params struct the handlers take; None for a
    # method only this era has (its handler takes this era's struct), and when ``read``
    # already returns the handlers' type (params_merge: one struct checking both eras).
    read_handshake: Callable[[Any], Any] | None
    # Params bytes -> this era's params struct (or the merged one); None when the type
    # does not carry what the checks read (the request then takes the general path,
    # through a dict).
    read: Callable[[Any], Any] | None = None
    # Attribute names, in that struct, of the param Mcp-Name mirrors (tools/call: name),
    # of the tool arguments, and of a retry's requestState and inputResponses.
    named: str | None = None
    arguments: str | None = None
    retry: tuple[str, str] | None = None


_NOT_PLANNED: Any = object()
# What a typed decode raises for params it refuses (the general path then says why).
_UNREADABLE = (msgspec.MsgspecError, ValueError, TypeError, RecursionError)


class StatelessServer:
    """The stateless era's admission and finishing, for one server (the kernel's
    :class:`~mcpgen.runtime.jsonrpc.kernel.Rules` of the era)."""

    def __init__(self, server: FrontHost) -> None:
        self.server = server
        self.package = bindings(LATEST_STATELESS)
        # The core's requests, and those the server's extensions add (Server.add_extension_method).
        self.table = {**self.package.CLIENT_TO_SERVER, **server.extension_methods}
        # The handlers are written against the handshake era's types (isinstance checks
        # included): params are checked against this era's schema, then handed over as
        # those types. Both eras spell the fields the handlers read alike.
        self.handshake = bindings(LATEST)
        self.sealer = StateSealer(server.state_key)
        self._plans: dict[str, _Plan | None] = {}
        # Stamps results (resultType, caching hints, the server's identity) in one encode.
        self._stamper = Stamper()

    def forget_routes(self) -> None:
        """Make the routes again on next use (the server's middleware changed)."""
        self._plans.clear()

    # ------------------------------------------------------------ admission

    def admit(
        self,
        env: Envelope,
        *,
        sink: Sink | None,
        reply: Reply,
        slots: Slots | None,
        headers: Mapping[str, str] | None = None,
    ) -> Incoming:
        """The request as the kernel serves it, or the error refusing it raised (see
        :meth:`refusal`). ``headers``: the HTTP request's, lower-cased, when it came over
        HTTP; ``sink``: where its notifications go; ``reply``: where its answer goes;
        ``slots``: the bound it runs under."""
        request, params, route = self._check(env, sink, headers)
        meta = getattr(params, "meta", UNSET) if not isinstance(params, dict) else params.get("_meta", UNSET)
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        peer = StatelessPeer(self, request)
        return Incoming(
            peer, request.id, request.method, meta, token,
            params=params, route=route, rules=self, reply=reply, slots=slots,
        )  # fmt: skip

    def refusal(self, rid: RequestId, method: str, exc: Exception) -> tuple[bytes, int | None]:
        """The answer to a request refused before any handler ran."""
        if isinstance(exc, McpError):
            return error_frame(exc.code, exc.message, rid, exc.data), exc.code
        log.error("mcpgen: admitting %s failed", method, exc_info=exc)
        return error_frame(INTERNAL_ERROR, "Internal error", rid), INTERNAL_ERROR

    def _check(
        self, env: Envelope, sink: Sink | None, headers: Mapping[str, str] | None
    ) -> tuple[StatelessRequest, Any, Route]:
        """Check a request in the protocol's order and decode its params, or raise the
        error that refuses it."""
        method: str = env.method
        plan = self._plans.get(method, _NOT_PLANNED)
        if plan is _NOT_PLANNED:
            plan = self._plan(method)
        typed: Any = None
        if plan is not None and plan.read is not None and env.params is not UNSET:
            try:
                typed = plan.read(env.params)
            except _UNREADABLE:
                pass  # the general path below says why
        raw: dict[str, Any] | None = None
        if typed is not None:
            # Read as this method's params type: _meta is there, an object, and every
            # field is checked; the checks below read the struct.
            assert plan is not None
            meta: Any = typed.meta
            named = getattr(typed, plan.named) if plan.named is not None else None
            arguments = getattr(typed, plan.arguments) if plan.arguments is not None else None
        else:
            # Anything else (malformed, another method, an extension's type) is parsed once
            # to a dict, so that each refusal is the one the protocol's order gives.
            raw = _params_object(env.params)
            meta = raw.get("_meta")
            field = http_headers.NAME_PARAMS.get(method) or self.server.named_params.get(method)
            named = raw.get(field) if field is not None else None
            arguments = raw.get("arguments")
        if not isinstance(meta, dict) or META_VERSION not in meta or not isinstance(meta.get(META_CAPABILITIES), dict):
            raise Refused(
                INVALID_PARAMS,
                "Invalid params: _meta needs io.modelcontextprotocol/protocolVersion and clientCapabilities",
            )
        version = meta[META_VERSION]
        if headers is not None:
            field = self.server.named_params.get(method)  # an extension's (core methods: NAME_PARAMS)
            http_headers.check_request(headers, method, named, arguments, version, self.tool_headers, field)
        if plan is None or version.__class__ is not str or version not in plan.versions:
            # Not a method this version has, or not a version this era speaks: which.
            if not isinstance(version, str) or era_of(version) != "stateless" or version not in self.server.versions:
                raise Refused(
                    UNSUPPORTED_VERSION,
                    f"Unsupported protocol version: {version!r}",
                    {
                        "supported": list(self.server.versions),
                        "requested": version if isinstance(version, str) else str(version),
                    },
                )
            raise Refused(METHOD_NOT_FOUND, f"Method not found: {method}")
        spec = plan.spec
        if plan.capability is not None and not self.server.declares(plan.capability):
            raise Refused(METHOD_NOT_FOUND, f"Method not found: {method} ({spec.capability} not offered)")
        level = meta.get(META_LOG_LEVEL)
        if level is not None and level not in _LOG_LEVELS:
            raise Refused(INVALID_PARAMS, f"Invalid params: unknown log level {level!r}")
        params = None
        if typed is not None:
            params = typed if plan.read_handshake is None else _read(plan.read_handshake, env.params)
        if params is None:  # not read above, or refused by the handshake era's type: say why
            params = self._convert(spec, raw if raw is not None else _params_object(env.params))
        info = meta.get(META_CLIENT_INFO)
        # id, method, version, capabilities, client_info, log_level, sink (positional: cheaper)
        request = StatelessRequest(
            env.id, method, version, meta[META_CAPABILITIES], info if isinstance(info, dict) else None, level, sink
        )
        if spec.input_required:
            if typed is not None and plan.retry is not None:
                # A field is set exactly when the params have its key (JSON has no UNSET).
                retry = getattr(typed, plan.retry[0]) is not UNSET or getattr(typed, plan.retry[1]) is not UNSET
            else:
                raw = raw if raw is not None else _params_object(env.params)
                retry = "requestState" in raw or "inputResponses" in raw
            if retry:
                raw = raw if raw is not None else _params_object(env.params)
                request.inputs = InputScope.for_retry(self.sealer, request.capabilities, method, raw)
            else:
                # Nothing to check now: built from the params as sent if the handler asks.
                request.unasked = env.params
        return request, params, plan.route

    def _plan(self, method: str) -> _Plan | None:
        """The plan of a method of the table, made once (None for notifications, the tasks
        extension's methods and methods the table does not have)."""
        spec = self.table.get(method)
        if spec is None:
            return None  # a peer's made-up method: nothing kept for it
        if spec.kind != "request":
            self._plans[method] = None
            return None
        extension = method in self.server.extension_methods
        # An extension's method takes its own types (the handshake era may name the method
        # with other types: 2025-11-25's tasks/get is not the tasks extension's).
        same = None if extension else self.handshake.CLIENT_TO_SERVER.get(method)
        plan = _Plan(
            spec=spec,
            versions=frozenset(
                v for v in STATELESS if v in self.server.versions and (extension or method_exists("c2s", method, v))
            ),
            capability=spec.capability.removeprefix("server.") if spec.capability is not None else None,
            route=self._route(method, same if same is not None else spec),
            read_handshake=self.handshake.decoder(same.params_type).decode if same is not None else None,
        )
        # Where this era's params type and the handshake era's agree on what they share,
        # one struct checks both and is what the handler takes: one decode, not two.
        merged = merged_params(same.params_type, spec.params_type) if same is not None else None
        # Read straight into the params type only when it carries everything the checks
        # read (derived from the type, so an extension's method is covered too): a
        # required _meta, the param Mcp-Name names, and for a method that may ask the
        # client for input, the retry's fields.
        params_type = merged if merged is not None else spec.params_type
        if isinstance(params_type, type) and issubclass(params_type, msgspec.Struct):
            fields = {f.encode_name: f for f in msgspec.structs.fields(params_type)}
            meta = fields.get("_meta")
            named = http_headers.NAME_PARAMS.get(method)
            needed = [named] if named is not None else []
            if spec.input_required:
                needed += ["requestState", "inputResponses"]
            if meta is not None and meta.required and meta.name == "meta" and all(n in fields for n in needed):
                if merged is not None:
                    plan.read = merged_decoder(merged, self.package, self.handshake)
                    plan.read_handshake = None  # what plan.read returns is the handlers' type
                else:
                    plan.read = self.package.decoder(params_type).decode
                plan.named = fields[named].name if named is not None else None
                plan.arguments = fields["arguments"].name if "arguments" in fields else None
                if spec.input_required:
                    plan.retry = (fields["requestState"].name, fields["inputResponses"].name)
        self._plans[method] = plan
        return plan

    def tool_headers(self, name: str) -> Mapping[str, str]:
        """The x-mcp-header annotations of a tool's arguments: argument -> header name."""
        return self.server.tool_headers(name)

    def _convert(self, spec: Any, raw: dict[str, Any]) -> Any:
        try:
            checked = self.package.convert(raw, spec.params_type)
            same = (
                None
                if spec.method in self.server.extension_methods
                else self.handshake.CLIENT_TO_SERVER.get(spec.method)
            )
            if same is None:  # only in this era (discover, listen) or an extension's: its own type
                return checked
            return self.handshake.convert(raw, same.params_type)
        except msgspec.ValidationError as exc:
            raise Refused(INVALID_PARAMS, f"Invalid params: {exc}") from None
        except RecursionError:
            raise Refused(INVALID_PARAMS, "Invalid params: nested too deeply") from None

    # ------------------------------------------------------------ routes

    def _route(self, method: str, spec: MethodSpec) -> Route:
        """How a method of this era is served: the server's route for the methods both eras
        have (``spec`` is the handshake era's: the handlers' types) and the extensions',
        and the era's own; then what the era's extensions make of it."""
        server = self.server
        if method == "server/discover":
            found = server.wrap(method, Route(self._discover_later, self._discover, dict))
        elif method == "subscriptions/listen":
            # A listen stream lasts as long as the client listens: no slot, no timeout.
            found = server.wrap(method, Route(self._listen, limited=False))
        else:
            found = server.route(spec)
        return server.intercepted(method, found, "stateless")

    def _discover(self, params: Any) -> dict[str, Any]:
        return self.discover_result()

    async def _discover_later(self, params: Any) -> dict[str, Any]:
        return self.discover_result()

    async def _listen(self, params: Any) -> Any:
        return await self.server.listeners.listen(self, scope(), params)

    # ------------------------------------------------------------ the kernel's Rules

    def result(self, request: Incoming, result: Any) -> bytes:
        """The frame answering a request of this era: the result stamped."""
        if isinstance(result, Ready):
            return self.frame(request.request_id, result.body, result.kind, None)
        spec = self.table.get(request.method)
        cache = self.server.cache_hint(request.method, request.params) if spec is not None and spec.cacheable else None
        return self.frame(request.request_id, result, "complete", cache)

    def failure(self, request: Incoming, exc: BaseException) -> tuple[bytes, int | None] | None:
        if isinstance(exc, InputRequired):
            return self.frame(request.request_id, exc.result(), "input_required", None), None
        if isinstance(exc, McpError) and exc.code == RESOURCE_NOT_FOUND:
            # -32602 in this era (the handlers raise the handshake era's -32002).
            return error_frame(INVALID_PARAMS, exc.message, request.request_id, exc.data), INVALID_PARAMS
        return None

    async def handle(
        self, env: Envelope, *, sink: Sink | None = None, headers: Mapping[str, str] | None = None
    ) -> tuple[bytes, int | None]:
        """The answer to one request served on its own (no connection: the server's
        ``max_concurrency`` does not bound it) and, for an error, its code: a convenience
        for tests and embedders; the transports admit and serve through the kernel."""
        reply = kernel.OneReply()
        try:
            request = self.admit(env, sink=sink, reply=reply, slots=None, headers=headers)
        except Exception as exc:
            return self.refusal(env.id, env.method, exc)
        kernel.serve(request)
        found = await reply.final()
        if found is None:
            raise ConnectionError("the request was cancelled")
        return found

    def context(self, request: StatelessRequest, params: Any) -> RequestContext:
        """A request context for ``request`` (the tasks extension runs a task's tool in one)."""
        meta = getattr(params, "meta", UNSET)
        peer = StatelessPeer(self, request)
        if isinstance(meta, dict):
            return RequestContext(peer, request.id, request.method, meta, meta.get("progressToken"))
        return RequestContext(peer, request.id, request.method, UNSET, None)

    def discover_result(self) -> dict[str, Any]:
        result: dict[str, Any] = {
            "supportedVersions": list(self.server.versions),
            "capabilities": msgspec.to_builtins(self.server.capabilities("stateless")),
        }
        if self.server.instructions:
            result["instructions"] = self.server.instructions
        return result

    # ------------------------------------------------------------ results

    def frame(self, rid: RequestId, result: Any, result_type: str, cache: CacheHint | None) -> bytes:
        """``{"jsonrpc":"2.0","id":...,"result":{...}}`` with the result stamped, encoded
        in one pass (a result may be megabytes)."""
        return encode(OutResult(id=rid, result=self._stamper.stamped(result, result_type, cache, self.server.info)))

    def stamp(self, result: Any, result_type: str, cache: CacheHint | None) -> bytes:
        """The result's JSON with ``resultType``, caching hints and the server's identity
        added (see :mod:`mcpgen.runtime.server.stamp`)."""
        return encode(self._stamper.stamped(result, result_type, cache, self.server.info))

    # ------------------------------------------------------------ notifications

    async def notify(self, request: StatelessRequest, method: str, params: Any) -> None:
        """Send a notification on the request's own stream (dropped when it has none)."""
        if request.sink is not None:
            frame = msgspec.json.encode({"jsonrpc": "2.0", "method": method, "params": params})
            await request.sink(frame)


def scope() -> StatelessRequest:
    """The stateless-era scope of the request being served (its peer's)."""
    from mcpgen.runtime.jsonrpc.context import current_request

    found = current_request.get()
    assert found is not None
    request: StatelessRequest = found.session.request
    return request


class StatelessPeer:
    """What :class:`~mcpgen.runtime.server.context.Context` talks to while a stateless request is
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
    def lifespan_state(self) -> Any:
        """What the server's lifespan yielded (Context.lifespan)."""
        return getattr(self._server.server, "lifespan_state", None)

    @property
    def own_caps(self) -> Any:
        return self._server.server.declared

    @property
    def peer_caps(self) -> Any:
        from mcpgen.runtime.jsonrpc.capabilities import Declared

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

    def input_scope(self) -> InputScope:
        """The questions and answers of this request (its sealed answers, the client's
        ``inputResponses``): for what answers the request with questions of its own making
        (a gateway relaying a backend's), as :class:`InputRequired` does."""
        return self._scope()

    def _scope(self) -> InputScope:
        request = self.request
        if request.inputs is None and request.unasked is not None:
            raw = _params_object(request.unasked)
            request.inputs = InputScope.for_retry(self._server.sealer, request.capabilities, request.method, raw)
        if request.inputs is None:
            raise McpError(INVALID_PARAMS, f"{request.method} cannot ask the client for input")
        return request.inputs


def _read(read: Callable[[Any], Any] | None, params: Any) -> Any:
    """The params read by a plan's typed decoder, or None when there is none or it refuses
    them (the caller then takes the general path)."""
    if read is None or params is UNSET:
        return None
    try:
        return read(params)
    except _UNREADABLE:
        return None


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
