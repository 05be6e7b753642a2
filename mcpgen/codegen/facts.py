"""The facts table (``mcpgen/schema/facts.toml``): what the schema does not say.

Every lookup records the key it used, so that after a build the generator can report the
entries that matched nothing in the schema at hand.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from mcpgen import schema as shipped


@dataclass
class Facts:
    results: dict[str, str]
    capabilities: dict[str, str]
    open_objects: dict[str, str]
    pages: dict[str, str]
    used: set[tuple[str, str]] = field(default_factory=set)

    @classmethod
    def load(cls, path: Path | None = None) -> Facts:
        data = tomllib.loads((path or shipped.facts_path()).read_text(encoding="utf-8"))
        return cls(
            results=dict(data.get("results", {})),
            capabilities=dict(data.get("capabilities", {})),
            open_objects=dict(data.get("open_objects", {})),
            pages=dict(data.get("pages", {})),
        )

    def _get(self, table: str, key: str) -> str | None:
        value: str | None = getattr(self, table).get(key)
        if value is not None:
            self.used.add((table, key))
        return value

    def result_for(self, request_type: str) -> str | None:
        return self._get("results", request_type)

    def capability_for(self, direction: str, method: str) -> str | None:
        return self._get("capabilities", f"{direction} {method}")

    def page_for(self, method: str) -> str | None:
        return self._get("pages", method)

    def is_open_object(self, owner: str) -> bool:
        return self._get("open_objects", owner) is not None

    def unused(self, table: str) -> list[str]:
        return sorted(k for k in getattr(self, table) if (table, k) not in self.used)

    def unused_open_objects(self) -> list[str]:
        return self.unused("open_objects")
