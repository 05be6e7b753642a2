"""Large frames over a stdio pipe: a turn's frames arrive whole and in order, and a frame
of megabytes is written without a joined copy of itself (a fresh buffer of that size costs
its page faults again; the pipe takes it in pieces anyway)."""

from __future__ import annotations

import asyncio
import os
import threading
import tracemalloc

import pytest

from mcpgen.runtime.transports.stdio import StreamTransport

pytestmark = pytest.mark.anyio


def drain(fd: int, into: bytearray) -> None:
    while chunk := os.read(fd, 1 << 16):
        into += chunk


async def test_a_turn_of_large_and_small_frames_arrives_whole_and_in_order() -> None:
    loop = asyncio.get_running_loop()
    read_fd, write_fd = os.pipe()
    received = bytearray()
    reader = threading.Thread(target=drain, args=(read_fd, received), daemon=True)
    reader.start()
    pipe, protocol = await loop.connect_write_pipe(
        lambda: asyncio.streams.FlowControlMixin(loop=loop), os.fdopen(write_fd, "wb", 0)
    )
    stdio = StreamTransport(asyncio.StreamReader(), asyncio.StreamWriter(pipe, protocol, None, loop))
    large = b'{"id":1,"result":"' + b"a" * (4 << 20) + b'"}'
    frames = [b'{"id":0}', large, b'{"id":2}', b'{"id":3,"result":"' + b"b" * (300 << 10) + b'"}']
    tracemalloc.start()
    try:
        for frame in frames:
            stdio.send_now(frame)
        await asyncio.sleep(0)  # the turn ends: the batch is written
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    await stdio.drain()
    while pipe.get_write_buffer_size():
        await asyncio.sleep(0.01)
    pipe.close()
    await asyncio.sleep(0)
    reader.join(10)
    os.close(read_fd)
    assert bytes(received).split(b"\n") == [*frames, b""]
    # What the pipe did not take at once waits in the transport's buffer (at most the
    # frames' size); a joined copy of the batch besides would take the peak past 2x.
    assert peak < 1.5 * sum(map(len, frames)), peak / sum(map(len, frames))
