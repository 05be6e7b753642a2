"""mcpgen server with three tools, ``echo(text: str) -> str`` (declared non-blocking, so
answered on the spot), ``echo_threaded`` (the same plain ``def`` left to the thread pool)
and ``echo_progress`` (the same after one progress notification, so that its answer is
an SSE stream), served over
Streamable HTTP with uvicorn (1 worker, log level warning) on 127.0.0.1, for
``bench/http.py``.

Run: python bench/servers/mcpgen_http.py PORT [--json-response]

Without ``--json-response`` the server may stream responses as SSE (mcpgen still answers
with plain JSON when the handler sends nothing before its result).

Set ``MCPGEN_BENCH_PROFILE=PATH`` to run the server under cProfile and write the stats to
PATH on shutdown (SIGTERM or SIGINT: uvicorn shuts down cleanly, then the stats are dumped).
Read them with ``python -m pstats PATH``.
"""

from __future__ import annotations

import os
import sys

from mcpgen import Context, Server

server = Server("mcpgen-echo-http")


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


@server.tool()
async def echo_progress(text: str, ctx: Context) -> str:
    """Report progress once, then echo the text back."""
    await ctx.report_progress(1, 1)
    return text


def main() -> None:
    port = int(sys.argv[1])
    json_response = "--json-response" in sys.argv[2:]

    def serve() -> None:
        server.run("http", host="127.0.0.1", port=port, json_response=json_response, sessionless=False)

    profile_path = os.environ.get("MCPGEN_BENCH_PROFILE")
    if not profile_path:
        serve()
        return
    import cProfile
    import signal

    # uvicorn catches SIGTERM/SIGINT, shuts down, restores the previous handlers and
    # raises the signal again: make that a no-op so serve() returns and the stats get
    # written.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: None)
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        serve()
    finally:
        profiler.disable()
        profiler.dump_stats(profile_path)


if __name__ == "__main__":
    main()
