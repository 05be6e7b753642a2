"""A server whose plain ``def`` tool blocks (``time.sleep``) until the test lets it go, for
tests/runtime/server/test_blocking.py. The test and the server share a folder of signal files: the tool
creates ``<tag>.started`` when it begins and returns once ``<tag>.release`` exists.

Run: python tests/servers/blocking.py SIGNAL_DIR [http]   (http: port 0, URL on stderr)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from mcpgen import Server

SIGNALS = Path(sys.argv[1])
LONGEST = 60.0  # a forgotten release must not leave the process behind for ever

server = Server("blocking")


@server.tool
def hold(tag: str) -> str:
    """Block this thread (time.sleep) until the test creates <tag>.release."""
    (SIGNALS / f"{tag}.started").touch()
    deadline = time.monotonic() + LONGEST
    while not (SIGNALS / f"{tag}.release").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    return f"released {tag}"


@server.tool
def quick() -> str:
    """Answer at once (a plain def: it goes through the thread pool too)."""
    return "quick"


if __name__ == "__main__":
    if sys.argv[2:] == ["http"]:
        server.run("http", port=0)
    else:
        server.run()
