"""mcpgen: typed, fast Python bindings and runtime for the Model Context Protocol.

Every name a user imports is here, loaded on first use (PEP 562), so ``import mcpgen`` (the
CLI's start) loads nothing of the runtime; the typed bindings are ``mcpgen.generated`` (the
handshake era's) and ``mcpgen.protocol.v*`` (each revision's), the test authorization server
``mcpgen.testing.AuthServer``. Where each name lives: :mod:`mcpgen.runtime` draws the map."""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcpgen.runtime.auth.bearer import BearerAuth
    from mcpgen.runtime.auth.oauth import ClientInfo, CrossAppAccess, OAuthClient, OAuthError, WorkloadIdentity
    from mcpgen.runtime.auth.token_files import FileTokenStorage
    from mcpgen.runtime.client.apps import InterfaceError
    from mcpgen.runtime.client.client import Client
    from mcpgen.runtime.client.skills import SkillVerificationError
    from mcpgen.runtime.client.tasks import TaskFailed, TaskHandle
    from mcpgen.runtime.errors import (
        INTERNAL_ERROR,
        INVALID_PARAMS,
        INVALID_REQUEST,
        METHOD_NOT_FOUND,
        PARSE_ERROR,
        RESOURCE_NOT_FOUND,
        McpError,
        RequestTimeout,
        ResourceNotFound,
    )
    from mcpgen.runtime.gateway.gateway import Gateway
    from mcpgen.runtime.gateway.proxy import Proxy, ToolFilter
    from mcpgen.runtime.middleware.builtin import RateLimit, ResponseLimit, Timing
    from mcpgen.runtime.middleware.chain import Call, CallNext, Middleware
    from mcpgen.runtime.middleware.otel import OpenTelemetry
    from mcpgen.runtime.server.apps import client_supports_ui
    from mcpgen.runtime.server.context import Context
    from mcpgen.runtime.server.http_server import close_current_stream
    from mcpgen.runtime.server.running import Http, Runner, Stdio
    from mcpgen.runtime.server.server import Server, ToolError
    from mcpgen.runtime.shared.extension import Extension, ExtensionMethod
    from mcpgen.runtime.shared.plain import plain_json
    from mcpgen.runtime.stores.redis_store import RedisStore
    from mcpgen.runtime.transports.http_protocol import HttpProtocol
    from mcpgen.version import __version__

# name -> the module that defines it.
_LAZY = {
    # Serving
    "Server": "mcpgen.runtime.server.server",
    "ToolError": "mcpgen.runtime.server.server",
    "Extension": "mcpgen.runtime.shared.extension",
    "ExtensionMethod": "mcpgen.runtime.shared.extension",
    "Runner": "mcpgen.runtime.server.running",
    "Stdio": "mcpgen.runtime.server.running",
    "Http": "mcpgen.runtime.server.running",
    "Context": "mcpgen.runtime.server.context",
    "close_current_stream": "mcpgen.runtime.server.http_server",
    "HttpProtocol": "mcpgen.runtime.transports.http_protocol",  # uvicorn --http mcpgen:HttpProtocol
    "RedisStore": "mcpgen.runtime.stores.redis_store",
    "BearerAuth": "mcpgen.runtime.auth.bearer",
    "client_supports_ui": "mcpgen.runtime.server.apps",
    # Servers in front of servers
    "Proxy": "mcpgen.runtime.gateway.proxy",
    "ToolFilter": "mcpgen.runtime.gateway.proxy",
    "Gateway": "mcpgen.runtime.gateway.gateway",
    # Middleware (both sides)
    "Middleware": "mcpgen.runtime.middleware.chain",
    "Call": "mcpgen.runtime.middleware.chain",
    "CallNext": "mcpgen.runtime.middleware.chain",
    "Timing": "mcpgen.runtime.middleware.builtin",
    "RateLimit": "mcpgen.runtime.middleware.builtin",
    "ResponseLimit": "mcpgen.runtime.middleware.builtin",
    "OpenTelemetry": "mcpgen.runtime.middleware.otel",
    # Calling
    "Client": "mcpgen.runtime.client.client",
    "TaskHandle": "mcpgen.runtime.client.tasks",
    "TaskFailed": "mcpgen.runtime.client.tasks",
    "SkillVerificationError": "mcpgen.runtime.client.skills",
    "InterfaceError": "mcpgen.runtime.client.apps",
    "OAuthClient": "mcpgen.runtime.auth.oauth",
    "OAuthError": "mcpgen.runtime.auth.oauth",
    "ClientInfo": "mcpgen.runtime.auth.oauth",
    "CrossAppAccess": "mcpgen.runtime.auth.oauth",
    "WorkloadIdentity": "mcpgen.runtime.auth.oauth",
    "FileTokenStorage": "mcpgen.runtime.auth.token_files",
    "plain_json": "mcpgen.runtime.shared.plain",  # results as plain JSON data (fields left out omitted)
    # Errors, and the codes they carry
    "McpError": "mcpgen.runtime.errors",
    "ResourceNotFound": "mcpgen.runtime.errors",
    "RequestTimeout": "mcpgen.runtime.errors",
    "PARSE_ERROR": "mcpgen.runtime.errors",
    "INVALID_REQUEST": "mcpgen.runtime.errors",
    "METHOD_NOT_FOUND": "mcpgen.runtime.errors",
    "INVALID_PARAMS": "mcpgen.runtime.errors",
    "INTERNAL_ERROR": "mcpgen.runtime.errors",
    "RESOURCE_NOT_FOUND": "mcpgen.runtime.errors",
    "__version__": "mcpgen.version",
}


# The extra that brings what a name's module imports beyond the core (a missing one is a
# one-line install hint, not a ModuleNotFoundError from deep inside).
_EXTRA = {
    "BearerAuth": "auth",
    "OAuthClient": "auth",
    "OAuthError": "auth",
    "ClientInfo": "auth",
    "CrossAppAccess": "auth",
    "WorkloadIdentity": "auth",
    "FileTokenStorage": "auth",
    "HttpProtocol": "http",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mcpgen' has no attribute {name!r}")
    import importlib

    try:
        return getattr(importlib.import_module(module), name)
    except ModuleNotFoundError as exc:
        from mcpgen.runtime.extras import MissingExtra

        extra = _EXTRA.get(name)
        if extra is None or isinstance(exc, MissingExtra):
            raise
        from mcpgen.origin import install_command

        missing = exc.name or "a dependency"
        hint = f"{name} needs the {extra} extra ({missing} is missing): {install_command(extra)}"
        raise MissingExtra(hint, name=exc.name) from None


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "BearerAuth",
    "Call",
    "CallNext",
    "Client",
    "ClientInfo",
    "Context",
    "CrossAppAccess",
    "Extension",
    "ExtensionMethod",
    "FileTokenStorage",
    "Gateway",
    "Http",
    "HttpProtocol",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "InterfaceError",
    "METHOD_NOT_FOUND",
    "McpError",
    "Middleware",
    "OAuthClient",
    "OAuthError",
    "OpenTelemetry",
    "PARSE_ERROR",
    "Proxy",
    "RESOURCE_NOT_FOUND",
    "RateLimit",
    "RedisStore",
    "RequestTimeout",
    "ResourceNotFound",
    "ResponseLimit",
    "Runner",
    "Server",
    "SkillVerificationError",
    "Stdio",
    "TaskFailed",
    "TaskHandle",
    "Timing",
    "ToolError",
    "ToolFilter",
    "WorkloadIdentity",
    "__version__",
    "client_supports_ui",
    "close_current_stream",
    "plain_json",
]
