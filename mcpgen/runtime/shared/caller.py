"""Who is calling, for the limits a server keeps per caller (sessions, listen streams, task
records, rate limits): the principal on a protected server (the verified token's owner),
else the client's network address as the HTTP transport saw it (or as a trusted proxy
reported it), else nobody in particular (stdio, in process: one client per connection).

The HTTP app sets :data:`current_address` for the whole handling of a request; tasks
started for it copy the context, so a handler and its middleware see it too. The
principal is read where it is known (:mod:`mcpgen.runtime.auth.info`, a layer above this
one), and handed to :func:`caller_key`.
"""

from __future__ import annotations

from contextvars import ContextVar

SESSIONLESS_ID = "sessionless"
"""The session id of a sessionless HTTP server's one-request sessions (handshake era, no
Mcp-Session-Id): no real id is this (those are 32 random URL-safe characters)."""

current_address: ContextVar[str | None] = ContextVar("mcpgen_address", default=None)
"""The client's address (``host``, no port) of the HTTP request being served, or None."""


def caller_key(owner: tuple[str, str] | None) -> str | None:
    """The key of the caller of the request being served: ``owner`` (a token's issuer and
    principal) when there is one, else its address, else None."""
    if owner is not None:
        return "principal:" + "\n".join(owner)
    address = current_address.get()
    return f"address:{address}" if address is not None else None


def forwarded_address(value: str | None) -> str | None:
    """The client's address in a trusted proxy's header (``X-Forwarded-For``-style: the
    last entry, the one the proxy in front of this server appended), or None."""
    if not value:
        return None
    last = value.rsplit(",", 1)[-1].strip(" \t")
    if not last or len(last) > 64 or not last.isprintable():
        return None
    return last


__all__ = ["SESSIONLESS_ID", "caller_key", "current_address", "forwarded_address"]
