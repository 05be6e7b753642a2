"""The bindings of the handshake era under their first name.

``mcpgen.generated`` was the only bindings package before mcpgen served two protocol eras;
it is now :mod:`mcpgen.protocol.v2025_11_25` (the 2026-07-28 bindings are
:mod:`mcpgen.protocol.v2026_07_28`). Imports from here keep working.
"""

from typing import TYPE_CHECKING, Any

from mcpgen.protocol import v2025_11_25 as _bindings
from mcpgen.protocol.v2025_11_25 import __all__ as __all__

if TYPE_CHECKING:
    from mcpgen.protocol.v2025_11_25 import *  # noqa: F403


def __getattr__(name: str) -> Any:
    # Name by name (PEP 562), not `import *`: that would load every lazy module of the
    # bindings (a server would import the client's stubs, and the reverse).
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_bindings, name)
    globals()[name] = value
    return value
