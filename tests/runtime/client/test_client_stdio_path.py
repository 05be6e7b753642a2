"""The stdio client's per-call path: a server's stdout cut into frames as it arrives
(``stdio._Frames``, no StreamReader and no coroutine per frame), requests handed to the
transport's ``send_now`` by the engine itself, and the stateless era's ``_meta`` built once
and shared. Each keeps what the slower path did: every frame in order however the bytes
arrive, an over-long line refused without being held, backpressure both ways, every
request seen by a transport that watches them, and a ``_meta`` that follows the client's
settings."""

from __future__ import annotations

import asyncio
import os
import random
import sys
from typing import Any

import msgspec
import pytest

from mcpgen import Client, Server
from mcpgen.runtime.client.stateless import Envelope
from mcpgen.runtime.jsonrpc.framing import FrameTooLarge
from mcpgen.runtime.shared.handshake import HandshakeSession
from mcpgen.runtime.transports.stdio import _HIGH_WATER, ProcessTransport, StreamTransport, _Frames

pytestmark = pytest.mark.anyio


async def drain(frames: _Frames) -> list[bytes | str]:
    """Everything ``receive`` gives until the end (a dropped line as "too large")."""
    out: list[bytes | str] = []
    while True:
        try:
            frame = await frames.receive()
        except FrameTooLarge:
            out.append("too large")
            continue
        if frame is None:
            return out
        out.append(frame)


async def test_frames_come_out_whole_and_in_order_however_the_bytes_are_cut() -> None:
    sent = [b'{"jsonrpc":"2.0","id":%d,"result":{"n":"%s"}}' % (i, b"x" * (i * 37 % 300)) for i in range(200)]
    stream = b"".join(frame + (b"\r\n" if i % 7 == 0 else b"\n") for i, frame in enumerate(sent))
    stream = stream.replace(sent[50] + b"\n", sent[50] + b"\n\n   \n")  # blank lines are skipped
    stream += b'{"jsonrpc":"2.0","id":"last"}'  # the last line needs no newline
    rng = random.Random(7)
    for _ in range(20):
        frames = _Frames(1 << 20, asyncio.get_running_loop())
        at = 0
        while at < len(stream):
            size = rng.choice((1, 2, 3, 50, 700, 5000))
            frames.feed(stream[at : at + size])
            at += size
        frames.feed_eof()
        got = await drain(frames)
        assert [msgspec.json.decode(f) for f in got] == [
            *(msgspec.json.decode(f) for f in sent),
            {"jsonrpc": "2.0", "id": "last"},
        ]


async def test_a_line_over_the_limit_is_dropped_as_it_arrives_and_reported_in_its_place() -> None:
    frames = _Frames(100, asyncio.get_running_loop())
    frames.feed(b'{"id":1}\n' + b"y" * 60)
    for _ in range(50):  # 3,000 more bytes of the same line, in pieces
        frames.feed(b"y" * 60)
        assert sum(map(len, frames._parts)) <= 100  # never held beyond the limit
    frames.feed(b'y\n{"id":2}\n' + b"z" * 101 + b'\n{"id":3}\n' + b"w" * 100 + b"\n")
    frames.feed_eof()
    assert await drain(frames) == [b'{"id":1}', "too large", b'{"id":2}', "too large", b'{"id":3}', b"w" * 100]


async def test_frames_go_to_the_hook_once_set_without_overtaking_queued_ones() -> None:
    frames = _Frames(1000, asyncio.get_running_loop())
    seen: list[bytes] = []
    frames.feed(b'{"id":1}\n')  # before anyone took the hook: queued
    frames.deliver = seen.append
    frames.feed(b'{"id":2}\n')
    assert seen == []  # behind the queued one
    assert await frames.receive() == b'{"id":1}'
    assert await frames.receive() == b'{"id":2}'
    frames.feed(b'{"id":3}\n{"id":4}\n')
    assert seen == [b'{"id":3}', b'{"id":4}']  # the queue is empty: straight to the hook
    frames.feed_eof()
    assert await frames.receive() is None


class FakePipe:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def pause_reading(self) -> None:
        self.calls.append("pause")

    def resume_reading(self) -> None:
        self.calls.append("resume")


async def test_reading_pauses_while_the_queue_is_far_behind() -> None:
    frames = _Frames(100, asyncio.get_running_loop())
    pipe = FakePipe()
    frames.pipe = pipe  # type: ignore[assignment]
    for _ in range(30):
        frames.feed(b"f" * 10 + b"\n")
    assert pipe.calls == ["pause"]  # 330 bytes queued: past twice the limit
    for _ in range(20):
        await frames.receive()
    assert pipe.calls == ["pause", "resume"]  # 110 left: within the limit again


SERVER = r"""
import sys, time
out = sys.stdout.buffer
out.write(b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"a"}}\n')
out.write(b'{"jsonrpc":"2.0","id":9,' + b' ' * 3000 + b'"result":{}}\n')  # over the limit
out.flush()
frame = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"b"}}'
for i in range(0, len(frame), 10):  # one frame in many writes
    out.write(frame[i : i + 10]); out.flush(); time.sleep(0.002)
out.write(b'\n'); out.flush()
"""


async def test_a_server_process_frames_through_receive_and_the_hook() -> None:
    for hooked in (False, True):
        transport = await ProcessTransport.spawn(sys.executable, ["-c", SERVER], max_message=1000)
        hooked_frames: list[bytes] = []
        if hooked:
            transport.deliver = hooked_frames.append
        got = await asyncio.wait_for(drain(transport._frames), 20)  # type: ignore[arg-type]
        await transport.close()
        frames = hooked_frames + [f for f in got if isinstance(f, bytes)]
        assert [msgspec.json.decode(f)["params"]["data"] for f in frames] == ["a", "b"]
        assert got.count("too large") == 1
        assert transport.process.returncode == 0


class WatchingProcess(ProcessTransport):
    """Overrides receive: must get every frame through it, not through the hook."""

    seen = 0

    async def receive(self) -> bytes | None:
        frame = await super().receive()
        self.seen += frame is not None
        return frame


async def test_a_subclass_that_watches_frames_gets_every_one_through_receive() -> None:
    transport = await WatchingProcess.spawn(sys.executable, ["-c", SERVER], max_message=1000)
    transport.deliver = lambda frame: pytest.fail("the hook took a frame")
    assert transport.deliver is None
    dropped = 0
    while True:
        try:
            if await asyncio.wait_for(transport.receive(), 20) is None:
                break
        except FrameTooLarge:
            dropped += 1
    await transport.close()
    assert (transport.seen, dropped) == (2, 1)


class _Sink(HandshakeSession):
    role = "client"


async def test_a_request_waits_for_a_peer_that_is_not_reading_then_goes_out_whole() -> None:
    loop = asyncio.get_running_loop()
    read_fd, write_fd = os.pipe()
    pipe, protocol = await loop.connect_write_pipe(
        lambda: asyncio.streams.FlowControlMixin(loop=loop), os.fdopen(write_fd, "wb", 0)
    )
    writer = asyncio.StreamWriter(pipe, protocol, None, loop)
    stdio = StreamTransport(asyncio.StreamReader(), writer)
    drains: list[int] = []
    plain_drain = stdio.drain

    async def drain() -> None:
        drains.append(writer.transport.get_write_buffer_size())
        await plain_drain()

    stdio.drain = drain  # type: ignore[method-assign]  # before the session reads what the transport offers
    session = _Sink(stdio, None, request_timeout=None)
    assert session._send_now is not None  # the engine queues requests itself
    big = "x" * (_HIGH_WATER // 3)
    calls = [asyncio.ensure_future(session.send_request("ping", {"big": big}, dict)) for _ in range(8)]
    await asyncio.sleep(0.05)
    assert drains and min(drains) > _HIGH_WATER // 2  # callers past the high-water mark wait for the reader
    assert not any(call.done() for call in calls)
    received = b""
    while received.count(b"\n") < len(calls):  # the peer catches up: every request arrives whole
        received += await loop.run_in_executor(None, os.read, read_fd, 1 << 20)
    assert [msgspec.json.decode(line)["id"] for line in received.splitlines()] == list(range(1, 9))
    for call in calls:
        call.cancel()
    await asyncio.gather(*calls, return_exceptions=True)
    pipe.close()
    os.close(read_fd)


def test_a_shared_meta_follows_the_envelope() -> None:
    envelope = Envelope("2026-07-28", {"sampling": {}}, {"name": "c", "version": "1"})
    first = envelope.meta(None)
    assert envelope.meta({}) is first and envelope.meta(None) is first  # built once
    envelope.log_level = "error"
    second = envelope.meta(None)
    assert second["io.modelcontextprotocol/logLevel"] == "error" and "io.modelcontextprotocol/logLevel" not in first
    envelope.version = "2099-01-01"
    assert envelope.meta(None)["io.modelcontextprotocol/protocolVersion"] == "2099-01-01"
    own = envelope.meta({"progressToken": 3})
    assert own["progressToken"] == 3 and "progressToken" not in envelope.meta(None)


async def test_each_stateless_request_carries_the_meta_of_the_moment() -> None:
    server = Server("s")

    @server.tool()
    async def echo(text: str) -> str:
        return text

    async with Client(server, era="stateless") as client:
        sent: list[dict[str, Any]] = []
        transport: Any = client.session.transport
        inner = transport.send

        async def spy(frame: bytes, **kw: Any) -> None:
            sent.append(msgspec.json.decode(frame))
            await inner(frame, **kw)

        transport.send = spy
        await client.call_tool("echo", {"text": "a"}, on_progress=lambda *_: None)
        await client.call_tool("echo", {"text": "b"})
        await client.set_logging_level("warning")
        await client.call_tool("echo", {"text": "c"})
        metas = [frame["params"]["_meta"] for frame in sent if frame.get("method") == "tools/call"]
        assert len(metas) == 3
        assert "progressToken" in metas[0] and "progressToken" not in metas[1]
        assert "io.modelcontextprotocol/logLevel" not in metas[1]
        assert metas[2]["io.modelcontextprotocol/logLevel"] == "warning"


async def test_a_tools_call_result_is_read_once_and_its_kind_still_decides() -> None:
    """StatelessCallToolResult decodes resultType with the rest (one decode of the usual
    result): an InputRequiredResult that happens to carry content is still answered, never
    taken for the result; what the caller gets encodes as the server sent it."""
    from mcpgen.generated import ElicitResult
    from mcpgen.runtime.jsonrpc.framing import encode
    from mcpgen.runtime.jsonrpc.transport import Transport, memory_pair

    ours, theirs = memory_pair()
    asked: list[str] = []

    async def peer() -> None:
        while (frame := await theirs.receive()) is not None:
            msg = msgspec.json.decode(frame)
            if "id" not in msg:
                continue
            params = msg.get("params") or {}
            result: dict[str, Any]
            if msg["method"] == "server/discover":
                result = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}, "resultType": "complete"}
            elif "inputResponses" not in params:
                result = {
                    "resultType": "input_required",
                    "content": [{"type": "text", "text": "not yet"}],
                    "inputRequests": {
                        "who": {
                            "method": "elicitation/create",
                            "params": {"message": "name?", "requestedSchema": {"type": "object", "properties": {}}},
                        }
                    },
                    "requestState": "s1",
                }
            else:
                answer = params["inputResponses"]["who"]
                result = {"content": [{"type": "text", "text": f"{answer['action']} {params['requestState']}"}]}
                if msg["id"] % 2:
                    result["resultType"] = "complete"  # with it or without (an older server): complete
            await theirs.send(encode({"jsonrpc": "2.0", "id": msg["id"], "result": result}))

    async def elicit(params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept")

    async def connect() -> Transport:
        return ours

    serving = asyncio.ensure_future(peer())
    async with Client(connect=connect, era="stateless", elicitation=elicit) as client:
        for _ in range(2):
            result = await client.call_tool("echo", {"text": "x"})
            assert result.content[0].text == "accept s1"  # type: ignore[union-attr]
            # isError absent on the wire: False for the reader (absent means false)
            assert msgspec.to_builtins(result) == {"content": [{"type": "text", "text": "accept s1"}], "isError": False}
    assert asked == ["name?", "name?"]
    serving.cancel()


def readable_lines(fd: int) -> list[bytes]:
    try:
        return os.read(fd, 1 << 16).splitlines()
    except BlockingIOError:
        return []


async def test_a_client_writes_a_full_batch_of_requests_before_the_turn_ends() -> None:
    """The stdio client writes requests 32 to a write (the server starts on them while the
    client makes the rest); a server's stream keeps everything of a turn for one write."""
    loop = asyncio.get_running_loop()
    for cls, first in ((ProcessTransport, 32), (StreamTransport, 0)):
        read_fd, write_fd = os.pipe()
        os.set_blocking(read_fd, False)
        pipe, protocol = await loop.connect_write_pipe(
            lambda: asyncio.streams.FlowControlMixin(loop=loop), os.fdopen(write_fd, "wb", 0)
        )
        stdio = StreamTransport(asyncio.StreamReader(), asyncio.StreamWriter(pipe, protocol, None, loop))
        stdio.batch_frames = cls.batch_frames
        for i in range(40):
            assert stdio.send_now(b'{"id":%d}' % i)

        assert len(readable_lines(read_fd)) == first  # within the turn
        await asyncio.sleep(0)
        assert len(readable_lines(read_fd)) == 40 - first  # the rest, at its end
        pipe.close()
        os.close(read_fd)


def test_only_a_plain_send_lets_the_engine_queue_requests_itself() -> None:
    from mcpgen.runtime.jsonrpc.transport import memory_pair, plain_send

    class Watching(StreamTransport):
        async def send(self, frame: bytes, **options: Any) -> None:
            await super().send(frame, **options)

    class Other:  # no send_now at all
        async def send(self, frame: bytes, **options: Any) -> None: ...

    assert plain_send(memory_pair()[0]) and plain_send(StreamTransport.__new__(StreamTransport))
    assert not plain_send(Watching.__new__(Watching)) and not plain_send(Other()) and not plain_send(object())
