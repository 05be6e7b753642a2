"""The stdio transport: newline-delimited JSON over a process's stdin and stdout.

Server side, stdout carries protocol messages only: the real stdout is kept for them and
file descriptor 1 is pointed at stderr, so a stray ``print()`` (or a C library writing to
fd 1) lands in the log instead of corrupting the stream. Client side, the server runs as
a subprocess whose stderr is passed through, its last lines kept to explain a crash.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from msgspec import UNSET, UnsetType

from mcpgen.runtime.errors import ServerExited
from mcpgen.runtime.framing import FrameTooLarge, RequestId

MAX_MESSAGE = 16 * 1024 * 1024  # default bytes in one line; a larger frame is refused
_HIGH_WATER = 1024 * 1024
STDERR_TAIL = 20  # a server's last stderr lines kept to explain its exit


class StreamTransport:
    """Frames over an asyncio reader/writer pair, one JSON text per line."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, max_message: int = MAX_MESSAGE
    ) -> None:
        self.reader = reader
        self.writer = writer
        self.max_message = max_message  # the reader was made with this limit
        self._closed = False
        self._pending: list[bytes] = []
        self._pending_size = 0

    async def receive(self) -> bytes | None:
        while True:
            try:
                line = await self.reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:
                line = exc.partial  # the last line may lack its newline
                if not line.strip():
                    return None
            except asyncio.LimitOverrunError as exc:
                await self._discard_line(exc.consumed)
                raise FrameTooLarge(self.max_message) from None
            if line.strip():
                return line

    async def _discard_line(self, consumed: int) -> None:
        """Drop an over-long line, a limit's worth at a time, up to its newline."""
        while True:
            await self.reader.readexactly(consumed)
            try:
                await self.reader.readuntil(b"\n")  # what is left of the line
                return
            except asyncio.LimitOverrunError as more:
                consumed = more.consumed
            except asyncio.IncompleteReadError:
                return

    def send_now(self, frame: bytes, *, related: RequestId | UnsetType = UNSET, final: bool = False) -> bool:
        """Queue a frame without waiting. False when the peer is not keeping up: the
        caller should then ``await drain()`` before sending more."""
        if self._closed or self.writer.is_closing():
            raise ConnectionError("stdio transport closed")
        # Frames sent in one turn of the event loop go out in one write (one system call
        # instead of one per response when many requests are in flight).
        if not self._pending:
            asyncio.get_running_loop().call_soon(self._flush)
        self._pending.append(frame)
        self._pending.append(b"\n")
        self._pending_size += len(frame) + 1
        if self._pending_size + self.writer.transport.get_write_buffer_size() > _HIGH_WATER:
            self._flush()
            return False
        return True

    async def send(self, frame: bytes, *, related: RequestId | UnsetType = UNSET, final: bool = False) -> None:
        if not self.send_now(frame):
            await self.drain()

    async def drain(self) -> None:
        """Wait until the peer has read enough of what we sent (backpressure)."""
        await self.writer.drain()

    def _flush(self) -> None:
        if self._pending and not self.writer.is_closing():
            self.writer.write(b"".join(self._pending))
        self._pending.clear()
        self._pending_size = 0

    async def close(self) -> None:
        if self._closed:
            return
        self._flush()
        self._closed = True
        try:
            if self.writer.can_write_eof():
                self.writer.write_eof()
            self.writer.close()
        except (ConnectionError, OSError, RuntimeError):
            pass


async def server_stdio(protect_stdout: bool = True, max_message: int = MAX_MESSAGE) -> StreamTransport:
    """The current process's stdin/stdout as a transport (for a server)."""
    loop = asyncio.get_running_loop()
    out_fd = 1
    if protect_stdout:
        sys.stdout.flush()
        out_fd = os.dup(1)
        os.dup2(2, 1)  # fd 1 (and so print) now goes to stderr
    reader = asyncio.StreamReader(limit=max_message, loop=loop)
    # The event loop can watch pipes and sockets; a regular file or /dev/null (a shell
    # redirect) it cannot, so those are read by a thread and written with plain writes.
    if _is_pipe(0):
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), os.fdopen(0, "rb", 0))
    else:
        _read_in_thread(loop, reader, 0)
    writer: Any
    if _is_pipe(out_fd):
        transport, protocol = await loop.connect_write_pipe(
            lambda: asyncio.streams.FlowControlMixin(loop=loop), os.fdopen(out_fd, "wb", 0)
        )
        writer = asyncio.StreamWriter(transport, protocol, reader, loop)
    else:
        writer = _BlockingWriter(out_fd)
    return StreamTransport(reader, writer, max_message)


def _is_pipe(fd: int) -> bool:
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _read_in_thread(loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader, fd: int) -> None:
    """Feed ``reader`` from a file descriptor the event loop cannot watch."""

    def pump() -> None:
        while chunk := os.read(fd, 65536):
            loop.call_soon_threadsafe(reader.feed_data, chunk)
        loop.call_soon_threadsafe(reader.feed_eof)

    threading.Thread(target=pump, name="mcpgen-stdin", daemon=True).start()


class _BlockingWriter:
    """What StreamTransport needs of a writer, over a regular file (writes do not block
    for long on a file, so plain writes are fine)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.transport = self
        self._closed = False

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]

    def get_write_buffer_size(self) -> int:
        return 0

    def is_closing(self) -> bool:
        return self._closed

    async def drain(self) -> None:
        return None

    def can_write_eof(self) -> bool:
        return False

    def write_eof(self) -> None:
        return None

    def close(self) -> None:
        self._closed = True


class ProcessTransport(StreamTransport):
    """A server subprocess spoken to over its stdin/stdout (for a client).

    Its stderr is passed through to ours line by line (as the official clients do: a
    server that dies on start says why there), or handed to ``on_stderr``; the last
    lines are kept either way, so that :meth:`exit_error` can say why it went away.
    """

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        stderr_task: asyncio.Task[None],
        max_message: int,
        *,
        command: str = "",
        stderr_tail: deque[str] | None = None,
    ) -> None:
        assert process.stdout is not None and process.stdin is not None
        super().__init__(process.stdout, process.stdin, max_message)
        self.process = process
        self.command = command
        self.stderr_tail: deque[str] = stderr_tail if stderr_tail is not None else deque(maxlen=STDERR_TAIL)
        self._stderr_task = stderr_task

    @classmethod
    async def spawn(
        cls,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        on_stderr: Callable[[str], None] | None = None,
        max_message: int = MAX_MESSAGE,
    ) -> ProcessTransport:
        """Start ``command args...``. Its stderr lines go to ``on_stderr`` when given,
        else straight to this process's stderr."""
        full_env = {**os.environ, **env} if env is not None else None
        process = await asyncio.create_subprocess_exec(
            command,
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=full_env,
            cwd=cwd,
            limit=max_message,
        )
        assert process.stderr is not None
        tail: deque[str] = deque(maxlen=STDERR_TAIL)
        stderr_task = asyncio.get_running_loop().create_task(
            _pump_stderr(process.stderr, on_stderr or _pass_through, tail)
        )
        import shlex  # the client side only: a server over stdio does not load it at start-up

        return cls(process, stderr_task, max_message, command=shlex.join([command, *args]), stderr_tail=tail)

    async def exit_error(self, grace: float = 2.0) -> ServerExited:
        """Why the server is gone: its exit status and last stderr lines. Called once its
        stdout closed; waits up to ``grace`` seconds for it to exit and finish writing
        stderr (a dying Python prints its traceback after its stdout is closed)."""
        if self.process.returncode is None:
            try:
                await asyncio.wait_for(self.process.wait(), grace)
            except TimeoutError:
                pass
        await asyncio.wait([self._stderr_task], timeout=grace)
        return ServerExited(self.command, self.process.returncode, list(self.stderr_tail))

    async def close(self, grace: float = 2.0) -> None:
        """Close stdin, wait for the server to exit, then terminate, then kill."""
        await super().close()
        for step in (None, self.process.terminate, self.process.kill):
            if self.process.returncode is not None:
                break
            if step is not None:
                try:
                    step()
                except ProcessLookupError:
                    break
            try:
                await asyncio.wait_for(self.process.wait(), grace)
            except TimeoutError:
                continue
        await asyncio.wait([self._stderr_task], timeout=1)


def _pass_through(line: str) -> None:
    """Write a server's stderr line to ours (looked up each time: tests capture it)."""
    try:
        print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError):  # our stderr is gone or closed: nothing to tell
        pass


async def _pump_stderr(stream: asyncio.StreamReader, on_line: Callable[[str], None], tail: deque[str]) -> None:
    while True:
        try:
            line = await stream.readline()
        except (ValueError, asyncio.LimitOverrunError):
            continue
        if not line:
            return
        text = line.decode(errors="replace").rstrip()
        tail.append(text)
        on_line(text)
