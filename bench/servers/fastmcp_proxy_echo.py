"""FastMCP's ``create_proxy`` in front of the mcpgen echo server (``mcpgen_echo.py``), both
over stdio: what ``bench/gateway.py`` calls "FastMCP proxy" (FastMCP 4.x, ``pip install
fastmcp``; the test extra pins it). The proxy's own defaults: its backend mirrors the
front's protocol era.

Run: python bench/servers/fastmcp_proxy_echo.py
"""

from __future__ import annotations

import sys
from pathlib import Path

from fastmcp.server import create_proxy

HERE = Path(__file__).resolve().parent
CONFIG = {"mcpServers": {"echo": {"command": sys.executable, "args": [str(HERE / "mcpgen_echo.py")]}}}

if __name__ == "__main__":
    create_proxy(CONFIG, name="fastmcp-proxy").run(show_banner=False)
