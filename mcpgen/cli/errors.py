"""The error the CLI's commands share (``mcpgen call`` and the commands built on it)."""

from __future__ import annotations


class CallError(Exception):
    """A usage or connection problem: one line, exit code 2."""


__all__ = ["CallError"]
