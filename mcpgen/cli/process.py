"""The server process a CLI command starts (``mcpgen call "python server.py"``, and the
commands built on it): the stdio transport's :class:`ProcessTransport`, with three things a
person at a terminal needs.

* **Its own process group** (POSIX), as every :class:`ProcessTransport` has, so that closing
  ends a launcher's child too (``npx -y pkg``, ``uv run``, ``sh -c``); the command is found on
  PATH first, so a missing one reads "no such command".
* **Stray stdout lines on stderr.** What a server prints at import time, before its
  framework takes stdout over (the official SDK's servers leave ``print`` to stdout), is not
  a JSON-RPC message: it is shown on stderr, marked as the server's, instead of being answered
  with a parse error the user never sees.
* **Its stderr, sanitized**: the server's lines reach the terminal through
  :func:`~mcpgen.cli.sanitize.clean_line` (or are dropped with ``--quiet``).
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Callable

from mcpgen.cli.sanitize import clean_line
from mcpgen.runtime.transports.stdio import ProcessTransport


def _found(command: str) -> str:
    """``command`` as the OS would run it, or the error the OS would give."""
    if os.sep in command or (os.altsep and os.altsep in command):
        if not os.path.exists(command):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), command)
        if not os.access(command, os.X_OK) or os.path.isdir(command):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), command)
        return command
    if shutil.which(command) is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), command)
    return command


class ServerProcess(ProcessTransport):
    """A server started by a CLI command; see the module's docstring."""

    on_stray: Callable[[str], None] | None = None  # takes a stdout line that is not a message

    @classmethod
    async def start(
        cls,
        words: list[str],
        *,
        on_stderr: Callable[[str], None],
        on_stray: Callable[[str], None],
    ) -> ServerProcess:
        """Start ``words`` (a command and its arguments) as a group leader where the OS
        has process groups."""
        command = _found(words[0])
        process = await cls.spawn(command, words[1:], on_stderr=on_stderr)
        assert isinstance(process, cls)  # spawn makes an instance of the class it is called on
        process.on_stray = on_stray
        return process

    async def receive(self) -> bytes | None:
        # Overriding receive also keeps the session on it (no frames handed over on the
        # pipe's callback), so every frame passes here.
        while True:
            frame = await super().receive()
            if frame is None or frame.lstrip()[:1] in (b"{", b"["):
                return frame
            if self.on_stray is not None:
                self.on_stray(frame.decode("utf-8", "replace"))

    async def close(self, grace: float = 2.0) -> None:
        await super().close(grace)  # stdin closed, the leader waited for, then its group ended
        await self.exit_error(grace=1.0)  # the rest of its stderr, now that nobody holds the pipe


def stderr_line(quiet: bool, write: Callable[[str], None]) -> Callable[[str], None]:
    """What becomes of a server's stderr line: dropped (``--quiet``) or written, sanitized."""
    if quiet:
        return lambda line: None
    return lambda line: write(clean_line(line) + "\n")


def stray_line(write: Callable[[str], None]) -> Callable[[str], None]:
    """A line the server wrote to stdout that is not a message: shown as the server's."""
    return lambda line: write(f"server stdout: {clean_line(line.rstrip())}\n")


__all__ = ["ServerProcess", "stderr_line", "stray_line"]
