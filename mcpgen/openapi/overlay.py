"""OpenAPI Overlays (the OAI's Overlay Specification 1.0): a list of actions, each a JSONPath
``target`` and either an ``update`` merged into every node it selects or ``remove: true``.

Applied to the loaded document before anything else reads it, in the order given (several
overlay files, each's actions in order). JSONPath is python-jsonpath's (RFC 9535 syntax).
A target that selects nothing is reported, not an error: an overlay written for another
version of the document should say so instead of silently doing nothing.
"""

from __future__ import annotations

import copy
from typing import Any

from mcpgen.openapi.loader import OpenApiError, load_document


def apply_overlay_file(document: dict[str, Any], path: str) -> list[str]:
    """Apply the overlay in ``path`` (JSON or YAML) to ``document``; the notes it left."""
    overlay = load_document(path).document
    return apply_overlay(document, overlay, path)


def apply_overlay(document: dict[str, Any], overlay: dict[str, Any], source: str = "overlay") -> list[str]:
    if "overlay" not in overlay:
        raise OpenApiError(source, "", "not an overlay document: no `overlay` field")
    actions = overlay.get("actions")
    if not isinstance(actions, list):
        raise OpenApiError(source, "/actions", "must be a list of actions")
    try:
        import jsonpath
    except ModuleNotFoundError:
        raise OpenApiError(source, "", "overlays need python-jsonpath: pip install 'mcpgen[openapi]'") from None
    notes = []
    for i, action in enumerate(actions):
        where = f"/actions/{i}"
        if not isinstance(action, dict) or not isinstance(action.get("target"), str):
            raise OpenApiError(source, where, "an action needs a `target` JSONPath")
        try:
            matches = list(jsonpath.finditer(action["target"], document))
        except jsonpath.JSONPathError as exc:
            raise OpenApiError(source, f"{where}/target", f"invalid JSONPath: {exc}") from None
        if not matches:
            notes.append(f"{source}{where}: target {action['target']!r} selects nothing")
            continue
        if action.get("remove") is True:
            # Deepest first, and list items from the end, so earlier removals move nothing.
            for match in sorted(matches, key=lambda m: (len(m.parts), m.parts[-1] if m.parts else 0), reverse=True):
                parent = match.parent.obj if match.parent is not None else None
                key = match.parts[-1] if match.parts else None
                if isinstance(parent, dict) and key in parent:
                    del parent[key]
                elif isinstance(parent, list) and isinstance(key, int) and key < len(parent):
                    del parent[key]
        elif "update" in action:
            for match in matches:
                _merge(match.obj, action["update"], source, where)
        else:
            raise OpenApiError(source, where, "an action needs `update` or `remove: true`")
    return notes


def _merge(target: Any, update: Any, source: str, where: str) -> None:
    if isinstance(target, dict) and isinstance(update, dict):
        for key, value in update.items():
            if isinstance(target.get(key), (dict, list)) and isinstance(value, (dict, list)):
                _merge(target[key], value, source, where)
            else:
                target[key] = copy.deepcopy(value)
    elif isinstance(target, list):
        target.extend(copy.deepcopy(update) if isinstance(update, list) else [copy.deepcopy(update)])
    else:
        raise OpenApiError(source, where, "`update` of a target that is not an object or an array")


__all__ = ["apply_overlay", "apply_overlay_file"]
