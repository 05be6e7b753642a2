"""The facts table (``mcpgen/schema/facts.toml``): what the schema does not say.

Every lookup records the key it used, so that after a build the generator can report the
entries that matched nothing in the schema at hand.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpgen import schema as shipped


@dataclass(frozen=True)
class Patch:
    """A known defect of one revision's file: the value at ``pointer`` is replaced."""

    revision: str
    pointer: str
    expect: Any
    value: Any
    why: str


@dataclass
class Facts:
    results: dict[str, str]
    capabilities: dict[str, str]
    open_objects: dict[str, str]
    pages: dict[str, str]
    messages: dict[str, str] = field(default_factory=dict)
    open_definitions: dict[str, str] = field(default_factory=dict)
    result_type_field: str | None = None
    result_type_values: dict[str, str] = field(default_factory=dict)
    traits: dict[str, str] = field(default_factory=dict)
    patches: list[Patch] = field(default_factory=list)
    page_overrides: dict[str, dict[str, str]] = field(default_factory=dict)
    used: set[tuple[str, str]] = field(default_factory=set)

    @classmethod
    def load(cls, path: Path | None = None) -> Facts:
        data = tomllib.loads((path or shipped.facts_path()).read_text(encoding="utf-8"))
        pages = dict(data.get("pages", {}))
        overrides = {k: v for k, v in pages.items() if isinstance(v, dict)}
        result_type = data.get("result_type", {})
        return cls(
            results=dict(data.get("results", {})),
            capabilities=dict(data.get("capabilities", {})),
            open_objects=dict(data.get("open_objects", {})),
            pages={k: v for k, v in pages.items() if isinstance(v, str)},
            messages=dict(data.get("messages", {})),
            open_definitions=dict(data.get("open_definitions", {})),
            result_type_field=result_type.get("field"),
            result_type_values=dict(result_type.get("values", {})),
            traits=dict(data.get("traits", {})),
            patches=[Patch(**p) for p in data.get("patches", [])],
            page_overrides=overrides,
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

    def page_order(self, revision: str) -> list[str]:
        """Methods in the order their pages are assigned: the base table's, then the
        revision's own additions."""
        extra = [m for m in self.page_overrides.get(revision, {}) if m not in self.pages]
        return [*self.pages, *extra]

    def page_for(self, method: str, revision: str) -> str | None:
        base = self._get("pages", method)
        return self.page_overrides.get(revision, {}).get(method, base)

    def is_open_object(self, owner: str) -> bool:
        return self._get("open_objects", owner) is not None

    def is_open_definition(self, name: str) -> bool:
        return self._get("open_definitions", name) is not None

    def message_group(self, name: str) -> str | None:
        return self._get("messages", name)

    def result_type_value(self, struct_name: str) -> str | None:
        """The ``resultType`` a result definition always carries, if the table says so."""
        return self._get("result_type_values", struct_name)

    def trait_definition(self, trait: str) -> str | None:
        return self._get("traits", trait)

    def patches_for(self, revision: str) -> list[Patch]:
        return [p for p in self.patches if p.revision == revision]

    def unused(self, table: str) -> list[str]:
        return sorted(k for k in getattr(self, table) if (table, k) not in self.used)

    def unused_open_objects(self) -> list[str]:
        return self.unused("open_objects")
