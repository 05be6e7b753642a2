"""The request being served, as handlers (and :class:`~mcpgen.runtime.server.context.Context`)
see it: set by the kernel around a request's handler, copied into its task."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

import msgspec
from msgspec import UnsetType

from mcpgen.runtime.jsonrpc.framing import RequestId


class RequestContext(msgspec.Struct):
    """What a handler may want to know about the request it is serving (a Struct rather
    than a dataclass: one is made per request, and a dataclass costs ~0.5 ms at import)."""

    # The Session serving it; for a stateless-era request, the StatelessPeer standing in
    # for one (mcpgen.runtime.server.stateless): what Context talks to either way.
    session: Any
    request_id: RequestId
    method: str
    meta: dict[str, Any] | UnsetType
    progress_token: str | int | None = None
    last_progress: float | None = None


current_request: ContextVar[RequestContext | None] = ContextVar("mcpgen_request", default=None)

__all__ = ["RequestContext", "current_request"]
