"""Plain JSON data from mcpgen's typed values, for ``json.dumps`` and the like.

A field the peer left out is ``msgspec.UNSET`` (not ``None``: ``None`` is JSON's ``null``, a
value the peer may send), so a message keeps the difference between "absent" and "null"
when it is sent again. ``json.dumps`` knows neither msgspec structs nor ``UNSET``;
:func:`plain_json` turns a result, a struct, or any mix of them with dicts and lists into
dicts, lists, strings, numbers, booleans and ``None``, structs under their wire names.
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["plain_json"]


def _drop(value: Any) -> Any:
    """Dicts with UNSET entries left out, lists with them as None (a list keeps its
    positions); structs are msgspec's to walk."""
    if isinstance(value, dict):
        return {key: _drop(item) for key, item in value.items() if item is not msgspec.UNSET}
    if isinstance(value, list | tuple):
        return [None if item is msgspec.UNSET else _drop(item) for item in value]
    return value


def _unset_is_null(value: Any) -> Any:
    if value is msgspec.UNSET:
        return None  # left inside a struct's own dict: nothing to leave it out of
    raise TypeError(f"{type(value).__name__} is not JSON data")


def plain_json(value: Any) -> Any:
    """``value`` as plain JSON data: structs as dicts under their wire names (``isError``,
    not ``is_error``), fields and dict entries left out (``msgspec.UNSET``) omitted, an
    ``UNSET`` in a list or alone as ``None``. ``json.dumps(plain_json(result))`` writes what the wire carried.

    >>> from mcpgen.protocol.v2025_11_25 import CallToolResult, TextContent
    >>> plain_json(CallToolResult(content=[TextContent(text="hi")]))
    {'content': [{'type': 'text', 'text': 'hi'}]}
    """
    if value is msgspec.UNSET:
        return None
    return msgspec.to_builtins(_drop(value), enc_hook=_unset_is_null)
