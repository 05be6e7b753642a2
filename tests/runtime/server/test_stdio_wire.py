"""The server over stdio, frame by frame: JSON-RPC errors, lifecycle, concurrency,
cancellation and shutdown, against a real subprocess."""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.wire import RawPeer

pytestmark = pytest.mark.anyio


@pytest.fixture
async def peer() -> AsyncIterator[RawPeer]:
    peer = await RawPeer.start()
    try:
        yield peer
    finally:
        await peer.close()


@pytest.fixture
async def ready(peer: RawPeer) -> RawPeer:
    reply = await peer.initialize()
    assert "result" in reply
    return peer


async def test_initialize_negotiates_version(peer: RawPeer) -> None:
    reply = await peer.initialize("2025-06-18")
    result = reply["result"]
    assert result["protocolVersion"] == "2025-06-18"
    assert result["serverInfo"] == {"name": "demo", "version": "1.2.3"}
    assert result["instructions"] == "A server for tests."
    assert set(result["capabilities"]) >= {"tools", "resources", "prompts", "logging", "completions"}


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
async def test_every_supported_version_is_echoed(peer: RawPeer, version: str) -> None:
    assert (await peer.initialize(version))["result"]["protocolVersion"] == version


async def test_unknown_version_gets_the_latest(peer: RawPeer) -> None:
    assert (await peer.initialize("1999-01-01"))["result"]["protocolVersion"] == "2025-11-25"


async def test_requests_before_initialize_are_refused_but_ping_works(peer: RawPeer) -> None:
    assert (await peer.request("ping"))["result"] == {}
    reply = await peer.request("tools/list")
    assert reply["error"]["code"] == -32600
    assert "initialize" in reply["error"]["message"]


async def test_second_initialize_is_refused(ready: RawPeer) -> None:
    reply = await ready.request(
        "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}
    )
    assert reply["error"]["code"] == -32600


@pytest.mark.parametrize(
    ("frame", "code", "has_id"),
    [
        (b"{not json", -32700, False),
        (b"\xff\xfe\n", -32700, False),
        (b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', -32600, False),
        (b"42", -32600, False),
        (b'{"jsonrpc":"1.0","id":7,"method":"ping"}', -32600, True),
        (b'{"id":7,"method":"ping"}', -32600, True),
        (b'{"jsonrpc":"2.0","id":null,"method":"ping"}', -32600, False),
        (b'{"jsonrpc":"2.0","id":true,"method":"ping"}', -32600, False),
        (b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', -32600, False),
        (b'{"jsonrpc":"2.0","id":7,"method":3}', -32600, True),
        (b'{"jsonrpc":"2.0","id":7}', -32600, True),
        (b'{"jsonrpc":"2.0","id":7,"method":"no/such"}', -32601, True),
        (b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":5}}', -32602, True),
        (b'{"jsonrpc":"2.0","id":7,"method":"tools/call"}', -32602, True),
        (b'{"jsonrpc":"2.0","id":"s","method":"resources/read","params":{"uri":"file:///none"}}', -32002, True),
    ],
)
async def test_bad_frames_get_the_right_error_and_the_session_goes_on(
    ready: RawPeer, frame: bytes, code: int, has_id: bool
) -> None:
    await ready.send_raw(frame.rstrip(b"\n") + b"\n")
    reply = await ready.recv()
    assert reply["jsonrpc"] == "2.0"
    assert reply["error"]["code"] == code
    assert "result" not in reply
    assert ("id" in reply) == has_id
    if has_id:
        assert reply["id"] == json.loads(frame)["id"]
    assert (await ready.request("ping"))["result"] == {}


async def test_invalid_params_name_the_field(ready: RawPeer) -> None:
    reply = await ready.request("tools/call", {"name": 5})
    assert "$.name" in reply["error"]["message"]


async def test_notifications_and_stray_responses_get_no_reply(ready: RawPeer) -> None:
    await ready.notify("notifications/no-such-thing", {"x": 1})
    await ready.notify("notifications/progress", {"progressToken": "nobody", "progress": 1})
    await ready.send({"jsonrpc": "2.0", "id": 999, "result": {}})
    await ready.send({"jsonrpc": "2.0", "id": 998, "error": {"code": 1, "message": "x"}})
    await ready.notify("notifications/cancelled", {"requestId": 12345})
    assert await ready.nothing_within(0.3)
    assert (await ready.request("ping"))["result"] == {}


async def test_tool_errors_and_crashes(ready: RawPeer) -> None:
    failed = await ready.request("tools/call", {"name": "fail", "arguments": {"kind": "tool"}})
    assert failed["result"]["isError"] is True
    assert failed["result"]["content"][0]["text"] == "it went wrong on purpose"
    crash = await ready.request("tools/call", {"name": "fail", "arguments": {"kind": "crash"}})
    assert crash["result"]["isError"] is True
    assert "Traceback" not in json.dumps(crash)
    unknown = await ready.request("tools/call", {"name": "nope"})
    assert unknown["error"]["code"] == -32602
    bad_args = await ready.request("tools/call", {"name": "add", "arguments": {"a": "x", "b": 1}})
    assert bad_args["result"]["isError"] is True
    assert "a" in bad_args["result"]["content"][0]["text"]


async def test_stray_print_goes_to_stderr(ready: RawPeer) -> None:
    reply = await ready.request("tools/call", {"name": "noisy"})
    assert reply["result"]["content"] == [{"type": "text", "text": "done"}]
    assert (await ready.request("ping"))["result"] == {}
    await asyncio.sleep(0.1)
    assert any("this line must go to stderr" in line for line in ready.stderr)


async def test_slow_handler_does_not_block_others(ready: RawPeer) -> None:
    await ready.send(
        {
            "jsonrpc": "2.0",
            "id": "slow",
            "method": "tools/call",
            "params": {"name": "slow", "arguments": {"seconds": 1.0}},
        }
    )
    assert (await ready.request("ping", timeout=0.5))["result"] == {}
    reply = await ready.recv(3)
    assert reply["id"] == "slow" and reply["result"]["content"][0]["text"] == "slept 1.0"


async def test_cancelled_request_gets_no_response(ready: RawPeer) -> None:
    await ready.send(
        {"jsonrpc": "2.0", "id": "c1", "method": "tools/call", "params": {"name": "slow", "arguments": {"seconds": 5}}}
    )
    await asyncio.sleep(0.2)
    await ready.notify("notifications/cancelled", {"requestId": "c1", "reason": "test"})
    assert await ready.nothing_within(0.5)
    assert (await ready.request("ping"))["result"] == {}
    assert any("slow cancelled c1" in line for line in ready.stderr)


async def test_duplicate_in_flight_id_is_refused(ready: RawPeer) -> None:
    call = {
        "jsonrpc": "2.0",
        "id": "d",
        "method": "tools/call",
        "params": {"name": "slow", "arguments": {"seconds": 0.5}},
    }
    await ready.send(call)
    await ready.send(call)
    first = await ready.recv()
    assert first["id"] == "d" and first["error"]["code"] == -32600
    second = await ready.recv()
    assert second["id"] == "d" and "result" in second


async def test_progress_and_logs_before_the_result(ready: RawPeer) -> None:
    await ready.request("logging/setLevel", {"level": "info"})
    await ready.send(
        {
            "jsonrpc": "2.0",
            "id": 50,
            "method": "tools/call",
            "params": {"name": "count", "arguments": {"to": 3}, "_meta": {"progressToken": "tok"}},
        }
    )
    frames = [await ready.recv() for _ in range(7)]
    progress = [f["params"] for f in frames if f.get("method") == "notifications/progress"]
    logs = [f["params"] for f in frames if f.get("method") == "notifications/message"]
    assert [p["progress"] for p in progress] == [1, 2, 3]
    assert all(p["progressToken"] == "tok" and p["total"] == 3 for p in progress)
    assert [entry["data"] for entry in logs] == ["counted 1", "counted 2", "counted 3"]
    assert frames[-1]["id"] == 50 and frames[-1]["result"]["content"][0]["text"] == "counted to 3"


async def test_log_level_filters(ready: RawPeer) -> None:
    await ready.request("logging/setLevel", {"level": "error"})
    reply = await ready.request("tools/call", {"name": "count", "arguments": {"to": 2}})
    assert reply["result"]["content"][0]["text"] == "counted to 2"  # no log frames came first
    bad = await ready.request("logging/setLevel", {"level": "loud"})
    assert bad["error"]["code"] == -32602


async def test_server_to_client_request_needs_the_client_capability(ready: RawPeer) -> None:
    reply = await ready.request("tools/call", {"name": "ask_model", "arguments": {"question": "hi"}})
    assert reply["result"]["isError"] is True
    assert "sampling" in reply["result"]["content"][0]["text"]


async def test_sampling_round_trip_over_the_wire(peer: RawPeer) -> None:
    await peer.initialize(capabilities={"sampling": {}})
    await peer.send(
        {
            "jsonrpc": "2.0",
            "id": 60,
            "method": "tools/call",
            "params": {"name": "ask_model", "arguments": {"question": "2+2?"}},
        }
    )
    request = await peer.recv()
    assert request["method"] == "sampling/createMessage"
    assert request["params"]["messages"][0]["content"] == {"type": "text", "text": "2+2?"}
    await peer.send(
        {
            "jsonrpc": "2.0",
            "id": request["id"],
            "result": {"role": "assistant", "content": {"type": "text", "text": "4"}, "model": "m"},
        }
    )
    reply = await peer.recv()
    assert reply["id"] == 60 and reply["result"]["content"][0]["text"] == "4"


async def test_stdin_eof_exits_zero(peer: RawPeer) -> None:
    await peer.initialize()
    await peer.send(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "slow", "arguments": {"seconds": 0.5}}}
    )
    await asyncio.sleep(0.2)
    assert peer.process.stdin is not None
    peer.process.stdin.close()
    # The call in flight finishes within the grace and is answered (issue 37.8: a call cut
    # at the grace's end is answered with an error, and the exit is 1: test_stdio_shutdown.py).
    assert (await peer.recv())["result"]["content"][0]["text"]  # answered, after stdin closed
    assert await peer.close() == 0


async def test_sigterm_exits_zero() -> None:
    peer = await RawPeer.start()
    await peer.initialize()
    peer.process.send_signal(signal.SIGTERM)
    assert await asyncio.wait_for(peer.process.wait(), 5) == 0
    await peer.close()


async def test_redirected_stdin_and_stdout(tmp_path: Path) -> None:
    """`server < requests.jsonl > replies.jsonl` (files, not pipes) and `< /dev/null` work."""
    import subprocess
    import sys

    from tests.wire import DEMO

    requests = tmp_path / "in.jsonl"
    requests.write_text(
        "\n".join(
            json.dumps(m)
            for m in [
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "clientInfo": {"name": "f", "version": "1"},
                    },
                },
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": "file"}},
                },
            ]
        )
        + "\n"
    )
    replies = tmp_path / "out.jsonl"
    with requests.open("rb") as stdin, replies.open("wb") as stdout:
        assert subprocess.run([sys.executable, str(DEMO)], stdin=stdin, stdout=stdout, timeout=20).returncode == 0
    answers = [json.loads(line) for line in replies.read_text().splitlines()]
    assert answers[1] == {"id": 2, "result": {"content": [{"type": "text", "text": "file"}]}, "jsonrpc": "2.0"}
    with open("/dev/null", "rb") as nothing:
        assert (
            subprocess.run([sys.executable, str(DEMO)], stdin=nothing, capture_output=True, timeout=20).returncode == 0
        )
