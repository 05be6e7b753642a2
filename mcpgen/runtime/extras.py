"""Optional dependencies: what to install when one is missing.

The runtime's core needs msgspec only; serving HTTP needs uvicorn and the HTTP client
httpx, both brought by the ``http`` extra. A missing one is reported as one line naming
the extra to install, as the generator reports its own (``mcpgen[codegen]``), in the
command that installs it the way this mcpgen was installed (:mod:`mcpgen.origin`).
"""

from __future__ import annotations

import importlib
from types import ModuleType


class MissingExtra(ModuleNotFoundError):
    """An optional dependency is not installed; the message says which extra brings it."""


def require(module: str, extra: str, feature: str) -> ModuleType:
    """Import ``module``, or raise :class:`MissingExtra` with the install hint."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        from mcpgen.origin import install_command  # only now: it reads the install record

        missing = exc.name or module
        # The command for the way this mcpgen was installed (an index, a checkout, a wheel).
        message = f"{feature} needs the {extra} extra ({missing} is missing): {install_command(extra)}"
        raise MissingExtra(message, name=missing) from None
