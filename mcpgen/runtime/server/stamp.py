"""The stateless era's stamp on a result: ``resultType``, caching hints and the server's
identity, added to the result the handlers made (of the handshake era's types, which have
none of them: older clients ignore the keys, so one set of handlers serves both eras).

A result may be megabytes, so the stamped result is encoded in one pass, as the handshake
era's is. A struct result is copied (references to its fields, nothing deep) into its
type's *twin*: a struct made once per result type, for encoding only, with the same
members under the same JSON names and the stamp's after them, built positionally (the
cheapest way to make a struct). A dict result becomes a shallow copy with the stamp's keys.
Encoding the result and joining it behind the stamp's bytes, as before, cost one more
buffer of the result's size, and a fresh buffer of tens of megabytes costs about as much
again as encoding into it (page faults).
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Any

import msgspec
from msgspec import NODEFAULT, UNSET

from mcpgen.runtime.server.caching import CacheHint
from mcpgen.runtime.shared.meta import META_SERVER_INFO

_encode = msgspec.json.Encoder().encode
_STAMP = ("resultType", "ttlMs", "cacheScope")


class _Twin(msgspec.Struct, frozen=True):
    """How to stamp one struct type: its twin, a reader of its members but ``_meta`` (in
    the twin's order), and a reader of its ``_meta``."""

    kind: type
    members: Callable[[Any], tuple[Any, ...]]
    meta: Callable[[Any], Any]


def _twin(base: type) -> _Twin | None:
    """The twin of a result type, or None when it cannot carry the stamp (no ``_meta``
    member, or members of the stamp's names)."""
    every = msgspec.structs.fields(base)
    fields = [f for f in every if f.encode_name != "_meta"]
    meta = [f for f in every if f.encode_name == "_meta"]
    if len(meta) != 1 or any(f.encode_name in _STAMP for f in fields):
        return None
    ordered = [*fields, meta[0]]
    config = base.__struct_config__  # type: ignore[attr-defined]
    # Each member keeps its default (omit_defaults compares against it); every value is
    # given at each stamp, so the defaults of required members only need to exist.
    spec: list[tuple[str, Any, Any]] = [(f.name, Any, _default(f)) for f in ordered]
    spec += [(name, Any, UNSET) for name in _STAMP]
    kind = msgspec.defstruct(
        base.__name__,
        spec,
        rename={f.name: f.encode_name for f in ordered},
        omit_defaults=config.omit_defaults,
        gc=False,
        module=__name__,
    )
    names = [f.name for f in fields]
    members: Callable[[Any], tuple[Any, ...]]
    if len(names) > 1:
        members = attrgetter(*names)
    elif names:
        name = names[0]
        members = lambda result: (getattr(result, name),)  # noqa: E731
    else:
        members = lambda result: ()  # noqa: E731
    return _Twin(kind, members, attrgetter(meta[0].name))


def _default(field: msgspec.structs.FieldInfo) -> Any:
    if field.default is not NODEFAULT:
        return field.default
    if field.default_factory is not NODEFAULT:
        return msgspec.field(default_factory=field.default_factory)
    return UNSET


class Stamper:
    """Stamps one server's results (its identity is given at each stamp: a server's
    ``info`` may be replaced while it runs)."""

    def __init__(self) -> None:
        self._twins: dict[type, _Twin | None] = {}
        self._identity: tuple[Any, msgspec.Raw] = (None, msgspec.Raw(b"{}"))

    def stamped(self, result: Any, result_type: str, cache: CacheHint | None, info: Any) -> Any:
        """What to encode as the stamped result (any type msgspec encodes)."""
        try:
            twin = self._twins[type(result)]
        except KeyError:
            twin = self._twins[type(result)] = _twin(type(result)) if isinstance(result, msgspec.Struct) else None
        if twin is not None:
            meta = self._meta(twin.meta(result), info)
            if cache is None:
                return twin.kind(*twin.members(result), meta, result_type)
            return twin.kind(*twin.members(result), meta, result_type, cache.ttl_ms, cache.scope)
        if isinstance(result, dict):
            stamped = {**result, "resultType": result_type}
            if cache is not None:
                stamped["ttlMs"] = cache.ttl_ms
                stamped["cacheScope"] = cache.scope
            stamped["_meta"] = self._meta(result.get("_meta", UNSET), info)
            return stamped
        # Anything else (the gateway's relayed bytes): members joined behind the stamp's.
        return msgspec.Raw(self._joined(_encode(result), result_type, cache, info))

    def _meta(self, meta: Any, info: Any) -> Any:
        if isinstance(meta, dict):
            return meta if META_SERVER_INFO in meta else {**meta, META_SERVER_INFO: info}
        identity = self._identity
        if identity[0] is not info:
            # The common case's ``_meta``, encoded once per identity.
            identity = self._identity = (info, msgspec.Raw(_encode({META_SERVER_INFO: info})))
        return identity[1]

    def _joined(self, body: bytes, result_type: str, cache: CacheHint | None, info: Any) -> bytes:
        """Members of an encoded result (the gateway's relayed bytes, which carry no
        ``_meta`` of their own: the relay decodes those that do) behind the stamp's."""
        if body[:1] != b"{":
            return body  # not an object: nothing to stamp (the client's check refuses it)
        extra: dict[str, Any] = {"resultType": result_type}
        if cache is not None:
            extra["ttlMs"] = cache.ttl_ms
            extra["cacheScope"] = cache.scope
        extra["_meta"] = self._meta(UNSET, info)
        head = _encode(extra)[:-1]
        return head + b"}" if body == b"{}" else b"".join((head, b",", memoryview(body)[1:]))
