"""The processes a test started, found by a token in their command line (Linux's /proc):
for tests that check nothing they started outlives what should end it."""

from __future__ import annotations

from pathlib import Path


def running_with(token: str) -> list[int]:
    """Processes whose command line holds ``token``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if token.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found
