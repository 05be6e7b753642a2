"""The settings of the Streamable HTTP app (``Server.http_app(**options)``,
``server.run("http", **options)``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mcpgen.runtime.stores.event_store import EventStore, MemoryEventStore
from mcpgen.runtime.stores.shared_store import SharedStore

LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]")


@dataclass
class HttpOptions:
    path: str = "/mcp"
    # Handshake-era requests served without a session (each POST its own one-request
    # session: no Mcp-Session-Id, no GET stream). The stateless era (2026-07-28) needs no
    # option: it is always sessionless. (``stateless=`` is the old name, still taken.)
    sessionless: bool = False
    json_response: bool = False  # never stream: related messages go to the GET stream
    allowed_hosts: tuple[str, ...] = LOCAL_HOSTS  # host names, any port; "*" allows all
    allowed_origins: tuple[str, ...] | None = None  # None: origins on allowed_hosts
    max_body: int = 16 * 1024 * 1024
    session_idle_timeout: float = 30 * 60
    max_sessions: int = 10_000  # handshake-era and legacy HTTP+SSE sessions together
    # Of those, how many one caller may hold (its principal on a protected server, else its
    # address): None is a quarter of max_sessions, so that no one caller can lock out the rest.
    max_sessions_per_caller: int | None = None
    # Past max_sessions a new session is refused (503, Retry-After) and the sessions already
    # open are kept: a flood of initialize cannot log users out. True ends the idlest idle
    # session instead, as before (a choice for servers whose clients reconnect cheaply).
    evict_when_full: bool = False
    retry_after: int = 5  # seconds, in the Retry-After of a refusal when full
    retry_ms: int = 1000  # SSE reconnection hint
    keep_finished_streams: int = 64  # per session, for clients resuming after the end
    keepalive: float = 15.0
    # What one SSE stream may hold for a client that is not reading it: past max_stream_buffer
    # bytes its progress notifications are dropped, past twice that its other notifications
    # too (a response is always kept); a connection that takes nothing for stall_timeout
    # seconds is ended (a stateless request's handler is then cancelled).
    max_stream_buffer: int = 4 * 1024 * 1024
    stall_timeout: float = 60.0
    event_store: Callable[[], EventStore] = MemoryEventStore
    legacy_sse: bool = True  # also serve the 2024-11-05 HTTP+SSE endpoints
    # subscriptions/listen streams (stateless era): how many may be open at once, for one
    # caller, how many resources one may name, how long one lasts (None: the defaults of
    # mcpgen.runtime.server.listen, 256, 16, 1,000 and an hour).
    max_listens: int | None = None
    max_listens_per_caller: int | None = None
    max_listen_uris: int | None = None
    listen_lifetime: float | None = None
    # The header a trusted proxy in front of this server names the client's address in
    # (e.g. "x-forwarded-for": its last entry counts): the address that the per-caller limits
    # and RateLimit key unauthenticated callers by. None: the connection's own address.
    forwarded_header: str | None = None
    # State shared by several workers (e.g. mcpgen.runtime.stores.redis_store.RedisStore): the
    # sessions' events, the session registry (a stream resumes on any worker) and, unless
    # the Server was given its own, the task store.
    store: SharedStore | None = None
    # With a store: how long a stream followed from it may wait for the store when it is
    # away (frozen, restarting) before the stream is ended.
    store_patience: float = 30.0
    # At start-up, tune Python's garbage collector for serving (server/collector.py: gc.freeze
    # and rarer collections), unless the application set its own thresholds.
    tune_gc: bool = True

    def per_caller_sessions(self) -> int:
        if self.max_sessions_per_caller is not None:
            return self.max_sessions_per_caller
        return max(1, self.max_sessions // 4)
