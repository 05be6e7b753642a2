"""``tools/call`` over Streamable HTTP: mcpgen next to the official MCP SDKs.

Four servers expose the same tools, ``echo(text: str) -> str`` and its kinds, over
Streamable HTTP on a free port on 127.0.0.1, each as its own subprocess:

* ``mcpgen``: ``mcpgen.Server`` via ``server.run("http", ...)`` (uvicorn, 1 worker, log
  level warning; ``bench/servers/mcpgen_http.py``);
* ``SDK``: the official Python SDK's high-level ``mcp.server.mcpserver.MCPServer``
  (formerly FastMCP) via ``server.run("streamable-http", ...)`` (``bench/servers/sdk_http.py``);
* ``TS SDK``: the TypeScript SDK v2's ``createMcpHandler`` (``@modelcontextprotocol/server``)
  under ``node:http`` through ``@modelcontextprotocol/node``'s ``toNodeHandler``
  (``bench/servers/ts/http.mjs``; installed with ``npm ci`` on first use, see
  ``bench/ts_peer.py``). It serves handshake-era requests statelessly (its legacy
  fallback: a fresh server per request, no session id), the stateless era on its modern path;
* ``raw``: a trivial raw-ASGI app that fakes just enough MCP (``bench/servers/raw_http.py``)
  under the same uvicorn: the ceiling of this load generator plus uvicorn on this box.

Each server runs in five modes, restarted for each: ``async`` (JSON responses, each call
going to ``echo_async``: an ``async def``, the default path of a user's tool), ``json``
(JSON responses: ``json_response=True``; ``echo``, which mcpgen declares
``blocking=False`` and answers on the spot), ``sse`` (the default, where a POST may be
answered with an event stream; the Python SDK streams in the handshake era, mcpgen only
when a handler sends something before its result, so its echo answers stay
``application/json``: the ``response`` column shows what came back) and ``progress`` (the
default setting again, but each call goes to ``echo_progress`` with a ``progressToken``:
the tool reports progress once before its result, so every server answers with an event
stream carrying the notification and then the result; a call whose stream lacks the
notification counts as an error) and ``thread`` (the default setting again, each call
going to ``echo_threaded``: for mcpgen a plain ``def`` left to its thread pool; the Python
SDK runs every synchronous tool, ``echo`` included, in a worker thread; the TypeScript
SDK's is its async handler again).

One load generator, written below, drives them all: a minimal HTTP/1.1 client on asyncio
protocols (uvloop when installed), one keep-alive connection per request in flight, in
this process. (It replaced ``httpx.AsyncClient``, whose own cost capped every server at
about 300 requests/s with 32 in flight on this box.) Per server
process it opens the protocol, then for concurrency 1 and 32: a warm-up, then a fixed
number of ``tools/call`` requests kept that many in flight.

``--era`` picks what opening the protocol means. ``2025-11-25`` (the default): the
``initialize`` handshake, keeping the ``Mcp-Session-Id``, then
``notifications/initialized``; every request carries ``Mcp-Session-Id`` and
``MCP-Protocol-Version``. ``2026-07-28``, the stateless era: nothing; every request stands
alone, carrying the ``_meta`` envelope (protocol version, client capabilities, client info)
and the headers ``MCP-Protocol-Version``, ``Mcp-Method`` and ``Mcp-Name``, and every result
must say ``"resultType": "complete"``. Both real servers serve that era from the same
process and settings as the other (any ``MCP-Protocol-Version`` outside the handshake era
routes a POST to their stateless entry; the SDK's is ``handle_modern_request`` behind its
session manager); the raw one answers it in that era's shape, always as plain JSON (as
the real ones do when nothing comes before the result).

Cold start (``--cold-starts N``, 5 by default; 0 skips it): wall time from spawning the
server to the answer to its first request (``initialize``, or in the stateless era the
first ``tools/call``), connecting every 5 ms until it listens; 1 untimed spawn, then N
timed ones, the servers taking turns; best and median reported. A JSON answer is decoded
whole; an event stream is read to its end and the event holding the response to our id
is taken (latency stops at the end of the stream, which these servers close right after
the response). Every response is checked: HTTP 200, our id, a result that is not an error,
and our text echoed back; failures are counted.

Reported per (server, mode, concurrency): requests/s, p50 and p99 latency, the server
process's CPU time per call and CPU use, the load generator's CPU use; then mcpgen ÷ SDK
and mcpgen ÷ TS SDK (and the RSS of each after the async run with 32 in flight).
The load generator and the server run on CPUs of their own (the server on the last CPU
this process may use, the load generator on the others; ``--no-pin`` leaves them to the
kernel, which on the 2-core box sometimes let them share one CPU for a whole run): the
``raw`` rows show how many requests/s the load generator can drive at all.

Run from the repository root with the project's venv active (Linux, for ``/proc``)::

    python bench/http.py                    # 4,000 calls at c=1 and 40,000 at c=32
    python bench/http.py --quick            # every count divided by 10
    python bench/http.py --scale 4          # every count divided by 4 (slow boxes)
    python bench/http.py --json http.json   # also write the numbers as JSON
    python bench/http.py --era 2026-07-28   # the stateless era: no session, _meta and headers on every call
    python bench/http.py --profile prof.out # only mcpgen, c=32, the first of --modes, under cProfile;
                                            # prints mcpgen's hot spots
"""

from __future__ import annotations

import sys

# Run as a script, this file's folder comes first on sys.path and this file, http.py,
# would shadow the standard library's http package (which importlib.metadata can import).
if (
    sys.path
    and sys.path[0]
    and __import__("os").path.samefile(sys.path[0], __import__("os").path.dirname(__file__) or ".")
):
    del sys.path[0]

import argparse
import asyncio
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

import msgspec

HERE = Path(__file__).resolve().parent
sys.path.append(str(HERE))  # after the standard library's paths: this folder's http.py shadows nothing
import ts_peer  # noqa: E402

SERVERS: dict[str, Path] = {
    "raw": HERE / "servers" / "raw_http.py",
    "mcpgen": HERE / "servers" / "mcpgen_http.py",
    "SDK": HERE / "servers" / "sdk_http.py",
    "TS SDK": HERE / "servers" / "ts" / "http.mjs",
}
TS = "TS SDK"
# The TypeScript SDK serves handshake-era requests statelessly (createMcpHandler's legacy
# fallback: a fresh instance per request): its initialize answer carries no session id.
SESSIONLESS = {TS}
MODES = ("async", "json", "sse", "progress", "thread")
TOOL = {"async": "echo_async", "json": "echo", "sse": "echo", "progress": "echo_progress", "thread": "echo_threaded"}
JSON_MODES = {"async", "json"}  # the modes whose server answers with JSON (json_response=True)
CONCURRENCY = (1, 32)
CALLS = {1: 4_000, 32: 40_000}
WARMUP = {1: 400, 32: 2_000}
PROTOCOL = "2025-11-25"
ERAS = (PROTOCOL, "2026-07-28")  # the handshake era's and the stateless era's revision
COLD_STARTS = 5
CLIENT_INFO = {"name": "bench-http", "version": "0"}
TICK = os.sysconf("SC_CLK_TCK")

encode = msgspec.json.encode
decode = msgspec.json.decode

# The CPUs the servers run on (None: wherever the kernel puts them); set by main().
SERVER_CPUS: set[int] | None = None


def split_cpus() -> tuple[set[int], set[int]] | None:
    """The CPUs for the load generator and for the server, apart: the last CPU this
    process may use for the server, the others for the load generator. None when there
    are fewer than two or the platform cannot pin.

    Left to the kernel, the two busy processes sometimes share one CPU for a whole run
    (then both wait on each other) and sometimes not: on the 2-core box the same server
    measured 56-64 or 86-96 µs of CPU per call from run to run, and the raw server 38-43
    or 61. Pinned apart, runs agree within a few percent."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return None
    return set(cpus[:-1]), {cpus[-1]}


def _pin_server() -> None:  # runs in the child between fork and exec
    if SERVER_CPUS is not None:
        os.sched_setaffinity(0, SERVER_CPUS)


# ---------------------------------------------------------------- server processes


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process, from ``/proc/<pid>/stat``."""
    raw = Path(f"/proc/{pid}/stat").read_text()
    fields = raw[raw.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class ServerProcess:
    def __init__(self, script: Path, mode: str, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        # The TypeScript SDK's server runs on Node (installed on first use: ts_peer).
        command = ts_peer.node_command(script.name) if script.suffix == ".mjs" else [sys.executable, str(script)]
        argv = [*command, str(self.port)]
        if mode in JSON_MODES:
            argv.append("--json-response")
        self.proc = subprocess.Popen(
            argv, env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL, preexec_fn=_pin_server
        )
        self.url = f"http://127.0.0.1:{self.port}/mcp"

    async def ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}")
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", self.port)
                writer.close()
                await writer.wait_closed()
                return
            except OSError:
                await asyncio.sleep(0.05)
        raise RuntimeError("server did not start listening")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# ---------------------------------------------------------------- load generator


class CallError(Exception):
    pass


def sse_events(buffer: bytearray) -> list[bytes]:
    """Pop the complete events off ``buffer``, returning the data of each (its data
    lines joined by newlines; empty for events without data, such as priming events)."""
    out = []
    while True:
        ends = [(i, len(sep)) for sep in (b"\r\n\r\n", b"\n\n", b"\r\r") if (i := buffer.find(sep)) >= 0]
        if not ends:
            return out
        end, size = min(ends)
        block = bytes(buffer[:end])
        del buffer[: end + size]
        data = [line[5:].removeprefix(b" ") for line in block.splitlines() if line.startswith(b"data:")]
        out.append(b"\n".join(data))


def check(message: Any, request_id: int, text: str, stateless: bool = False) -> None:
    if not isinstance(message, dict) or message.get("id") != request_id:
        raise CallError(f"wrong id: {str(message)[:200]}")
    result = message.get("result")
    if result is None:
        raise CallError(f"no result: {str(message)[:200]}")
    if result.get("isError"):
        raise CallError(f"tool error: {str(result)[:200]}")
    content = result.get("content") or [{}]
    if content[0].get("text") != text:
        raise CallError(f"wrong text: {str(result)[:200]}")
    if stateless and result.get("resultType") != "complete":
        raise CallError(f"resultType is not complete: {str(result)[:200]}")


class Response:
    __slots__ = ("status", "headers", "body", "arrived")

    def __init__(self, status: int, headers: dict[str, str], body: bytes, arrived: float) -> None:
        self.status, self.headers, self.body, self.arrived = status, headers, body, arrived


def parse_response(buffer: bytearray) -> Response | None:
    """Pop one complete HTTP/1.1 response off ``buffer`` (``Content-Length`` or chunked
    body), or return None when it has not all arrived yet."""
    head_end = buffer.find(b"\r\n\r\n")
    if head_end < 0:
        return None
    lines = bytes(buffer[:head_end]).decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    pos = head_end + 4
    if "content-length" in headers:
        end = pos + int(headers["content-length"])
        if len(buffer) < end:
            return None
        body = bytes(buffer[pos:end])
    elif headers.get("transfer-encoding", "").lower() == "chunked":
        parts = []
        while True:
            line_end = buffer.find(b"\r\n", pos)
            if line_end < 0:
                return None
            size = int(bytes(buffer[pos:line_end]).split(b";")[0], 16)
            if size == 0:
                end = buffer.find(b"\r\n", line_end + 2)  # no trailers expected: just the blank line
                if end < 0:
                    return None
                end += 2
                break
            if len(buffer) < line_end + 2 + size + 2:
                return None
            parts.append(bytes(buffer[line_end + 2 : line_end + 2 + size]))
            pos = line_end + 2 + size + 2
        body = b"".join(parts)
    elif status in (202, 204, 304) or 100 <= status < 200:
        end, body = pos, b""
    else:
        raise CallError(f"HTTP {status} response without a length (connection close is not supported)")
    del buffer[:end]
    return Response(status, headers, body, time.perf_counter())


class Connection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection carrying one request at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.waiter: asyncio.Future[Response] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # a TCP transport (uvloop's is not an asyncio.Transport subclass)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            try:
                response = parse_response(self.buffer)
            except Exception as exc:
                waiter.set_exception(exc)
                return
            if response is not None:
                waiter.set_result(response)

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(CallError(f"connection lost: {exc}"))

    async def exchange(self, request: bytes) -> Response:
        if self.transport is None:
            raise CallError("connection closed")
        self.waiter = asyncio.get_running_loop().create_future()
        self.transport.write(request)
        return await self.waiter


class Session:
    """One MCP session over a pool of keep-alive connections, one per request in flight.

    Requests are written as bytes and responses parsed by ``parse_response`` above: the
    same few microseconds of client work per call whichever server answers."""

    def __init__(
        self, url: str, concurrency: int, mode: str = "sse", era: str = PROTOCOL, sessionless: bool = False
    ) -> None:
        self.url = url
        self.sessionless = sessionless  # a handshake-era server that keeps no session (SESSIONLESS)
        self.mode = mode
        self.stateless = era != PROTOCOL
        # The stateless era's envelope, the same on every request (a client that has
        # declared no capabilities).
        self.meta = {
            "io.modelcontextprotocol/protocolVersion": era,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
        }
        rest = url.split("://", 1)[1]
        self.authority, _, path = rest.partition("/")
        self.path = "/" + path
        self.host, _, port = self.authority.partition(":")
        self.port = int(port)
        self.headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        if self.stateless:
            # What the stateless era asks of every request: its version, method and name.
            self.headers |= {"mcp-protocol-version": era, "mcp-method": "tools/call", "mcp-name": TOOL[mode]}
        self.content_types: set[str] = set()
        self.idle: list[Connection] = []
        self.all: list[Connection] = []

    async def close(self) -> None:
        for connection in self.all:
            if connection.transport is not None:
                connection.transport.close()
        self.all.clear()
        self.idle.clear()

    async def post(self, body: bytes) -> Response:
        if self.idle:
            connection = self.idle.pop()
        else:
            loop = asyncio.get_running_loop()
            _, connection = await loop.create_connection(Connection, self.host, self.port)
            self.all.append(connection)
        head = "".join(f"{k}: {v}\r\n" for k, v in self.headers.items())
        request = (
            f"POST {self.path} HTTP/1.1\r\nhost: {self.authority}\r\n{head}content-length: {len(body)}\r\n\r\n"
        ).encode("latin-1") + body
        response = await connection.exchange(request)
        if response.headers.get("connection", "").lower() != "close":
            self.idle.append(connection)
        return response

    async def initialize(self) -> Any:
        body = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": PROTOCOL,
                "capabilities": {},
                "clientInfo": CLIENT_INFO,
            },
        }
        response = await self.post(encode(body))
        if response.status != 200:
            raise CallError(f"initialize: HTTP {response.status}: {response.body[:200]!r}")
        session_id = response.headers.get("mcp-session-id")
        message, _ = self._read(response, 0)
        if session_id is None and not self.sessionless:
            raise CallError("initialize: no Mcp-Session-Id")
        result = message["result"]
        self.headers = {**self.headers, "mcp-protocol-version": result["protocolVersion"]}
        if session_id is not None:
            self.headers["mcp-session-id"] = session_id
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        response = await self.post(encode(note))
        if response.status != 202:
            raise CallError(f"notifications/initialized: HTTP {response.status}")
        return result

    def _read(self, response: Response, request_id: int) -> tuple[Any, float]:
        """The response message to ``request_id`` and when it arrived: the JSON body, or
        the matching event of an event stream (the stream is read whole: latency is to
        its end, which for these servers comes right after the response event)."""
        ctype = response.headers.get("content-type", "").split(";")[0].strip()
        self.content_types.add(ctype)
        if ctype == "application/json":
            return decode(response.body), response.arrived
        if ctype != "text/event-stream":
            raise CallError(f"unexpected content-type {ctype!r}")
        buffer = bytearray(response.body)
        for data in sse_events(buffer):
            if not data:
                continue  # priming event or comment
            message = decode(data)
            if isinstance(message, dict) and message.get("id") == request_id and "method" not in message:
                return message, response.arrived
        raise CallError("event stream ended without the response")

    async def call(self, request_id: int, text: str) -> float:
        """One ``tools/call`` of echo; returns the latency in seconds."""
        params: dict[str, Any] = {"name": TOOL[self.mode], "arguments": {"text": text}}
        if self.stateless:
            params["_meta"] = {**self.meta, "progressToken": request_id} if self.mode == "progress" else self.meta
        elif self.mode == "progress":
            params["_meta"] = {"progressToken": request_id}
        body = encode({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})
        start = time.perf_counter()
        response = await self.post(body)
        if response.status != 200:
            raise CallError(f"HTTP {response.status}: {response.body[:200]!r}")
        message, arrived = self._read(response, request_id)
        check(message, request_id, text, self.stateless)
        if self.mode == "progress" and b'"notifications/progress"' not in response.body:
            raise CallError("no progress notification before the result")
        return arrived - start


@dataclass
class Cell:
    server: str
    mode: str
    concurrency: int
    calls: int  # answered correctly
    errors: int
    seconds: float
    rps: float
    p50_ms: float
    p99_ms: float
    server_cpu_us_per_call: float
    server_cpu_pct: float
    loadgen_cpu_pct: float
    server_rss_mib: float
    content_types: list[str] = field(default_factory=list)
    first_error: str | None = None
    timed_out: bool = False


def percentile(ordered: list[float], q: float) -> float:
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def drive(session: Session, first_id: int, count: int, concurrency: int, max_seconds: float) -> dict[str, Any]:
    ids = iter(range(first_id, first_id + count))
    latencies: list[float] = []
    errors = 0
    first_error: str | None = None
    deadline = time.monotonic() + max_seconds
    timed_out = False

    async def worker() -> None:
        nonlocal errors, first_error, timed_out
        for request_id in ids:
            if time.monotonic() > deadline:
                timed_out = True
                return
            try:
                latencies.append(await session.call(request_id, f"hello {request_id}"))
            except Exception as exc:  # counted, first one reported
                errors += 1
                if first_error is None:
                    first_error = f"{type(exc).__name__}: {exc}"

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    seconds = time.perf_counter() - start
    return {
        "latencies": latencies,
        "errors": errors,
        "first_error": first_error,
        "seconds": seconds,
        "timed_out": timed_out,
    }


async def bench_server(
    name: str,
    mode: str,
    scale: int,
    max_seconds: float,
    concurrencies: tuple[int, ...] = CONCURRENCY,
    env: dict[str, str] | None = None,
    era: str = PROTOCOL,
) -> list[Cell]:
    server = ServerProcess(SERVERS[name], mode, env)
    cells = []
    try:
        await server.ready()
        next_id = 1
        headers: dict[str, str] | None = None  # the MCP session's, once initialized
        for concurrency in concurrencies:
            session = Session(server.url, concurrency, mode, era, name in SESSIONLESS)
            try:
                if session.stateless:
                    pass  # nothing to open: every request stands alone
                elif headers is None:
                    await session.initialize()
                    headers = session.headers
                else:
                    session.headers = headers  # the same MCP session over a new pool
                warm = await drive(session, next_id, WARMUP[concurrency] // scale, concurrency, max_seconds)
                next_id += WARMUP[concurrency] // scale
                session.content_types.clear()
                cpu0, own0 = cpu_seconds(server.proc.pid), time.process_time()
                run = await drive(session, next_id, CALLS[concurrency] // scale, concurrency, max_seconds)
                cpu1, own1 = cpu_seconds(server.proc.pid), time.process_time()
                next_id += CALLS[concurrency] // scale
            finally:
                await session.close()
            ordered = sorted(run["latencies"])
            done, seconds = len(ordered), run["seconds"]
            cell = Cell(
                server=name,
                mode=mode,
                concurrency=concurrency,
                calls=done,
                errors=run["errors"] + warm["errors"],
                seconds=seconds,
                rps=done / seconds,
                p50_ms=percentile(ordered, 0.5) * 1e3,
                p99_ms=percentile(ordered, 0.99) * 1e3,
                server_cpu_us_per_call=(cpu1 - cpu0) / max(done, 1) * 1e6,
                server_cpu_pct=(cpu1 - cpu0) / seconds * 100,
                loadgen_cpu_pct=(own1 - own0) / seconds * 100,
                server_rss_mib=rss_mib(server.proc.pid),
                content_types=sorted(session.content_types),
                first_error=run["first_error"] or warm["first_error"],
                timed_out=run["timed_out"],
            )
            cells.append(cell)
            print(f"  {name:<6} {mode:<4} c={concurrency:<3} {cell.rps:8.0f} req/s  errors {cell.errors}", flush=True)
    finally:
        server.stop()
    return cells


async def cold_start(name: str, era: str, env: dict[str, str] | None = None) -> float:
    """Seconds from spawning ``name`` (async mode) to the answer to its first request:
    ``initialize``, or in the stateless era the first ``tools/call``."""
    started = time.perf_counter()
    server = ServerProcess(SERVERS[name], "async", env)
    try:
        while True:  # connect every 5 ms until the server listens
            if server.proc.poll() is not None:
                raise RuntimeError(f"server exited with {server.proc.returncode}")
            if time.perf_counter() - started > 30.0:
                raise RuntimeError("server did not start listening within 30 s")
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", server.port)
            except OSError:
                await asyncio.sleep(0.005)
                continue
            writer.close()
            break
        session = Session(server.url, 1, "async", era, name in SESSIONLESS)
        try:
            if session.stateless:
                await session.call(1, "cold")
            else:
                await session.initialize()
            return time.perf_counter() - started
        finally:
            await session.close()
    finally:
        server.stop()


async def cold_starts(names: list[str], era: str, count: int) -> tuple[dict[str, list[float]], list[str]]:
    """``count`` timed cold starts per server (after one untimed each), taking turns: the
    milliseconds of each, and the failures."""
    found: dict[str, list[float]] = {name: [] for name in names}
    errors: list[str] = []
    # A private bytecode cache, written by the untimed first spawn, puts every server on the
    # same footing: none pays for compiling modules whose .pyc files are stale or missing
    # (PYTHONDONTWRITEBYTECODE set while sources are edited); nothing is written beside them.
    with tempfile.TemporaryDirectory(prefix="mcpgen-bench-pycache-") as pycache:
        env = {"PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": pycache}  # empty: unset for Python
        for round_ in range(count + 1):
            for name in names:
                try:
                    seconds = await cold_start(name, era, env)
                except Exception as exc:  # reported, and the test fails on it
                    errors.append(f"{name}: {type(exc).__name__}: {exc}")
                    continue
                if round_ > 0:
                    found[name].append(seconds * 1000)
    return found, errors


def cold_table(found: dict[str, list[float]]) -> str:
    lines = [
        "cold start, spawn to first answer (ms):   best   median   median mcpgen÷raw (target <= 1.3x)"
        f"   mcpgen÷{TS} (target <= {TS_TARGETS['cold']:g}x)"
    ]
    raw, ts = found.get("raw"), found.get(TS)
    for name, ms in found.items():
        if not ms:
            continue
        share = vs_ts = ""
        if name == "mcpgen" and raw:
            share = f"{statistics.median(ms) / statistics.median(raw):.2f}x"
        if name == "mcpgen" and ts:
            ratio = statistics.median(ms) / statistics.median(ts)
            vs_ts = f"{ratio:.2f}x" + (" !" if ratio > TS_TARGETS["cold"] else "")
        lines.append(f"  {name:<38} {min(ms):6.1f}  {statistics.median(ms):7.1f}   {share:>44}   {vs_ts:>24}")
    return "\n".join(lines)


# ---------------------------------------------------------------- report


def table(cells: list[Cell]) -> str:
    head = (
        "server",
        "mode",
        "conc",
        "calls",
        "errors",
        "req/s",
        "p50 ms",
        "p99 ms",
        "srv CPU µs/call",
        "srv CPU %",
        "gen CPU %",
        "srv RSS MiB",
        "response",
    )
    rows = [head]
    for c in cells:
        rows.append(
            (
                c.server,
                c.mode,
                str(c.concurrency),
                str(c.calls),
                str(c.errors),
                f"{c.rps:.0f}",
                f"{c.p50_ms:.2f}",
                f"{c.p99_ms:.2f}",
                f"{c.server_cpu_us_per_call:.0f}",
                f"{c.server_cpu_pct:.0f}",
                f"{c.loadgen_cpu_pct:.0f}",
                f"{c.server_rss_mib:.0f}",
                ",".join(t.split("/")[1] for t in c.content_types) + (" TIMED OUT" if c.timed_out else ""),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = []
    for n, r in enumerate(rows):
        lines.append(
            "  ".join(
                v.ljust(w) if i in (0, 1, 12) else v.rjust(w) for i, (v, w) in enumerate(zip(r, widths, strict=True))
            )
        )
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


# What mcpgen is judged on in the stateless era with 32 in flight: req/s at least this many
# times the SDK's, and at least this share of the raw server's.
STATELESS_TARGETS = {"vs_sdk": 10.0, "of_raw": 0.8}
# ... and against the TypeScript SDK with async def tools (issue 28), in both eras: req/s
# mcpgen÷TS at 1 and at 32 in flight; cold start and RSS mcpgen÷TS at most these.
TS_TARGETS: dict[Any, float] = {1: 1.3, 32: 7.0, "cold": 0.5, "rss": 0.3}


def ratios(cells: list[Cell], era: str = PROTOCOL) -> str:
    by = {(c.server, c.mode, c.concurrency): c for c in cells}
    judged = era != PROTOCOL
    lines = [
        f"mode      conc  req/s mcpgen÷SDK  req/s mcpgen÷{TS}  p50 SDK÷mcpgen  p50 {TS}÷mcpgen"
        f"  srv CPU/call SDK÷mcpgen  srv CPU/call {TS}÷mcpgen  mcpgen % of raw ceiling"
    ]
    for mode in MODES:
        for conc in CONCURRENCY:
            m, s, r, t = (by.get((name, mode, conc)) for name in ("mcpgen", "SDK", "raw", TS))
            if m is None or (s is None and t is None):
                continue
            ceiling = f"{m.rps / r.rps * 100:.0f}%" if r is not None and r.rps else "-"
            vs_sdk = times(m.rps, s.rps) if s is not None else "-"
            vs_ts = times(m.rps, t.rps) if t is not None else "-"
            if judged and conc == 32 and s is not None:
                vs_sdk += " !" if m.rps < STATELESS_TARGETS["vs_sdk"] * s.rps else "  "
                if r is not None:
                    ceiling += " !" if m.rps < STATELESS_TARGETS["of_raw"] * r.rps else "  "
            if mode == "async" and t is not None:
                vs_ts += " !" if m.rps < TS_TARGETS[conc] * t.rps else "  "
            lines.append(
                f"{mode:<8}  {conc:>4}  {vs_sdk:>17}  {vs_ts:>20}  "
                f"{times(s.p50_ms, m.p50_ms) if s else '-':>14}  {times(t.p50_ms, m.p50_ms) if t else '-':>17}  "
                f"{times(s.server_cpu_us_per_call, m.server_cpu_us_per_call) if s else '-':>23}  "
                f"{times(t.server_cpu_us_per_call, m.server_cpu_us_per_call) if t else '-':>26}  {ceiling:>23}"
            )
    m, t = by.get(("mcpgen", "async", 32)), by.get((TS, "async", 32))
    if m is not None and t is not None and t.server_rss_mib:
        share = m.server_rss_mib / t.server_rss_mib
        lines.append(
            f"RSS after the async c=32 run: mcpgen {m.server_rss_mib:.0f} MiB, {TS} {t.server_rss_mib:.0f} MiB: "
            f"mcpgen÷{TS} {share:.2f}x"
            + (" !" if share > TS_TARGETS["rss"] else "")
            + f" (target <= {TS_TARGETS['rss']:g}x)"
        )
    if judged:
        lines.append(
            f"targets with 32 in flight in this era: mcpgen÷SDK >= {STATELESS_TARGETS['vs_sdk']:g}x, "
            f"mcpgen >= {STATELESS_TARGETS['of_raw']:.0%} of raw; '!' marks a miss"
        )
    lines.append(
        f"targets against {TS} (async mode, both eras): req/s mcpgen÷{TS} >= {TS_TARGETS[32]:g}x with 32 in flight,"
        f" >= {TS_TARGETS[1]:g}x with 1; '!' marks a miss"
    )
    return "\n".join(lines)


def times(a: float, b: float) -> str:
    """a ÷ b as a ratio; "-" when b is zero (a short run can use less CPU than one clock
    tick, which /proc reports as none at all)."""
    return f"{a / b:.2f}x" if b else "-"


def hot_spots(path: str, top: int = 20) -> str:
    """mcpgen's hot spots in a cProfile dump, as % of the server's busy time (profiled
    time minus time blocked in epoll), plus own time grouped by package."""
    import pstats

    stats = pstats.Stats(path)
    entries = stats.stats  # type: ignore[attr-defined]
    total = stats.total_tt  # type: ignore[attr-defined]
    idle = sum(v[2] for (_, _, fn), v in entries.items() if fn == "<method 'poll' of 'select.epoll' objects>")
    busy = total - idle

    def where(file: str, line: int, fn: str) -> str:
        return f"{Path(file).name}:{line} {fn}" if file != "~" else fn

    lines = [
        f"profile {path}: {total:.2f} s profiled, {idle:.2f} s blocked in epoll, {busy:.2f} s busy; "
        "% of busy time (cProfile inflates Python-call-heavy code)"
    ]
    groups: dict[str, float] = {}
    for (file, _, fn), (_, _, tt, _, _) in entries.items():
        if fn == "<method 'poll' of 'select.epoll' objects>":
            continue
        if "mcpgen/" in file:
            key = "mcpgen/" + file.split("mcpgen/", 1)[1].split("/")[0]
        elif "site-packages/" in file:
            key = file.split("site-packages/", 1)[1].split("/")[0]
        elif file == "~":
            key = "builtins (C calls: socket, msgspec, ...)"
        else:
            key = "stdlib " + ("asyncio" if "/asyncio/" in file else Path(file).stem)
        groups[key] = groups.get(key, 0.0) + tt
    lines.append("own time by package:")
    for key, tt in sorted(groups.items(), key=lambda kv: -kv[1])[:12]:
        lines.append(f"  {tt / busy * 100:5.1f}%  {key}")
    lines.append("mcpgen functions by cumulative time (cum %, own %, calls):")
    own = [
        (ct, tt, nc, where(file, line, fn))
        for (file, line, fn), (_, nc, tt, ct, _) in entries.items()
        if "mcpgen/runtime/" in file or "mcpgen/generated/" in file
    ]
    for ct, tt, nc, name in sorted(own, reverse=True)[:top]:
        if not name.endswith(" run") or nc > 1:  # skip Server.run (everything)
            lines.append(f"  {ct / busy * 100:5.1f}  {tt / busy * 100:5.1f}  {nc:7d}  {name}")
    lines.append("any code by own time (own %, calls):")
    every = sorted(
        (tt, nc, where(file, line, fn))
        for (file, line, fn), (_, nc, tt, _, _) in entries.items()
        if fn != "<method 'poll' of 'select.epoll' objects>"
    )[::-1]
    for tt, nc, name in every[:top]:
        lines.append(f"  {tt / busy * 100:5.1f}  {nc:7d}  {name}")
    return "\n".join(lines)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="divide every count by 10 (same as --scale 10)")
    parser.add_argument("--scale", type=int, default=1, help="divide every count by this (default 1)")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    parser.add_argument(
        "--servers", default=",".join(SERVERS), help=f"comma-separated subset of {','.join(SERVERS)} (all by default)"
    )
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated subset of {','.join(MODES)}")
    parser.add_argument("--max-seconds", type=float, default=120.0, help="cap on each measured run (default 120)")
    parser.add_argument(
        "--profile", metavar="PATH", help="profile mcpgen (c=32, the first of --modes only) and print its hot spots"
    )
    parser.add_argument(
        "--era",
        choices=ERAS,
        default=PROTOCOL,
        help="the protocol revision spoken: 2025-11-25 (initialize and a session, the default) "
        "or 2026-07-28 (stateless: _meta and headers on every request)",
    )
    parser.add_argument(
        "--cold-starts",
        type=int,
        default=COLD_STARTS,
        metavar="N",
        help=f"timed cold starts per server (default {COLD_STARTS}; 0 skips them)",
    )
    parser.add_argument(
        "--no-pin", action="store_true", help="leave the server and the load generator wherever the kernel puts them"
    )
    args = parser.parse_args()
    scale = 10 if args.quick else max(1, args.scale)
    global SERVER_CPUS
    split = None if args.no_pin else split_cpus()
    if split is not None:
        os.sched_setaffinity(0, split[0])  # the load generator
        SERVER_CPUS = split[1]
    pinning = (
        f"load generator on CPU {','.join(map(str, sorted(split[0])))}, server on CPU {min(split[1])}"
        if split is not None
        else "not pinned"
    )

    info = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "mcpgen": version("mcpgen"),
        "mcp": version("mcp"),
        "typescript sdk": ts_peer.version() if TS in args.servers.split(",") else "not run",
        "uvicorn": version("uvicorn"),
        "httptools": installed("httptools"),
        "uvloop": installed("uvloop"),
        "protocol": args.era,
        "calls": {c: CALLS[c] // scale for c in CONCURRENCY},
        "pinning": pinning,
        "warmup": {c: WARMUP[c] // scale for c in CONCURRENCY},
    }
    print(
        f"Streamable HTTP tools/call echo, 127.0.0.1; Python {info['python']}, {info['cpus']} CPUs; mcpgen "
        f"{info['mcpgen']}, mcp {info['mcp']}, TypeScript SDK: {info['typescript sdk']}, uvicorn {info['uvicorn']} "
        f"(1 worker; httptools {info['httptools']}, uvloop {info['uvloop']}); "
        f"calls c=1: {info['calls'][1]}, c=32: {info['calls'][32]} "
        f"(after {info['warmup'][1]}/{info['warmup'][32]} warm-up); "
        f"protocol {args.era}; {pinning}; load average {os.getloadavg()[0]:.2f} at the start",
        flush=True,
    )

    if args.profile:
        path = str(Path(args.profile).resolve())
        cells = await bench_server(
            "mcpgen", args.modes.split(",")[0], scale, args.max_seconds, (32,), {"MCPGEN_BENCH_PROFILE": path}, args.era
        )
        print(table(cells))
        print()
        print(hot_spots(path))
        return

    started = time.monotonic()
    cells: list[Cell] = []
    servers = [s for s in SERVERS if s in args.servers.split(",")]
    for mode in [m for m in MODES if m in args.modes.split(",")]:
        for name in servers:
            if name == "raw" and mode in ("progress", "thread"):
                continue  # the fake server has no progress to send, and no threads
            cells.extend(await bench_server(name, mode, scale, args.max_seconds, era=args.era))
    cold: dict[str, list[float]] = {}
    cold_errors: list[str] = []
    if args.cold_starts > 0:
        print(f"cold start: 1 untimed + {args.cold_starts} timed spawns per server, taking turns", flush=True)
        cold, cold_errors = await cold_starts(servers, args.era, args.cold_starts)
    print()
    print(table(cells))
    print()
    print(ratios(cells, args.era))
    if cold:
        print()
        print(cold_table(cold))
    errors = [c for c in cells if c.errors]
    for c in errors:
        print(f"errors: {c.server} {c.mode} c={c.concurrency}: {c.errors}; first: {c.first_error}")
    for problem in cold_errors:
        print(f"errors: cold start: {problem}")
    print(
        f"\n(total {time.monotonic() - started:.0f} s, load average {os.getloadavg()[0]:.2f} at the end; {pinning}; "
        "the load generator runs in this process: the raw rows are the most it can drive here)"
    )
    if args.json:
        report = {
            "info": info,
            "cells": [asdict(c) for c in cells],
            "cold_start_ms": cold,
            "cold_start_errors": cold_errors,
        }
        Path(args.json).write_text(json.dumps(report, indent=2))


def installed(name: str) -> str:
    try:
        return version(name)
    except Exception:
        return "not installed"


if __name__ == "__main__":
    try:
        import uvloop
    except ImportError:
        asyncio.run(main())
    else:
        uvloop.run(main())
