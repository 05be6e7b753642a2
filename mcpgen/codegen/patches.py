"""Known schema defects, patched as data before a model is built.

Each patch in ``facts.toml [[patches]]`` names a revision, a JSON pointer, the value the
file is known to hold there and the value to use instead. The known value is asserted: a
file that holds anything else (an upstream fix, a moved definition) stops generation with
the file and pointer, so a defect is never patched twice nor patched blind.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

from mcpgen.codegen.facts import Facts
from mcpgen.codegen.loader import LoadedSchema, SchemaError

_ABSENT: Any = object()


def apply_patches(loaded: LoadedSchema, facts: Facts) -> tuple[LoadedSchema, list[str]]:
    """The schema with this revision's patches applied, and one note per patch."""
    patches = facts.patches_for(loaded.revision)
    if not patches:
        return loaded, []
    document = copy.deepcopy(loaded.document)
    notes = []
    for patch in patches:
        parent, key = _locate(document, patch.pointer, loaded.source)
        found = _get(parent, key)
        if found != patch.expect:
            held = "nothing" if found is _ABSENT else repr(found)
            raise SchemaError(
                loaded.source,
                patch.pointer,
                f"facts.toml patch expects {patch.expect!r} here but the file holds {held}: "
                "the defect was fixed or moved upstream; update or remove the patch",
            )
        if isinstance(parent, list):
            parent[int(key)] = copy.deepcopy(patch.value)
        else:
            parent[key] = copy.deepcopy(patch.value)
        notes.append(f"patched {patch.pointer}: {patch.why}")
    return replace(loaded, document=document), notes


def _get(parent: Any, key: str) -> Any:
    if isinstance(parent, dict):
        return parent.get(key, _ABSENT)
    if isinstance(parent, list) and key.isdigit() and int(key) < len(parent):
        return parent[int(key)]
    return _ABSENT


def _locate(document: Any, pointer: str, source: str) -> tuple[Any, str]:
    """The container holding the last token of ``pointer``, and that token."""
    tokens = [t.replace("~1", "/").replace("~0", "~") for t in pointer.lstrip("/").split("/")]
    node = document
    for i, token in enumerate(tokens[:-1]):
        child = _get(node, token)
        if child is _ABSENT:
            where = "/" + "/".join(tokens[: i + 1])
            raise SchemaError(source, pointer, f"facts.toml patch: nothing at {where}")
        node = child
    return node, tokens[-1]
