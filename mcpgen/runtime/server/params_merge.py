"""One params struct that checks what two revisions' params types both check.

A stateless-era request is held to its own revision's params type, and its handler takes
the handshake era's (one set of handlers serves both eras). Decoding the params twice,
once into each, costs a second pass over every request. Where the two types agree on
every field they share, a subclass of the handshake type with the other's fields added
decodes once and checks the same: a shared field keeps its type and is required when
either revision requires it; a field of one revision only keeps that revision's type.
The result is an instance of the handshake type, so handlers and ``isinstance`` see what
they always saw.
"""

from __future__ import annotations

import functools
import types
import typing
from collections.abc import Callable
from importlib import import_module
from typing import Any

import msgspec
from msgspec import UnsetType


def _arms(annotation: Any) -> frozenset[Any]:
    """The types a field annotation allows, with UNSET (which only marks "optional") left out."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        return frozenset(a for a in typing.get_args(annotation) if a is not UnsetType)
    return frozenset((annotation,))


@functools.cache
def merged_params(handshake: type, modern: type) -> type | None:
    """A subclass of ``handshake`` that also checks ``modern``'s fields, or None when the two
    differ on a field they share (or either builds fields in ``__post_init__``): then
    the caller reads the params into each type."""
    if not all(isinstance(t, type) and issubclass(t, msgspec.Struct) for t in (handshake, modern)):
        return None
    if hasattr(handshake, "__post_init__") or hasattr(modern, "__post_init__"):
        return None
    known = {f.encode_name: f for f in msgspec.structs.fields(handshake)}
    added: list[tuple[str, Any, Any]] = []
    for f in msgspec.structs.fields(modern):
        old = known.get(f.encode_name)
        if old is not None:
            if old.name != f.name or _arms(old.type) != _arms(f.type):
                return None
            if old.required or not f.required:
                continue  # the handshake field already checks it as strictly
        if f.required:
            spec = msgspec.field(name=f.encode_name)
        elif f.default_factory is not msgspec.NODEFAULT:
            spec = msgspec.field(name=f.encode_name, default_factory=f.default_factory)
        else:
            spec = msgspec.field(name=f.encode_name, default=f.default)
        added.append((f.name, f.type, spec))
    if not added:
        return handshake
    merged: type = msgspec.defstruct(handshake.__name__, added, bases=(handshake,), kw_only=True, module=__name__)
    return merged


def decoder(merged: type, *packages: Any) -> Callable[[Any], Any]:
    """JSON -> ``merged``: its fields come from the bindings ``packages``, whose codecs
    decode their own untagged unions (the first package that knows a type decodes it)."""
    codecs = [import_module(f"{package.__name__}.codec") for package in packages]

    def dec_hook(type_: Any, obj: Any) -> Any:
        for codec in codecs:
            if type_ in codec.DECODERS:
                return codec.dec_hook(type_, obj)
        raise NotImplementedError(f"mcpgen cannot decode {type_!r}")

    return msgspec.json.Decoder(merged, dec_hook=dec_hook).decode
