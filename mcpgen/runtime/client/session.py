"""The client side of a session, in either protocol era.

Handshake era: :meth:`ClientSession.start` sends ``initialize``. Stateless era: nothing is
negotiated; :meth:`ClientSession.connect` probes with ``server/discover`` and from then on
every request is stamped with the client's ``_meta`` envelope, answered questions
(InputRequiredResult) are retried under a new id, results are cached as their hints
allow, and notifications of ``subscriptions/listen`` streams go to their listener by
subscription id. The generated typed calls (``ClientCalls``) go through
:meth:`ClientSession.send_request`, so they work unchanged in both eras.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import msgspec
from msgspec import UNSET, UnsetType

from mcpgen.protocol import v2025_11_25 as handshake
from mcpgen.protocol.v2025_11_25 import (
    ClientCalls,
    ClientCapabilities,
    Implementation,
    InitializeRequestParams,
    InitializeResult,
    decoder,
)
from mcpgen.runtime.client.cache import CACHEABLE, ResultCache, cache_key
from mcpgen.runtime.client.era import NoCommonVersion, StatelessRefused, after_probe, after_slow_probe
from mcpgen.runtime.client.era import plan as era_plan
from mcpgen.runtime.client.stateless import (
    ASKING_METHODS,
    KINDED,
    MAX_ROUNDS,
    DiscoverInfo,
    Envelope,
    InvalidResult,
    MissingInputHandler,
    UnsupportedVersions,
    accepts_task,
    answer_inputs,
    head_decoder,
    pick_version,
    request_body,
    without_core_tasks,
)
from mcpgen.runtime.errors import INVALID_PARAMS, METHOD_NOT_FOUND, UNSUPPORTED_VERSION, McpError, RequestTimeout
from mcpgen.runtime.jsonrpc.capabilities import Declared
from mcpgen.runtime.jsonrpc.framing import Envelope as Frame
from mcpgen.runtime.jsonrpc.framing import OutRequest, RequestId, encode
from mcpgen.runtime.jsonrpc.kernel import Route
from mcpgen.runtime.jsonrpc.session import ProgressCallback
from mcpgen.runtime.shared.handshake import HandshakeSession
from mcpgen.runtime.shared.meta import META_SUBSCRIPTION
from mcpgen.runtime.versions import HANDSHAKE, LATEST, LATEST_STATELESS, STATELESS, era_of

if TYPE_CHECKING:
    from mcpgen.runtime.middleware.chain import Call, Chain

log = logging.getLogger("mcpgen")
T = TypeVar("T")
EraMode = Literal["auto", "handshake", "stateless"]
Deliver = Callable[[str, dict[str, Any]], None]


class UnsupportedVersion(McpError):
    def __init__(self, version: str) -> None:
        super().__init__(-32602, f"the server chose protocol version {version!r}, which mcpgen does not speak")
        self.version = version


class ClientSession(HandshakeSession, ClientCalls):
    """A connection to one server: :meth:`connect` finds its era and opens it."""

    role = "client"
    server_info: Implementation | None = None
    instructions: str | None = None
    # Stateless era: the _meta every request carries (None in the handshake era).
    modern: Envelope | None = None
    cache: ResultCache | None = None
    discovered: DiscoverInfo | None = None
    era: Literal["handshake", "stateless"] | None = None
    # Whether the handshake era was chosen only because the probe went unanswered in time
    # (a weak verdict: a busy modern server looks the same, so it is not kept).
    probe_timed_out = False
    # The middleware every outgoing request goes through (Client(middleware=...)); None: none.
    middleware_chain: Chain | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._listeners: dict[RequestId, Deliver] = {}

    # ------------------------------------------------------------ opening

    async def connect(
        self,
        capabilities: ClientCapabilities,
        client_info: Implementation,
        era: str = "auto",
        *,
        known_era: str | None = None,
        probe_timeout: float = 3.0,
        cache: bool = True,
    ) -> InitializeResult:
        """Open the session in the era ``era`` asks for: "handshake", "stateless", a
        version (that version's era, pinned), or "auto" (probe with ``server/discover`` and
        fall back to ``initialize`` on anything that is not proof of a modern server; no
        probe where ``known_era`` says the endpoint speaks only the handshake era). The
        rules are :mod:`mcpgen.runtime.client.era`'s."""
        opening = era_plan(era, known_era)
        pinned = opening.pinned
        if opening.era == "handshake":
            return await self.start(capabilities, client_info, pinned or LATEST)
        self.modern = Envelope(
            pinned or LATEST_STATELESS,
            stateless_capabilities(capabilities),
            msgspec.to_builtins(client_info),
            pinned=pinned is not None,
        )
        self.own_caps = Declared(capabilities)
        try:
            # The timeout is for a server that stays silent; a protected one answers 401 at
            # once, and the probe then waits on the authorization, which is no such silence
            # (cut short, the flow would start over: a second sign-in, a retry limit spent).
            silent = probe_timeout if opening.probe and not self.abilities.authenticates else UNSET
            return await self._probe(pinned, silent, cache)
        except (McpError, RequestTimeout) as exc:
            if after_probe(opening.probe, exc) == "raise":
                if isinstance(exc, NoCommonVersion):
                    raise UnsupportedVersions(exc.ours, exc.theirs) from None
                if isinstance(exc, McpError) and exc.code == METHOD_NOT_FOUND and not opening.probe:
                    raise StatelessRefused(exc) from None
                raise
            # Never a silent downgrade: say why the stateless era was not spoken.
            log.info("mcpgen: server/discover answered %s: speaking the handshake era (initialize)", exc)
            envelope = self.modern
            try:
                return await self._fall_back(capabilities, client_info, exc)
            except McpError as refused:
                if not after_slow_probe(exc, refused):
                    raise
                # The probe was only slow: the server refuses initialize as only a modern
                # one does (over stdio the probe made the connection stateless). Speak the
                # stateless era after all, this time waiting for discover as for any request.
                log.info("mcpgen: initialize answered %s after a slow probe: speaking the stateless era", refused)
                self.modern = envelope
                self.probe_timed_out = False
                return await self._probe(pinned, UNSET, cache)

    async def _probe(self, pinned: str | None, timeout: float | UnsetType, cache: bool) -> InitializeResult:
        """``server/discover`` in the stateless era, then open in the newest version both
        sides speak (raises what the probe answered, or :class:`~mcpgen.runtime.client.era.NoCommonVersion`)."""
        assert self.modern is not None
        self._transport_era("stateless")
        found = await self.discover(timeout=timeout)
        version = pick_version(found.supported_versions, pinned)
        if version is None:
            # A discover result naming no version of ours: legacy for "auto" (as an
            # older server's reply would be), an error when the era was pinned.
            raise NoCommonVersion([pinned] if pinned else list(STATELESS), found.supported_versions)
        self.modern.version = version
        self.cache = ResultCache() if cache else None
        return self._opened(found, version)

    async def _fall_back(
        self, capabilities: ClientCapabilities, client_info: Implementation, why: BaseException
    ) -> InitializeResult:
        self.modern = None
        self.probe_timed_out = isinstance(why, RequestTimeout)
        # A probe that timed out has its notifications/cancelled spawned by the engine, not
        # sent yet: let it go out in the era its request went out in (over HTTP that sends
        # nothing, closing the probe's stream was its cancellation). Sent after the switch
        # it would be a handshake-era POST without a session, which the server refuses.
        if self._background:
            await asyncio.wait(list(self._background), timeout=1.0)
        self._transport_era("handshake")
        theirs = why.theirs if isinstance(why, UnsupportedVersions) else []
        version = next((v for v in HANDSHAKE if v in theirs), LATEST)
        return await self.start(capabilities, client_info, version)

    def _opened(self, found: DiscoverInfo, version: str) -> InitializeResult:
        """Take a discover result as the handshake's: the server's identity, capabilities
        and instructions, as an InitializeResult (what ``Client.initialize_result`` holds
        in either era)."""
        self.era = "stateless"
        self.outgoing = without_core_tasks(self.outgoing)
        self.discovered = found
        self.protocol_version = version
        self.peer_caps = Declared(found.capabilities)
        identity = found.identity() or {}
        try:
            self.server_info = handshake.convert(identity, Implementation)
        except msgspec.ValidationError:
            self.server_info = Implementation(
                name=str(identity.get("name", "")), version=str(identity.get("version", ""))
            )
        self.instructions = found.instructions if isinstance(found.instructions, str) and found.instructions else None
        self.state = "ready"
        try:
            caps = handshake.convert(found.capabilities, handshake.ServerCapabilities)
        except msgspec.ValidationError:
            caps = handshake.ServerCapabilities()
        return InitializeResult(
            protocol_version=version,
            capabilities=caps,
            server_info=self.server_info,
            instructions=self.instructions or UNSET,
        )

    def _transport_era(self, era: str) -> None:
        choose = self.abilities.use_era
        if choose is not None:  # e.g. HTTP: the stateless era's headers, no session
            choose(era)

    async def start(
        self, capabilities: ClientCapabilities, client_info: Implementation, version: str = LATEST
    ) -> InitializeResult:
        """Send ``initialize``, check the version the server picked, send ``initialized``."""
        self.own_caps = Declared(capabilities)
        params = InitializeRequestParams(protocol_version=version, capabilities=capabilities, client_info=client_info)
        # Decoded with the server's capabilities.extensions kept, which 2025-11-25 does not name.
        from mcpgen.runtime.shared.extensions import ExtendedInitializeResult

        result: InitializeResult = await self.send_request("initialize", params, ExtendedInitializeResult)
        if era_of(result.protocol_version) != "handshake":
            if not (self.probe_timed_out and era_of(result.protocol_version) == "stateless"):
                await self.close()  # (after a slow probe the stateless era is tried instead)
            raise UnsupportedVersion(result.protocol_version)
        self.era = "handshake"
        self.protocol_version = result.protocol_version
        self.peer_caps = Declared(result.capabilities)
        self.server_info = result.server_info
        self.instructions = result.instructions or None
        self.state = "ready"
        started = self.abilities.started
        if started is not None:  # e.g. HTTP: send the version header from now on
            await started(result.protocol_version)
        await self.send_notification("notifications/initialized", {})
        initialized = self.abilities.initialized
        if initialized is not None:  # e.g. HTTP: open the GET stream
            await initialized()
        return result

    async def discover(self, *, timeout: float | None | UnsetType = UNSET, fresh: bool = False) -> DiscoverInfo:
        """``server/discover`` (stateless era): versions, capabilities, identity."""
        return await self.send_request("server/discover", {}, DiscoverInfo, timeout=timeout, fresh=fresh)

    # ------------------------------------------------------------ requests

    def send_request(
        self,
        method: str,
        params: Any,
        result_type: type[T],
        *,
        timeout: float | None | UnsetType = UNSET,
        on_progress: ProgressCallback | None = None,
        related: RequestId | UnsetType = UNSET,
        fresh: bool = False,
    ) -> Coroutine[Any, Any, T]:
        """Send a request and return its final result. In the stateless era: stamped with
        ``_meta``, answered from the cache while a cached result is fresh (unless
        ``fresh``), and retried (each time under a new id) after answering the server's
        questions, or once in another version after a -32022 answer.

        Not itself a coroutine function: it hands back the coroutine of the era's path (the
        engine's own in the handshake era), one coroutine less on every request. With
        middleware (``middleware_chain``), the request goes through them first."""
        if self.middleware_chain is not None:
            return self._through_middleware(method, params, result_type, timeout, on_progress, related, fresh)
        if self.modern is None:
            return super().send_request(
                method, params, result_type, timeout=timeout, on_progress=on_progress, related=related
            )
        return self._send_stateless(method, params, result_type, timeout, on_progress, related, fresh)

    async def _through_middleware(
        self,
        method: str,
        params: Any,
        result_type: type[T],
        timeout: float | None | UnsetType,
        on_progress: ProgressCallback | None,
        related: RequestId | UnsetType,
        fresh: bool,
    ) -> T:
        from mcpgen.runtime.middleware.chain import client_call, sending

        assert self.middleware_chain is not None

        async def last(call: Call) -> T:
            token = sending.set(call)  # for _issue_noted: this task's call learns its id
            try:
                if self.modern is None:
                    return await super(ClientSession, self).send_request(
                        call.method, call.params, result_type, timeout=timeout, on_progress=on_progress, related=related
                    )
                return await self._send_stateless(
                    call.method, call.params, result_type, timeout, on_progress, related, fresh
                )
            finally:
                sending.reset(token)

        result: T = await self.middleware_chain.run(client_call(self, method, params), last)
        return result

    def use_middleware(self, chain: Chain | None) -> None:
        """Send every request through ``chain`` (None: none), and the server's requests and
        notifications too."""
        self.middleware_chain = chain
        self._routes.clear()  # made again with it
        if chain is not None and chain.notes:
            self.add_notification_listener(self._noted)
        if chain is not None:
            # Only a session with middleware tells its calls the id each is sent under: the
            # class's _issue, every request's path, stays as it is.
            self._issue = self._issue_noted  # type: ignore[method-assign]
            if chain.sessions:  # likewise the receive loop's frame: timed only when wanted
                self.run = self._run_timed  # type: ignore[method-assign]

    def _issue_noted(
        self,
        method: str,
        params: Any,
        result_type: type[T],
        timeout: float | None | UnsetType,
        on_progress: ProgressCallback | None,
    ) -> tuple[RequestId, asyncio.Future[T], float | None, bytes]:
        from mcpgen.runtime.middleware.chain import sending

        issued = super()._issue(method, params, result_type, timeout, on_progress)
        call = sending.get()
        if call is not None and call.method == method:
            call.sent_id = issued[0]  # the last round's, when the stateless era retries
        return issued

    async def send_notification(self, method: str, params: Any, *, related: RequestId | UnsetType = UNSET) -> None:
        chain = self.middleware_chain
        if chain is not None and chain.notes:
            from mcpgen.runtime.middleware.chain import Notification, session_id_of

            note = Notification("client", method, params, self.protocol_version, session_id_of(self), "sent")
            await chain.notify(note)
        await super().send_notification(method, params, related=related)

    async def _noted(self, method: str, params: Any) -> None:
        """A notification the server sent, for the middleware watching them."""
        from mcpgen.runtime.middleware.chain import Notification, session_id_of

        chain = self.middleware_chain
        if chain is not None:
            await chain.notify(Notification("client", method, params, self.protocol_version, session_id_of(self)))

    def make_route(self, spec: Any) -> Route:
        """The server's requests (sampling, elicitation, roots, ping) go through the
        middleware too."""
        route = super().make_route(spec)
        chain = self.middleware_chain
        if chain is None:
            return route
        run, now = chain.compose("client", spec.method, route.run, route.now)
        return msgspec.structs.replace(route, run=run, now=now)

    async def _run_timed(self) -> None:
        """:meth:`run`, then the middleware hear how long the session lasted."""
        chain = self.middleware_chain
        assert chain is not None
        await chain.timed("client", self, super().run, lambda: self.era == "handshake")

    async def _send_stateless(
        self,
        method: str,
        params: Any,
        result_type: type[T],
        timeout: float | None | UnsetType,
        on_progress: ProgressCallback | None,
        related: RequestId | UnsetType,
        fresh: bool,
    ) -> T:
        assert self.modern is not None
        body = params if type(params) is dict else request_body(params)  # read, never changed
        key = cache_key(method, body) if self.cache is not None and method in CACHEABLE else None
        if key is not None and not fresh and self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                return _decode_result(result_type, hit)
        answers: dict[str, Any] | None = None
        state: str | None = None
        rounds = 0
        switched = False
        while True:
            sent = {**body, "_meta": self.modern.meta(body.get("_meta"))}
            if answers is not None:
                sent["inputResponses"] = answers
            if state is not None:
                sent["requestState"] = state
            try:
                # The engine's send_request, written out (see Session.send_request).
                rid, future, limit, frame = self._issue(method, sent, msgspec.Raw, timeout, on_progress)
                try:
                    sending = self._dispatch(method, frame, related)
                    if sending is not None:
                        await sending
                    raw = await future
                except (asyncio.CancelledError, RequestTimeout):
                    self._abandon(rid, method)
                    raise
                finally:
                    self._settle(rid, limit)
            except McpError as exc:
                if exc.code == UNSUPPORTED_VERSION and type(exc) is McpError and not switched:
                    switched = True
                    self.modern.switch(exc.data)  # or UnsupportedVersions, naming both lists
                    continue
                if (
                    key is not None
                    and self.cache is not None
                    and body.get("cursor") is not None
                    and exc.code == INVALID_PARAMS
                ):
                    self.cache.drop(method)  # a stale cursor: every page goes
                raise
            if result_type in KINDED and key is None:
                try:
                    typed: Any = decoder(result_type).decode(raw)
                except (msgspec.ValidationError, RecursionError, UnicodeDecodeError):
                    typed = None  # an InputRequiredResult, or an invalid result: read below
                if typed is not None and typed.result_type == "complete":
                    return typed  # type: ignore[no-any-return]
            head = head_decoder.decode(raw)
            kind = head.result_type
            if kind is UNSET or kind == "complete":  # no resultType: an older server's result
                result = _decode_result(result_type, raw)
                if key is not None and self.cache is not None and rounds == 0:
                    self.cache.put(key, raw, head.ttl_ms)
                return result
            if kind == "task" and accepts_task(method, sent["_meta"]):
                return _decode_result(result_type, raw)  # a task: the caller declared the tasks extension
            if kind != "input_required":
                raise InvalidResult(f"{method}: the server sent a result of unknown resultType {kind!r}")
            if method not in ASKING_METHODS:
                raise InvalidResult(f"{method}: the server asked for input, which it may not for this method")
            rounds += 1
            if rounds > MAX_ROUNDS:
                raise InvalidResult(f"{method}: the server still asks for input after {MAX_ROUNDS} rounds")
            has_inputs = head.input_requests is not UNSET and head.input_requests is not None
            answers = await answer_inputs(head.input_requests, self.ask) if has_inputs else None
            state = head.request_state if isinstance(head.request_state, str) else None
            if answers is None and state is None:
                raise InvalidResult(f"{method}: an InputRequiredResult with neither inputRequests nor requestState")

    async def ask(self, method: str, key: str, params: Any) -> Any:
        """Answer one of the server's questions with the handlers the handshake era's
        requests reach (the Client's sampling, elicitation and roots), through the
        middleware as the handshake era's requests go."""
        try:
            handler: Callable[[Any], Awaitable[Any]]
            if method == "elicitation/create":
                handler, typed = self.handlers.elicit, handshake.convert(params, handshake.ElicitRequestParams)
            elif method == "sampling/createMessage":
                typed = handshake.convert(params, handshake.CreateMessageRequestParams)
                handler = self.handlers.create_message
            else:
                handler, typed = self.handlers.list_roots, handshake.convert(params or {}, handshake.RequestParams)
            chain = self.middleware_chain
            if chain is not None:
                handler, _ = chain.compose("client", method, handler)
            return await handler(typed)
        except NotImplementedError:
            raise MissingInputHandler(method, key) from None
        except msgspec.ValidationError as exc:
            raise InvalidResult(f"the server's {method} question (input {key!r}) is malformed: {exc}") from None
        except McpError as exc:
            if exc.code == METHOD_NOT_FOUND:
                raise MissingInputHandler(method, key) from None
            raise

    def refuse(self, spec: Any) -> tuple[int, str] | None:
        if self.modern is not None:  # a stateless-era server asks through InputRequiredResult only
            return METHOD_NOT_FOUND, f"Method not found: {spec.method} (a stateless-era server sends no requests)"
        return super().refuse(spec)

    # ------------------------------------------------------------ listening

    async def listen(self, notifications: dict[str, Any], deliver: Deliver) -> Any:
        """A ``subscriptions/listen`` request (stateless era): ``deliver(method, params)``
        gets each notification of its stream, the acknowledgement first. Returns the final
        result once the server ends the subscription; cancel the awaiting task to end it
        (stdio: ``notifications/cancelled``; HTTP: the stream is closed)."""
        if self.modern is None:
            raise RuntimeError("subscriptions/listen is a stateless-era request")
        rid = next(self._ids)
        self._listeners[rid] = deliver
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[rid] = (future, None)  # the raw result, as the envelope's decode cut it out
        params = {"notifications": notifications, "_meta": self.modern.meta(None)}
        try:
            await self.transport.send(encode(OutRequest(id=rid, method="subscriptions/listen", params=params)))
            return await future
        except asyncio.CancelledError:
            if rid in self._pending and self.is_open:
                self.spawn(self.send_notification("notifications/cancelled", {"requestId": rid}))
            forget = self.abilities.forget
            if forget is not None:
                forget(rid)
            raise
        finally:
            self._pending.pop(rid, None)
            self._listeners.pop(rid, None)

    def on_envelope(self, env: Frame) -> None:
        if env.method is UNSET:
            self._on_response(env)  # the usual frame, and nothing of the client's own to do
            return
        if self.modern is not None and env.id is UNSET:
            self._modern_notification(env)
        super().on_envelope(env)

    def _modern_notification(self, env: Frame) -> None:
        """A notification in the stateless era: it may make cached results stale, and one
        tagged with a subscription id goes to that listen stream's listener."""
        try:
            params = msgspec.json.decode(env.params) if env.params is not UNSET else {}
        except msgspec.DecodeError:
            return
        if not isinstance(params, dict):
            return
        if self.cache is not None:
            self.cache.invalidate(env.method, params)
        meta = params.get("_meta")
        if isinstance(meta, dict):
            tag = meta.get(META_SUBSCRIPTION)
            deliver = self._listeners.get(tag) if isinstance(tag, (str, int)) else None
            if deliver is not None:
                try:
                    deliver(env.method, params)
                except Exception:
                    log.exception("mcpgen: a listener failed on %s", env.method)


def stateless_capabilities(capabilities: ClientCapabilities) -> dict[str, Any]:
    """The client's capabilities as the stateless era declares them in ``_meta`` (roots
    has no ``listChanged`` there: roots are asked for per request)."""
    caps = msgspec.to_builtins(capabilities)
    if "roots" in caps:
        caps["roots"] = {}
    return caps  # type: ignore[no-any-return]


def _decode_result(result_type: type[T], raw: Any) -> T:
    try:
        return decoder(result_type).decode(raw)
    except (msgspec.ValidationError, RecursionError, UnicodeDecodeError) as exc:
        raise McpError(INVALID_PARAMS, f"Invalid result from peer: {exc}") from None
