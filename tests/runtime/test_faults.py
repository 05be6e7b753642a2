"""Fault tests with real processes over loopback: a client or a server killed mid-call, an
HTTP stream dropped mid-response, a handler that never returns, and handlers that
misbehave while other calls are in flight. Every wait is bounded."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from msgspec import UNSET, UnsetType

from mcpgen import Client, McpError
from mcpgen.generated import CallToolResult, TextContent
from mcpgen.runtime.errors import INTERNAL_ERROR, ConnectionClosed, RequestTimeout
from mcpgen.runtime.jsonrpc.framing import RequestId
from mcpgen.runtime.jsonrpc.transport import Transport
from mcpgen.runtime.transports.http_client import HttpTransport
from mcpgen.runtime.transports.stdio import ProcessTransport
from tests.http_server import free_port, wait_until_up
from tests.paths import SERVERS
from tests.wire import DEMO, RawPeer

pytestmark = pytest.mark.anyio
FAULTY = SERVERS / "faulty.py"
LOAD_SERVER = SERVERS / "load_server.py"
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}
POST_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


# ---------------------------------------------------------------- helpers


async def eventually(check: Callable[[], bool], timeout: float, what: str) -> float:
    """Wait until ``check()`` holds; the seconds it took. Fails after ``timeout``."""
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > timeout:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.02)
    return time.monotonic() - started


@contextlib.contextmanager
def http_server(script: Path, log: Path, *args: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``script --http PORT`` under uvicorn, its stderr going to ``log`` (a pipe nobody
    reads could fill up and stall the server)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with log.open("ab") as err:
        process = subprocess.Popen(
            [sys.executable, str(script), "--http", str(port), *args], stdout=subprocess.DEVNULL, stderr=err
        )
    try:
        wait_until_up(url, process)
        yield url, process
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def frame_record(frame: bytes) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(frame)
    return data


class RecordingHttp(HttpTransport):
    """The HTTP client transport, keeping every frame sent and received and every resume."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.sent: list[dict[str, Any]] = []
        self.received: list[dict[str, Any]] = []
        self.resumed_from: list[str | None] = []

    async def send(self, frame: bytes, *, related: RequestId | UnsetType = UNSET, final: bool = False) -> None:
        self.sent.append(frame_record(frame))
        await super().send(frame, related=related, final=final)

    async def receive(self) -> bytes | None:
        frame = await super().receive()
        if frame is not None:
            self.received.append(frame_record(frame))
        return frame

    async def _get_stream(self, last_event_id: str | None) -> httpx.Response | None:
        self.resumed_from.append(last_event_id)
        return await super()._get_stream(last_event_id)


class RecordingProcess(ProcessTransport):
    """The stdio client transport, keeping every frame sent and received."""

    sent: list[dict[str, Any]]
    received: list[dict[str, Any]]

    async def send(self, frame: bytes, *, related: RequestId | UnsetType = UNSET, final: bool = False) -> None:
        self.sent.append(frame_record(frame))
        await super().send(frame, related=related, final=final)

    async def receive(self) -> bytes | None:
        frame = await super().receive()
        if frame is not None:
            self.received.append(frame_record(frame))
        return frame


def recording_http_client(url: str, **options: Any) -> tuple[Client, Callable[[], RecordingHttp]]:
    made: list[RecordingHttp] = []

    async def connect() -> Transport:
        made.append(RecordingHttp(url))
        return made[-1]

    return Client(connect=connect, **options), lambda: made[-1]


def recording_stdio_client(script: Path, stderr: list[str]) -> tuple[Client, Callable[[], RecordingProcess]]:
    made: list[RecordingProcess] = []

    async def connect() -> Transport:
        transport = await RecordingProcess.spawn(sys.executable, [str(script)], on_stderr=stderr.append)
        assert isinstance(transport, RecordingProcess)
        transport.sent, transport.received = [], []
        made.append(transport)
        return transport

    return Client(connect=connect), lambda: made[-1]


def text(result: CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


def sse_events(body: str) -> list[dict[str, str]]:
    events = []
    for block in body.strip().split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.split("\n"):
            if line and not line.startswith(":"):
                name, _, value = line.partition(":")
                fields[name] = value[1:] if value.startswith(" ") else value
        if fields:
            events.append(fields)
    return events


# ---------------------------------------------------------------- 4. the client dies mid-call


async def test_client_pipes_closed_mid_call_cancel_the_handler_and_the_server_exits() -> None:
    peer = await RawPeer.start()
    try:
        assert "result" in await peer.initialize()
        await peer.send(
            {
                "jsonrpc": "2.0",
                "id": "victim",
                "method": "tools/call",
                "params": {"name": "slow", "arguments": {"seconds": 30}},
            }
        )
        assert (await peer.request("ping"))["result"] == {}  # the slow handler is running by now
        # The client "dies": both of its pipe ends close at once, without a goodbye.
        assert peer.process.stdin is not None
        peer.process.stdin.transport.abort()
        peer.process._transport.get_pipe_transport(1).close()  # type: ignore[attr-defined]  # noqa: SLF001
        started = time.monotonic()
        try:
            code = await asyncio.wait_for(peer.process.wait(), 5)
        except TimeoutError:
            pytest.fail(f"the server is still running 5 s after its client vanished; stderr: {peer.stderr}")
        elapsed = time.monotonic() - started
        await asyncio.wait([peer._stderr_task], timeout=2)  # noqa: SLF001
        assert any("slow cancelled victim" in line for line in peer.stderr), (
            f"the slow handler was not cancelled when the client vanished; stderr: {peer.stderr}"
        )
        # Exit status 1: a call was cut (issue 37.8), even with nobody left to tell.
        assert code == 1, f"the server exited with {code}; stderr: {''.join(peer.stderr)}"
        assert elapsed < 3, f"the server took {elapsed:.2f} s to exit"
    finally:
        if peer.process.returncode is None:
            peer.process.kill()
            await peer.process.wait()


# A client in its own process: starts the demo server (through sh, which records the
# server's exit status in the log), calls slow(30), says "ready", and waits to be killed.
KILLED_CLIENT = r"""
import json, subprocess, sys
log, demo = sys.argv[1], sys.argv[2]
server = subprocess.Popen(
    ["sh", "-c", 'exec 2>>"$1"; "$2" "$3"; echo "server exit $?" >&2', "sh", log, sys.executable, demo],
    stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def send(message):
    server.stdin.write(json.dumps(message).encode() + b"\n"); server.stdin.flush()
def receive():
    return json.loads(server.stdout.readline())
send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
      "capabilities": {}, "clientInfo": {"name": "doomed", "version": "0"}}})
assert receive()["id"] == 1
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
send({"jsonrpc": "2.0", "id": "victim", "method": "tools/call",
      "params": {"name": "slow", "arguments": {"seconds": 30}}})
send({"jsonrpc": "2.0", "id": "p", "method": "ping"})
assert receive()["id"] == "p"
print(server.pid, flush=True)
import time
time.sleep(60)
"""


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                status = (entry / "status").read_text()
            except OSError:
                continue
            if f"\nPPid:\t{pid}\n" in status:
                found.append(int(entry.name))
    return found


async def test_client_process_killed_mid_call_cancels_the_handler_and_the_server_exits(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.touch()
    client = await asyncio.create_subprocess_exec(
        sys.executable, "-c", KILLED_CLIENT, str(log), str(DEMO), stdout=asyncio.subprocess.PIPE
    )
    assert client.stdout is not None
    shell_pid = 0
    try:
        line = await asyncio.wait_for(client.stdout.readline(), 15)
        assert line.strip().isdigit(), f"the client did not get going: {line!r}; log: {log.read_text()}"
        shell_pid = int(line)
        client.kill()  # SIGKILL: no cleanup of any kind on the client side
        await client.wait()
        took = await eventually(lambda: "server exit" in log.read_text(), 5, "the orphaned server to exit")
        output = log.read_text()
        assert "slow cancelled victim" in output, f"the handler was not cancelled; server log:\n{output}"
        # Status 1: the call in flight was cut (issue 37.8), though nobody was left to tell.
        assert "server exit 1" in output, f"the server did not exit as it should; server log:\n{output}"
        assert took < 3, f"the server took {took:.2f} s to notice its client died"
    finally:
        if client.returncode is None:
            client.kill()
            await client.wait()
        if shell_pid:
            for pid in children_of(shell_pid):  # a server that outlived the test (a failure)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


# ---------------------------------------------------------------- 5. the server dies


async def _outcomes(tasks: dict[str, asyncio.Task[Any]], limit: float) -> dict[str, tuple[str, float]]:
    """For each pending call: how it ended and when (seconds), or "still pending"."""
    started = time.monotonic()
    ended: dict[str, float] = {}

    def on_done(name: str) -> Callable[[asyncio.Task[Any]], None]:
        def record(_: asyncio.Task[Any]) -> None:
            ended.setdefault(name, time.monotonic() - started)

        return record

    for name, task in tasks.items():
        task.add_done_callback(on_done(name))
    await asyncio.wait(tasks.values(), timeout=limit)
    outcomes: dict[str, tuple[str, float]] = {}
    for name, task in tasks.items():
        if not task.done():
            task.cancel()
            outcomes[name] = ("still pending", limit)
        elif task.cancelled():
            outcomes[name] = ("cancelled", ended[name])
        else:
            exc = task.exception()
            outcomes[name] = (type(exc).__name__ if exc is not None else "returned", ended[name])
    await asyncio.gather(*tasks.values(), return_exceptions=True)
    return outcomes


def _assert_failed_fast(outcomes: dict[str, tuple[str, float]], transport: str) -> None:
    wrong = {
        name: outcome
        for name, outcome in outcomes.items()
        if outcome[0] not in ("ConnectionClosed", "SessionExpired", "McpError") or outcome[1] > 1.0
    }
    assert not wrong, (
        f"{transport}: after the server was killed, these pending calls did not fail with "
        f"ConnectionClosed/McpError within 1 s (outcome, seconds): {wrong}; all: {outcomes}"
    )


async def test_killed_stdio_server_fails_every_pending_call_within_a_second() -> None:
    stderr: list[str] = []
    async with Client.stdio(sys.executable, str(DEMO), on_stderr=stderr.append) as client:
        tasks: dict[str, asyncio.Task[Any]] = {
            f"slow{i}": asyncio.ensure_future(client.call_tool("slow", {"seconds": 30})) for i in range(5)
        }
        tasks["ping-loop"] = asyncio.ensure_future(_ping_forever(client))
        await asyncio.sleep(0.3)
        assert not any(t.done() for t in tasks.values())
        transport: Any = client.session.transport
        transport.process.kill()
        outcomes = await _outcomes(tasks, 5)
        _assert_failed_fast(outcomes, "stdio")
        started = time.monotonic()
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(client.call_tool("echo", {"text": "after"}), 5)
        assert time.monotonic() - started < 1


async def _ping_forever(client: Client) -> None:
    while True:
        await client.ping()
        await asyncio.sleep(0.01)


async def test_killed_http_server_fails_every_pending_call_within_a_second(tmp_path: Path) -> None:
    with http_server(FAULTY, tmp_path / "server.log") as (url, process):
        logs: list[Any] = []
        async with Client.http(url, on_log=logs.append) as client:
            tasks: dict[str, asyncio.Task[Any]] = {}
            for i in range(3):  # JSON responses: the POST waits for the response headers
                tasks[f"slow{i}"] = asyncio.ensure_future(client.call_tool("slow", {"seconds": 30}))
            for i in range(2):  # SSE responses: the stream is open, a log event already came
                tasks[f"stream_slow{i}"] = asyncio.ensure_future(client.call_tool("stream_slow", {"seconds": 30}))
            await eventually(lambda: len(logs) == 2, 5, "both stream_slow calls to stream their log event")
            await asyncio.sleep(0.3)
            assert not any(t.done() for t in tasks.values())
            process.kill()
            process.wait(5)
            outcomes = await _outcomes(tasks, 5)
            started = time.monotonic()
            with pytest.raises((ConnectionClosed, McpError)):
                await asyncio.wait_for(client.call_tool("echo", {"text": "after"}), 5)
            assert time.monotonic() - started < 1
            _assert_failed_fast(outcomes, "HTTP")


# ---------------------------------------------------------------- 6. an HTTP stream drops mid-response


async def test_client_resumes_a_dropped_stream_and_gets_each_result_exactly_once(tmp_path: Path) -> None:
    with http_server(DEMO, tmp_path / "server.log") as (url, _):
        client, transport = recording_http_client(url, era="handshake")  # resumption is the handshake era's
        async with client:
            assert text(await client.call_tool("poll")) == "answered after the reconnect"
            results = await asyncio.wait_for(asyncio.gather(*(client.call_tool("poll") for _ in range(10))), 20)
            assert [text(r) for r in results] == ["answered after the reconnect"] * 10
            echoed = await client.call_tool("echo", {"text": "still fine"})
            assert text(echoed) == "still fine"
            sent_calls = [m["id"] for m in transport().sent if m.get("method") == "tools/call"]
            responses = [m["id"] for m in transport().received if "method" not in m]
            for rid in sent_calls:
                assert responses.count(rid) == 1, f"response to request {rid} received {responses.count(rid)} times"
            assert sorted(responses, key=str) == sorted([*sent_calls, 1], key=str)  # 1: initialize
            resumes = [r for r in transport().resumed_from if r is not None]
            assert len(resumes) >= 11, f"the poll calls should have been resumed with Last-Event-ID: {resumes}"


def _open_session(url: str) -> str:
    reply = httpx.post(url, content=json.dumps(INIT), headers=POST_HEADERS)
    session_id = reply.headers["mcp-session-id"]
    done = httpx.post(
        url,
        content=json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        headers={**POST_HEADERS, "mcp-session-id": session_id},
    )
    assert done.status_code == 202
    return session_id


def _replay(url: str, session_id: str, last_event_id: str) -> list[tuple[str, str]]:
    reply = httpx.get(
        url,
        headers={"mcp-session-id": session_id, "accept": "text/event-stream", "last-event-id": last_event_id},
        timeout=5,
    )
    assert reply.status_code == 200, reply.text
    return [(e["id"], e.get("data", "")) for e in sse_events(reply.text) if "id" in e]


async def test_replay_from_each_event_id_yields_exactly_the_later_events(tmp_path: Path) -> None:
    with http_server(DEMO, tmp_path / "server.log") as (url, _):
        session_id = _open_session(url)
        headers = {**POST_HEADERS, "mcp-session-id": session_id}
        # A stream of several events: priming, progress and log notifications, the result.
        call = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "count", "arguments": {"to": 4}, "_meta": {"progressToken": "t"}},
        }
        reply = httpx.post(url, content=json.dumps(call), headers=headers, timeout=10)
        assert reply.headers["content-type"].startswith("text/event-stream")
        events = [(e["id"], e.get("data", "")) for e in sse_events(reply.text)]
        assert len(events) == 1 + 4 + 4 + 1, events
        assert len({event_id for event_id, _ in events}) == len(events), f"repeated event ids: {events}"
        assert json.loads(events[-1][1])["id"] == 7
        for k, (event_id, _) in enumerate(events):
            later = [(i, d) for i, d in events[k + 1 :] if d]
            assert _replay(url, session_id, event_id) == later, f"replay after event {k} ({event_id})"

        # The poll tool: its POST stream closes after the priming event, before the answer.
        polled = httpx.post(
            url, content=json.dumps({**call, "id": 8, "params": {"name": "poll"}}), headers=headers, timeout=10
        )
        primed = sse_events(polled.text)
        assert [e.get("data", "") for e in primed] == [""], primed
        prime_id = primed[0]["id"]
        resumed = _replay(url, session_id, prime_id)  # waits for the answer, then ends
        assert len(resumed) == 1 and json.loads(resumed[0][1])["id"] == 8, resumed
        assert json.loads(resumed[0][1])["result"]["content"][0]["text"] == "answered after the reconnect"
        assert _replay(url, session_id, prime_id) == resumed, "a second replay must give the same events"
        assert _replay(url, session_id, resumed[0][0]) == [], "nothing follows the final event"


# ---------------------------------------------------------------- 7. a handler that never returns


async def test_stdio_call_timeout_bounds_a_handler_that_never_returns() -> None:
    stderr: list[str] = []
    client, transport = recording_stdio_client(DEMO, stderr)
    async with client:
        started = time.monotonic()
        with pytest.raises(RequestTimeout):
            await asyncio.wait_for(client.call_tool("slow", {"seconds": 3600}, timeout=0.5), 10)
        elapsed = time.monotonic() - started
        assert elapsed < 1.5, f"the 0.5 s timeout took {elapsed:.2f} s"
        call = next(m for m in transport().sent if m.get("method") == "tools/call")
        await eventually(
            lambda: any(m.get("method") == "notifications/cancelled" for m in transport().sent),
            2,
            "notifications/cancelled to be sent",
        )
        cancel = next(m for m in transport().sent if m.get("method") == "notifications/cancelled")
        assert cancel["params"]["requestId"] == call["id"]
        await eventually(
            lambda: any(f"slow cancelled {call['id']}" in line for line in stderr),
            3,
            "the server to cancel the handler",
        )
        assert text(await client.call_tool("echo", {"text": "alive"})) == "alive"
        assert not any("id" in m and m["id"] == call["id"] for m in transport().received if "method" not in m)


async def test_http_call_timeout_bounds_a_handler_that_never_returns(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with http_server(DEMO, log) as (url, _):
        client, transport = recording_http_client(url)
        async with client:
            started = time.monotonic()
            call = asyncio.ensure_future(client.call_tool("slow", {"seconds": 3600}, timeout=0.5))
            done, _ = await asyncio.wait({call}, timeout=5)
            elapsed = time.monotonic() - started
            if not done:
                call.cancel()
                await asyncio.gather(call, return_exceptions=True)
            assert done and isinstance(call.exception(), RequestTimeout), (
                "over Streamable HTTP, call_tool(timeout=0.5) on a handler that never returns did not raise "
                f"RequestTimeout within 5 s (still pending: {not done}, outcome: "
                f"{call.exception() if done else None!r}); the per-call timeout is not enforced while the POST "
                "waits for its response"
            )
            assert elapsed < 1.5, f"the 0.5 s timeout took {elapsed:.2f} s"
            rid = next(m["id"] for m in transport().sent if m.get("method") == "tools/call")
            await eventually(
                lambda: any(
                    m.get("method") == "notifications/cancelled" and m["params"]["requestId"] == rid
                    for m in transport().sent
                ),
                2,
                "notifications/cancelled to be sent",
            )
            await eventually(lambda: f"slow cancelled {rid}" in log.read_text(), 3, "the server to cancel the handler")
            assert text(await client.call_tool("echo", {"text": "alive"})) == "alive"


async def test_http_cancelled_call_leaves_no_stuck_task_and_server_stops_on_sigterm(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with http_server(LOAD_SERVER, log) as (url, process):
        async with Client.http(url, era="handshake") as observer:  # counts the server's sessions and tasks

            async def tasks() -> int:
                result = await observer.call_tool("inflight")
                assert isinstance(result.structured_content, dict)
                return int(result.structured_content["tasks"])

            await asyncio.sleep(0.5)  # the observer's GET stream is attached by now
            baseline = await tasks()
            async with Client.http(url) as client:  # auto: the stateless era, where closing the POST cancels
                call = asyncio.ensure_future(client.call_tool("slow", {"seconds": 3600}))
                await asyncio.sleep(0.5)
                call.cancel()  # the client drops the POST (handshake era: after notifications/cancelled)
                await asyncio.gather(call, return_exceptions=True)
                await eventually(lambda: "slow cancelled" in log.read_text(), 3, "the server to cancel the handler")
            await asyncio.sleep(0.5)
            left = await tasks()
        process.terminate()
        try:
            await asyncio.wait_for(asyncio.to_thread(process.wait, 5), 6)
            stopped = True
        except (TimeoutError, subprocess.TimeoutExpired):
            stopped = False
            process.kill()
            process.wait()
        assert left == baseline, (
            f"after a cancelled call and the end of its session the server runs {left} asyncio tasks, "
            f"{baseline} before: the POST that carried the cancelled request is still waiting for a response "
            "that will never come"
        )
        assert stopped, "the server did not stop within 5 s of SIGTERM (uvicorn waits for the stuck POST)"


# ---------------------------------------------------------------- 8. misbehaving handlers


async def _misbehaviour_alongside_echoes(client: Client) -> None:
    echoes = [client.call_tool("echo", {"text": f"echo {i}"}) for i in range(50)]
    bad: dict[str, Awaitable[CallToolResult]] = {
        "crash": client.call_tool("crash"),
        "wrong_type": client.call_tool("wrong_type"),
        "lowlevel_wrong": client.call_tool("lowlevel_wrong"),
        "slow": client.call_tool("slow", {"seconds": 1.0}),
    }
    everything = [*echoes[:25], *bad.values(), *echoes[25:]]
    outcomes = await asyncio.wait_for(asyncio.gather(*everything, return_exceptions=True), 20)
    echo_outcomes = [*outcomes[:25], *outcomes[29:]]
    crash, wrong_type, lowlevel, slow = outcomes[25:29]
    for i, outcome in enumerate(echo_outcomes):
        assert isinstance(outcome, CallToolResult) and not outcome.is_error, f"echo {i}: {outcome!r}"
        assert text(outcome) == f"echo {i}", f"echo {i} got {text(outcome)!r}"
    assert isinstance(crash, CallToolResult) and crash.is_error, f"crash: {crash!r}"
    assert "boom" not in text(crash), "the exception text (internals) must not reach the client"
    assert isinstance(wrong_type, CallToolResult) and wrong_type.is_error, f"wrong_type: {wrong_type!r}"
    assert isinstance(lowlevel, McpError) and lowlevel.code == INTERNAL_ERROR, f"lowlevel_wrong: {lowlevel!r}"
    assert isinstance(slow, CallToolResult) and text(slow) == "slept 1.0", f"slow: {slow!r}"
    # The session is healthy afterwards.
    await client.ping()
    again = await asyncio.wait_for(
        asyncio.gather(*(client.call_tool("echo", {"text": f"after {i}"}) for i in range(20))), 10
    )
    assert [text(r) for r in again] == [f"after {i}" for i in range(20)]


async def test_misbehaving_handlers_affect_only_their_own_request_stdio() -> None:
    stderr: list[str] = []
    async with Client.stdio(sys.executable, str(FAULTY), on_stderr=stderr.append) as client:
        await _misbehaviour_alongside_echoes(client)
        await _misbehaviour_alongside_echoes(client)  # and once more on the same session


async def test_misbehaving_handlers_affect_only_their_own_request_http(tmp_path: Path) -> None:
    with http_server(FAULTY, tmp_path / "server.log") as (url, _):
        async with Client.http(url) as client:
            await _misbehaviour_alongside_echoes(client)
            await _misbehaviour_alongside_echoes(client)


async def test_misbehaving_handlers_on_the_wire() -> None:
    peer = await RawPeer.start(script=FAULTY)
    try:
        await peer.initialize()
        names = ["crash", "wrong_type", "lowlevel_wrong"]
        for i in range(30):
            await peer.send(
                {
                    "jsonrpc": "2.0",
                    "id": f"e{i}",
                    "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": f"t{i}"}},
                }
            )
            if i < len(names):
                await peer.send(
                    {"jsonrpc": "2.0", "id": names[i], "method": "tools/call", "params": {"name": names[i]}}
                )
        replies = [await peer.recv(5) for _ in range(33)]
        assert await peer.nothing_within(0.3), "more responses than requests"
        by_id = {r["id"]: r for r in replies}
        assert len(by_id) == 33, "every request answered exactly once"
        for i in range(30):
            assert by_id[f"e{i}"]["result"]["content"] == [{"type": "text", "text": f"t{i}"}]
        assert by_id["crash"]["result"]["isError"] is True
        assert by_id["wrong_type"]["result"]["isError"] is True
        assert by_id["lowlevel_wrong"]["error"]["code"] == INTERNAL_ERROR
        assert "result" not in by_id["lowlevel_wrong"]
        assert (await peer.request("ping"))["result"] == {}
    finally:
        assert await peer.close() == 0
