"""The extension contract (SEP-2133): one object says what an extension is on either side.

An extension has an identifier (``io.modelcontextprotocol/ui``); a server declares it under
``capabilities.extensions`` with its settings, and so may a client; it may add requests (a
server serves them in both eras, through the same kernel and middleware as the core's); it
may own ``_meta`` keys (which a proxy never copies from one connection to another); and
when a server takes it, it registers what it serves (tools, resources, templates).

MCP Apps, the tasks extension and skills are extensions of this kind; so is anything a user
defines::

    class Shout(Extension):
        identifier = "com.example/shout"

        def methods(self) -> list[ExtensionMethod]:
            return [ExtensionMethod("shout/say", SayParams, self.say)]

        async def say(self, params: SayParams) -> dict[str, Any]:
            return {"text": params.text.upper()}

    server.extend(Shout())                   # declared, and shout/say served in both eras
    Client(server, extensions=[Shout()])     # declared by the client (client_settings)
    await client.request("shout/say", {"text": "hi"})
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any


class ExtensionMethod:
    """A request an extension adds: its method name, the type its params decode into (a
    msgspec Struct, or ``dict``), the coroutine that serves it, what it returns."""

    __slots__ = ("method", "params_type", "handler", "result_type", "params_required", "cacheable", "named")

    def __init__(
        self,
        method: str,
        params_type: Any,
        handler: Callable[[Any], Awaitable[Any]],
        *,
        result_type: Any = dict[str, Any],
        params_required: bool = False,
        cacheable: bool = False,
        named: str | None = None,
    ) -> None:
        self.method = method
        self.params_type = params_type
        self.handler = handler
        self.result_type = result_type
        self.params_required = params_required
        self.cacheable = cacheable
        self.named = named  # the param the stateless era's Mcp-Name header mirrors, if any

    def spec(self) -> Any:
        """The method table's row for it (both eras' tables take it as it is)."""
        from mcpgen.protocol.v2025_11_25 import MethodSpec

        handler = "extension:" + self.method  # named for the table; served by ``handler``
        return MethodSpec(
            self.method,
            "request",
            "c2s",
            self.params_type,
            self.params_required,
            self.result_type,
            None,
            handler,
            cacheable=self.cacheable,
        )


class Extension:
    """One extension, as a server serves it and a client declares it. Subclass and
    override what it has; the defaults declare it with no settings on a server, nothing on
    a client, and add nothing. ``Extension(identifier, settings)`` is a plain declaration."""

    identifier: str = ""
    # The _meta keys the extension defines.
    meta_keys: frozenset[str] = frozenset()
    # The eras it exists in: declared, and its requests served, only there.
    eras: frozenset[str] = frozenset({"handshake", "stateless"})

    def __init__(self, identifier: str | None = None, settings: dict[str, Any] | None = None) -> None:
        if identifier is not None:
            self.identifier = identifier
        if not self.identifier:
            raise ValueError("an extension needs an identifier (vendor-prefix/name)")
        self._settings = dict(settings) if settings is not None else None

    def settings(self) -> dict[str, Any] | None:
        """What a server declares under ``capabilities.extensions[identifier]`` (None: not
        declared: the extension is not offered, or not yet)."""
        return dict(self._settings) if self._settings is not None else {}

    def configure(self, settings: dict[str, Any]) -> None:
        """Declare these settings from now on (a plain declaration's; a subclass that
        works its settings out overrides :meth:`settings` instead)."""
        self._settings = dict(settings)

    def client_settings(self) -> dict[str, Any] | None:
        """What a client declares for it (None: nothing)."""
        return None

    def methods(self) -> Sequence[ExtensionMethod]:
        """The requests it adds, which a server serves in both eras."""
        return ()

    def attach(self, server: Any) -> None:
        """Called once when ``server`` takes the extension: register what it serves."""

    def intercept(self, method: str, route: Any, era: str) -> Any:
        """The route of a core ``method`` in ``era``, as the extension changes it (wrapping
        its handler outside any middleware), or ``route`` as it is (the default)."""
        return route

    def __repr__(self) -> str:
        return f"<extension {self.identifier}>"


def declared_settings(extensions: Sequence[Extension], side: str, era: str | None = None) -> dict[str, dict[str, Any]]:
    """``capabilities.extensions`` as ``side`` ("server" or "client") declares them (in
    ``era``, when given)."""
    found: dict[str, dict[str, Any]] = {}
    for extension in extensions:
        if era is not None and era not in extension.eras:
            continue
        settings = extension.settings() if side == "server" else extension.client_settings()
        if settings is not None:
            found[extension.identifier] = settings
    return found


__all__ = ["Extension", "ExtensionMethod", "declared_settings"]
