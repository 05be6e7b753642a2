"""``mcpgen gateway`` in front of the mcpgen echo server (``mcpgen_echo.py``), both over
stdio: what ``bench/gateway.py`` calls "gateway". The configuration is the one a user writes
(one backend: served as it is, names unchanged).

Run: python bench/servers/gateway_echo.py

``MCPGEN_BENCH_PROFILE=PATH``: run the gateway under cProfile, the stats written to PATH
(``{pid}`` in it becomes the process id) when the client closes stdin.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mcpgen import Gateway

HERE = Path(__file__).resolve().parent
CONFIG = {"mcpServers": {"echo": {"command": sys.executable, "args": [str(HERE / "mcpgen_echo.py")]}}}


def main() -> None:
    front = Gateway(CONFIG).server()
    profile_path = os.environ.get("MCPGEN_BENCH_PROFILE")
    if not profile_path:
        front.run()
        return
    import cProfile

    profiler = cProfile.Profile()
    profiler.enable()
    try:
        front.run()
    finally:
        profiler.disable()
        profiler.dump_stats(profile_path.replace("{pid}", str(os.getpid())))


if __name__ == "__main__":
    main()
