"""MCP Apps (``io.modelcontextprotocol/ui``, SEP-1865) on the client (host) side: the
capability a host declares, which tools link an interface, and fetching one, checked.

A host renders the HTML in a sandboxed iframe and relays the app's requests (tool calls,
resource reads) to the server; which tools the app may call and which the model may see
follow each tool's ``visibility``. The checks here are the ones a host owes before
rendering: the URI is ``ui://``, the contents are ``text/html;profile=mcp-app``, the
document is not larger than the host accepts, and its metadata decodes by the extension's
schema (:mod:`mcpgen.protocol.ext_apps`).
"""

from __future__ import annotations

import base64
import logging
from dataclasses import dataclass
from typing import Any

import msgspec

from mcpgen.protocol.ext_apps import McpUiResourceMeta, McpUiToolMeta
from mcpgen.protocol.v2025_11_25 import Tool
from mcpgen.runtime.shared.meta import UI_EXTENSION, UI_MIME, UI_SCHEME

log = logging.getLogger("mcpgen")

UI_SETTINGS: dict[str, Any] = {"mimeTypes": [UI_MIME]}
"""What a host that renders HTML interfaces declares under the extension's identifier."""
DEFAULT_MAX_BYTES = 4 * 1024 * 1024
"""The largest interface document :func:`checked_interface` accepts unless told otherwise."""


class InterfaceError(ValueError):
    """An interface a host must not render: not ``ui://``, wrong MIME type, too large,
    not text, or metadata the extension's schema refuses."""


@dataclass(frozen=True)
class UiTool:
    """A tool that declares ``_meta.ui``: the interface it links (if any) and who may call it."""

    tool: Tool
    resource_uri: str | None
    visibility: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.tool.name

    @property
    def for_model(self) -> bool:
        """Whether the agent may see and call it (a host leaves app-only tools out of its list)."""
        return "model" in self.visibility

    @property
    def for_app(self) -> bool:
        """Whether an interface of this server may call it through the host."""
        return "app" in self.visibility


@dataclass(frozen=True)
class Interface:
    """A fetched interface: its HTML and its ``_meta.ui`` (CSP domains, permissions, ...)."""

    uri: str
    html: str
    meta: McpUiResourceMeta | None


def ui_tools(tools: list[Tool]) -> list[UiTool]:
    """The tools among ``tools`` that declare ``_meta.ui``; one whose metadata the
    extension's schema refuses is left out, with a warning."""
    found: list[UiTool] = []
    for tool in tools:
        raw = tool.meta.get("ui") if isinstance(tool.meta, dict) else None
        if raw is None:
            continue
        try:
            meta = msgspec.convert(raw, McpUiToolMeta)
        except msgspec.ValidationError as exc:
            log.warning("mcpgen: tool %s has invalid MCP Apps metadata, ignored: %s", tool.name, exc)
            continue
        uri = meta.resource_uri if isinstance(meta.resource_uri, str) else None
        visibility = tuple(meta.visibility) if isinstance(meta.visibility, list) else ("model", "app")
        found.append(UiTool(tool, uri, visibility))
    return found


def declares_ui(capabilities: dict[str, Any]) -> bool:
    """Whether a peer's capabilities (as JSON data) declare the extension."""
    extensions = capabilities.get("extensions")
    return isinstance(extensions, dict) and UI_EXTENSION in extensions


def checked_interface(uri: str, result: Any, max_bytes: int) -> Interface:
    """The interface in a ``resources/read`` result for ``uri``, or :class:`InterfaceError`."""
    if not uri.startswith(UI_SCHEME):
        raise InterfaceError(f"{uri!r} is not a ui:// interface")
    item = next((c for c in result.contents if c.uri == uri), None)
    if item is None:
        raise InterfaceError(f"the server's answer for {uri} holds no contents for that URI")
    if item.mime_type != UI_MIME:
        raise InterfaceError(f"{uri} is {item.mime_type or 'untyped'}, not {UI_MIME}: a host must not render it")
    blob = getattr(item, "blob", None)  # either era's contents types
    if isinstance(blob, str):
        if len(blob) > (max_bytes + 2) // 3 * 4:  # refused before decoding a blob too big to hold
            raise InterfaceError(f"{uri} is larger than {max_bytes} bytes")
        data = base64.b64decode(blob)
    else:
        data = str(getattr(item, "text", "")).encode("utf-8")
    if len(data) > max_bytes:
        raise InterfaceError(f"{uri} is {len(data)} bytes, larger than {max_bytes}")
    try:
        html = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InterfaceError(f"{uri} is not UTF-8 text") from None
    raw = item.meta.get("ui") if isinstance(item.meta, dict) else None
    try:
        meta = msgspec.convert(raw, McpUiResourceMeta) if raw is not None else None
    except msgspec.ValidationError as exc:
        raise InterfaceError(f"{uri} has invalid MCP Apps metadata: {exc}") from None
    return Interface(uri, html, meta)
