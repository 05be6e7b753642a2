"""Load tests with real processes over loopback: 10,000 requests in flight on one stdio
connection, 100 concurrent HTTP sessions, and server memory (RSS) and task counts
returning to their baseline after load. Sizes are fixed; every wait is bounded.

Timings and RSS figures are printed (run with ``-s`` to see them) and recorded as
properties (``--junitxml``). ``MCPGEN_LOAD_HTTP_SESSIONS`` / ``MCPGEN_LOAD_HTTP_CALLS``
shrink the 100 x 1000 HTTP test for a quick local run.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from mcpgen import Client
from mcpgen.generated import CallToolResult, TextContent
from tests.http_server import free_port, wait_until_up
from tests.paths import SERVERS
from tests.wire import RawPeer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
LOAD_SERVER = SERVERS / "load_server.py"
MIB = 1024 * 1024
HTTP_SESSIONS = int(os.environ.get("MCPGEN_LOAD_HTTP_SESSIONS", "100"))
HTTP_CALLS = int(os.environ.get("MCPGEN_LOAD_HTTP_CALLS", "1000"))
Report = Callable[[str, object], None]


# ---------------------------------------------------------------- helpers


@pytest.fixture
def report(record_property: Callable[[str, object], None]) -> Report:
    """Print a figure (seen with -s) and record it in the test report."""

    def emit(name: str, value: object) -> None:
        print(f"[load] {name}: {value}")
        record_property(name, value)

    return emit


def rss_bytes(pid: int) -> int:
    """VmRSS of a process, from /proc/<pid>/status."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for pid {pid}")


def mib(size: int) -> str:
    return f"{size / MIB:.2f} MiB"


def text(result: CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


@contextlib.contextmanager
def http_server(script: Path, log: Path, *args: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``script --http PORT`` under uvicorn; its stderr goes to ``log`` (an unread pipe could
    fill up under load and stall the server)."""
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


class RawHttp:
    """One keep-alive HTTP/1.1 connection, spoken by hand: a load generator far cheaper
    per request than a full client, so the load lands on the server."""

    def __init__(self, url: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        parts = urlsplit(url)
        self.host = parts.netloc
        self.path = parts.path
        self.reader = reader
        self.writer = writer
        self.session_id: str | None = None
        self._ids = 0

    @classmethod
    async def open(cls, url: str) -> RawHttp:
        parts = urlsplit(url)
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
        return cls(url, reader, writer)

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(ConnectionError):
            await self.writer.wait_closed()

    async def request(self, method: str, body: bytes = b"") -> tuple[int, dict[str, str], bytes]:
        headers = {
            "host": self.host,
            "content-length": str(len(body)),
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2025-11-25",
        }
        if body:
            headers["content-type"] = "application/json"
        if self.session_id is not None:
            headers["mcp-session-id"] = self.session_id
        head = f"{method} {self.path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
        self.writer.write(head.encode() + body)
        status_line = await self.reader.readline()
        status = int(status_line.split()[1])
        got: dict[str, str] = {}
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            got[name.strip().lower()] = value.strip()
        if "content-length" in got:
            return status, got, await self.reader.readexactly(int(got["content-length"]))
        assert got.get("transfer-encoding") == "chunked", got
        chunks: list[bytes] = []
        while (size := int((await self.reader.readline()).strip(), 16)) > 0:
            chunks.append(await self.reader.readexactly(size))
            await self.reader.readexactly(2)
        await self.reader.readline()  # the blank line after the last chunk
        return status, got, b"".join(chunks)

    async def rpc(self, method: str, params: Any = None) -> Any:
        """A JSON-RPC request; its response (from JSON or from the SSE stream)."""
        self._ids += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._ids, "method": method}
        if params is not None:
            message["params"] = params
        status, headers, body = await self.request("POST", json.dumps(message).encode())
        assert status == 200, (status, body[:300])
        if headers.get("content-type", "").startswith("text/event-stream"):
            frames = [json.loads(line[6:]) for line in body.decode().split("\n") if line.startswith("data: {")]
            responses = [f for f in frames if f.get("id") == self._ids and "method" not in f]
            assert len(responses) == 1, frames
            return responses[0]
        return json.loads(body)

    async def start_session(self) -> None:
        status, headers, body = await self.request(
            "POST",
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 0,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "clientInfo": {"name": "load", "version": "0"},
                    },
                }
            ).encode(),
        )
        assert status == 200, body
        self.session_id = headers["mcp-session-id"]
        status, _, _ = await self.request("POST", b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        assert status == 202

    async def end_session(self) -> None:
        status, _, _ = await self.request("DELETE")
        assert status == 200
        self.session_id = None

    async def echo(self, message: str) -> None:
        reply = await self.rpc("tools/call", {"name": "echo", "arguments": {"text": message}})
        assert reply["result"]["content"] == [{"type": "text", "text": message}], (message, reply)

    async def tool(self, name: str, arguments: dict[str, Any] | None = None) -> Any:
        reply = await self.rpc("tools/call", {"name": name, "arguments": arguments or {}})
        assert "result" in reply, reply
        return reply["result"].get("structuredContent", {}).get("result", reply["result"].get("structuredContent"))


# ---------------------------------------------------------------- 1. 10,000 requests in flight on one stdio connection


async def test_10k_requests_in_flight_on_one_stdio_connection_raw(report: Report) -> None:
    n = 10_000
    peer = await RawPeer.start()
    try:
        assert "result" in await peer.initialize()
        # Ids of both kinds; every text unique, so a response given to the wrong id shows.
        expected: dict[Any, str] = {(i if i % 2 else f"r{i}"): f"text #{i} ~{i * 7919 % 10007}" for i in range(n)}
        assert peer.process.stdin is not None and peer.process.stdout is not None

        async def read_all() -> list[dict[str, Any]]:
            return [await peer.recv(30) for _ in range(n)]

        started = time.monotonic()
        reader = asyncio.ensure_future(read_all())
        for rid, message in expected.items():  # every request written before any response is awaited
            frame = {
                "jsonrpc": "2.0",
                "id": rid,
                "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": message}},
            }
            peer.process.stdin.write(json.dumps(frame).encode() + b"\n")
        await peer.process.stdin.drain()
        replies = await asyncio.wait_for(reader, 60)
        elapsed = time.monotonic() - started
        report("stdio_raw_10k_in_flight_seconds", round(elapsed, 2))

        counts = Counter(r.get("id") for r in replies)
        missing = [rid for rid in expected if counts[rid] == 0]
        repeated = {rid: c for rid, c in counts.items() if c > 1}
        unknown = [rid for rid in counts if rid not in expected]
        assert not missing and not repeated and not unknown, (
            f"lost {len(missing)} (e.g. {missing[:5]}), repeated {len(repeated)} (e.g. {list(repeated.items())[:5]}), "
            f"unknown ids {unknown[:5]}"
        )
        crossed = [
            r["id"]
            for r in replies
            if r.get("result", {}).get("content") != [{"type": "text", "text": expected[r["id"]]}]
        ]
        assert not crossed, f"{len(crossed)} responses carry another request's text or an error, e.g. {crossed[:5]}"
        assert await peer.nothing_within(0.3), "a response beyond the 10,000"
    finally:
        assert await peer.close() == 0


async def test_10k_concurrent_calls_through_one_stdio_client(report: Report) -> None:
    n = 10_000
    async with Client.stdio(sys.executable, str(LOAD_SERVER)) as client:
        started = time.monotonic()
        results = await asyncio.wait_for(
            asyncio.gather(*(client.call_tool("echo", {"text": f"call {i} of {n}"}) for i in range(n))), 60
        )
        elapsed = time.monotonic() - started
        report("stdio_client_10k_gather_seconds", round(elapsed, 2))
        wrong = [i for i, r in enumerate(results) if r.is_error or text(r) != f"call {i} of {n}"]
        assert not wrong, f"{len(wrong)} calls got another call's result or an error, e.g. {wrong[:5]}"
        state = (await client.call_tool("inflight")).structured_content
        assert isinstance(state, dict) and state["requests"] == 0, f"requests still in flight on the server: {state}"
        assert not client.session._pending and not client.session._inflight  # noqa: SLF001


# ---------------------------------------------------------------- 2. 100 concurrent HTTP sessions


async def test_100_concurrent_http_sessions_of_1000_sequential_calls(tmp_path: Path, report: Report) -> None:
    sessions, calls = HTTP_SESSIONS, HTTP_CALLS
    with http_server(LOAD_SERVER, tmp_path / "server.log") as (url, _):
        mismatches: list[str] = []
        done = Counter[str]()

        async def one_session(s: int, opened: asyncio.Event, go: asyncio.Event) -> None:
            async with Client.http(url, era="handshake") as client:  # sessions: the handshake era's
                done["opened"] += 1
                if done["opened"] == sessions:
                    opened.set()
                await go.wait()
                for i in range(calls):
                    message = f"session {s} call {i}"
                    result = await client.call_tool("echo", {"text": message})
                    if result.is_error or text(result) != message:
                        mismatches.append(f"{message} -> {result!r}")
                    done["calls"] += 1

        opened, go = asyncio.Event(), asyncio.Event()
        started = time.monotonic()
        runners = asyncio.ensure_future(asyncio.gather(*(one_session(s, opened, go) for s in range(sessions))))
        await asyncio.wait_for(opened.wait(), 120)
        open_time = time.monotonic() - started
        calls_started = time.monotonic()
        go.set()
        try:
            await asyncio.wait_for(runners, 1200)
        except TimeoutError:
            pytest.fail(f"{done['calls']} of {sessions * calls} calls done after 1200 s")
        calls_time = time.monotonic() - calls_started
        total = time.monotonic() - started
        report("http_sessions", sessions)
        report("http_calls_per_session", calls)
        report("http_open_sessions_seconds", round(open_time, 2))
        report("http_calls_seconds", round(calls_time, 2))
        report("http_calls_per_second", round(sessions * calls / calls_time, 1))
        report("http_total_wall_seconds", round(total, 2))
        assert not mismatches, f"{len(mismatches)} mismatched responses, e.g. {mismatches[:3]}"
        assert done["calls"] == sessions * calls

        async with Client.http(url, era="handshake") as observer:  # counts sessions, its own included
            state = (await observer.call_tool("inflight")).structured_content
        assert isinstance(state, dict)
        assert state["requests"] == 0 and state["sessions"] == 1, f"after every client closed: {state}"


# ---------------------------------------------------------------- 3. memory and tasks return to baseline


async def test_stdio_server_memory_and_tasks_return_to_baseline(report: Report) -> None:
    async with Client.stdio(sys.executable, str(LOAD_SERVER)) as client:
        pid = client.session.transport.process.pid  # type: ignore[attr-defined]

        async def load(n: int, batch: int = 2_000) -> None:
            for start in range(0, n, batch):
                results = await asyncio.gather(
                    *(client.call_tool("echo", {"text": f"m{i}"}) for i in range(start, start + batch))
                )
                assert all(text(r) == f"m{start + k}" for k, r in enumerate(results))

        async def settle() -> tuple[int, dict[str, Any]]:
            await asyncio.sleep(0.3)
            await client.call_tool("gc")
            state = (await client.call_tool("inflight")).structured_content
            assert isinstance(state, dict)
            reported = (await client.call_tool("rss")).structured_content
            measured = rss_bytes(pid)
            assert isinstance(reported, dict) and abs(reported["result"] * 1024 - measured) < 8 * MIB
            return measured, state

        await load(4_000)
        baseline, base_state = await settle()
        rounds: list[int] = []
        for _ in range(3):
            await load(20_000, batch=20_000 if not rounds else 2_000)  # round 1 all at once, then batches
            rss, state = await settle()
            rounds.append(rss)
            assert state["requests"] == 0, f"requests left in flight: {state}"
            assert state["tasks"] == base_state["tasks"], (
                f"tasks {state['tasks']} after load, {base_state['tasks']} at rest"
            )
        report("stdio_rss_baseline", mib(baseline))
        report("stdio_rss_rounds", [mib(r) for r in rounds])
        assert rounds[0] < baseline + 20 * MIB, f"RSS {mib(rounds[0])} after 20,000 calls, baseline {mib(baseline)}"
        assert rounds[2] <= rounds[1] + 5 * MIB, f"RSS keeps growing: rounds {[mib(r) for r in rounds]}"


async def test_http_server_memory_and_tasks_return_to_baseline(tmp_path: Path, report: Report) -> None:
    """Each round: 20 fresh sessions x 1,000 calls on 20 keep-alive connections, sessions
    ended with DELETE."""
    with http_server(LOAD_SERVER, tmp_path / "server.log") as (url, process):

        async def load(sessions: int, calls: int, tag: str) -> None:
            async def one(s: int) -> None:
                connection = await RawHttp.open(url)
                try:
                    await connection.start_session()
                    for i in range(calls):
                        await connection.echo(f"{tag} {s}.{i}")
                    await connection.end_session()
                finally:
                    await connection.close()

            await asyncio.wait_for(asyncio.gather(*(one(s) for s in range(sessions))), 150)

        async def settle() -> tuple[int, dict[str, Any]]:
            await asyncio.sleep(0.5)
            connection = await RawHttp.open(url)
            try:
                await connection.start_session()
                await connection.tool("gc")
                state = await connection.tool("inflight")
                await connection.end_session()
            finally:
                await connection.close()
            await asyncio.sleep(0.2)
            return rss_bytes(process.pid), state

        await load(20, 200, "warm")
        baseline, base_state = await settle()
        rounds: list[int] = []
        started = time.monotonic()
        for r in range(3):
            await load(20, 1_000, f"r{r}")
            rss, state = await settle()
            rounds.append(rss)
            assert state["requests"] == 0 and state["sessions"] == 1, f"after round {r + 1}: {state}"
            assert state["tasks"] == base_state["tasks"], (
                f"tasks {state['tasks']} after load, {base_state['tasks']} at rest"
            )
        report("http_memory_rounds_seconds", round(time.monotonic() - started, 2))
        report("http_rss_baseline", mib(baseline))
        report("http_rss_rounds", [mib(r) for r in rounds])
        assert rounds[0] < baseline + 20 * MIB, f"RSS {mib(rounds[0])} after 20,000 calls, baseline {mib(baseline)}"
        assert rounds[2] <= rounds[1] + 5 * MIB, f"RSS keeps growing: rounds {[mib(r) for r in rounds]}"


async def test_http_long_lived_session_does_not_accumulate_memory(tmp_path: Path, report: Report) -> None:
    """One session that stays open: streamed calls (progress makes an SSE response) must
    not leave per-request state behind once they are answered."""
    per_round = 3_000
    with http_server(LOAD_SERVER, tmp_path / "server.log") as (url, process):
        connection = await RawHttp.open(url)
        try:
            await connection.start_session()

            async def streamed_round() -> tuple[int, dict[str, Any]]:
                for _ in range(per_round):
                    reply = await connection.rpc(
                        "tools/call", {"name": "count", "arguments": {"to": 1}, "_meta": {"progressToken": "p"}}
                    )
                    assert reply["result"]["content"] == [{"type": "text", "text": "counted to 1"}], reply
                await connection.tool("gc")
                state = await connection.tool("inflight")
                return rss_bytes(process.pid), state

            await connection.tool("gc")
            baseline = rss_bytes(process.pid)
            rounds = [await asyncio.wait_for(streamed_round(), 120) for _ in range(3)]
            await connection.end_session()
        finally:
            await connection.close()
        sizes = [rss for rss, _ in rounds]
        states = [state for _, state in rounds]
        report("http_long_session_rss_baseline", mib(baseline))
        report("http_long_session_rss_rounds", [mib(r) for r in sizes])
        report("http_long_session_bookkeeping", states)
        growth = sizes[2] - sizes[1]
        assert growth <= 2 * MIB and states[2]["stored_events"] < per_round, (
            f"a live HTTP session keeps state for every answered request: RSS grew {mib(growth)} over "
            f"{per_round} streamed calls (rounds {[mib(r) for r in sizes]}, baseline {mib(baseline)}); "
            f"its transport holds {states[2]['stream_ids']} stream ids and {states[2]['stored_events']} stored "
            f"events in {states[2]['stored_streams']} streams after {3 * per_round} finished calls "
            "(HttpSessionTransport.stream_ids / MemoryEventStore are only pruned when the session ends)"
        )
