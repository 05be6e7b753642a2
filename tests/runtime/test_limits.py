"""Limits: message size, nesting depth, handler time, concurrent handlers (backpressure)."""

from __future__ import annotations

import pytest

from tests.wire import RawPeer

pytestmark = pytest.mark.anyio


async def start(*args: str) -> RawPeer:
    peer = await RawPeer.start(*args)
    assert "result" in await peer.initialize()
    return peer


async def test_over_long_message_is_refused_and_the_session_goes_on() -> None:
    peer = await start("--max-message", "4096")
    try:
        big = (
            b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"'
            + b"x" * 20000
            + b'"}}}\n'
        )
        await peer.send_raw(big)
        reply = await peer.recv()
        assert reply["error"]["code"] == -32600 and "4096 bytes" in reply["error"]["message"]
        assert "id" not in reply
        small = await peer.request("tools/call", {"name": "echo", "arguments": {"text": "y" * 1000}})
        assert small["result"]["content"][0]["text"] == "y" * 1000
    finally:
        assert await peer.close() == 0


async def test_deep_nesting_is_an_error_not_a_crash() -> None:
    peer = await start()
    try:
        deep = b"[" * 100_000 + b"]" * 100_000
        await peer.send_raw(b'{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":' + deep + b"}}\n")
        reply = await peer.recv()
        assert reply["error"]["code"] in (-32600, -32602)
        await peer.send_raw(deep + b"\n")
        assert (await peer.recv())["error"]["code"] in (-32600, -32700)
        assert (await peer.request("ping"))["result"] == {}
    finally:
        assert await peer.close() == 0


async def test_handler_timeout_answers_internal_error() -> None:
    peer = await start("--handler-timeout", "0.3")
    try:
        reply = await peer.request("tools/call", {"name": "slow", "arguments": {"seconds": 30}}, timeout=5)
        assert reply["error"]["code"] == -32603
        assert "0.3 s" in reply["error"]["message"]
        assert (await peer.request("ping"))["result"] == {}
    finally:
        assert await peer.close() == 0


async def test_concurrent_handlers_are_bounded() -> None:
    peer = await start("--max-concurrency", "4")
    try:
        for i in range(20):
            await peer.send(
                {
                    "jsonrpc": "2.0",
                    "id": f"b{i}",
                    "method": "tools/call",
                    "params": {"name": "busy", "arguments": {"seconds": 0.1}},
                }
            )
        replies = [await peer.recv(10) for _ in range(20)]
        assert sorted(r["id"] for r in replies) == sorted(f"b{i}" for i in range(20))
        assert all("result" in r for r in replies)
        most = await peer.request("tools/call", {"name": "max_busy"})
        assert 1 <= most["result"]["structuredContent"]["result"] <= 4
    finally:
        assert await peer.close() == 0


async def test_requests_beyond_the_queue_are_refused_as_busy() -> None:
    peer = await start("--max-concurrency", "2")  # 2 run, 8 wait, the rest are refused
    try:
        for i in range(14):
            await peer.send(
                {
                    "jsonrpc": "2.0",
                    "id": i,
                    "method": "tools/call",
                    "params": {"name": "busy", "arguments": {"seconds": 0.2}},
                }
            )
        replies = {r["id"]: r for r in [await peer.recv(10) for _ in range(14)]}
        busy = sorted(i for i, r in replies.items() if r.get("error", {}).get("code") == -32000)
        assert busy == [10, 11, 12, 13]
        assert all("result" in replies[i] for i in range(10))
        assert (await peer.request("ping"))["result"] == {}
    finally:
        assert await peer.close() == 0
