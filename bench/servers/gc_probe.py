"""Run a Python benchmark server with its cyclic garbage collector watched, for
``bench/scale.py``: the CPU time spent in collections and their count, kept current in a
small shared file that the benchmark reads whenever it likes (no signal, no pipe, nothing
that waits on the server). A ``gc.callbacks`` hook times each collection with the CPU
clock of the thread that runs it (a collection holds the GIL from start to stop, so that
is the process's CPU spent collecting). On SIGUSR2 the server runs a full collection
(the benchmark does that before it reads the RSS of a server holding many sessions).

Run: python bench/servers/gc_probe.py STATS_PATH SCRIPT [ARGS...]

STATS_PATH holds two little-endian numbers: the seconds of CPU spent collecting (a double)
and the number of collections (a 64-bit integer). SCRIPT runs as ``__main__`` with
``ARGS`` as its arguments, its folder first on ``sys.path``, as ``python SCRIPT ARGS``
would run it.
"""

from __future__ import annotations

import gc
import mmap
import runpy
import signal
import struct
import sys
import time
from pathlib import Path
from typing import Any

LAYOUT = struct.Struct("<dq")


class Watch:
    """The ``gc.callbacks`` hook: totals written to the shared file after each collection."""

    def __init__(self, path: Path) -> None:
        path.write_bytes(bytes(LAYOUT.size))
        with path.open("r+b") as file:
            self.shared = mmap.mmap(file.fileno(), LAYOUT.size)
        self.started = 0.0
        self.seconds = 0.0
        self.collections = 0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self.started = time.thread_time()
            return
        self.seconds += time.thread_time() - self.started
        self.collections += 1
        LAYOUT.pack_into(self.shared, 0, self.seconds, self.collections)


def read(path: Path) -> tuple[float, int]:
    """The benchmark's side: (CPU seconds spent collecting, collections) so far."""
    seconds, collections = LAYOUT.unpack(path.read_bytes()[: LAYOUT.size])
    return seconds, collections


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit("usage: gc_probe.py STATS_PATH SCRIPT [ARGS...]")
    stats, script = Path(sys.argv[1]), sys.argv[2]
    gc.callbacks.append(Watch(stats))
    signal.signal(signal.SIGUSR2, lambda *_: gc.collect())
    sys.argv = [script, *sys.argv[3:]]
    sys.path[0] = str(Path(script).resolve().parent)
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
