"""The bindings of the handshake era under their first name.

``mcpgen.generated`` was the only bindings package before mcpgen served two protocol eras;
it is now :mod:`mcpgen.protocol.v2025_11_25` (the 2026-07-28 bindings are
:mod:`mcpgen.protocol.v2026_07_28`). Imports from here keep working.
"""

from mcpgen.protocol.v2025_11_25 import *  # noqa: F403
from mcpgen.protocol.v2025_11_25 import __all__ as __all__
