"""MCP Apps (``io.modelcontextprotocol/ui``, SEP-1865) on the server side.

A tool links an interactive interface through ``_meta.ui.resourceUri``: a ``ui://``
resource of MIME type ``text/html;profile=mcp-app`` that a host renders in a sandboxed
iframe. ``_meta.ui.visibility`` says who may call the tool: ``"model"`` (the agent),
``"app"`` (the interface, through the host), or both (the default). The interface's own
``_meta.ui`` carries its Content Security Policy domains, the browser permissions it asks
for, a dedicated origin and its border preference; the host enforces them.

The metadata is checked against the extension's generated bindings
(:mod:`mcpgen.protocol.ext_apps`), so a misspelt key fails at registration, not in a host.
A tool with an interface stays an ordinary tool: hosts without the extension call it and
read its content, so it must return content that stands on its own (graceful degradation).

Loaded only by :meth:`Server.ui_resource` and a tool registered with ``ui=`` or
``visibility=``: a server without interfaces never imports it.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import msgspec
from msgspec import UNSET

from mcpgen.protocol.ext_apps import McpUiResourceCsp, McpUiResourceMeta, McpUiResourcePermissions, McpUiToolMeta
from mcpgen.protocol.v2025_11_25 import TextResourceContents
from mcpgen.runtime.shared.extension import Extension
from mcpgen.runtime.shared.meta import UI_EXTENSION, UI_MIME, UI_SCHEME

Visibility = Literal["model", "app"]
HtmlSource = str | os.PathLike[str] | Callable[[], str | Awaitable[str]]

__all__ = ["Apps", "HtmlSource", "Visibility", "client_supports_ui", "link_tool", "resource_meta", "ui_reader"]


class Apps(Extension):
    """MCP Apps as an extension: declared (no settings) once a server serves an interface
    or links one to a tool; it adds no request (interfaces are ``ui://`` resources)."""

    identifier = UI_EXTENSION
    meta_keys = frozenset({"ui"})  # _meta.ui of tools and interface resources


def check_ui_uri(uri: str) -> None:
    if not uri.startswith(UI_SCHEME) or len(uri) == len(UI_SCHEME):
        raise ValueError(f"an MCP Apps interface needs a ui:// URI, got {uri!r}")


def link_tool(meta: dict[str, Any] | None, ui: str | None, visibility: Sequence[Visibility] | None) -> dict[str, Any]:
    """The tool's ``_meta`` with ``ui`` set from ``ui`` (the interface's URI) and
    ``visibility``, checked by the extension's schema."""
    if meta and "ui" in meta:
        raise ValueError("give the tool's interface as ui=/visibility=, not as a `ui` key of meta")
    entry: dict[str, Any] = {}
    if ui is not None:
        check_ui_uri(ui)
        entry["resourceUri"] = ui
    if visibility is not None:
        if isinstance(visibility, str) or not visibility or len(set(visibility)) != len(visibility):
            raise ValueError("visibility is a non-empty list of 'model' and/or 'app', each at most once")
        entry["visibility"] = list(visibility)
    try:
        msgspec.convert(entry, McpUiToolMeta)
    except msgspec.ValidationError as exc:
        raise ValueError(f"invalid MCP Apps tool metadata: {exc}") from None
    return {**(meta or {}), "ui": entry}


def resource_meta(
    csp: McpUiResourceCsp | dict[str, Any] | None,
    permissions: McpUiResourcePermissions | dict[str, Any] | None,
    domain: str | None,
    prefers_border: bool | None,
) -> dict[str, Any] | None:
    """The interface's ``_meta`` (``{"ui": {...}}``), checked by the extension's schema;
    ``None`` when nothing is set (the host then applies its restrictive default CSP)."""
    ui: dict[str, Any] = {}
    if csp is not None:
        ui["csp"] = msgspec.to_builtins(csp)
    if permissions is not None:
        ui["permissions"] = msgspec.to_builtins(permissions)
    if domain is not None:
        ui["domain"] = domain
    if prefers_border is not None:
        ui["prefersBorder"] = prefers_border
    if not ui:
        return None
    try:
        msgspec.convert(ui, McpUiResourceMeta)
    except msgspec.ValidationError as exc:
        raise ValueError(f"invalid MCP Apps resource metadata: {exc}") from None
    return {"ui": ui}


def ui_reader(uri: str, html: HtmlSource, meta: dict[str, Any] | None) -> tuple[Callable[[], Any], bool]:
    """The resource function that serves the interface ``uri`` from ``html`` (the document
    itself, a path to a file read at each ``resources/read``, or a function called at each
    read: plain or ``async``, no arguments, returning the document), and whether it
    blocks (runs in the thread pool)."""
    check_ui_uri(uri)

    def contents(text: str) -> TextResourceContents:
        if not isinstance(text, str):
            raise TypeError(f"the interface {uri} must be HTML text, got {type(text).__name__}")
        return TextResourceContents(uri=uri, text=text, mime_type=UI_MIME, meta=meta or UNSET)

    read: Callable[[], Any]
    if isinstance(html, str):
        document = html

        def read() -> TextResourceContents:
            return contents(document)

        in_thread = False  # nothing to wait for
    elif isinstance(html, os.PathLike):
        path = Path(html)
        if not path.is_file():
            raise FileNotFoundError(f"the interface {uri}: no file {path}")

        def read() -> TextResourceContents:
            return contents(path.read_text(encoding="utf-8"))

        in_thread = True  # file I/O
    elif inspect.iscoroutinefunction(html):
        source = html

        async def read() -> TextResourceContents:
            return contents(await source())

        in_thread = False
    elif callable(html):
        call = html

        def read() -> TextResourceContents:
            return contents(call())  # type: ignore[arg-type]

        in_thread = True  # the author's code may block
    else:
        raise TypeError("html must be the document (str), a path to it, or a function returning it")
    read.__name__ = read.__qualname__ = "ui_resource"
    return read, in_thread


def client_supports_ui(capabilities: dict[str, Any]) -> bool:
    """Whether the client's declared capabilities (``ctx.client_capabilities``) include
    MCP Apps with HTML interfaces: a server may then leave text-only fallbacks out."""
    extensions = capabilities.get("extensions")
    settings = extensions.get(UI_EXTENSION) if isinstance(extensions, dict) else None
    mime_types = settings.get("mimeTypes") if isinstance(settings, dict) else None
    return isinstance(mime_types, list) and UI_MIME in mime_types
