"""Where things are, for tests in any folder of ``tests/`` (which mirrors the package tree)."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent  # the checkout
SERVERS = TESTS / "servers"  # the servers tests run as subprocesses
INTEROP = TESTS / "interop"  # the official SDKs' peers (npm and Python)
