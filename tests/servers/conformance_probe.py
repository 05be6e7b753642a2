"""A server without the everything server's fixtures, for tests/interop/test_conformance.py: the
conformance runner pointed at it (MCPGEN_CONFORMANCE_SERVER) sees scenarios fail.

Run: python tests/servers/conformance_probe.py --port PORT   (HTTP on 127.0.0.1)
"""

from __future__ import annotations

import sys

from mcpgen import Server

server = Server("conformance-probe")


@server.tool
def nothing() -> str:
    """Not the tool any scenario calls."""
    return ""


if __name__ == "__main__":
    server.run("http", port=int(sys.argv[sys.argv.index("--port") + 1]))
