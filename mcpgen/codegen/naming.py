"""Python names for schema names: snake_case attributes, PascalCase type names."""

from __future__ import annotations

import keyword
import re
from collections.abc import Container, Iterable

_CAMEL_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def snake(name: str) -> str:
    """``isError`` -> ``is_error``, ``URLElicitation`` -> ``url_elicitation``."""
    return _CAMEL_HUMP.sub("_", re.sub(r"[^A-Za-z0-9_]+", "_", name)).lower().strip("_")


def field_name(wire: str) -> str:
    """The attribute for a wire name: ``_meta`` -> ``meta``, ``$schema`` -> ``schema``."""
    name = snake(wire.lstrip("_$")) or "value"
    # Hard keywords only: a soft keyword (match, case, and type since 3.12) is a legal name,
    # and the list of them changes with the Python running the generator, its output must not.
    if keyword.iskeyword(name):
        name += "_"
    elif name[0].isdigit():  # "+1", "2fa": a trailing underscore would not make a name of it
        name = f"n{name}"
    return name


def pascal(wire: str) -> str:
    """``listChanged`` -> ``ListChanged``, ``_meta`` -> ``Meta``, ``oneOf`` -> ``OneOf``."""
    parts = [p for p in re.split(r"[^A-Za-z0-9]+", wire) if p]
    return "".join(p[0].upper() + p[1:] for p in parts)


def method_py_name(type_name: str) -> str:
    """``CallToolRequest`` -> ``call_tool``, ``ProgressNotification`` -> ``progress``."""
    for suffix in ("Request", "Notification"):
        if type_name.endswith(suffix) and type_name != suffix:
            type_name = type_name[: -len(suffix)]
            break
    return snake(type_name)


class UniqueNames:
    """Names in one namespace, each new one made unique in constant time: a name already
    taken gets the next number its base has not used (``Point``, ``Point2``, ``Point3``),
    without trying every number from 2 again for each clash (quadratic in the number of
    clashing names, which a server chooses)."""

    def __init__(self, taken: Iterable[str] = (), sep: str = "", reserved: Container[str] = frozenset()) -> None:
        self.taken = set(taken)
        self.sep = sep
        self.reserved = reserved  # never handed out either, looked up in place
        self._next: dict[str, int] = {}

    def __contains__(self, name: object) -> bool:
        return name in self.taken or name in self.reserved

    def claim(self, name: str) -> str:
        """``name``, or the first free numbered form of it; taken from now on."""
        candidate = name
        if candidate in self:
            n = self._next.get(name, 2)
            while f"{name}{self.sep}{n}" in self:
                n += 1
            self._next[name] = n + 1
            candidate = f"{name}{self.sep}{n}"
        self.taken.add(candidate)
        return candidate
