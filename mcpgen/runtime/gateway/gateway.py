"""Many backends behind one endpoint: ``Gateway(config).server()`` is the front a gateway
serves (``mcpgen gateway CONFIG`` runs it), from the configuration of :mod:`.config`.

One backend is served transparently: its :class:`~mcpgen.Proxy` is the front, names as
they are (unless its config names a namespace). Several are mounted into one server, each
under its namespace (its ``namespace``, else its key in ``mcpServers``): ``ns_tool``,
``scheme://ns/path`` (:mod:`mcpgen.runtime.server.mount`).

What the gateway adds around them: its own protection (``gateway.auth``: the runtime's
``BearerAuth``, whose verifier keeps a caller's token for the backends that act for it),
a shared store (``gateway.store``: a retry may land on any worker), tracing of the front's
and the backends' requests in one trace (``gateway.tracing``), and refusing loops: every
request it relays names it in ``_meta`` (``dev.mcpgen/via``, this process's id), a request
that already names it is refused, and so is one that went through ``max_chain`` gateways;
a command it starts inherits the chain of configurations (``MCPGEN_GATEWAY_CHAIN``), and a
gateway whose own configuration is in it refuses to start (a gateway that starts itself).
"""

from __future__ import annotations

import hashlib
import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from mcpgen.runtime.errors import INVALID_REQUEST, McpError
from mcpgen.runtime.gateway import auth as credentials
from mcpgen.runtime.gateway.config import Backend, Config, ConfigError, load, parse
from mcpgen.runtime.gateway.proxy import Proxy, ToolFilter
from mcpgen.runtime.gateway.relay import VIA
from mcpgen.runtime.gateway.targets import CommandTarget, SseTarget, Target, UrlTarget
from mcpgen.runtime.middleware.chain import Middleware
from mcpgen.runtime.server.server import Server

if TYPE_CHECKING:
    from mcpgen.runtime.auth.bearer import BearerAuth
    from mcpgen.runtime.stores.task_store import TaskStore

DEFAULT_NAME = "mcpgen-gateway"
CHAIN = "MCPGEN_GATEWAY_CHAIN"
"""The environment variable a gateway gives the commands it starts: the configurations of
the gateways above them."""


class Gateway:
    """A gateway's front and the backends behind it, from a :class:`~.config.Config` (or the
    path of its JSON file). ``environ``: where ``${NAME}`` and the chain are read."""

    def __init__(self, config: Config | str | Path | dict[str, Any], environ: Mapping[str, str] | None = None) -> None:
        self.environ = dict(os.environ if environ is None else environ)
        if isinstance(config, Config):
            self.config = config
        elif isinstance(config, dict):
            self.config = parse(config, self.environ)
        else:
            self.config = load(config, self.environ)
        self.id = secrets.token_urlsafe(9)  # this process, in the via chain of what it relays
        self.fingerprint = hashlib.sha256(msgspec.json.encode(self.config, order="sorted")).hexdigest()[:16]
        self.chain = [link for link in self.environ.get(CHAIN, "").split(",") if link]
        settings = self.config.gateway
        if self.fingerprint in self.chain:
            raise ConfigError("this gateway is behind itself: a backend command starts it again (a loop)")
        if len(self.chain) >= settings.max_chain:
            raise ConfigError(f"{len(self.chain)} gateways in front of this one: more than max_chain allows")
        self.proxies: dict[str, Proxy] = {}

    def server(self) -> Server:
        """The front to serve (``.run()``, ``.http_app()``, ``Client(front)``)."""
        settings = self.config.gateway
        backends = self.config.backends
        front_options: dict[str, Any] = {
            "auth": self._auth(),
            "state_key": settings.state_key,
            "middleware": self._middleware() or None,
        }
        store = self._store()
        if len(backends) == 1:
            ((name, backend),) = backends.items()
            if backend.namespace is None:
                # Transparent: the proxy is the front (its name: the gateway's, if one is given).
                given = settings.name if settings.name != DEFAULT_NAME else None
                proxy = self._proxy(backend, store, given, name, **front_options)
                self.proxies[name] = proxy
                return proxy
        front = Server(settings.name, **front_options)
        for name, backend in backends.items():
            proxy = self._proxy(backend, store, name, name)
            self.proxies[name] = proxy
            front.mount(proxy, namespace=backend.namespace or name)
        return front

    def _proxy(self, backend: Backend, store: TaskStore | None, name: str | None, label: str, **front: Any) -> Proxy:
        settings = self.config.gateway
        rules = backend.tools
        return Proxy(
            self._target(backend),
            name=name,
            label=label,
            era=backend.era,
            timeout=backend.timeout,
            max_concurrency=backend.max_concurrency,
            max_sessions=backend.max_sessions,
            credentials=credentials.credentials_of(backend.auth),
            per_caller=credentials.acts_for_caller(backend.auth),
            tools=ToolFilter(rules.allow, rules.deny) if rules is not None else None,
            round_timeout=settings.round_timeout,
            max_rounds=settings.max_rounds,
            store=store,
            client_middleware=self._middleware(),
            via=self.via,
            **front,
        )

    def _target(self, backend: Backend) -> Target:
        endpoint = backend.endpoint
        if endpoint is not None:
            auth = backend.auth
            maker = (
                credentials.client_credentials(endpoint, auth) if auth and auth.type == "client_credentials" else None
            )
            if backend.type == "sse":
                return SseTarget(endpoint, backend.headers)
            return UrlTarget(endpoint, backend.headers, maker)
        assert backend.command is not None
        env = {**backend.env, CHAIN: ",".join([*self.chain, self.fingerprint])}
        return CommandTarget(backend.command, backend.args, env, backend.cwd)

    def _auth(self) -> BearerAuth | None:
        front = self.config.gateway.auth
        if front is None:
            if any(credentials.acts_for_caller(b.auth) for b in self.config.backends.values()):
                raise ConfigError("a backend acts for the caller (passthrough, token_exchange): give gateway.auth")
            return None
        from mcpgen.runtime.auth.bearer import BearerAuth
        from mcpgen.runtime.auth.token_verify import JwtVerifier

        protected = BearerAuth(front.issuer, front.resource, scopes=front.scopes, jwks_url=front.jwks_url)
        if any(credentials.acts_for_caller(b.auth) for b in self.config.backends.values()):
            protected.verifier = credentials.CallerToken(protected.verifier)
        assert isinstance(protected.verifier, (JwtVerifier, credentials.CallerToken))
        return protected

    def _store(self) -> TaskStore | None:
        url = self.config.gateway.store
        if url is None:
            return None
        from mcpgen.runtime.stores.redis_store import RedisStore

        return RedisStore(url, prefix="mcpgen-gateway").task_store()

    def _middleware(self) -> list[Middleware]:
        if not self.config.gateway.tracing:
            return []
        from mcpgen.runtime.middleware.otel import OpenTelemetry

        return [OpenTelemetry()]

    def via(self, meta: Any) -> list[str]:
        """The via chain a relayed request carries (this gateway added), or refused."""
        chain = meta.get(VIA) if isinstance(meta, dict) else None
        chain = [link for link in chain if isinstance(link, str)] if isinstance(chain, list) else []
        if self.id in chain:
            raise McpError(INVALID_REQUEST, "Invalid Request: a loop (this request went through this gateway already)")
        if len(chain) >= self.config.gateway.max_chain:
            raise McpError(INVALID_REQUEST, f"Invalid Request: relayed through {len(chain)} gateways already")
        return [*chain, self.id]
