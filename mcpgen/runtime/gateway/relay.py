"""What crosses a proxy, and what does not: the request being served as the proxy sees it
(:class:`Front`), its params as the backend gets them, the backend's result as the client
gets it.

A request's params and a result are relayed as they were sent, except what belongs to one
connection and means nothing on the other: the stateless era's envelope in ``_meta``
(protocol version, client capabilities and identity, log level, server identity,
subscription id), the progress token (the proxy's own connection to the backend numbers
its own), and a retry's ``inputResponses``/``requestState`` (the client's answers to the
proxy, which the proxy passes on itself). A result of the stateless era loses its
``resultType`` and caching hints on the way to a handshake-era client, which has neither.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET

from mcpgen.runtime.jsonrpc.context import RequestContext, current_request
from mcpgen.runtime.jsonrpc.kernel import Ready
from mcpgen.runtime.server.input_required import caller
from mcpgen.runtime.shared.meta import (
    META_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_SERVER_INFO,
    META_SUBSCRIPTION,
    META_VERSION,
)

CONNECTION_META = frozenset(
    {META_VERSION, META_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL, META_SERVER_INFO, META_SUBSCRIPTION}
)
"""The ``_meta`` keys one connection owns: never copied from one connection to the other."""
PROGRESS = "progressToken"
VIA = "dev.mcpgen/via"
"""The ``_meta`` key naming the gateways a request went through (their ids, in order): a
gateway refuses a request naming it already (a loop)."""
RETRY_FIELDS = ("inputResponses", "requestState")
STATELESS_RESULT = ("resultType", "ttlMs", "cacheScope")  # the handshake era has none of them
ANSWERING = ("elicitation", "sampling", "roots")  # what a client declares to answer questions
_encode = msgspec.json.Encoder().encode


class Front:
    """The request a proxy is serving, as the proxy needs it: which era, whose, what its
    client declared (and so may be asked), which log level it asked for (each read when
    first asked: a handshake-era call needs none of it)."""

    __slots__ = ("ctx", "session", "stateless", "_principal")

    def __init__(self, ctx: RequestContext) -> None:
        self.ctx = ctx
        self.session: Any = ctx.session
        self.stateless = getattr(self.session, "asks_inputs", False) is True
        self._principal: str | None = None

    @classmethod
    def current(cls) -> Front:
        ctx = current_request.get()
        if ctx is None:
            raise RuntimeError("a proxy serves requests only")
        return cls(ctx)

    @property
    def principal(self) -> str:
        """Who the request acts for ("" on a gateway that checks no tokens)."""
        if self._principal is None:
            self._principal = caller()
        return self._principal

    @property
    def caps(self) -> dict[str, Any]:
        """What the client declared (on this request, or at its handshake)."""
        found = self.session.request.capabilities if self.stateless else self.session.peer_caps.tree
        return found if isinstance(found, dict) else {}

    @property
    def log_level(self) -> str | None:
        if self.stateless:
            level: str | None = self.session.request.log_level
            return level
        return getattr(self.session, "log_level", None)

    @property
    def answering(self) -> dict[str, Any]:
        """The capabilities that let a server ask this client questions, and the extensions
        it declared (what the backend may rely on, in this request's name)."""
        return {k: v for k, v in self.caps.items() if k in ANSWERING or k == "extensions"}

    @property
    def progress_token(self) -> str | int | None:
        return self.ctx.progress_token


def outgoing(params: Any, retried: bool = True) -> Any:
    """``params`` as the backend gets them: without what belongs to the client's connection
    (``retried``: a request a client may retry with answers, whose ``inputResponses`` and
    ``requestState`` are the client's to the proxy). The struct itself when nothing is to be
    taken out (the common call), else a dict."""
    if params is None or isinstance(params, dict):
        data = dict(params or {})
    else:
        meta = getattr(params, "meta", UNSET)
        if meta is UNSET and not (retried and _retry_set(params)):
            return params
        data = msgspec.to_builtins(params)
    meta = data.get("_meta")
    if isinstance(meta, dict):
        kept = {k: v for k, v in meta.items() if k not in CONNECTION_META and k != PROGRESS}
        if kept:
            data["_meta"] = kept
        else:
            del data["_meta"]
    if retried:
        for field in RETRY_FIELDS:
            data.pop(field, None)
    return data


def _retry_set(params: Any) -> bool:
    """Whether a retry's fields are set in ``params`` (a struct type that has them at all:
    the stateless era's, merged with the handshake era's)."""
    kind = type(params)
    fields = _RETRY_ATTRIBUTES.get(kind)
    if fields is None:
        names = {f.encode_name: f.name for f in msgspec.structs.fields(kind)}
        fields = _RETRY_ATTRIBUTES[kind] = tuple(names[n] for n in RETRY_FIELDS if n in names)
    return any(getattr(params, name) is not UNSET for name in fields)


_RETRY_ATTRIBUTES: dict[type, tuple[str, ...]] = {}


def relayed(raw: Any, *, backend_stateless: bool, front_stateless: bool) -> Ready:
    """A backend's result (its JSON: bytes or ``msgspec.Raw``) as the front answers with it:
    as it came (no decode) where the eras allow, else without the other connection's members."""
    if not backend_stateless:
        if front_stateless and b'"_meta"' in bytes(raw):
            return Ready("complete", msgspec.json.decode(raw))  # the stamp merges its identity in
        return Ready("complete", raw if isinstance(raw, msgspec.Raw) else msgspec.Raw(raw))
    body = msgspec.json.decode(raw)
    if not isinstance(body, dict):
        return Ready("complete", body)
    kind = body.pop("resultType", "complete")
    meta = body.get("_meta")
    if isinstance(meta, dict):
        kept = {k: v for k, v in meta.items() if k not in CONNECTION_META}
        if kept:
            body["_meta"] = kept
        else:
            del body["_meta"]
    if not front_stateless:
        for member in STATELESS_RESULT:
            body.pop(member, None)
    return Ready(kind if isinstance(kind, str) else "complete", body)


def as_dict(params: Any) -> dict[str, Any]:
    """Params (a struct or a dict) as a JSON object."""
    if isinstance(params, dict):
        return params
    built = msgspec.to_builtins(params) if params is not None else {}
    return built if isinstance(built, dict) else {}


def stamp(result: Ready) -> bytes:
    """A relayed result as JSON (to keep it in a shared store)."""
    return _encode({"kind": result.kind, "body": result.body})


def unstamp(data: Any) -> Ready:
    return Ready(str(data.get("kind", "complete")), data.get("body"))
