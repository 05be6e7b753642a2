"""mcpgen stdio server with the tool ``echo(text: str) -> str``, declared non-blocking (so
answered on the spot), and ``echo_threaded``, the same plain ``def`` left to run in the
thread pool (``bench/stdio.py --threaded``).

Run: python bench/servers/mcpgen_echo.py

Set ``MCPGEN_BENCH_PROFILE=PATH`` to run the server under cProfile and write the stats
to PATH when the client closes stdin (read them with ``python -m pstats PATH``). A
``{pid}`` in PATH becomes the process id, so that each spawn keeps its own dump.
"""

from __future__ import annotations

import os

from mcpgen import Server

server = Server("mcpgen-echo")


@server.tool(blocking=False)
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@server.tool()
async def echo_async(text: str) -> str:
    """Echo the text back (an ``async def``: what a user writes, run in a task of its own)."""
    return text


@server.tool()
def echo_threaded(text: str) -> str:
    """Echo the text back (from a worker thread)."""
    return text


def main() -> None:
    profile_path = os.environ.get("MCPGEN_BENCH_PROFILE")
    if not profile_path:
        server.run()
        return
    import cProfile

    profiler = cProfile.Profile()
    profiler.enable()
    try:
        server.run()
    finally:
        profiler.disable()
        profiler.dump_stats(profile_path.replace("{pid}", str(os.getpid())))


if __name__ == "__main__":
    main()
