"""The server process a CLI command starts (``mcpgen call "python server.py"``, and the
commands built on it): the stdio transport's :class:`ProcessTransport`, with three things a
person at a terminal needs.

* **Its own process group** (POSIX). A command is often a launcher (``npx -y pkg``, ``uv run``,
  ``sh -c``) whose child is the real server. Closing stdin and signalling the launcher left
  that child running, holding our pipes: the server lived on after the command, and asyncio
  found the pipes still open after its loop closed ("RuntimeError: Event loop is closed" at
  exit). The server starts as the leader of a process group of its own, and closing ends the
  whole group once the leader is gone or does not go. It is started through a two-line
  Python trampoline that makes the group and then execs the command, because the
  transport's ``spawn`` takes no ``start_new_session``; the command is found on PATH first, so
  a missing one still reads "no such command".
* **Stray stdout lines on stderr.** What a server prints at import time, before its
  framework takes stdout over (the official SDK's servers leave ``print`` to stdout), is not
  a JSON-RPC message: it is shown on stderr, marked as the server's, instead of being answered
  with a parse error the user never sees.
* **Its stderr, sanitized**: the server's lines reach the terminal through
  :func:`~mcpgen.cli.sanitize.clean_line` (or are dropped with ``--quiet``).
"""

from __future__ import annotations

import asyncio
import errno
import os
import shlex
import shutil
import signal
import sys
from collections.abc import Callable

from mcpgen.cli.sanitize import clean_line
from mcpgen.runtime.transports.stdio import ProcessTransport

# Makes the process a group leader, then becomes the server. -I -S: nothing of the user's
# environment or site-packages is read before the exec (the server gets the environment whole).
_TRAMPOLINE = "import os,sys\ntry:\n os.setpgid(0,0)\nexcept OSError:\n pass\nos.execvp(sys.argv[1],sys.argv[1:])"
GROUP_GRACE = 2.0  # seconds the group gets after SIGTERM, before SIGKILL


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
    group: int | None = None  # the process group, when the server leads one

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
        process: ProcessTransport
        if os.name == "posix":
            process = await cls.spawn(
                sys.executable, ["-I", "-S", "-c", _TRAMPOLINE, command, *words[1:]], on_stderr=on_stderr
            )
        else:
            process = await cls.spawn(command, words[1:], on_stderr=on_stderr)
        assert isinstance(process, cls)  # spawn makes an instance of the class it is called on
        if os.name == "posix":
            process.group = process.process.pid
        process.command = shlex.join(words)  # what the user ran, in messages, not the trampoline
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
        await super().close(grace)  # stdin closed, the leader waited for, then signalled
        if self.group is not None:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                if not await self._group_gone(sig):
                    continue
                break
        await self.exit_error(grace=1.0)  # the rest of its stderr, now that nobody holds the pipe

    async def _group_gone(self, sig: signal.Signals) -> bool:
        """Send ``sig`` to what is left of the group; whether it is gone within the grace."""
        assert self.group is not None
        try:
            os.killpg(self.group, sig)
        except (ProcessLookupError, PermissionError):
            return True  # nobody left (or the group is no longer ours)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + GROUP_GRACE
        while loop.time() < deadline:
            await asyncio.sleep(0.02)
            try:
                os.killpg(self.group, 0)
            except (ProcessLookupError, PermissionError):
                return True
        return False


def stderr_line(quiet: bool, write: Callable[[str], None]) -> Callable[[str], None]:
    """What becomes of a server's stderr line: dropped (``--quiet``) or written, sanitized."""
    if quiet:
        return lambda line: None
    return lambda line: write(clean_line(line) + "\n")


def stray_line(write: Callable[[str], None]) -> Callable[[str], None]:
    """A line the server wrote to stdout that is not a message: shown as the server's."""
    return lambda line: write(f"server stdout: {clean_line(line.rstrip())}\n")


__all__ = ["GROUP_GRACE", "ServerProcess", "stderr_line", "stray_line"]
