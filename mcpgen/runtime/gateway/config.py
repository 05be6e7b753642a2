"""The gateway's configuration: the ``mcpServers`` JSON host apps already use, plus what a
gateway needs per backend and for itself.

    {
      "mcpServers": {
        "files":   {"command": "npx", "args": ["-y", "some-server"], "env": {"ROOT": "/srv"}},
        "weather": {"url": "https://weather.example/mcp", "headers": {"X-Key": "${WEATHER_KEY}"},
                    "namespace": "wx", "tools": {"allow": ["forecast"]}, "timeout": 20,
                    "max_concurrency": 32, "auth": {"type": "client_credentials", ...}}
      },
      "gateway": {"name": "my-gateway", "auth": {"issuer": "...", "resource": "..."},
                  "store": "redis://127.0.0.1:6379/0", "tracing": true}
    }

A backend is ``command`` (with ``args``, ``env``, ``cwd``) or ``url`` (``serverUrl`` and
``httpUrl`` are read as it, ``"type": "sse"`` means the 2024-11-05 HTTP+SSE transport),
with ``headers``. Per backend: ``namespace`` (several backends: the backend's key by
default; one backend keeps its names unless it names one), ``tools`` (``allow`` and
``deny`` lists), ``era``, ``timeout`` (seconds), ``max_concurrency``, ``max_sessions`` and
``auth``: ``{"type": "client_credentials", "client_id", "client_secret", "scope"}``
(the runtime's OAuth client), ``{"type": "passthrough"}`` (the caller's own token, only on
a gateway that checks tokens) or ``{"type": "token_exchange", "token_endpoint",
"client_id", "client_secret", "audience", "scope"}`` (RFC 8693: the caller's token traded
for one meant for the backend).

``${NAME}`` in any string is the environment variable NAME (an unset one is an error:
a secret is never left as its placeholder).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal

import msgspec

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
AuthType = Literal["client_credentials", "passthrough", "token_exchange"]


class ConfigError(ValueError):
    """A configuration the gateway cannot run with; the message says where and why."""


class ToolRules(msgspec.Struct, forbid_unknown_fields=True):
    allow: list[str] | None = None
    deny: list[str] = msgspec.field(default_factory=list)


class BackendAuth(msgspec.Struct, forbid_unknown_fields=True):
    type: AuthType
    client_id: str | None = None
    client_secret: str | None = None
    scope: str | None = None
    token_endpoint: str | None = None
    audience: str | None = None
    resource: str | None = None


class Backend(msgspec.Struct, forbid_unknown_fields=True):
    """One entry of ``mcpServers``."""

    command: str | None = None
    args: list[str] = msgspec.field(default_factory=list)
    env: dict[str, str] = msgspec.field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    serverUrl: str | None = None  # noqa: N815 (the host apps' spelling)
    httpUrl: str | None = None  # noqa: N815
    type: str | None = None
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    namespace: str | None = None
    tools: ToolRules | None = None
    era: str = "auto"
    timeout: float = 60.0
    max_concurrency: int = 64
    max_sessions: int = 16
    auth: BackendAuth | None = None
    disabled: bool = False
    # What host apps write and a gateway does not use (kept so their files load as they are).
    description: str | None = None
    transport: str | None = None
    alwaysAllow: list[str] | None = None  # noqa: N815
    autoApprove: list[str] | None = None  # noqa: N815

    @property
    def endpoint(self) -> str | None:
        return self.url or self.serverUrl or self.httpUrl


class FrontAuth(msgspec.Struct, forbid_unknown_fields=True):
    """The gateway's own protection (``BearerAuth``): tokens of ``issuer`` for ``resource``."""

    issuer: str
    resource: str
    scopes: list[str] = msgspec.field(default_factory=list)
    jwks_url: str | None = None


class Settings(msgspec.Struct, forbid_unknown_fields=True):
    """The ``gateway`` section."""

    name: str = "mcpgen-gateway"
    auth: FrontAuth | None = None
    store: str | None = None  # redis://... : rounds reachable from every worker
    state_key: str | None = None
    round_timeout: float = 300.0
    max_rounds: int = 256
    tracing: bool = False
    max_chain: int = 8  # gateways in front of gateways, at most


class Config(msgspec.Struct, forbid_unknown_fields=True):
    mcpServers: dict[str, Backend]  # noqa: N815
    gateway: Settings = msgspec.field(default_factory=Settings)

    @property
    def backends(self) -> dict[str, Backend]:
        return {name: backend for name, backend in self.mcpServers.items() if not backend.disabled}


def expand(value: Any, environ: dict[str, str] | os._Environ[str], where: str) -> Any:
    """``${NAME}`` in every string of ``value`` replaced by the variable's value."""
    if isinstance(value, str):

        def variable(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in environ:
                raise ConfigError(f"{where}: ${{{name}}} is not set in the environment")
            return environ[name]

        return _VARIABLE.sub(variable, value)
    if isinstance(value, dict):
        return {key: expand(item, environ, f"{where}.{key}") for key, item in value.items()}
    if isinstance(value, list):
        return [expand(item, environ, f"{where}[{i}]") for i, item in enumerate(value)]
    return value


def parse(data: Any, environ: dict[str, str] | os._Environ[str] | None = None, where: str = "config") -> Config:
    """A configuration from parsed JSON, checked (a :class:`ConfigError` says what is wrong)."""
    environ = os.environ if environ is None else environ
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: a JSON object with mcpServers")
    try:
        config = msgspec.convert(expand(data, environ, where), Config)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    if not config.backends:
        raise ConfigError(f"{where}: mcpServers names no backend")
    for name, backend in config.backends.items():
        check(name, backend, where)
    return config


def load(path: str | Path, environ: dict[str, str] | None = None) -> Config:
    """The configuration in the JSON file at ``path``."""
    file = Path(path)
    try:
        data = msgspec.json.decode(file.read_bytes())
    except OSError as exc:
        raise ConfigError(f"cannot read {file}: {exc.strerror or exc}") from None
    except msgspec.DecodeError as exc:
        raise ConfigError(f"{file} is not JSON: {exc}") from None
    return parse(data, environ, str(file))


def check(name: str, backend: Backend, where: str) -> None:
    at = f"{where}: mcpServers.{name}"
    if (backend.command is None) == (backend.endpoint is None):
        raise ConfigError(f"{at}: give either command or url")
    endpoint = backend.endpoint
    if endpoint is not None and not endpoint.startswith(("http://", "https://")):
        raise ConfigError(f"{at}: url must be http:// or https://")
    if backend.timeout <= 0 or backend.max_concurrency < 1 or backend.max_sessions < 1:
        raise ConfigError(f"{at}: timeout, max_concurrency and max_sessions must be positive")
    auth = backend.auth
    if auth is not None:
        if auth.type != "passthrough" and endpoint is None:
            raise ConfigError(f"{at}: auth {auth.type!r} is for a url backend")
        if auth.type == "passthrough" and endpoint is None:
            raise ConfigError(f"{at}: passthrough sends the caller's token to a url backend")
        if auth.type == "client_credentials" and not auth.client_id:
            raise ConfigError(f"{at}: client_credentials needs client_id")
        if auth.type == "token_exchange" and not (auth.token_endpoint and auth.client_id):
            raise ConfigError(f"{at}: token_exchange needs token_endpoint and client_id")


__all__ = ["Backend", "BackendAuth", "Config", "ConfigError", "FrontAuth", "Settings", "ToolRules", "load", "parse"]
