"""One backend as a proxy holds it: its connections, whom each one's questions and logs
are for, and the limits on all of them.

Which connection serves a request (so that what the backend asks or logs while serving it
reaches the client that asked, and no other):

* a handshake-era client (a session): a backend connection of its own, opened on its first
  request with the capabilities it declared, closed when it ends. The backend's questions
  go to that client (on the stream of its request when only one is in flight), its logs and
  list changes too;
* a stateless-era client: connections pooled per principal (the verified token's owner on
  a protected gateway) and, for a handshake-era backend, per set of capabilities declared.
  A request the backend may answer with questions or logs (a call, a prompt, a read) holds
  its connection alone while it runs (a handshake-era backend's questions name no request:
  the connection is how they are told apart); the others share one.

Limits: at most ``max_sessions`` connections (each a process, for a command), at most
``max_concurrency`` requests in flight to the backend with four times as many waiting, and
``timeout`` seconds for each; past a limit a request is refused with -32000 ("busy")
rather than anything running being dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import UNSET

from mcpgen.protocol.v2025_11_25 import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    ListRootsResult,
    RequestParams,
    Root,
)
from mcpgen.runtime.errors import INTERNAL_ERROR, METHOD_NOT_FOUND, SERVER_BUSY, McpError, RequestTimeout
from mcpgen.runtime.gateway.relay import Front
from mcpgen.runtime.jsonrpc.context import RequestContext, current_request
from mcpgen.runtime.server.input_required import caller
from mcpgen.runtime.shared.headers import render
from mcpgen.runtime.shared.meta import META_INPUT_KEY
from mcpgen.runtime.versions import HANDSHAKE, era_of

if TYPE_CHECKING:
    from mcpgen.runtime.client.client import Client
    from mcpgen.runtime.gateway.targets import Credentials, Target
    from mcpgen.runtime.middleware.chain import Middleware

log = logging.getLogger("mcpgen")

LIST_CHANGES = {
    "notifications/tools/list_changed": "tools",
    "notifications/resources/list_changed": "resources",
    "notifications/prompts/list_changed": "prompts",
}
_SHORT = {"elicitation/create": "elicitation", "sampling/createMessage": "sampling", "roots/list": "roots"}
_RESULT: dict[str, Any] = {
    "elicitation/create": ElicitResult,
    "sampling/createMessage": CreateMessageResult,
    "roots/list": ListRootsResult,
}
_REAP_EVERY = 30.0


class Busy(McpError):
    def __init__(self, what: str) -> None:
        super().__init__(SERVER_BUSY, f"Server busy: {what}; retry later")


class Gate:
    """At most ``limit`` requests at once; ``4 * limit`` more wait in order; more are refused."""

    def __init__(self, limit: int, what: str) -> None:
        self.free = limit
        self.limit = limit
        self.what = what
        self.waiting: deque[asyncio.Future[None]] = deque()

    def take(self) -> bool:
        """Take a place if one is free now (no coroutine: every request's path)."""
        if self.free > 0 and not self.waiting:
            self.free -= 1
            return True
        return False

    async def enter(self, timeout: float | None) -> None:
        if self.free > 0 and not self.waiting:
            self.free -= 1
            return
        if len(self.waiting) >= 4 * self.limit:
            raise Busy(f"{self.what} has {self.limit} requests in flight and {len(self.waiting)} waiting")
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiting.append(turn)
        try:
            await asyncio.wait_for(asyncio.shield(turn), timeout)
        except TimeoutError:
            self._give_up(turn)
            raise Busy(f"{self.what} stayed full for {timeout:g} s") from None
        except BaseException:
            self._give_up(turn)
            raise

    def _give_up(self, turn: asyncio.Future[None]) -> None:
        if turn.done() and not turn.cancelled():
            self.leave()  # handed a turn as we gave up: pass it on
        else:
            turn.cancel()
            with contextlib.suppress(ValueError):
                self.waiting.remove(turn)

    def leave(self) -> None:
        while self.waiting:
            turn = self.waiting.popleft()
            if not turn.done():
                turn.set_result(None)
                return
        self.free += 1


# ------------------------------------------------------------------ whom a connection serves


class Owner:
    """Whom a backend connection's questions and logs are for (none: they are refused)."""

    async def ask(self, method: str, key: str | None, params: Any) -> Any:
        raise McpError(METHOD_NOT_FOUND, f"Method not found: {method} (no client of the gateway is waiting on this)")

    def log(self, params: Any) -> None:
        """A log message of the backend (dropped unless someone takes it)."""

    def notify(self, method: str, params: Any) -> None:
        """Another notification for this owner's client only (list changes of a session)."""


class SessionOwner(Owner):
    """A handshake-era client's session: everything the backend sends goes to it, on the
    stream of its request when only one is in flight."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.calls: dict[Any, RequestContext] = {}  # its requests in flight on this connection
        self._pending: set[asyncio.Task[Any]] = set()

    def related(self) -> RequestContext | None:
        ctx = current_request.get()
        if ctx is not None and ctx.session is self.session:
            return ctx  # asked inline, by the request being served (a stateless-era backend)
        return next(iter(self.calls.values())) if len(self.calls) == 1 else None

    async def ask(self, method: str, key: str | None, params: Any) -> Any:
        related = self.related()
        token = current_request.set(related) if related is not None else None
        try:
            if method == "elicitation/create":
                return await self.session.elicit(params)
            return await self.session.send_request(method, params, _RESULT[method])
        finally:
            if token is not None:
                current_request.reset(token)

    def log(self, params: Any) -> None:
        session = self.session
        if session.own_caps.has("logging") and session.logs(params.level):
            self._send("notifications/message", params)

    def notify(self, method: str, params: Any) -> None:
        feature = LIST_CHANGES.get(method)
        if feature is not None and not self.session.own_caps.has(f"{feature}.listChanged"):
            return
        self._send(method, params)

    def _send(self, method: str, params: Any) -> None:
        if not self.session.is_open:
            return
        related = self.related()
        rid = related.request_id if related is not None else UNSET
        task = asyncio.ensure_future(self.session.send_notification(method, params, related=rid))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)


class RequestOwner(Owner):
    """A stateless-era request holding a connection alone: the backend's logs go on its
    stream (at the level it asked for)."""

    def __init__(self, front: Front) -> None:
        self.front = front
        self._pending: set[asyncio.Task[Any]] = set()

    def log(self, params: Any) -> None:
        peer = self.front.session
        if peer.logs(params.level):
            task = asyncio.ensure_future(peer.send_notification("notifications/message", params))
            self._pending.add(task)
            task.add_done_callback(self._pending.discard)


# ------------------------------------------------------------------ connections


class Conn:
    """One connection to the backend (a :class:`Client`), and whom it serves."""

    def __init__(self, link: Link, key: Any, caps: dict[str, Any], owner: Owner | None, era: str | None) -> None:
        self.link = link
        self.key = key
        self.era = era  # what to speak ("handshake", "stateless"; None: probe, prefer stateless)
        self.caps = caps
        self.owner = owner
        self.fixed = owner is not None  # a session's own connection: its owner never changes
        self.client: Client | None = None
        self.busy = 0
        self.exclusive = False
        self.closed = False
        self.opened = asyncio.Event()  # set once opening ended, well or not
        self.idle_since = asyncio.get_running_loop().time()

    @property
    def usable(self) -> bool:
        return not self.closed and self.client is not None and self.client.session.is_open

    async def open(self, extra: Mapping[str, str], listening: bool) -> None:
        """Connect, declaring this connection's capabilities (``listening``: the one that
        follows the backend's changes for the proxy)."""
        link = self.link
        caps = self.caps
        options: dict[str, Any] = {
            "name": link.client_name,
            "version": link.client_version,
            "request_timeout": link.timeout,
            "era": link.versions.get(self.era or "") or self.era or link.era_wanted,
            "cache": False,
            "probe_timeout": min(link.timeout, 10.0),
            "on_log": self._on_log,
            "middleware": link.client_middleware or None,
        }
        if "sampling" in caps:
            options["sampling"] = self._sample
            options["sampling_tools"] = isinstance(caps["sampling"], dict) and "tools" in caps["sampling"]
        if "elicitation" in caps:
            modes = caps["elicitation"] if isinstance(caps["elicitation"], dict) else {}
            options["elicitation"] = self._elicit
            options["elicitation_modes"] = [m for m in ("form", "url") if m in modes] or ["form"]
        if "roots" in caps:
            options["roots"] = self._roots
        if isinstance(caps.get("extensions"), dict):
            options["extensions"] = dict(caps["extensions"])
        if listening or self.fixed:
            options["on_notification"] = self._on_notification
        client = link.target.client(extra, **options)
        await client.open()
        transport = client.session.transport
        if hasattr(transport, "param_headers"):
            transport.param_headers = link.param_headers
        modern = client.session.modern
        if modern is not None:
            modern.log_level = None  # each request asks for the level its own client asked for
        self.client = client
        self.era = client.spoken_era

    async def close(self) -> None:
        self.closed = True
        if self.client is not None:
            with contextlib.suppress(Exception):
                await self.client.close()

    # ------------------------------------------------------------ what the backend sends

    async def _elicit(self, params: ElicitRequestParams) -> ElicitResult:
        answer: ElicitResult = await self._ask("elicitation/create", params)
        return answer

    async def _sample(self, params: CreateMessageRequestParams) -> CreateMessageResult:
        answer: CreateMessageResult = await self._ask("sampling/createMessage", params)
        return answer

    async def _roots(self) -> list[Root]:
        ctx = current_request.get()
        meta = ctx.meta if ctx is not None and self._from_backend(ctx) else UNSET
        answer: ListRootsResult = await self._ask("roots/list", RequestParams(meta=meta))
        return answer.roots

    def _from_backend(self, ctx: RequestContext) -> bool:
        return self.client is not None and ctx.session is self.client.session

    async def _ask(self, method: str, params: Any) -> Any:
        owner = self.owner
        if owner is None:
            raise McpError(METHOD_NOT_FOUND, f"Method not found: {method} (no client of the gateway to ask)")
        ctx = current_request.get()
        meta = ctx.meta if ctx is not None and self._from_backend(ctx) else getattr(params, "meta", UNSET)
        key = meta.get(META_INPUT_KEY) if isinstance(meta, dict) else None
        if isinstance(meta, dict) and META_INPUT_KEY in meta:  # ours: the client need not see it
            rest = {k: v for k, v in meta.items() if k != META_INPUT_KEY}
            params = msgspec.structs.replace(params, meta=rest or UNSET)
        return await owner.ask(method, key if isinstance(key, str) else None, params)

    def _on_log(self, params: Any) -> None:
        if self.owner is not None:
            self.owner.log(params)

    def _on_notification(self, method: str, params: Any) -> None:
        if method == "notifications/message":
            return  # on_log has it
        if self.fixed and self.owner is not None and method not in ("notifications/resources/updated",):
            self.owner.notify(method, params)
            return
        feature = LIST_CHANGES.get(method)
        if feature is not None:
            self.link.changed(feature)
        elif method == "notifications/resources/updated":
            uri = getattr(params, "uri", None)
            if isinstance(uri, str):
                self.link.updated(uri)


# ------------------------------------------------------------------ the link


class Link:
    """A backend, its connections and its limits (see the module's docstring)."""

    def __init__(
        self,
        target: Target,
        *,
        name: str,
        era: str = "auto",
        timeout: float = 60.0,
        max_concurrency: int = 64,
        max_sessions: int = 16,
        idle_timeout: float = 300.0,
        credentials: Credentials | None = None,
        per_caller: bool = False,
        client_name: str = "mcpgen-gateway",
        client_version: str = "1",
        client_middleware: Sequence[Middleware] = (),
    ) -> None:
        if max_concurrency < 1 or max_sessions < 1:
            raise ValueError("max_concurrency and max_sessions are at least 1")
        self.target = target
        self.name = name
        self.era_wanted = era
        self.timeout = timeout
        self.max_sessions = max_sessions
        self.idle_timeout = idle_timeout
        self.credentials = credentials
        self.per_caller = per_caller  # each caller's own credentials: a connection per principal
        self.client_name = client_name
        self.client_version = client_version
        self.client_middleware = list(client_middleware)
        self.gate = Gate(max_concurrency, f"backend {name}")
        self.era: str | None = None  # what the first connection speaks, once connected
        self.version: str | None = None
        # The eras the backend speaks, and the version spoken in each (a backend speaking
        # both is spoken to in the era of the request relayed: nothing to translate).
        self.versions: dict[str, str] = {}
        self.handshake_refused = False  # a stateless-era backend refused initialize once
        self.capabilities: dict[str, Any] = {}
        self.server_info: dict[str, Any] = {}
        self.instructions: str | None = None
        self.primary: Conn | None = None
        self.conns: dict[Any, list[Conn]] = {}
        self.by_session: dict[int, Conn] = {}  # a handshake-era client session's own connection
        # The x-mcp-header annotations of the backend's tools (its last tool list): what the
        # Mcp-Param-* headers of a call to a stateless-era HTTP backend mirror.
        self.tool_headers: Callable[[str], dict[str, str]] = lambda name: {}
        self.on_change: Callable[[str], None] = lambda feature: None
        self.on_updated: Callable[[str], None] = lambda uri: None
        self._freed = asyncio.Event()
        self._reaper: asyncio.Task[None] | None = None
        self._starting: asyncio.Future[None] | None = None

    @property
    def stateless(self) -> bool:
        """Whether the backend speaks only the stateless era (or was told to)."""
        return self.versions.keys() == {"stateless"}

    def era_for(self, front: Front) -> str:
        """The era to speak to the backend for ``front``'s request: the client's own when the
        backend speaks it (or may: a stateless-era backend whose discover names no older
        version is tried with ``initialize`` once), else the one it speaks."""
        wanted = "stateless" if front.stateless else "handshake"
        if wanted in self.versions or not self.versions:
            return wanted if self.versions else (self.era or wanted)
        if wanted == "handshake" and self.era_wanted == "auto" and not self.handshake_refused:
            return wanted
        return next(iter(self.versions))

    def describe(self) -> str:
        shown = self.target.describe()
        return f"backend {self.name}" if shown == self.name else f"backend {self.name} ({shown})"

    # ------------------------------------------------------------ starting, stopping

    async def start(self) -> None:
        """Connect once (the connection that follows the backend's changes) and learn what it
        speaks and declares; later calls wait for the first."""
        starting = self._starting
        if starting is not None and starting.done() and not starting.cancelled() and starting.exception() is None:
            return  # connected: every request after the first
        if starting is None:
            starting = self._starting = asyncio.ensure_future(self._start())
        await asyncio.shield(starting)

    async def _start(self) -> None:
        conn = Conn(self, ("pool", None, "", "{}"), {}, None, None)
        # A backend acting for each caller is first reached for the first caller (at its
        # first request): what it declares is learnt with that caller's credentials.
        extra = await self.credentials() if self.credentials is not None else {}
        try:
            await conn.open(extra, listening=True)
        except BaseException:
            self._starting = None  # the next request tries again
            raise
        assert conn.client is not None
        session = conn.client.session
        self.era = session.era
        self.version = session.protocol_version
        self.versions = {str(session.era): str(session.protocol_version)}
        discovered = session.discovered
        if self.era_wanted == "auto" and discovered is not None:
            # A stateless-era backend that also speaks a handshake-era version (the newest).
            older = [v for v in discovered.supported_versions if era_of(v) == "handshake"]
            known = [v for v in HANDSHAKE if v in older]
            if known:
                self.versions["handshake"] = known[0]
        conn.era = session.era
        principal = caller() if self.per_caller else ""
        conn.key = ("pool", session.era, principal, "{}")
        tree = session.peer_caps.tree
        self.capabilities = dict(tree) if isinstance(tree, dict) else {}
        info = conn.client.initialize_result
        self.server_info = msgspec.to_builtins(info.server_info) if info is not None else {}
        self.instructions = session.instructions
        self.primary = conn
        self.conns.setdefault(conn.key, []).append(conn)
        if self._reaper is None:
            self._reaper = asyncio.ensure_future(self._reap())

    async def close(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
            self._reaper = None
        conns = [conn for pool in self.conns.values() for conn in pool]
        self.conns.clear()
        self.by_session.clear()
        self.primary = None
        self._starting = None
        await asyncio.gather(*(conn.close() for conn in conns), return_exceptions=True)

    async def _reap(self) -> None:
        """Close connections idle for ``idle_timeout`` (the listening one stays), and those of
        sessions that have ended."""
        while True:
            await asyncio.sleep(min(_REAP_EVERY, self.idle_timeout))
            await self.sweep()

    async def sweep(self) -> None:
        now = asyncio.get_running_loop().time()
        doomed: list[Conn] = []
        for pool in self.conns.values():
            for conn in pool:
                if conn is self.primary or conn.busy:
                    continue
                gone = isinstance(conn.owner, SessionOwner) and conn.fixed and not conn.owner.session.is_open
                if gone or not conn.usable or now - conn.idle_since > self.idle_timeout:
                    doomed.append(conn)
        for conn in doomed:
            self._forget(conn)
        await asyncio.gather(*(conn.close() for conn in doomed), return_exceptions=True)

    def _forget(self, conn: Conn) -> None:
        if conn.key[0] == "session" and self.by_session.get(conn.key[1]) is conn:
            del self.by_session[conn.key[1]]
        pool = self.conns.get(conn.key)
        if pool is not None and conn in pool:
            pool.remove(conn)
            if not pool:
                del self.conns[conn.key]
        conn.closed = True
        self._freed.set()

    # ------------------------------------------------------------ choosing a connection

    def key_of(self, front: Front, era: str) -> Any:
        if not front.stateless:
            return ("session", id(front.session))
        principal = front.principal if (self.per_caller or era == "handshake") else ""
        caps = front.answering if era == "handshake" else {}
        return ("pool", era, principal, msgspec.json.encode(caps, order="sorted").decode())

    async def acquire(self, front: Front, era: str, *, exclusive: bool) -> Conn:
        """A connection for ``front``'s request, speaking ``era`` (``exclusive``: held alone
        until released)."""
        if not front.stateless:
            # A handshake-era client's own connection: found at once after its first request,
            # and awaited by the requests that come while that request opens it (one
            # backend session per client session, however many calls come at once).
            while True:
                conn = self.by_session.get(id(front.session))
                if conn is None or conn.owner is None:
                    break
                if conn.usable:
                    conn.busy += 1
                    return conn
                if conn.opened.is_set():
                    break  # it failed, or closed: opened anew below
                try:
                    await asyncio.wait_for(conn.opened.wait(), self.timeout)
                except TimeoutError:
                    late = f"{self.describe()} did not connect within {self.timeout:g} s"
                    raise McpError(INTERNAL_ERROR, late) from None
        await self.start()
        key = self.key_of(front, era)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        while True:
            for conn in self.conns.get(key, ()):
                if not conn.usable or conn.exclusive or (exclusive and conn.busy):
                    continue
                conn.busy += 1
                conn.exclusive = exclusive
                return conn
            if sum(len(pool) for pool in self.conns.values()) < self.max_sessions:
                return await self._open(front, key, era, exclusive)
            if not await self._make_room():
                self._freed.clear()
                remaining = deadline - loop.time()
                if remaining <= 0:
                    raise Busy(f"{self.describe()} has {self.max_sessions} connections, all in use")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._freed.wait(), remaining)

    async def _make_room(self) -> bool:
        """Close one idle connection of another key (never one in use), if there is one."""
        victims = [
            conn
            for pool in self.conns.values()
            for conn in pool
            if conn is not self.primary and not conn.busy and (not conn.fixed or not conn.usable)
        ]
        if not victims:
            return False
        oldest = min(victims, key=lambda conn: conn.idle_since)
        self._forget(oldest)
        await oldest.close()
        return True

    async def _open(self, front: Front, key: Any, era: str, exclusive: bool) -> Conn:
        owner: Owner | None = None if front.stateless else SessionOwner(front.session)
        conn = Conn(self, key, front.answering, owner, era)
        conn.busy, conn.exclusive = 1, exclusive
        self.conns.setdefault(key, []).append(conn)
        if owner is not None:
            self.by_session[key[1]] = conn
        trying = era == "handshake" and "handshake" not in self.versions
        try:
            extra = await self.credentials() if self.credentials is not None else {}
            await conn.open(extra, listening=False)
            if trying:
                assert conn.client is not None
                self.versions["handshake"] = str(conn.client.session.protocol_version)
        except BaseException as exc:
            self._forget(conn)
            conn.opened.set()
            with contextlib.suppress(Exception):
                await conn.close()
            if trying and isinstance(exc, (McpError, ConnectionError)):
                # It speaks the stateless era only after all: so be it, from now on.
                log.info("mcpgen gateway: %s refused initialize (%s): speaking the stateless era", self.describe(), exc)
                self.handshake_refused = True
                return await self._open(front, key, "stateless", exclusive)
            if isinstance(exc, Exception) and not isinstance(exc, McpError):
                log.warning("mcpgen gateway: cannot connect to %s: %s", self.describe(), exc)
                raise McpError(INTERNAL_ERROR, f"{self.describe()} is unavailable") from None
            raise
        conn.opened.set()
        return conn

    def release(self, conn: Conn) -> None:
        conn.busy -= 1
        if conn.busy > 0:
            # Still in use (a session's own connection, or a shared one): nobody waiting can
            # have it sooner; a lost one leaves the pool at once all the same.
            if not conn.usable:
                self._forget(conn)
            return
        if conn.exclusive:
            conn.exclusive = False
            if not conn.fixed:
                conn.owner = None
        conn.busy = 0
        conn.idle_since = asyncio.get_running_loop().time()
        if not conn.usable:
            self._forget(conn)
        self._freed.set()

    # ------------------------------------------------------------ requests

    async def send(
        self,
        conn: Conn,
        method: str,
        params: Any,
        result_type: Any = msgspec.Raw,
        on_progress: Callable[[float, float | None, str | None], Awaitable[None] | None] | None = None,
    ) -> Any:
        """``method(params)`` on ``conn`` within the backend's limits; the backend's own
        errors go on as they are, a silence or a lost connection becomes -32603 (what
        :meth:`Proxy.relay` does too, written out there: every call's path)."""
        gate = self.gate
        if not gate.take():
            await gate.enter(self.timeout)
        try:
            assert conn.client is not None
            return await conn.client.session.send_request(
                method, params, result_type, timeout=self.timeout, on_progress=on_progress
            )
        except (RequestTimeout, ConnectionError) as exc:
            raise self.failure(conn, exc) from None
        finally:
            gate.leave()

    def failure(self, conn: Conn, exc: BaseException) -> McpError:
        """What the client is told of a backend that went silent or away."""
        if isinstance(exc, RequestTimeout):
            return McpError(INTERNAL_ERROR, f"{self.describe()} did not answer within {self.timeout:g} s")
        conn.closed = True
        return McpError(INTERNAL_ERROR, f"{self.describe()} closed the connection")

    def param_headers(self, name: str, arguments: Any) -> dict[str, str]:
        """The Mcp-Param-* headers of a call to tool ``name``."""
        annotated = self.tool_headers(name)
        if not annotated or not isinstance(arguments, dict):
            return {}
        found: dict[str, str] = {}
        for argument, header in annotated.items():
            value = render(arguments.get(argument))
            if value is not None:
                found[f"Mcp-Param-{header}"] = value
        return found

    def changed(self, feature: str) -> None:
        self.on_change(feature)

    def updated(self, uri: str) -> None:
        self.on_updated(uri)


def short_key(method: str, count: int) -> str:
    """A question's key when the backend gave none (``elicitation-1``, ...)."""
    return f"{_SHORT.get(method, 'input')}-{count}"
