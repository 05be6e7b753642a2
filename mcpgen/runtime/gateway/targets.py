"""How a proxy reaches its backend: a command it starts and speaks to over stdio, a
Streamable HTTP URL (either protocol era), or a :class:`~mcpgen.runtime.server.server.Server`
in this process. A target makes a fresh, unopened :class:`~mcpgen.runtime.client.client.Client`
for each connection the proxy opens (with the callbacks and capabilities that connection
declares, and the credentials it sends)."""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from mcpgen.runtime.client.client import Client

if TYPE_CHECKING:
    import httpx

    from mcpgen.runtime.jsonrpc.transport import Servable

log = logging.getLogger("mcpgen")

Credentials = Callable[[], Awaitable[Mapping[str, str]]]
"""The headers (or, for a command, environment variables) a new connection sends, for the
request being served (a caller's own token is read from it)."""


class Target(Protocol):
    """Where a backend is."""

    kind: str  # "stdio", "http" or "server"

    def describe(self) -> str:
        """What to call it in a message (never a credential)."""
        ...

    def client(self, extra: Mapping[str, str], **options: Any) -> Client:
        """A new client for one connection; ``extra``: headers (HTTP) or environment
        variables (a command) of this connection's credentials."""
        ...


class CommandTarget:
    """A backend started as ``command args...`` (one process per connection), with ``env``
    added to the gateway's environment and ``cwd``."""

    kind = "stdio"

    def __init__(
        self, command: str, args: Sequence[str] = (), env: Mapping[str, str] | None = None, cwd: str | None = None
    ) -> None:
        self.command = command
        self.args = list(args)
        self.env = dict(env or {})
        self.cwd = cwd

    def describe(self) -> str:
        return " ".join([os.path.basename(self.command), *self.args])[:200]

    def client(self, extra: Mapping[str, str], **options: Any) -> Client:
        env = {**os.environ, **self.env, **extra} if (self.env or extra) else None
        name = self.describe()

        def stderr(line: str) -> None:  # the backend's own diagnostics, kept apart from ours
            log.info("mcpgen gateway: [%s] %s", name, line)

        return Client.stdio(self.command, *self.args, env=env, cwd=self.cwd, on_stderr=stderr, **options)


class UrlTarget:
    """A backend at a Streamable HTTP endpoint, sent ``headers`` (and per connection, its
    credentials); ``auth``: an ``httpx.Auth`` made per connection (the runtime's OAuth client)."""

    kind = "http"

    def __init__(
        self,
        url: str,
        headers: Mapping[str, str] | None = None,
        auth: Callable[[], httpx.Auth] | None = None,
    ) -> None:
        self.url = url
        self.headers = dict(headers or {})
        self.auth = auth

    def describe(self) -> str:
        return self.url.split("?", 1)[0][:200]

    def client(self, extra: Mapping[str, str], **options: Any) -> Client:
        headers = {**self.headers, **extra}
        auth = self.auth() if self.auth is not None else None
        return Client.http(self.url, headers=headers or None, auth=auth, **options)


class SseTarget:
    """A backend speaking the 2024-11-05 HTTP+SSE transport (``"type": "sse"``)."""

    kind = "http"

    def __init__(self, url: str, headers: Mapping[str, str] | None = None) -> None:
        self.url = url
        self.headers = dict(headers or {})

    def describe(self) -> str:
        return self.url.split("?", 1)[0][:200]

    def client(self, extra: Mapping[str, str], **options: Any) -> Client:
        options.pop("era", None)  # the transport has one era
        return Client.sse(self.url, headers={**self.headers, **extra} or None, **options)


class ServerTarget:
    """A server in this process (``Client(server)``: no transport at all)."""

    kind = "server"

    def __init__(self, server: Servable) -> None:
        self.server = server

    def describe(self) -> str:
        info = getattr(self.server, "info", None)
        return f"in-process server {getattr(info, 'name', '?')}"

    def client(self, extra: Mapping[str, str], **options: Any) -> Client:
        return Client(self.server, **options)


def target_of(backend: str | Sequence[str] | Servable | Target, **options: Any) -> Target:
    """A target from what ``Proxy(...)`` was given: an http(s) URL, a command (a list, or a
    string split as a shell would), a server object, or a target."""
    if callable(getattr(backend, "client", None)) and isinstance(getattr(backend, "kind", None), str):
        return backend  # type: ignore[return-value]
    if isinstance(backend, str):
        if backend.startswith(("http://", "https://")):
            return UrlTarget(backend, options.get("headers"), options.get("auth"))
        import shlex

        words = shlex.split(backend)
        if not words:
            raise ValueError("an empty command")
        return CommandTarget(words[0], words[1:], options.get("env"), options.get("cwd"))
    if isinstance(backend, Sequence):
        words = [str(word) for word in backend]
        if not words:
            raise ValueError("an empty command")
        return CommandTarget(words[0], words[1:], options.get("env"), options.get("cwd"))
    if callable(getattr(backend, "serve", None)):
        return ServerTarget(backend)  # type: ignore[arg-type]
    raise TypeError(f"a proxy's backend is a URL, a command or a Server, not {type(backend).__name__}")
