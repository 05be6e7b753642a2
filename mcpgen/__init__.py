"""mcpgen: typed, fast Python bindings and runtime for the Model Context Protocol."""

__version__ = "0.1.0"

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcpgen.runtime.auth.bearer import BearerAuth
    from mcpgen.runtime.auth.oauth import OAuthClient
    from mcpgen.runtime.client.client import Client
    from mcpgen.runtime.client.tasks import TaskFailed, TaskHandle
    from mcpgen.runtime.errors import McpError, ResourceNotFound
    from mcpgen.runtime.server.context import Context
    from mcpgen.runtime.server.server import Server, ToolError

_LAZY = {
    "Server": "mcpgen.runtime.server.server",
    "ToolError": "mcpgen.runtime.server.server",
    "Client": "mcpgen.runtime.client.client",
    "Context": "mcpgen.runtime.server.context",
    "McpError": "mcpgen.runtime.errors",
    "OAuthClient": "mcpgen.runtime.auth.oauth",
    "ResourceNotFound": "mcpgen.runtime.errors",
    "BearerAuth": "mcpgen.runtime.auth.bearer",
    "TaskHandle": "mcpgen.runtime.client.tasks",
    "TaskFailed": "mcpgen.runtime.client.tasks",
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
