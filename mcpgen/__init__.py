"""mcpgen: typed, fast Python bindings and runtime for the Model Context Protocol."""

__version__ = "0.1.0"

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcpgen.runtime.auth import OAuthClient
    from mcpgen.runtime.client import Client
    from mcpgen.runtime.client_tasks import TaskFailed, TaskHandle
    from mcpgen.runtime.context import Context
    from mcpgen.runtime.errors import McpError, ResourceNotFound
    from mcpgen.runtime.resource_auth import BearerAuth
    from mcpgen.runtime.server import Server, ToolError

_LAZY = {
    "Server": "mcpgen.runtime.server",
    "ToolError": "mcpgen.runtime.server",
    "Client": "mcpgen.runtime.client",
    "Context": "mcpgen.runtime.context",
    "McpError": "mcpgen.runtime.errors",
    "OAuthClient": "mcpgen.runtime.auth",
    "ResourceNotFound": "mcpgen.runtime.errors",
    "BearerAuth": "mcpgen.runtime.resource_auth",
    "TaskHandle": "mcpgen.runtime.client_tasks",
    "TaskFailed": "mcpgen.runtime.client_tasks",
}


def __getattr__(name: str) -> Any:
    # Imported on first use, so `import mcpgen` (the CLI) stays light.
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mcpgen' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "BearerAuth",
    "Client",
    "Context",
    "McpError",
    "OAuthClient",
    "ResourceNotFound",
    "Server",
    "TaskFailed",
    "TaskHandle",
    "ToolError",
    "__version__",
]
