"""``Proxy(backend)``: a :class:`~mcpgen.Server` whose tools, resources, prompts, completions
and capabilities are another server's, reached over stdio (a command), Streamable HTTP (a
URL, either protocol era) or in process (a Server), and served in both eras over whatever
this server runs on.

    proxy = Proxy("uvx some-server")            # or Proxy("https://host/mcp"), Proxy(server)
    proxy.run()                                 # stdio; proxy.run("http") for Streamable HTTP
    parent.mount(proxy, namespace="some")       # or behind another server

Requests are relayed, results come back as the backend sent them (without the members that
belong to one connection: :mod:`.relay`). The two eras are bridged both ways, chosen per
request from what its client speaks and what the backend speaks:

* a stateless-era client, stateless backend: relayed as they are, questions included: the
  backend's InputRequiredResult reaches the client with the backend's ``requestState``
  sealed inside the proxy's own, and the retry goes back with both (nothing is kept here);
* a stateless-era client, handshake-era backend: the backend's questions during a call
  become an InputRequiredResult and the retry answers the backend's waiting requests
  (:mod:`.rounds`); ``subscriptions/listen`` becomes ``resources/subscribe`` and the
  backend's unasked notifications;
* a handshake-era client, either backend: the backend's questions (its requests, or its
  InputRequiredResult answered by the proxy's connection) become requests to the client on
  its session; ``resources/subscribe`` becomes ``subscriptions/listen`` for a stateless
  backend; progress and logs reach the client of the request they belong to.

Tasks: the stateless era's tasks extension and 2025-11-25's tasks are relayed where the
client and the backend speak the same kind; otherwise the call runs to its end.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import UNSET

from mcpgen.protocol.v2025_11_25 import Implementation
from mcpgen.runtime.client.stateless import Unanswered
from mcpgen.runtime.errors import INVALID_PARAMS, MISSING_CAPABILITY, McpError, RequestTimeout
from mcpgen.runtime.gateway.link import Link, RequestOwner, SessionOwner
from mcpgen.runtime.gateway.relay import VIA, Front, as_dict, outgoing, relayed
from mcpgen.runtime.gateway.rounds import ROUND_KEY, WORKER_KEY, Rounds
from mcpgen.runtime.gateway.targets import Credentials, Target, target_of
from mcpgen.runtime.jsonrpc.context import current_request
from mcpgen.runtime.jsonrpc.kernel import Ready
from mcpgen.runtime.server.context import Context
from mcpgen.runtime.server.features import OWN_CAPABILITIES
from mcpgen.runtime.server.input_required import InputRequired
from mcpgen.runtime.server.lifespan import LifespanRunner
from mcpgen.runtime.server.server import Server
from mcpgen.runtime.shared.extension import Extension, ExtensionMethod
from mcpgen.runtime.shared.headers import annotated_params
from mcpgen.runtime.shared.meta import (
    META_CAPABILITIES,
    META_LOG_LEVEL,
    META_REQUIRED_CAPABILITIES,
    SKILLS_EXTENSION,
    TASKS_EXTENSION,
)

if TYPE_CHECKING:
    import httpx

    from mcpgen.runtime.jsonrpc.transport import Servable
    from mcpgen.runtime.middleware.chain import Middleware
    from mcpgen.runtime.stores.task_store import TaskStore

log = logging.getLogger("mcpgen")

RELAY_KEY = "dev.mcpgen/backendState"
"""Under this key, the sealed ``requestState`` carries a stateless backend's own."""
ASKING = frozenset({"tools/call", "prompts/get", "resources/read"})
CACHEABLE = frozenset({"tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read"})
# The requests a known extension adds (relayed when the backend declares the extension),
# and the eras it exists in.
BOTH_ERAS = frozenset({"handshake", "stateless"})
EXTENSION_METHODS: dict[str, tuple[tuple[str, ...], frozenset[str]]] = {
    SKILLS_EXTENSION: (("skills/list", "skills/get", "resources/directory/read"), BOTH_ERAS),
    TASKS_EXTENSION: (("tasks/get", "tasks/update", "tasks/cancel"), frozenset({"stateless"})),
}
NAMED = {"tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId"}


class ToolFilter:
    """Which of the backend's tools a proxy serves: those ``allow`` names (all when None),
    less those ``deny`` names."""

    def __init__(self, allow: Sequence[str] | None = None, deny: Sequence[str] = ()) -> None:
        self.allow = frozenset(allow) if allow is not None else None
        self.deny = frozenset(deny)

    def __call__(self, name: str) -> bool:
        return (self.allow is None or name in self.allow) and name not in self.deny


class Proxy(Server):
    """A Server serving another server (see the module's docstring).

    ``backend``: an http(s) URL, a command (a string split as a shell would, or a list), or
    a Server in this process; ``label``: what messages call it (default: ``name``, else
    the command or URL). ``era``: what to speak to it ("auto" probes; "handshake",
    "stateless" or a version pins it). ``headers`` (HTTP) / ``env``, ``cwd`` (a command):
    sent with every connection; ``backend_auth``: a function making an ``httpx.Auth`` per
    connection (the runtime's :class:`~mcpgen.OAuthClient`; ``auth`` protects this server,
    as any Server's); ``credentials``: a coroutine
    function giving more headers (or variables) for the request being served, with
    ``per_caller=True`` when they are the caller's own (then each principal has
    connections of its own). ``tools``: which tools are served.

    Limits: ``timeout`` seconds per backend request, ``max_concurrency`` in flight,
    ``max_sessions`` connections (processes, for a command), ``round_timeout`` seconds a
    call asking its client a question waits for the retry, ``max_rounds`` such calls;
    ``store``: a shared task store (``RedisStore(url).task_store()``) through which a retry
    reaches the worker holding its call. ``client_middleware``: around every request to the
    backend (``OpenTelemetry()``: its spans in the front request's trace); ``via``: the
    gateway's loop check (:mod:`.gateway`). Other keywords are :class:`~mcpgen.Server`'s."""

    def __init__(
        self,
        backend: str | Sequence[str] | Servable | Target,
        *,
        name: str | None = None,
        label: str | None = None,
        era: str = "auto",
        headers: dict[str, str] | None = None,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        backend_auth: Callable[[], httpx.Auth] | None = None,
        credentials: Credentials | None = None,
        per_caller: bool = False,
        tools: ToolFilter | None = None,
        timeout: float = 60.0,
        max_concurrency: int = 64,
        max_sessions: int = 16,
        idle_timeout: float = 300.0,
        round_timeout: float = 300.0,
        max_rounds: int = 256,
        store: TaskStore | None = None,
        client_middleware: Sequence[Middleware] = (),
        via: Callable[[Any], list[str]] | None = None,
        **options: Any,
    ) -> None:
        super().__init__(name or "mcpgen-proxy", **options)
        self.named = name is not None
        target = target_of(backend, headers=headers, env=env, cwd=cwd, auth=backend_auth)
        self.link = Link(
            target,
            name=label or name or target.describe(),
            era=era,
            timeout=timeout,
            max_concurrency=max_concurrency,
            max_sessions=max_sessions,
            idle_timeout=idle_timeout,
            credentials=credentials,
            per_caller=per_caller,
            client_name=self.info.name,
            client_version=self.info.version,
            client_middleware=client_middleware,
        )
        self.via = via
        # The via chain of a request that came through no gateway before (most): made once.
        self._first_hop: list[str] = via(None) if via is not None else []
        self._first_hop_meta = {VIA: self._first_hop}
        self.link.tool_headers = self.tool_headers
        self.link.on_change = self._backend_changed
        self.link.on_updated = self._backend_updated
        self.tool_filter = tools
        self.rounds = Rounds(round_timeout=round_timeout, max_rounds=max_rounds, store=store)
        self.backend_tools: dict[str, dict[str, Any]] = {}  # name -> definition, as last listed
        self._subscribed: dict[str, set[int]] = {}  # uri -> the sessions (ids) subscribed through us
        self.features.declared_by = self._declared
        self.features.use_mounts(_Lookups(self))
        self.features.mounted_lifespans.append(_Connected(self))
        if self.lifespan_runner is None:
            self.lifespan_runner = LifespanRunner(None, self, self.features)
        self.extend(_Listening(self))

    # ------------------------------------------------------------ connecting

    async def connect(self) -> None:
        """Connect to the backend and take on what it declares (done when serving starts;
        a backend that cannot be reached then is tried again at the next request)."""
        await self.link.start()
        link = self.link
        if not self.named and link.server_info.get("name"):
            info = msgspec.convert(link.server_info, Implementation)
            self.features.info = info
        if self.features.instructions is None and link.instructions:
            self.features.instructions = link.instructions
        declared = link.capabilities.get("extensions")
        for identifier, settings in declared.items() if isinstance(declared, dict) else ():
            if self.features.extension(identifier) is None and isinstance(settings, dict):
                self.extend(_Relayed(self, identifier, settings))
        self.features.forget_capabilities()
        with contextlib.suppress(McpError, ConnectionError):
            await self._learn_tools()

    async def _learn_tools(self) -> None:
        primary = self.link.primary
        if primary is None or primary.client is None:
            return
        tools: dict[str, dict[str, Any]] = {}
        cursor: Any = None
        for _ in range(100):
            page = as_dict(
                msgspec.json.decode(
                    await self.link.send(
                        primary,
                        "tools/list",
                        self._outgoing(None, {"cursor": cursor} if cursor else {}),
                        self._result_type(),
                    )
                )
            )
            for tool in page.get("tools") or ():
                if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                    tools[tool["name"]] = tool
            cursor = page.get("nextCursor")
            if not isinstance(cursor, str):
                break
        self.backend_tools = tools

    def tool_headers(self, name: str) -> dict[str, str]:
        """The x-mcp-header annotations of a backend tool (argument -> header name)."""
        tool = self.backend_tools.get(name)
        schema = tool.get("inputSchema") if tool is not None else None
        return (annotated_params(schema) or {}) if isinstance(schema, dict) else {}

    def _result_type(self) -> Any:
        return Unanswered if self.link.era == "stateless" else msgspec.Raw

    def _declared(self, era: str) -> dict[str, Any]:
        if self.link.era is None:
            # Not connected yet (the backend was down when serving started): what a server
            # may offer, so that the client asks and the proxy tries the backend again.
            return dict(OWN_CAPABILITIES)
        caps = {k: v for k, v in self.link.capabilities.items() if k != "extensions"}
        if era == "stateless" or self.link.stateless:
            caps.pop("tasks", None)  # 2025-11-25's tasks: relayed only between two handshake-era ends
        return caps

    def _backend_changed(self, feature: str) -> None:
        if feature == "tools":
            self.backend_tools = {}
        self.features.changed(feature)

    def _backend_updated(self, uri: str) -> None:
        import asyncio

        task = asyncio.ensure_future(self.features.notify_resource_updated(uri))
        task.add_done_callback(lambda done: done.cancelled() or done.exception())

    # ------------------------------------------------------------ relaying

    async def relay(self, method: str, params: Any) -> Any:
        """Serve one request of the client by the backend (the era bridge)."""
        front = Front.current()
        link = self.link
        if link.era is None:
            await self.connect()
        era = link.era_for(front)
        stateless = era == "stateless"
        if front.stateless:
            if stateless:
                return await self._relay_stateless(front, method, params)
            if method in ASKING:
                return await self._round_trip(front, method, params)
        exclusive = front.stateless and front.log_level is not None
        conn = await link.acquire(front, era, exclusive=exclusive)
        stateless = conn.era == "stateless"  # what it speaks after all (see Link.era_for)
        if stateless and method == "logging/setLevel":
            link.release(conn)
            return {}  # no such request in that era: each request asks for its client's level
        owner = conn.owner
        rid = front.ctx.request_id
        if exclusive:
            conn.owner = RequestOwner(front)
        elif isinstance(owner, SessionOwner):
            owner.calls[rid] = front.ctx
        gate = link.gate
        try:
            body = self._outgoing(front, params, method)
            if stateless and front.log_level is not None:
                body = as_dict(body)
                body["_meta"] = {**body.get("_meta", {}), META_LOG_LEVEL: front.log_level}
            # Link.send, written out (one coroutine less on every call). A stateless
            # backend's questions are answered by this connection's own client (its
            # callbacks ask our client, on its session): msgspec.Raw, not Unanswered.
            if not gate.take():
                await gate.enter(link.timeout)
            try:
                assert conn.client is not None
                raw = await conn.client.session.send_request(
                    method, body, msgspec.Raw, timeout=link.timeout, on_progress=self._progress(front)
                )
            except (RequestTimeout, ConnectionError) as exc:
                raise link.failure(conn, exc) from None
            finally:
                gate.leave()
        finally:
            if isinstance(owner, SessionOwner):
                owner.calls.pop(rid, None)
            link.release(conn)
        return self._result(front, method, params, raw, stateless)

    def _outgoing(self, front: Front | None, params: Any, method: str = "") -> Any:
        """``params`` as the backend gets them, naming this gateway in their via chain."""
        body = outgoing(params, method in ASKING)
        if self.via is None:
            return body
        meta = front.ctx.meta if front is not None else UNSET
        chain = self.via(meta) if isinstance(meta, dict) and VIA in meta else self._first_hop
        if isinstance(body, dict):
            return {**body, "_meta": {**(body.get("_meta") or {}), VIA: chain}}
        if body.meta is UNSET and chain is self._first_hop:
            return msgspec.structs.replace(body, meta=self._first_hop_meta)  # the common call
        return msgspec.structs.replace(body, meta={**(body.meta or {}), VIA: chain})

    def _result(self, front: Front, method: str, params: Any, raw: Any, backend_stateless: bool) -> Any:
        result = relayed(raw, backend_stateless=backend_stateless, front_stateless=front.stateless)
        if front.stateless and not backend_stateless and isinstance(result.body, dict):
            meta = result.body.get("_meta")
            needed = meta.get(META_REQUIRED_CAPABILITIES) if isinstance(meta, dict) else None
            if isinstance(needed, dict) and result.body.get("isError"):
                # A handshake-era backend's way to say its question needs what the client did
                # not declare; the stateless era's is -32021.
                raise McpError(MISSING_CAPABILITY, f"Missing required client capability for {method}",
                               {"requiredCapabilities": needed})  # fmt: skip
        if method == "tools/list":
            result = self._listed(result)
        if front.stateless and not backend_stateless and method in CACHEABLE:
            body = result.body if not isinstance(result.body, msgspec.Raw) else msgspec.json.decode(result.body)
            if isinstance(body, dict) and "ttlMs" not in body:
                hint = self.features.cache_hint(method, params)
                result = Ready(result.kind, {**body, "ttlMs": hint.ttl_ms, "cacheScope": hint.scope})
        return result

    def _listed(self, result: Ready) -> Ready:
        body = result.body if not isinstance(result.body, msgspec.Raw) else msgspec.json.decode(result.body)
        tools = body.get("tools") if isinstance(body, dict) else None
        if not isinstance(tools, list):
            return result
        for tool in tools:
            if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                self.backend_tools[tool["name"]] = tool
        if self.tool_filter is None:
            return result
        kept = [t for t in tools if isinstance(t, dict) and self.tool_filter(str(t.get("name")))]
        return Ready(result.kind, {**body, "tools": kept})

    async def _relay_stateless(self, front: Front, method: str, params: Any) -> Any:
        """Both ends stateless: relayed as they are, a round of questions included."""
        body = as_dict(self._outgoing(front, params, method))
        # A first call (most) has its scope made (its digest) only if the backend asks.
        scope = front.session.input_scope() if method in ASKING and _retried(front) else None
        if scope is not None:
            state = scope.answers.get(RELAY_KEY)
            if isinstance(state, str):
                body["requestState"] = state
            if scope.responses:
                body["inputResponses"] = scope.responses
        meta = dict(body.get("_meta") or {})
        meta[META_CAPABILITIES] = front.answering
        if front.log_level is not None:
            meta[META_LOG_LEVEL] = front.log_level
        body["_meta"] = meta
        exclusive = front.log_level is not None and method in ASKING
        conn = await self.link.acquire(front, "stateless", exclusive=exclusive)
        if exclusive:
            conn.owner = RequestOwner(front)
        try:
            raw = bytes(await self.link.send(conn, method, body, Unanswered, self._progress(front)))
        finally:
            self.link.release(conn)
        if b'"input_required"' in raw:
            head = msgspec.json.decode(raw)
            if isinstance(head, dict) and head.get("resultType") == "input_required":
                if method not in ASKING:
                    raise McpError(INVALID_PARAMS, f"{self.link.describe()} asked for input in {method}")
                scope = scope if scope is not None else front.session.input_scope()
                state = head.get("requestState")
                scope.answers = {RELAY_KEY: state} if isinstance(state, str) else {}
                requests = head.get("inputRequests")
                scope.pending = requests if isinstance(requests, dict) else {}
                raise InputRequired(scope)
        return self._result(front, method, params, raw, True)

    async def _round_trip(self, front: Front, method: str, params: Any) -> Any:
        """A stateless-era client, a handshake-era backend: the call goes on in a round."""
        scope = front.session.input_scope()
        round_id = scope.answers.get(ROUND_KEY)
        if isinstance(round_id, str):
            worker = scope.answers.get(WORKER_KEY)
            holder = worker if isinstance(worker, str) else ""
            local = self.rounds.live.get(round_id)
            if local is not None:
                local.front = front  # its progress and logs go to this request now
                holder = self.rounds.worker
            outcome = await self.rounds.resume(round_id, holder, scope.responses)
        else:
            conn = await self.link.acquire(front, "handshake", exclusive=True)
            try:
                found = self.rounds.open(self.link, conn, front)
            except BaseException:
                self.link.release(conn)
                raise
            found.given = dict(scope.responses)
            body = self._outgoing(front, params, method)
            found.start(self.link.send(conn, method, body, msgspec.Raw, self._progress(front, found)))
            outcome = await self.rounds.outcome(found)
            round_id, holder = found.id, self.rounds.worker
        if outcome.questions is not None:
            scope.answers = {ROUND_KEY: round_id, WORKER_KEY: holder}
            scope.pending = outcome.questions
            raise InputRequired(scope)
        if outcome.error is not None:
            raise outcome.error
        result = outcome.result
        if isinstance(result, Ready):
            return result
        return self._result(front, method, params, result, False)

    def _progress(self, front: Front, holder: Any = None) -> Callable[..., Awaitable[None]] | None:
        """Backend progress, to the client of the request (the one now waiting on a round)."""
        if front.progress_token is None:
            return None

        async def report(value: float, total: float | None, message: str | None) -> None:
            ctx = holder.front.ctx if holder is not None else front.ctx
            if ctx.progress_token is None:
                return
            token = current_request.set(ctx)
            try:
                await Context(ctx).report_progress(value, total, message)
            except (ValueError, ConnectionError, McpError):
                pass  # a backend's progress that does not grow, or a client gone: not ours to fail
            finally:
                current_request.reset(token)

        return report

    # ------------------------------------------------------------ the protocol's handlers

    async def list_tools(self, params: Any) -> Any:
        return await self.relay("tools/list", params)

    def call_tool(self, params: Any) -> Coroutine[Any, Any, Any]:
        # Not itself a coroutine function: it hands over relay's, one coroutine less per call.
        if self.tool_filter is not None and not self.tool_filter(params.name):
            raise McpError(INVALID_PARAMS, f"Unknown tool: {params.name}")
        return self.relay("tools/call", params)

    async def list_resources(self, params: Any) -> Any:
        return await self.relay("resources/list", params)

    async def list_resource_templates(self, params: Any) -> Any:
        return await self.relay("resources/templates/list", params)

    async def read_resource(self, params: Any) -> Any:
        return await self.relay("resources/read", params)

    async def list_prompts(self, params: Any) -> Any:
        return await self.relay("prompts/list", params)

    async def get_prompt(self, params: Any) -> Any:
        return await self.relay("prompts/get", params)

    async def complete(self, params: Any) -> Any:
        return await self.relay("completion/complete", params)

    async def set_level(self, params: Any) -> Any:
        return await self.relay("logging/setLevel", params)

    async def subscribe(self, params: Any) -> Any:
        await super().subscribe(params)  # this session's, for the updates relayed to it
        await self.follow(params.uri, id(Front.current().session))
        return {}

    async def unsubscribe(self, params: Any) -> Any:
        await super().unsubscribe(params)
        await self.unfollow(params.uri, id(Front.current().session))
        return {}

    # 2025-11-25's tasks, relayed between a handshake-era client and backend.

    async def get_task(self, params: Any) -> Any:
        return await self.relay("tasks/get", params)

    async def get_task_payload(self, params: Any) -> Any:
        return await self.relay("tasks/result", params)

    async def cancel_task(self, params: Any) -> Any:
        return await self.relay("tasks/cancel", params)

    async def list_tasks(self, params: Any) -> Any:
        return await self.relay("tasks/list", params)

    # ------------------------------------------------------------ subscriptions

    async def follow(self, uri: str, who: int) -> None:
        """Have the backend tell us of ``uri``'s updates (once, whoever asks). Not for a
        backend acting for each caller: one subscription made in one caller's name would
        tell the others of updates they may not see."""
        if self.link.per_caller:
            return
        followers = self._subscribed.setdefault(uri, set())
        first = not followers
        followers.add(who)
        primary = self.link.primary
        if first and primary is not None and primary.client is not None:
            await primary.client.subscribe(uri)

    async def unfollow(self, uri: str, who: int) -> None:
        followers = self._subscribed.get(uri)
        if followers is None:
            return
        followers.discard(who)
        if not followers:
            del self._subscribed[uri]
            primary = self.link.primary
            if primary is not None and primary.client is not None and primary.usable:
                with contextlib.suppress(McpError, ConnectionError):
                    await primary.client.unsubscribe(uri)

    async def close(self) -> None:
        """Drop every connection to the backend and every waiting round."""
        for found in list(self.rounds.live.values()):
            await found.close()
        await self.link.close()


def _retried(front: Front) -> bool:
    """Whether a stateless-era request is a retry: its admission found ``requestState`` or
    ``inputResponses`` and made its scope then (a first call's is made only when asked for)."""
    return front.session.request.inputs is not None


class _Lookups:
    """What the front asks of the backend's tools by name, read from its last tool list."""

    def __init__(self, proxy: Proxy) -> None:
        self.proxy = proxy

    def wrap(self, method: str, run: Any) -> Any:
        return run

    def tool_headers(self, name: str) -> dict[str, str]:
        return self.proxy.tool_headers(name)

    def task_support(self, name: str) -> Any:
        return None


class _Connected:
    """The backend's connections, opened when serving starts and closed when it ends."""

    def __init__(self, proxy: Proxy) -> None:
        self.proxy = proxy

    async def __aenter__(self) -> None:
        if self.proxy.link.per_caller:
            return  # reached for a caller, at its first request
        try:
            await self.proxy.connect()
        except Exception as exc:  # the gateway serves on; the next request tries again
            log.warning("mcpgen gateway: %s is not reachable yet (%s); tried again at the next request",
                        self.proxy.link.describe(), exc)  # fmt: skip

    async def __aexit__(self, *exc: Any) -> None:
        await self.proxy.close()


class _Relayed(Extension):
    """An extension the backend declares, declared here too, its requests relayed."""

    def __init__(self, proxy: Proxy, identifier: str, settings: dict[str, Any]) -> None:
        super().__init__(identifier, settings)
        self.proxy = proxy
        known = EXTENSION_METHODS.get(identifier)
        self.known = known[0] if known is not None else ()
        if known is not None:
            self.eras = known[1]

    def methods(self) -> list[ExtensionMethod]:
        found = []
        for method in self.known:
            if method == "resources/directory/read" and not (self._settings or {}).get("directoryRead"):
                continue
            found.append(ExtensionMethod(method, dict, self._relay_of(method), named=NAMED.get(method)))
        return found

    def _relay_of(self, method: str) -> Callable[[Any], Awaitable[Any]]:
        async def relay(params: Any) -> Any:
            return await self.proxy.relay(method, params)

        return relay


class _Listening(Extension):
    """A stateless-era client's ``subscriptions/listen`` naming resources: the backend is
    asked to tell us of their updates while the listen lasts. Declares nothing."""

    identifier = "dev.mcpgen/gateway-listen"
    eras = frozenset({"stateless"})

    def __init__(self, proxy: Proxy) -> None:
        super().__init__()
        self.proxy = proxy

    def settings(self) -> dict[str, Any] | None:
        return None

    def intercept(self, method: str, route: Any, era: str) -> Any:
        if method != "subscriptions/listen":
            return route
        run, proxy = route.run, self.proxy

        async def listen(params: Any) -> Any:
            uris = getattr(getattr(params, "notifications", None), "resource_subscriptions", UNSET)
            uris = [u for u in uris if isinstance(u, str)] if isinstance(uris, list) else []
            me = id(current_request.get())
            for uri in uris:
                await proxy.follow(uri, me)
            try:
                return await run(params)
            finally:
                for uri in uris:
                    await proxy.unfollow(uri, me)

        return msgspec.structs.replace(route, run=listen, now=None)
