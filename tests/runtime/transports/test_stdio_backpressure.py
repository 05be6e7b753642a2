"""A stdio client that sends and never reads (security issue, point 11): the server stops
reading new requests while its unread output is above the high-water mark, so its memory
stays bounded, and every request is still answered once the client reads. A real server
subprocess over pipes."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

from tests.wire import DEMO

REQUESTS = 20_000


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def test_a_client_that_never_reads_cannot_grow_the_server_without_bound() -> None:
    proc = subprocess.Popen(
        [sys.executable, str(DEMO)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}).encode())
        proc.stdin.write(b'\n{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        proc.stdin.flush()
        assert b'"result"' in proc.stdout.readline()
        before = rss_mib(proc.pid)
        flood = b"".join(b'{"jsonrpc":"2.0","id":%d,"method":"tools/list"}\n' % (i + 1) for i in range(REQUESTS))

        def send() -> None:
            assert proc.stdin is not None
            proc.stdin.write(flood)
            proc.stdin.flush()

        writer = threading.Thread(target=send, daemon=True)
        writer.start()
        time.sleep(4)  # the server answers what it reads; nobody reads its answers
        grown = rss_mib(proc.pid) - before
        # Its unread answers stay under the high-water mark (1 MiB); the requests it has not
        # read yet wait in the pipe or in its reader (bounded by the reader's own limit).
        assert grown < 40, f"the server grew {grown:.0f} MiB for a client that does not read"
        # The client reads now: every request gets its answer.
        answered = 0
        while answered < REQUESTS:
            line = proc.stdout.readline()
            assert line, "the server closed its output early"
            answered += b'"result"' in line
        writer.join(10)
        assert not writer.is_alive()
    finally:
        proc.kill()
        proc.wait()
