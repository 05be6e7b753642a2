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
from mcpgen.runtime.jsonrpc.framing import FrameTooLarge, RequestId

MAX_MESSAGE = 16 * 1024 * 1024  # default bytes in one line; a larger frame is refused
# Batches up to this size go out joined in one write; larger ones frame by frame.
_JOIN_LIMIT = 256 * 1024
_HIGH_WATER = 1024 * 1024
STDERR_TAIL = 20  # a server's last stderr lines kept to explain its exit


class StreamTransport:
    """Frames over an asyncio reader/writer pair, one JSON text per line."""

    # Frames queued in one turn of the event loop are written together at its end, or as
    # soon as this many are queued (see ProcessTransport).
    batch_frames = sys.maxsize

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        max_message: int = MAX_MESSAGE,
        *,
        frames: _Frames | None = None,
    ) -> None:
        self.reader = reader
        self.writer = writer
        self.max_message = max_message  # the reader was made with this limit
        self._closed = False
        self._pending: list[bytes] = []  # frames queued in this turn of the event loop
        self._pending_size = 0
        self._room = _HIGH_WATER
        # The incoming data cut into frames as it arrives; None: read from ``reader``.
        self._frames = frames
        # Called once the peer's end of our output is gone (a server's stdout read by nobody).
        self.on_output_lost: Callable[[], None] | None = None
        self.stopping = False  # told to stop (stop_reading): a server's shutdown under way

    @property
    def deliver(self) -> Callable[[bytes], None] | None:
        """Set by the session: a hook that takes each frame as it is read, on the pipe's
        callback, instead of through :meth:`receive` (no coroutine and no turn of the
        receive loop per frame). Not used by a subclass that overrides ``receive`` (to
        watch frames): it gets every one through ``receive``."""
        return self._frames.deliver if self._frames is not None else None

    @deliver.setter
    def deliver(self, hook: Callable[[bytes], None] | None) -> None:
        if self._frames is not None and type(self).receive is StreamTransport.receive:
            self._frames.deliver = hook

    def peer_behind(self) -> bool:
        """Whether the peer is not reading what we write (more than is kept for it unread)."""
        return bool(self.writer.transport.get_write_buffer_size() > _HIGH_WATER)

    async def receive(self) -> bytes | None:
        if self.peer_behind():
            # The peer is not reading what we write: read no more requests until it does,
            # or a client that only sends would grow our unread answers without bound.
            try:
                await self.writer.drain()
            except ConnectionError:
                return None
        if self._frames is not None:
            return await self._frames.receive()
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
        if self._closed or self.writer.transport.is_closing():
            raise ConnectionError("stdio transport closed")
        # Frames sent in one turn of the event loop go out in one write (one system call
        # instead of one per response when many requests are in flight).
        if not self._pending:
            asyncio.get_running_loop().call_soon(self.flush)
            # What the batch may hold before the peer is behind (the write buffer changes
            # only with our writes, or shrinks as the peer reads).
            self._room = _HIGH_WATER - self.writer.transport.get_write_buffer_size()
        self._pending.append(frame)
        self._pending_size += len(frame) + 1
        if self._pending_size > self._room:
            self.flush()
            return False
        if len(self._pending) >= self.batch_frames:
            self.flush()  # a full batch goes now: the peer starts on it while we make the rest
        return True

    async def send(self, frame: bytes, *, related: RequestId | UnsetType = UNSET, final: bool = False) -> None:
        if not self.send_now(frame):
            await self.drain()

    _plain_send = send  # see transport.plain_send

    async def drain(self) -> None:
        """Wait until the peer has read enough of what we sent (backpressure)."""
        await self.writer.drain()

    def flush(self) -> None:
        """Write the frames queued so far, in one write."""
        if self._pending and not self.writer.is_closing():
            if self._pending_size <= _JOIN_LIMIT:
                self._pending.append(b"")  # so that the join ends the last frame with its newline
                self.writer.write(b"\n".join(self._pending))
            else:
                # A large result is not copied to end it with its newline (a fresh buffer of
                # megabytes costs its page faults again): past the pipe's first write
                # what follows is only appended to the transport's buffer, no system call.
                for frame in self._pending:
                    self.writer.write(frame)
                    self.writer.write(b"\n")
        self._pending.clear()
        self._pending_size = 0

    def stop_reading(self) -> None:
        """Read no more (a server told to stop): what was read is served, and
        :meth:`receive` ends as if the peer had closed its side."""
        if self._frames is not None:
            if self._frames.pipe is not None:
                self._frames.pipe.close()
            self._frames.feed_eof()
        else:
            self.reader.feed_eof()

    def output_lost(self) -> None:
        """The peer no longer reads what we write (the pipe's connection was lost)."""
        if self.on_output_lost is not None:
            self.on_output_lost()

    async def close(self) -> None:
        if self._closed:
            return
        self.flush()
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
        out_fd = os.dup(1)
        os.dup2(2, 1)  # fd 1 (and so print) now goes to stderr
        # Then flush: on a pipe, sys.stdout holds what the module printed while it was
        # imported (block-buffered), and that belongs on stderr too, not before the first frame.
        sys.stdout.flush()
    reader = asyncio.StreamReader(limit=max_message, loop=loop)  # the writer's partner; frames read stdin
    frames = _Frames(max_message, loop)
    # The event loop can watch pipes and sockets; a regular file or /dev/null (a shell
    # redirect) it cannot, so those are read by a thread and written with plain writes.
    if _is_pipe(0):
        await loop.connect_read_pipe(lambda: _Incoming(frames), os.fdopen(0, "rb", 0))
    else:
        _read_in_thread(loop, frames, 0)
    writer: Any
    lost: list[StreamTransport] = []  # the transport, once made: told when stdout's reader is gone
    if _is_pipe(out_fd):
        transport, protocol = await loop.connect_write_pipe(lambda: _Outgoing(loop, lost), os.fdopen(out_fd, "wb", 0))
        writer = asyncio.StreamWriter(transport, protocol, reader, loop)
    else:
        writer = _BlockingWriter(out_fd)
    stdio = StreamTransport(reader, writer, max_message, frames=frames)
    lost.append(stdio)
    # Requests handed over as they are read wait while the client is not reading our
    # answers (receive() then waits for it to catch up before taking the next).
    frames.hold = stdio.peer_behind
    # Answers made while a chunk was read (on the spot, or by an eager task) go out in one
    # write as the chunk ends, not a turn of the loop later.
    frames.after_feed = stdio.flush
    return stdio


def _is_pipe(fd: int) -> bool:
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _read_in_thread(loop: asyncio.AbstractEventLoop, frames: _Frames, fd: int) -> None:
    """Feed ``frames`` from a file descriptor the event loop cannot watch."""

    def pump() -> None:
        while chunk := os.read(fd, 65536):
            loop.call_soon_threadsafe(frames.feed, chunk)
        loop.call_soon_threadsafe(frames.feed_eof)

    threading.Thread(target=pump, name="mcpgen-stdin", daemon=True).start()


class _Outgoing(asyncio.streams.FlowControlMixin):
    """A server's stdout pipe, as the writer's protocol: says when the reader is gone."""

    def __init__(self, loop: asyncio.AbstractEventLoop, owner: list[StreamTransport]) -> None:
        super().__init__(loop=loop)
        self.owner = owner

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        for transport in self.owner:
            transport.output_lost()


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

    Where the OS has process groups, the server leads a group of its own, and closing
    ends the whole group. A command is often a launcher (``npx -y pkg``, ``uv run``,
    ``sh -c``) whose child is the real server: signalling the launcher alone left that
    child running with our pipes open after the client was gone.

    Requests made in one turn of the event loop go out 32 to a write: with many calls in
    flight, written all at the end of the turn they had the server wait for the whole
    turn, then the client for the server's whole answer (the two processes took turns);
    in pieces the server works on one while the client makes the next. With 64 calls in
    flight this took the bench's raw server from 70-77k to 101-103k calls/s (handshake
    era) at the same client CPU per call; fewer than 32 per turn go out as before.
    """

    batch_frames = 32

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        stderr_task: asyncio.Task[None],
        max_message: int,
        *,
        command: str = "",
        stderr_tail: deque[str] | None = None,
        frames: _Frames | None = None,
    ) -> None:
        assert process.stdout is not None and process.stdin is not None
        # frames: the server's stdout cut into frames as it arrives (spawn); None: read
        # from the process's StreamReader like any stream.
        super().__init__(process.stdout, process.stdin, max_message, frames=frames)
        self.process = process
        self.command = command
        self.stderr_tail: deque[str] = stderr_tail if stderr_tail is not None else deque(maxlen=STDERR_TAIL)
        self._stderr_task = stderr_task
        self.group: int | None = None  # the process group the server leads, if any

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
        own_group: bool = True,
    ) -> ProcessTransport:
        """Start ``command args...``. Its stderr lines go to ``on_stderr`` when given,
        else straight to this process's stderr. ``own_group`` (POSIX): the server leads a
        process group of its own, which :meth:`close` ends whole."""
        grouped = own_group and os.name == "posix"
        full_env = {**os.environ, **env} if env is not None else None
        loop = asyncio.get_running_loop()
        frames = _Frames(max_message, loop)
        # What asyncio.create_subprocess_exec does, with stdout read by _ServerPipes.
        pipes, protocol = await loop.subprocess_exec(
            lambda: _ServerPipes(frames, max_message, loop),
            command,
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=full_env,
            cwd=cwd,
            start_new_session=grouped,
        )
        process = asyncio.subprocess.Process(pipes, protocol, loop)
        assert process.stderr is not None
        tail: deque[str] = deque(maxlen=STDERR_TAIL)
        stderr_task = asyncio.get_running_loop().create_task(
            _pump_stderr(process.stderr, on_stderr or _pass_through, tail)
        )
        import shlex  # the client side only: a server over stdio does not load it at start-up

        made = cls(
            process, stderr_task, max_message, command=shlex.join([command, *args]), stderr_tail=tail, frames=frames
        )
        if grouped:
            made.group = process.pid  # a new session's leader leads its group too
        return made

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
        """Close stdin, wait for the server to exit, then terminate, then kill; then
        what is left of its process group (SIGTERM, then SIGKILL after ``grace``)."""
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
        if self.group is not None:
            import signal  # the client side only, as shlex above

            for sig in (signal.SIGTERM, signal.SIGKILL):
                if await self._group_gone(sig, grace):
                    break
        await asyncio.wait([self._stderr_task], timeout=1)

    async def _group_gone(self, sig: int, grace: float) -> bool:
        """Send ``sig`` to what is left of the group; whether it is gone within ``grace``."""
        assert self.group is not None
        try:
            os.killpg(self.group, sig)
        except (ProcessLookupError, PermissionError):
            return True  # nobody left (or the group is no longer ours)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace
        while loop.time() < deadline:
            await asyncio.sleep(0.02)
            try:
                os.killpg(self.group, 0)
            except (ProcessLookupError, PermissionError):
                return True
        return False


class _Frames:
    """A stream (a server's stdout at the client, its stdin at the server) cut into
    newline-delimited frames as its data arrives.

    Hand-written rather than read with ``StreamReader.readuntil``: that costs a coroutine
    and a turn of the session's receive loop per frame, a tenth of a small call's CPU
    with many calls in flight. Each chunk is split at once (one ``bytes.split``); its
    frames go to ``deliver`` when the session set one, else queue for :meth:`receive`.
    Frames never overtake one another: while any wait in the queue, new ones queue too.
    A line longer than ``max_message`` is dropped as it arrives (never held in memory
    beyond the limit) and reported, in its place, as :class:`FrameTooLarge` from
    :meth:`receive`; blank lines are skipped; the last line needs no newline."""

    def __init__(self, max_message: int, loop: asyncio.AbstractEventLoop) -> None:
        self.max_message = max_message
        self.deliver: Callable[[bytes], None] | None = None
        self.pipe: asyncio.ReadTransport | None = None  # paused while too much is queued
        self._loop = loop
        self._queue: deque[bytes | FrameTooLarge] = deque()
        self._queued_size = 0
        self._paused = False
        self._waiter: asyncio.Future[None] | None = None
        self._parts: list[bytes] = []  # the line under way
        self._size = 0
        self._discarding = False  # inside a line over the limit, until its newline
        self._eof = False
        # While hold() is true, frames queue for receive() instead of going to deliver.
        self.hold: Callable[[], bool] | None = None
        self.after_feed: Callable[[], None] | None = None  # called after each chunk's frames

    def feed(self, data: bytes) -> None:
        self._cut(data)
        if self.after_feed is not None:
            self.after_feed()

    def _cut(self, data: bytes) -> None:
        if self._parts or self._discarding:
            end = data.find(b"\n")
            if end < 0:
                self._keep(data)
                return
            self._keep(data[:end])
            if self._discarding:
                self._discarding = False  # the over-long line ends here
            else:
                self._emit(b"".join(self._parts))
            self._parts.clear()
            self._size = 0
            data = data[end + 1 :]
        lines = data.split(b"\n")
        tail = lines.pop()
        limit = self.max_message
        for line in lines:
            if len(line) > limit:
                self._report_too_large()
            else:
                self._emit(line)
        if tail:
            self._keep(tail)

    def feed_eof(self) -> None:
        if self._parts and not self._discarding:
            self._emit(b"".join(self._parts))
        self._parts.clear()
        self._eof = True
        self._wake()

    def _keep(self, part: bytes) -> None:
        """Hold the start of a line until its newline comes."""
        if self._discarding:
            return
        self._size += len(part)
        if self._size > self.max_message:
            self._parts.clear()
            self._discarding = True
            self._report_too_large()
        else:
            self._parts.append(part)

    def _emit(self, frame: bytes) -> None:
        if not frame or frame.isspace():
            return
        deliver = self.deliver
        if deliver is not None and not self._queue and (self.hold is None or not self.hold()):
            deliver(frame)
            return
        self._enqueue(frame, len(frame))

    def _report_too_large(self) -> None:
        self._enqueue(FrameTooLarge(self.max_message), 0)

    def _enqueue(self, item: bytes | FrameTooLarge, size: int) -> None:
        self._queue.append(item)
        self._queued_size += size
        if not self._paused and self.pipe is not None and self._queued_size > 2 * self.max_message:
            self.pipe.pause_reading()  # as a StreamReader does: the reader is far behind
            self._paused = True
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def receive(self) -> bytes | None:
        """The next queued frame (raising FrameTooLarge where a line was dropped), or None
        at the end of the stream."""
        while not self._queue:
            if self._eof:
                return None
            self._waiter = self._loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        item = self._queue.popleft()
        if isinstance(item, FrameTooLarge):
            raise item
        self._queued_size -= len(item)
        if self._paused and self.pipe is not None and self._queued_size <= self.max_message:
            self._paused = False
            self.pipe.resume_reading()
        return item


class _Incoming(asyncio.Protocol):
    """A server's stdin, handed to :class:`_Frames` as it arrives."""

    def __init__(self, frames: _Frames) -> None:
        self.frames = frames

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.frames.pipe = transport if isinstance(transport, asyncio.ReadTransport) else None

    def data_received(self, data: bytes) -> None:
        self.frames.feed(data)

    def eof_received(self) -> bool | None:
        self.frames.feed_eof()
        return None  # the pipe closes

    def connection_lost(self, exc: Exception | None) -> None:
        self.frames.feed_eof()  # again after eof_received: nothing more to do


class _ServerPipes(asyncio.subprocess.SubprocessStreamProtocol):
    """A server subprocess's pipes as ``asyncio.create_subprocess_exec`` makes them (stdin
    written through a StreamWriter, stderr read through a StreamReader), except stdout,
    whose data goes to :class:`_Frames` as it arrives."""

    def __init__(self, frames: _Frames, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=limit, loop=loop)
        self.frames = frames

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        # asyncio's SubprocessTransport, or uvloop's (no subclass of it) under uvicorn.
        pipes = getattr(transport, "get_pipe_transport", None)
        pipe = pipes(1) if pipes is not None else None
        self.frames.pipe = pipe if callable(getattr(pipe, "pause_reading", None)) else None

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        if fd == 1:
            self.frames.feed(data if isinstance(data, bytes) else data.encode())
        else:
            super().pipe_data_received(fd, data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1:
            self.frames.feed_eof()
        super().pipe_connection_lost(fd, exc)


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
