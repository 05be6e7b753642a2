"""``Server.mount(other, namespace=...)``: serve another server's tools, resources, resource
templates, prompts and completions as this server's own, in process and live.

What the mounted server offers is read from it at every request (nothing is copied): a tool it
adds later is listed and callable at once, and its list changes reach this server's clients.
A request for one of its features runs through the mounted server's own route (its
middleware, then its handler), inside this server's middleware; its handlers see this
server's client (``ctx.elicit``, progress, logs) and their own lifespan's state, which is
entered and left with this server's.

Names, under ``namespace`` (letters, digits, ``-``, ``.``, ``_``):

* a tool or a prompt ``name`` becomes ``namespace_name``;
* a resource ``scheme://rest`` becomes ``scheme://namespace/rest`` (``file:///a`` becomes
  ``file://namespace//a``), and a resource template likewise;
* completions follow the prompt or template they complete.

Without a namespace the names stay as they are; this server's own features come first when
names collide (a colliding feature of the mounted server is then neither listed nor
reachable). A :class:`~mcpgen.Proxy` mounts like any server: that is how a gateway serves
several backends behind one endpoint.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import msgspec
from msgspec import UNSET

from mcpgen.protocol import v2025_11_25 as generated
from mcpgen.protocol.v2025_11_25 import (
    CompleteRequestParams,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    PaginatedRequestParams,
    PromptReference,
    ResourceTemplateReference,
)
from mcpgen.runtime.errors import INVALID_PARAMS, RESOURCE_NOT_FOUND, McpError
from mcpgen.runtime.jsonrpc.kernel import Ready
from mcpgen.runtime.server.context import mounted_lifespan
from mcpgen.runtime.server.lifespan import LifespanRunner
from mcpgen.runtime.server.registry import decode_cursor, encode_cursor

if TYPE_CHECKING:
    from mcpgen.runtime.server.features import Features, Handler
    from mcpgen.runtime.server.tasks import TaskStart, TaskSupport

log = logging.getLogger("mcpgen")

NAMESPACE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}")

# list method -> (the result's type, its attribute, what names an item)
LISTS: dict[str, tuple[type, str, str]] = {
    "tools/list": (ListToolsResult, "tools", "name"),
    "prompts/list": (ListPromptsResult, "prompts", "name"),
    "resources/list": (ListResourcesResult, "resources", "uri"),
    "resources/templates/list": (ListResourceTemplatesResult, "resource_templates", "uri_template"),
}
# request method -> the param naming what it is about ("name" or "uri")
NAMED = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "resources/subscribe": "uri",
    "resources/unsubscribe": "uri",
}
_LISTED = {"tools/call": "tools/list", "prompts/get": "prompts/list"}
_MAX_PAGES = 1000  # a mounted server whose cursors never end is read this far, no further


class Server(Protocol):
    """What mounting uses of a :class:`~mcpgen.runtime.server.server.Server` (declared here:
    the server imports this module)."""

    features: Features
    lifespan_runner: LifespanRunner | None

    def extend(self, extension: Any) -> Any: ...


def mount(parent: Server, child: Server, namespace: str | None) -> None:
    """``Server.mount``: see the module's docstring."""
    if child is parent:
        raise ValueError("a server cannot mount itself")
    if namespace is not None and not NAMESPACE.fullmatch(namespace):
        raise ValueError(f"invalid namespace {namespace!r}: use 1-64 of A-Z a-z 0-9 _ - . (a letter or digit first)")
    features = parent.features
    table = features.mounts if isinstance(features.mounts, MountTable) else None
    if table is None:
        if features.mounts is not None:
            raise ValueError("this server serves its features from elsewhere (a proxy): mount into a plain Server")
        table = MountTable(features)
        features.use_mounts(table)
    table.add(Mounted(child, namespace), parent)


class Mounted:
    """One server mounted into another, and how its names are seen from the parent."""

    def __init__(self, child: Server, namespace: str | None) -> None:
        self.child = child
        self.features: Features = child.features
        self.namespace = namespace
        self._prefix = f"{namespace}_" if namespace is not None else ""
        # Names the child has now (transparent mounts only: the parent must know whether a
        # request is the child's), made again after each of its changes.
        self._names: dict[str, set[str]] = {}

    # ------------------------------------------------------------ names

    def outer_name(self, name: str) -> str:
        return self._prefix + name

    def inner_name(self, name: str) -> str | None:
        if not self._prefix:
            return name
        return name[len(self._prefix) :] if name.startswith(self._prefix) and len(name) > len(self._prefix) else None

    def outer_uri(self, uri: str) -> str:
        if self.namespace is None:
            return uri
        scheme, sep, rest = uri.partition("://")
        return f"{scheme}://{self.namespace}/{rest}" if sep else f"{self.namespace}:{uri}"

    def inner_uri(self, uri: str) -> str | None:
        if self.namespace is None:
            return uri
        scheme, sep, rest = uri.partition("://")
        if sep:
            head = f"{self.namespace}/"
            return f"{scheme}://{rest[len(head) :]}" if rest.startswith(head) else None
        head = f"{self.namespace}:"
        return uri[len(head) :] if uri.startswith(head) else None

    def inner(self, method: str, value: str) -> str | None:
        return self.inner_name(value) if NAMED.get(method, "name") == "name" else self.inner_uri(value)

    def outer_item(self, method: str, item: Any) -> Any:
        attribute = LISTS[method][2]
        value = getattr(item, attribute)
        renamed = self.outer_name(value) if attribute == "name" else self.outer_uri(value)
        return item if renamed == value else msgspec.structs.replace(item, **{attribute: renamed})

    # ------------------------------------------------------------ serving

    async def serve(self, method: str, params: Any) -> Any:
        """The child's answer to ``method`` (its params already in the child's names),
        through its route: its middleware, then its handler, with its lifespan's state."""
        token = mounted_lifespan.set((self.features.lifespan_state,))
        try:
            return await self.features.route(generated.CLIENT_TO_SERVER[method]).run(params)
        finally:
            mounted_lifespan.reset(token)

    async def listed(self, method: str) -> list[Any]:
        """Every item of the child's ``method`` list, in the parent's names."""
        kind, attribute, _ = LISTS[method]
        items: list[Any] = []
        cursor: Any = UNSET
        for _ in range(_MAX_PAGES):
            page = typed(await self.serve(method, PaginatedRequestParams(cursor=cursor)), kind)
            items.extend(self.outer_item(method, item) for item in getattr(page, attribute))
            cursor = page.next_cursor
            if cursor is UNSET or cursor is None:
                break
        return items

    async def has(self, method: str, name: str) -> bool:
        """Whether the child (mounted without a namespace) offers ``name`` for ``method``."""
        listing = _LISTED.get(method)
        if listing is None:
            return True  # resources: asked, and "not found" moves on to the next
        found = self._names.get(listing)
        if found is None:
            attribute = LISTS[listing][2]
            found = self._names[listing] = {getattr(item, attribute) for item in await self.listed(listing)}
        return name in found

    def changed(self, kind: str, value: str) -> None:
        if kind == "changed":
            self._names.clear()


class MountTable:
    """The servers mounted into one server (its ``Features.mounts``)."""

    def __init__(self, features: Features) -> None:
        self.features = features
        self.mounted: list[Mounted] = []
        self._pending: set[asyncio.Task[None]] = set()

    def add(self, mounted: Mounted, parent: Server) -> None:
        if any(m.child is mounted.child for m in self.mounted):
            raise ValueError("this server is mounted already")
        if mounted.namespace is not None and any(m.namespace == mounted.namespace for m in self.mounted):
            raise ValueError(f"the namespace {mounted.namespace!r} is taken")
        self.mounted.append(mounted)
        child = mounted.features
        child.watchers.append(self._watcher(mounted))
        # The child's declared extensions are the parent's too (its requests stay its own).
        for extension in child.extensions:
            if self.features.extension(extension.identifier) is None:
                from mcpgen.runtime.shared.extension import Extension

                declared = Extension(extension.identifier, extension.settings())
                declared.eras = extension.eras
                parent.extend(declared)
        self.features.mounted_lifespans.append(ChildLifespan(mounted.child))
        if parent.lifespan_runner is None:
            parent.lifespan_runner = LifespanRunner(None, parent, self.features)
        self.features.changed("tools")
        self.features.changed("resources")
        self.features.changed("prompts")

    def _watcher(self, mounted: Mounted) -> Callable[[str, str], None]:
        def watch(kind: str, value: str) -> None:
            mounted.changed(kind, value)
            if kind == "changed":
                self.features.changed(value)
            else:
                task = asyncio.ensure_future(self.features.notify_resource_updated(mounted.outer_uri(value)))
                self._pending.add(task)
                task.add_done_callback(self._pending.discard)

        return watch

    # ------------------------------------------------------------ Features.mounts

    def wrap(self, method: str, run: Handler) -> Handler:
        if method in LISTS:
            return self._lister(method, run)
        if method in NAMED:
            return self._router(method, run)
        if method == "completion/complete":
            return self._completer(run)
        if method == "logging/setLevel":
            return self._level_setter(run)
        return run

    def tool_headers(self, name: str) -> dict[str, str]:
        for mounted in self.mounted:
            inner = mounted.inner_name(name)
            if inner is not None:
                found = mounted.features.tool_headers(inner)
                if found:
                    return found
        return {}

    def task_support(self, name: str) -> tuple[TaskSupport, TaskStart] | None:
        for mounted in self.mounted:
            inner = mounted.inner_name(name)
            if inner is not None:
                found = mounted.features.task_support(inner)
                if found is not None:
                    return found
        return None

    # ------------------------------------------------------------ the wrapped handlers

    def _lister(self, method: str, run: Handler) -> Handler:
        kind, attribute, key = LISTS[method]
        page_size = self.features.handlers.page_size

        async def listed(params: PaginatedRequestParams) -> Any:
            items: list[Any] = []
            cursor: Any = UNSET
            for _ in range(_MAX_PAGES):  # this server's own, every page of them
                page = typed(await run(PaginatedRequestParams(cursor=cursor)), kind)
                items.extend(getattr(page, attribute))
                cursor = page.next_cursor
                if cursor is UNSET or cursor is None:
                    break
            seen = {getattr(item, key) for item in items}
            for mounted in self.mounted:
                for item in await mounted.listed(method):
                    if getattr(item, key) not in seen:
                        seen.add(getattr(item, key))
                        items.append(item)
            start = decode_cursor(params.cursor) if params.cursor is not UNSET else 0
            if start > len(items):
                raise McpError(INVALID_PARAMS, "Invalid params: unknown cursor")
            end = start + page_size
            more = encode_cursor(end) if end < len(items) else UNSET
            return kind(**{attribute: items[start:end], "next_cursor": more})

        return listed

    def _router(self, method: str, run: Handler) -> Handler:
        field = NAMED[method]
        own = self.features.catalog

        async def routed(params: Any) -> Any:
            value = getattr(params, field)
            if field == "name" and value in (own.tools if method == "tools/call" else own.prompts):
                return await run(params)
            for mounted in self.mounted:
                inner = mounted.inner(method, value)
                if inner is None or (mounted.namespace is None and not await mounted.has(method, inner)):
                    continue
                renamed = msgspec.structs.replace(params, **{field: inner})
                if method in ("resources/subscribe", "resources/unsubscribe"):
                    await run(params)  # the session follows the URI it named (the parent relays updates)
                    return await mounted.serve(method, renamed)
                if field == "name" or mounted.namespace is not None:
                    return await mounted.serve(method, renamed)
                try:  # a resource of a transparent mount: this server's own first
                    return await run(params)
                except McpError as exc:
                    if exc.code != RESOURCE_NOT_FOUND:
                        raise
                return await mounted.serve(method, renamed)
            return await run(params)

        return routed

    def _completer(self, run: Handler) -> Handler:
        async def complete(params: CompleteRequestParams) -> Any:
            ref = params.ref
            for mounted in self.mounted:
                if isinstance(ref, PromptReference):
                    inner = mounted.inner_name(ref.name)
                    if inner is None or ref.name in self.features.catalog.prompts:
                        continue
                    if mounted.namespace is None and not await mounted.has("prompts/get", inner):
                        continue
                    renamed: Any = msgspec.structs.replace(ref, name=inner)
                elif isinstance(ref, ResourceTemplateReference):
                    inner = mounted.inner_uri(ref.uri)
                    if inner is None or mounted.namespace is None:
                        continue
                    renamed = msgspec.structs.replace(ref, uri=inner)
                else:
                    continue
                return await mounted.serve("completion/complete", msgspec.structs.replace(params, ref=renamed))
            return await run(params)

        return complete

    def _level_setter(self, run: Handler) -> Handler:
        async def set_level(params: Any) -> Any:
            result = await run(params)
            for mounted in self.mounted:
                await mounted.serve("logging/setLevel", params)  # a proxy tells its backend
            return result

        return set_level


class ChildLifespan:
    """A mounted server's lifespan, as its parent enters it: the one it has when the parent
    starts serving (``@child.lifespan`` may come after ``mount``)."""

    def __init__(self, child: Server) -> None:
        self.child = child
        self._entered: LifespanRunner | None = None

    async def __aenter__(self) -> None:
        runner = self.child.lifespan_runner
        if runner is not None:
            await runner.__aenter__()
            self._entered = runner

    async def __aexit__(self, kind: Any, exc: Any, tb: Any) -> None:
        runner, self._entered = self._entered, None
        if runner is not None:
            await runner.__aexit__(kind, exc, tb)


def typed(result: Any, kind: type) -> Any:
    """A list result as ``kind``, whatever form the handler gave it in (a proxy relays the
    backend's as it came: a :class:`~mcpgen.runtime.jsonrpc.kernel.Ready`)."""
    if isinstance(result, kind):
        return result
    body = result.body if isinstance(result, Ready) else result
    if isinstance(body, msgspec.Raw):
        return msgspec.json.decode(body, type=kind)
    return msgspec.convert(body, kind)


__all__ = ["Mounted", "MountTable", "mount"]
