"""The demo server plus introspection tools for load and memory tests: ``gc`` (collect
garbage), ``rss`` (this process's resident set), ``inflight`` (asyncio tasks and requests
being served).

Run: python tests/servers/load_server.py [--http PORT]  (stdio by default)
"""

from __future__ import annotations

import asyncio
import gc as _gc
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from demo import option, server  # noqa: E402

from mcpgen import Context  # noqa: E402


def rss_kib() -> int:
    """VmRSS of this process, in KiB (Linux)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


@server.tool(name="gc")
def collect() -> int:
    """Run a full garbage collection; the number of unreachable objects found."""
    return _gc.collect()


@server.tool()
def rss() -> int:
    """This process's resident set size in KiB."""
    return rss_kib()


@server.tool()
async def inflight(ctx: Context) -> dict[str, int]:
    """Live asyncio tasks, and requests being served by any session (this one excluded).

    For this HTTP session also what its transport keeps: stream ids, open streams, and
    events held for resumption (diagnostics; reads runtime internals)."""
    requests = sum(len(session._inflight) for session in server.sessions)  # noqa: SLF001
    report = {"tasks": len(asyncio.all_tasks()), "requests": requests - 1, "sessions": len(server.sessions)}
    transport: Any = ctx.session.transport
    if hasattr(transport, "stream_ids"):
        stored = getattr(transport.events, "_streams", {})
        report["stream_ids"] = len(transport.stream_ids)
        report["open_streams"] = len(transport.streams)
        report["stored_streams"] = len(stored)
        report["stored_events"] = sum(len(events) for events in stored.values())
    return report


if __name__ == "__main__":
    if "--http" in sys.argv:
        server.run("http", port=int(option("--http") or 0), retry_ms=200)
    else:
        server.run()
