"""Checking capability paths such as ``server.resources.subscribe`` against what a side
declared."""

from __future__ import annotations

from typing import Any

import msgspec


class Declared:
    """A side's declared capabilities, looked up by dotted path (``tools.listChanged``).

    An object-valued capability counts as declared when present (``"logging": {}``); a
    boolean one only when true.
    """

    __slots__ = ("_tree", "_cache")

    def __init__(self, capabilities: Any) -> None:
        self._tree: dict[str, Any] = msgspec.to_builtins(capabilities) if capabilities is not None else {}
        self._cache: dict[str, bool] = {}

    def has(self, path: str) -> bool:
        found = self._cache.get(path)
        if found is None:
            node: Any = self._tree
            for part in path.split("."):
                if not isinstance(node, dict) or part not in node:
                    node = None
                    break
                node = node[part]
            found = self._cache[path] = node is not None and node is not False
        return found

    @property
    def tree(self) -> dict[str, Any]:
        return self._tree


def split(capability: str) -> tuple[str, str]:
    """``"server.tools"`` -> ``("server", "tools")``."""
    side, _, path = capability.partition(".")
    return side, path
