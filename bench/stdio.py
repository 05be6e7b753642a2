"""``tools/call`` round trips over stdio: mcpgen next to the official MCP SDKs.

Five servers expose the same tools, ``echo(text: str) -> str`` in three kinds
(``echo_async``, ``echo_threaded``, ``echo``; see ``--tool``), and are served over stdio:

* ``mcpgen``: ``mcpgen.Server`` (``bench/servers/mcpgen_echo.py``): ``echo_async`` is an
  ``async def`` (what a user writes: run in a task of its own), ``echo_threaded`` a plain
  ``def`` (run in the thread pool, the default for a ``def``), ``echo`` a plain ``def``
  declared ``blocking=False`` (answered on the spot, on the event loop);
* ``SDK low``: the Python SDK's low-level ``mcp.server.lowlevel.Server`` with hand-written
  ``tools/list`` and ``tools/call`` handlers (``bench/servers/sdk_lowlevel_echo.py``);
* ``SDK high``: the Python SDK's high-level ``mcp.server.mcpserver.MCPServer``, formerly
  FastMCP (``bench/servers/sdk_highlevel_echo.py``);
* ``raw``: a hand-written minimal asyncio server that fakes just enough MCP
  (``bench/servers/raw_stdio.py``): the practical limit of a Python server on this box;
* ``TS SDK``: the TypeScript SDK v2 (``@modelcontextprotocol/server``, ``serveStdio``) on
  Node (``bench/servers/ts/stdio.mjs``; the Node project is installed with ``npm ci`` on
  first use, see ``bench/ts_peer.py``). Its three tools are the same async handler.

One raw client, written below, drives them all: it spawns the server as a subprocess and
speaks newline-delimited JSON-RPC over its stdin/stdout (asyncio subprocess; a reader task
matches each response to its request id and resolves that request's future).

``--era`` picks the protocol era the client speaks. ``2025-11-25`` (the default): the
``initialize`` handshake opens each connection. ``2026-07-28``, the stateless era: there
is no handshake; every request carries the ``_meta`` envelope (protocol version, client
capabilities, client info), and the first request (a ``tools/call`` like the others) is
what "opens" a connection; every result must say ``"resultType": "complete"``. The SDK's
servers serve that era through the same ``Server.run`` (its dual-era loop: the first
request's ``_meta`` picks the era), mcpgen's through its stateless front, the raw one by
adding ``resultType`` and its identity to each result. After opening and a warm-up, it
measures:

1. throughput and latency: requests/s and p50/p99 round-trip latency with 1 request in
   flight (sequential) and with 64 in flight (a window of 64 outstanding requests, refilled
   as each response arrives), for a fixed number of calls. The three servers run at the same
   time and take turns: each phase is cut into 5 slices, run server after server, so that a
   change in machine load hits them alike;
2. cold start: wall time from spawning the interpreter to receiving the first answer (to
   ``initialize``, or in the stateless era to the first ``tools/call``), best and median
   of 5 spawns (after one untimed spawn that warms the caches;
   the servers take turns). The servers cache bytecode in a private temporary directory
   (``PYTHONPYCACHEPREFIX``), so that stale ``.pyc`` files penalize none of them;
3. memory: the server process's RSS (``VmRSS`` in ``/proc/<pid>/status``) after the
   first answer and after all the calls above (warm-up included: 26,000 calls, of
   which 21,000 with 64 in flight), and its peak (``VmHWM``).

``--tool`` picks the echo every call goes to: ``async`` (``echo_async``, the default),
``thread`` (``echo_threaded``; ``--threaded`` says the same) or ``now`` (``echo``). The
Python SDK's high-level server runs every synchronous tool in a worker thread anyway; the
low-level one and the TypeScript one answer every name from their async handler.
``--variants`` adds mcpgen's server once more per other tool kind (``mcpgen now``,
``mcpgen thread``, ...), measured side by side with the rest: the cost of each path.
``--servers`` runs a subset.

Every response is checked: the id is one we sent, a ``result`` is present, it is not an
error, its first content block is the text we sent, and in the stateless era its
``resultType`` is ``complete``. Failures are counted and printed.
Latency runs from writing the request to reading the chunk holding its response.

Run from the repository root with the project's venv active (Linux, for ``/proc``)::

    python bench/stdio.py                     # 5,000 sequential + 20,000 pipelined calls (~4 min)
    python bench/stdio.py --quick             # every count divided by 10
    python bench/stdio.py --tool now          # the blocking=False echo (--tool thread: the thread pool)
    python bench/stdio.py --variants          # mcpgen's three tool kinds side by side with the others
    python bench/stdio.py --era 2026-07-28    # the stateless era: no handshake, _meta on every call
    python bench/stdio.py --json stdio.json   # also write the numbers as JSON

To profile the mcpgen server, set ``MCPGEN_BENCH_PROFILE=/tmp/mcpgen-{pid}.prof``: every
mcpgen spawn writes a cProfile dump there (see ``bench/servers/mcpgen_echo.py``); the
largest one is the throughput session's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

import msgspec
import ts_peer

HERE = Path(__file__).resolve().parent
SERVERS: dict[str, Path] = {
    "mcpgen": HERE / "servers" / "mcpgen_echo.py",
    "SDK low": HERE / "servers" / "sdk_lowlevel_echo.py",
    "SDK high": HERE / "servers" / "sdk_highlevel_echo.py",
    "raw": HERE / "servers" / "raw_stdio.py",
    "TS SDK": HERE / "servers" / "ts" / "stdio.mjs",
}
SDKS = ("SDK low", "SDK high")
TS = "TS SDK"
# --tool: the echo every call goes to, by how the server runs it.
TOOLS = {"async": "echo_async", "thread": "echo_threaded", "now": "echo"}
# --variants: mcpgen's server once more per tool kind, side by side with the others.
VARIANT_TOOLS = {f"mcpgen {kind}": name.encode() for kind, name in TOOLS.items()}
ERAS = ("2025-11-25", "2026-07-28")  # the handshake era's and the stateless era's revision
PROTOCOL_VERSION = "2025-11-25"
WINDOW = 64
COLD_STARTS = 5
ROUNDS = 5  # each phase is cut in slices; the servers take turns, so drift hits them alike
READ_CHUNK = 1 << 16
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
STDERR_LINES_KEPT = 20
MAX_ERRORS_SHOWN = 5
HANDSHAKE_TIMEOUT = 30.0  # seconds for spawn + initialize (the SDK takes seconds on a busy machine)
PHASE_TIMEOUT = 180.0  # seconds for one measured phase
# Targets mcpgen is judged on: advantage over the SDK (see ``advantage`` for the direction).
TARGETS = {"seq_rps": 4.0, "win_rps": 30.0, "cold_median_ms": 4.0, "rss_mib": 2.0}
# ... and its share of the raw server's (mcpgen ÷ raw for rates, raw ÷ mcpgen for costs):
# 64 in flight at >= 0.6 of the raw throughput, cold start no more than 1.3x the raw one's.
RAW_TARGETS = {"win_rps": 0.6, "cold_median_ms": 1 / 1.3}
# ... and over the TypeScript SDK's server (issue 28): 1.3x its rate with 1 in flight, 3x
# with 64, half its cold start, under 0.3x its memory.
TS_TARGETS = {"seq_rps": 1.3, "win_rps": 3.0, "cold_median_ms": 2.0, "rss_mib": 1 / 0.3}

CALL = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":{"text":%s}}}\n'
# The stateless era's envelope, the same on every request (what a client sends that has
# declared no capabilities).
STATELESS_META = (
    b'"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
    b'"io.modelcontextprotocol/clientCapabilities":{},'
    b'"io.modelcontextprotocol/clientInfo":{"name":"bench-stdio","version":"1.0"}}'
)
STATELESS_CALL = (
    b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":{"text":%s},'
    + STATELESS_META.replace(b"%", b"%%")
    + b"}}\n"
)
INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'


# --- Wire types (what the client checks) --------------------------------------------------


class Response(msgspec.Struct):
    """Any frame from the server; ``result`` stays raw until we know what it answers."""

    jsonrpc: str | None = None
    id: int | str | None = None
    method: str | None = None
    result: msgspec.Raw = msgspec.Raw()  # empty: absent
    error: Any = None


class Content(msgspec.Struct):
    type: str
    text: str | None = None


class ToolResult(msgspec.Struct, rename="camel"):
    content: list[Content]
    is_error: bool = False
    result_type: str | None = None  # required in the stateless era


_response = msgspec.json.Decoder(Response)
_tool_result = msgspec.json.Decoder(ToolResult)


class CallFailed(Exception):
    """A request whose response was missing, malformed or wrong."""


@dataclass
class Pending:
    future: asyncio.Future[Any]
    sent_at: float
    expected: str | None  # the echo text, or None for a request whose raw result we want


# --- The client -----------------------------------------------------------------------------


class RawClient:
    """One server subprocess spoken to in raw newline-delimited JSON-RPC."""

    tool = b"echo_async"  # the tool every call goes to (``--tool``)
    era = PROTOCOL_VERSION  # the protocol revision spoken (``--era``)

    def __init__(self, name: str, process: asyncio.subprocess.Process, spawned_at: float) -> None:
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        self.name = name
        self.process = process
        self.spawned_at = spawned_at
        self.errors: list[str] = []  # problems not tied to one awaited request
        self.stderr: deque[str] = deque(maxlen=STDERR_LINES_KEPT)
        self.closed = False
        self._stdin = process.stdin
        self._pending: dict[int, Pending] = {}
        self._next_id = 0
        self._loop = asyncio.get_running_loop()
        self._reader = self._loop.create_task(self._read(process.stdout))
        self._stderr_task = self._loop.create_task(self._drain_stderr(process.stderr))

    @classmethod
    async def spawn(cls, name: str, script: Path, env: dict[str, str] | None = None) -> RawClient:
        """Start ``script`` with this interpreter; ``env`` is its whole environment."""
        # The TypeScript SDK's server runs on Node (installed on first use: ts_peer).
        argv = ts_peer.node_command(script.name) if script.suffix == ".mjs" else [sys.executable, str(script)]
        spawned_at = time.perf_counter()
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
        client = cls(name, process, spawned_at)
        tool = VARIANT_TOOLS.get(name)
        if tool is not None:
            client.tool = tool
        return client

    # receive side

    async def _read(self, stdout: asyncio.StreamReader) -> None:
        buffer = b""
        try:
            while True:
                chunk = await stdout.read(READ_CHUNK)
                if not chunk:
                    break
                now = time.perf_counter()
                *lines, buffer = (buffer + chunk).split(b"\n")
                for line in lines:
                    if line.strip():
                        self._on_line(line, now)
        finally:
            self.closed = True
            if buffer.strip():
                self.errors.append(f"unterminated last frame: {buffer[:200]!r}")
            for pending in self._pending.values():
                if not pending.future.done():
                    pending.future.set_exception(CallFailed("the server closed stdout before answering"))
            self._pending.clear()

    def _on_line(self, line: bytes, now: float) -> None:
        try:
            frame = _response.decode(line)
        except msgspec.DecodeError as exc:
            self._fail_undecodable(line, f"undecodable frame ({exc}): {line[:200]!r}")
            return
        if frame.method is not None:
            if frame.id is not None:
                self.errors.append(f"unexpected server-to-client request {frame.method}")
            return  # a notification: not part of the benchmark, ignored
        if frame.jsonrpc != "2.0":
            self.errors.append(f"frame without jsonrpc 2.0: {line[:200]!r}")
        pending = self._pending.pop(frame.id, None) if isinstance(frame.id, int) else None
        if pending is None:
            self.errors.append(f"response with an unknown id {frame.id!r}: {line[:200]!r}")
            return
        if pending.future.done():
            return  # its waiter gave up (timeout)
        if frame.error is not None or not frame.result:
            pending.future.set_exception(CallFailed(f"id {frame.id}: no result: {line[:200]!r}"))
        elif pending.expected is None:
            pending.future.set_result(frame.result)
        else:
            problem = _check_echo(frame.result, pending.expected, self.era != PROTOCOL_VERSION)
            if problem is None:
                pending.future.set_result(now - pending.sent_at)
            else:
                pending.future.set_exception(CallFailed(f"id {frame.id}: {problem}"))

    def _fail_undecodable(self, line: bytes, problem: str) -> None:
        """Fail the request a malformed frame answers, if its id can be read at all."""
        try:
            rid = msgspec.json.decode(line).get("id")
        except (msgspec.DecodeError, AttributeError):
            rid = None
        pending = self._pending.pop(rid, None) if isinstance(rid, int) else None
        if pending is not None and not pending.future.done():
            pending.future.set_exception(CallFailed(problem))
        else:
            self.errors.append(problem)

    async def _drain_stderr(self, stderr: asyncio.StreamReader) -> None:
        while line := await stderr.readline():
            self.stderr.append(line.decode(errors="replace").rstrip())

    # send side

    def _send(self, frame: bytes, expected: str | None, rid: int) -> asyncio.Future[Any]:
        future: asyncio.Future[Any] = self._loop.create_future()
        if self.closed:
            future.set_exception(CallFailed("the server has exited"))
            return future
        self._pending[rid] = Pending(future, time.perf_counter(), expected)
        self._stdin.write(frame)
        return future

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def call_echo(self) -> asyncio.Future[float]:
        """Send ``tools/call echo``; the future gets the round-trip latency in seconds."""
        rid = self._new_id()
        text = f"echo #{rid} héllo"
        template = CALL if self.era == PROTOCOL_VERSION else STATELESS_CALL
        return self._send(template % (rid, self.tool, msgspec.json.encode(text)), text, rid)

    async def open(self) -> None:
        """What starts a connection: the handshake, or in the stateless era the first call."""
        if self.era == PROTOCOL_VERSION:
            await self.initialize()
        else:
            await self.call_echo()

    async def initialize(self) -> None:
        """The handshake: ``initialize``, its response, then ``notifications/initialized``."""
        rid = self._new_id()
        request = {
            "jsonrpc": "2.0",
            "id": rid,
            "method": "initialize",
            "params": {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "bench-stdio", "version": "1.0"},
            },
        }
        raw = await self._send(msgspec.json.encode(request) + b"\n", None, rid)
        result = msgspec.json.decode(raw)
        if not isinstance(result, dict) or result.get("protocolVersion") != PROTOCOL_VERSION:
            raise CallFailed(f"unexpected initialize result: {bytes(raw)[:200]!r}")
        self._stdin.write(INITIALIZED)
        await self._stdin.drain()

    # process

    def memory_kib(self) -> dict[str, int]:
        """VmRSS and VmHWM (peak RSS) of the server process, in KiB."""
        found: dict[str, int] = {}
        with open(f"/proc/{self.process.pid}/status", encoding="ascii") as status:
            for line in status:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    found[key] = int(value.split()[0])
        return found

    def cpu_seconds(self) -> float:
        """User plus system CPU time of the server process so far (``/proc/<pid>/stat``):
        a measure of its own cost per call that other load on the machine skews less than
        its rate (cache and frequency effects remain)."""
        try:
            raw = Path(f"/proc/{self.process.pid}/stat").read_text()
        except OSError:
            return 0.0
        fields = raw[raw.rindex(")") + 2 :].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS

    async def close(self) -> None:
        """Close stdin and wait for the server to exit; terminate, then kill, if it will not."""
        try:
            self._stdin.close()
        except (ConnectionError, OSError):
            pass
        for stop in (None, self.process.terminate, self.process.kill):
            if self.process.returncode is not None:
                break
            if stop is not None:
                try:
                    stop()
                except ProcessLookupError:
                    break
            try:
                await asyncio.wait_for(self.process.wait(), 5.0)
            except TimeoutError:
                continue
        await asyncio.wait([self._reader, self._stderr_task], timeout=2.0)


def _check_echo(raw: msgspec.Raw, expected: str, stateless: bool) -> str | None:
    """Why a ``tools/call`` result is not the echo of ``expected`` (with the stateless
    era's ``resultType`` when ``stateless``), or None if it is."""
    try:
        result = _tool_result.decode(raw)
    except msgspec.DecodeError as exc:
        return f"not a CallToolResult ({exc}): {bytes(raw)[:200]!r}"
    if result.is_error:
        return f"isError: {bytes(raw)[:200]!r}"
    if not result.content or result.content[0].type != "text" or result.content[0].text != expected:
        return f"wrong echo, expected {expected!r}: {bytes(raw)[:200]!r}"
    if stateless and result.result_type != "complete":
        return f"resultType is not complete: {bytes(raw)[:200]!r}"
    return None


def describe(exc: BaseException) -> str:
    if isinstance(exc, asyncio.TimeoutError):
        return f"no first answer within {HANDSHAKE_TIMEOUT:g} s"
    return f"{type(exc).__name__}: {exc}"


# --- Measurements ---------------------------------------------------------------------------


@dataclass
class Phase:
    """One fixed-count run of calls."""

    in_flight: int
    calls: int
    seconds: float = 0.0
    server_cpu: float = 0.0  # seconds of the server process's CPU time (user + system)
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def record(self, future: asyncio.Future[float]) -> None:
        exc = future.exception()
        if exc is None:
            self.latencies.append(future.result())
        else:
            self.errors.append(str(exc))

    def summary(self) -> dict[str, Any]:
        ordered = sorted(self.latencies)
        return {
            "in_flight": self.in_flight,
            "calls": self.calls,
            "ok": len(ordered),
            "errors": len(self.errors),
            "seconds": self.seconds,
            "rps": len(ordered) / self.seconds if self.seconds > 0 and ordered else None,
            "p50_ms": percentile(ordered, 50),
            "p99_ms": percentile(ordered, 99),
            "server_cpu_us_per_call": self.server_cpu / len(ordered) * 1e6 if ordered else None,
        }


def percentile(ordered: list[float], pct: float) -> float | None:
    """Nearest-rank percentile of sorted seconds, in milliseconds."""
    if not ordered:
        return None
    rank = max(1, -(-len(ordered) * pct // 100))  # ceil
    return ordered[int(rank) - 1] * 1000


async def run_calls(client: RawClient, calls: int, phase: Phase) -> None:
    """``calls`` echo calls keeping ``phase.in_flight`` of them outstanding until the last;
    adds their latencies, errors and elapsed time to ``phase``."""
    loop = asyncio.get_running_loop()
    finished: asyncio.Future[None] = loop.create_future()
    sent = done = 0

    def send_next() -> None:
        nonlocal sent
        sent += 1
        client.call_echo().add_done_callback(on_done)

    def on_done(future: asyncio.Future[float]) -> None:
        nonlocal done
        done += 1
        phase.record(future)
        if sent < calls and not client.closed:
            send_next()
        elif done == sent and not finished.done():
            finished.set_result(None)

    cpu = client.cpu_seconds()
    started = time.perf_counter()
    for _ in range(min(phase.in_flight, calls)):
        send_next()
    try:
        await asyncio.wait_for(asyncio.shield(finished), PHASE_TIMEOUT)
    except TimeoutError:
        phase.errors.append(f"timed out after {PHASE_TIMEOUT:g} s with {sent - done} calls unanswered")
    phase.seconds += time.perf_counter() - started
    phase.server_cpu += client.cpu_seconds() - cpu


@dataclass
class ServerResult:
    name: str
    phases: list[dict[str, Any]] = field(default_factory=list)
    calls_before_rss: int = 0
    rss_kib: int | None = None
    peak_rss_kib: int | None = None
    idle_rss_kib: int | None = None
    cold_start_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    stderr_tail: list[str] = field(default_factory=list)

    def phase(self, in_flight: int) -> dict[str, Any]:
        return next((p for p in self.phases if p["in_flight"] == in_flight), {})


async def start_session(name: str, env: dict[str, str], result: ServerResult) -> RawClient | None:
    """Spawn and open a server; None (and an error recorded) if that fails."""
    client = await RawClient.spawn(name, SERVERS[name], env)
    try:
        await asyncio.wait_for(client.open(), HANDSHAKE_TIMEOUT)
        result.idle_rss_kib = client.memory_kib().get("VmRSS")
        return client
    except (TimeoutError, CallFailed, OSError) as exc:
        result.errors.append(f"session failed: {describe(exc)}")
        await end_session(client, result)
        return None


async def end_session(client: RawClient, result: ServerResult) -> None:
    await client.close()
    result.errors += client.errors
    result.stderr_tail = list(client.stderr)


async def throughput(
    counts: dict[str, int], env: dict[str, str], results: dict[str, ServerResult], progress: Callable[[str], None]
) -> None:
    """Both throughput phases on all servers at once, taking turns in ``ROUNDS`` slices, then RSS."""
    clients: dict[str, RawClient] = {}
    # One spawn of each script first, untimed: it writes the private bytecode cache, so
    # that no server's memory figures include compiling its modules (the first spawn of a
    # Python server holds ~6 MiB more for the rest of its life).
    for script in dict.fromkeys(SERVERS.values()):
        name = next(n for n, s in SERVERS.items() if s == script)
        try:
            await cold_start(name, env)
        except (TimeoutError, CallFailed, OSError) as exc:
            results[name].errors.append(f"first spawn: {describe(exc)}")
    try:
        for name in SERVERS:
            client = await start_session(name, env, results[name])
            if client is not None:
                clients[name] = client
        for name, client in clients.items():
            warmup = Phase(WINDOW, counts["warmup"])
            await run_calls(client, counts["warmup"], warmup)
            results[name].errors += [f"warm-up: {e}" for e in warmup.errors]
        for in_flight, total in ((1, counts["sequential"]), (WINDOW, counts["pipelined"])):
            progress(f"{total:,} calls with {in_flight} in flight, servers taking turns in {ROUNDS} slices")
            phases = {name: Phase(in_flight, total) for name in clients}
            for round_ in range(ROUNDS):
                calls = total // ROUNDS + (1 if round_ < total % ROUNDS else 0)
                for name, client in clients.items():
                    await run_calls(client, calls, phases[name])
            for name, phase in phases.items():
                results[name].phases.append(phase.summary())
                results[name].errors += [f"{in_flight} in flight: {e}" for e in phase.errors]
        for name, client in clients.items():
            memory = client.memory_kib()
            results[name].rss_kib, results[name].peak_rss_kib = memory.get("VmRSS"), memory.get("VmHWM")
            results[name].calls_before_rss = sum(counts.values())
    finally:
        for name, client in clients.items():
            await end_session(client, results[name])


async def cold_start(name: str, env: dict[str, str]) -> float:
    """Seconds from spawning the server to reading its first answer (``initialize``, or
    in the stateless era the first ``tools/call``)."""
    client = await RawClient.spawn(name, SERVERS[name], env)
    try:
        await asyncio.wait_for(client.open(), HANDSHAKE_TIMEOUT)
        elapsed = time.perf_counter() - client.spawned_at
    finally:
        await client.close()
    if client.errors:
        raise CallFailed("; ".join(client.errors))
    return elapsed


def server_environment(pycache: str) -> dict[str, str]:
    """The servers' environment: ours, with bytecode cached under ``pycache``.

    A private cache, written by the first spawn of each server, puts every server on the
    same footing for cold start: none pays for compiling modules whose ``.pyc`` files are
    stale or missing (for instance with ``PYTHONDONTWRITEBYTECODE`` set while the sources
    are being edited), and nothing is written next to the sources.
    """
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = pycache
    return env


async def measure(
    counts: dict[str, int], env: dict[str, str], progress: Callable[[str], None]
) -> dict[str, ServerResult]:
    results = {name: ServerResult(name) for name in SERVERS}
    await throughput(counts, env, results, progress)
    progress(f"cold start: 1 untimed + {COLD_STARTS} timed spawns per server, taking turns")
    for round_ in range(COLD_STARTS + 1):
        for name in SERVERS:
            try:
                seconds = await cold_start(name, env)
            except (TimeoutError, CallFailed, OSError) as exc:
                results[name].errors.append(f"cold start: {describe(exc)}")
                continue
            if round_ > 0:
                results[name].cold_start_ms.append(seconds * 1000)
    return results


# --- Report ---------------------------------------------------------------------------------


@dataclass
class Row:
    label: str
    unit: str
    values: dict[str, float | None]
    higher_is_better: bool
    target: float | None = None  # minimum advantage of mcpgen over each SDK server
    raw_target: float | None = None  # minimum advantage of mcpgen over the raw server (below 1: a share of it)
    ts_target: float | None = None  # minimum advantage of mcpgen over the TypeScript SDK's server


def rows(results: dict[str, ServerResult]) -> list[Row]:
    def per_server(get: Callable[[ServerResult], float | None]) -> dict[str, float | None]:
        return {name: get(r) for name, r in results.items()}

    def mib(kib: int | None) -> float | None:
        return kib / 1024 if kib is not None else None

    def cold(pick: Callable[[list[float]], float]) -> Callable[[ServerResult], float | None]:
        return lambda r: pick(r.cold_start_ms) if r.cold_start_ms else None

    def per_phase(in_flight: int, key: str) -> dict[str, float | None]:
        return per_server(lambda r: r.phase(in_flight).get(key))

    calls = max((r.calls_before_rss for r in results.values()), default=0)
    out: list[Row] = []
    for in_flight, target in ((1, TARGETS["seq_rps"]), (WINDOW, TARGETS["win_rps"])):
        out += [
            Row(
                f"{in_flight} in flight: requests/s",
                "req/s",
                per_phase(in_flight, "rps"),
                True,
                target,
                RAW_TARGETS["win_rps"] if in_flight == WINDOW else None,
                TS_TARGETS["win_rps" if in_flight == WINDOW else "seq_rps"],
            ),
            Row(
                f"{in_flight} in flight: p50 latency",
                "ms",
                per_phase(in_flight, "p50_ms"),
                False,
            ),
            Row(
                f"{in_flight} in flight: p99 latency",
                "ms",
                per_phase(in_flight, "p99_ms"),
                False,
            ),
            Row(
                f"{in_flight} in flight: server CPU/call",
                "µs",
                per_phase(in_flight, "server_cpu_us_per_call"),
                False,
            ),
        ]
    out += [
        Row(f"cold start, best of {COLD_STARTS}", "ms", per_server(cold(min)), False),
        Row(
            f"cold start, median of {COLD_STARTS}",
            "ms",
            per_server(cold(statistics.median)),
            False,
            TARGETS["cold_median_ms"],
            RAW_TARGETS["cold_median_ms"],
            TS_TARGETS["cold_median_ms"],
        ),
        Row("RSS after the first answer", "MiB", per_server(lambda r: mib(r.idle_rss_kib)), False),
        Row(
            f"RSS after {calls:,} calls",
            "MiB",
            per_server(lambda r: mib(r.rss_kib)),
            False,
            TARGETS["rss_mib"],
            ts_target=TS_TARGETS["rss_mib"],
        ),
        Row("peak RSS (VmHWM)", "MiB", per_server(lambda r: mib(r.peak_rss_kib)), False),
    ]
    return out


def advantage(row: Row, other: str) -> float | None:
    """mcpgen's advantage over ``other``: mcpgen ÷ other for rates, other ÷ mcpgen for
    costs; above 1 means mcpgen is better (against the raw server: mcpgen's share of it)."""
    ours, theirs = row.values.get("mcpgen"), row.values.get(other)
    if not ours or not theirs:
        return None
    return ours / theirs if row.higher_is_better else theirs / ours


def number(value: float | None, unit: str) -> str:
    if value is None:
        return "failed"
    if unit == "req/s":
        return f"{value:,.0f}"
    return f"{value:,.2f}" if value < 100 else f"{value:,.1f}"


def times(value: float | None, target: float | None) -> str:
    if value is None:
        return "-"
    miss = " !" if target is not None and value < target else "  "
    return f"{value:.2f}x{miss}"


def table(results: dict[str, ServerResult]) -> str:
    names = [n for n in SERVERS if n in results]
    others = [n for n in names if n != "mcpgen"]
    widths = (32, *(max(9, len(n)) for n in names), *(max(9, len(n) + 10) for n in others))

    def line(cells: tuple[str, ...]) -> str:
        first, *rest = cells
        return f"{first:<{widths[0]}}" + "".join(f"  {c:>{w}}" for c, w in zip(rest, widths[1:], strict=True))

    header = line(("metric (unit)", *names, *(f"mcpgen vs {n}" for n in others)))
    out = [header, "-" * len(header)]
    for row in rows(results):
        cells = (
            f"{row.label} ({row.unit})",
            *(number(row.values.get(n), row.unit) for n in names),
            *(times(advantage(row, n), target_of(row, n)) for n in others),
        )
        out.append(line(cells))
    out += [
        "",
        "mcpgen vs ...: mcpgen's advantage, >1 = mcpgen better: mcpgen ÷ other for req/s;",
        "other ÷ mcpgen for latency, CPU, start time and RSS (vs raw: 0.6x = 60% of the raw server's",
        "rate; 0.77x = a start 1.3x as long).  '!' marks a ratio below its target:",
        "  " + "; ".join(f"{label} vs {who}: >={value:.2g}x" for label, who, value in target_list(results)),
    ]
    return "\n".join(out)


def target_of(row: Row, other: str) -> float | None:
    """The advantage over ``other`` that mcpgen is held to on this row, if any."""
    if other == "raw":
        return row.raw_target
    if other == TS:
        return row.ts_target
    return row.target if other in SDKS else None


def target_list(results: dict[str, ServerResult]) -> list[tuple[str, str, float]]:
    found = []
    for row in rows(results):
        for other in results:
            target = target_of(row, other) if other != "mcpgen" else None
            if target is not None:
                found.append((row.label, other, target))
    return found


def error_report(results: dict[str, ServerResult]) -> str:
    out = ["errors (bad, missing or failed responses; protocol problems):"]
    for name, result in results.items():
        out.append(f"  {name}: {len(result.errors)}")
        out += [f"    {e}" for e in result.errors[:MAX_ERRORS_SHOWN]]
        if len(result.errors) > MAX_ERRORS_SHOWN:
            out.append(f"    ... and {len(result.errors) - MAX_ERRORS_SHOWN} more")
        if result.errors and result.stderr_tail:
            out.append("    server stderr (last lines):")
            out += [f"      {s}" for s in result.stderr_tail]
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="divide every call count by 10")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the numbers here")
    parser.add_argument(
        "--tool",
        choices=tuple(TOOLS),
        default="async",
        help="which echo every call goes to: async (an async def, the default path), thread (a plain def,"
        " which mcpgen runs in its thread pool) or now (a plain def declared blocking=False)",
    )
    parser.add_argument("--threaded", action="store_true", help="the same as --tool thread")
    parser.add_argument(
        "--variants",
        action="store_true",
        help="also run mcpgen's server calling each other tool kind (as 'mcpgen now', 'mcpgen thread', ...)",
    )
    parser.add_argument(
        "--servers", default=",".join(SERVERS), help=f"comma-separated subset of {','.join(SERVERS)} (all by default)"
    )
    parser.add_argument(
        "--era",
        choices=ERAS,
        default=PROTOCOL_VERSION,
        help="the protocol revision spoken: 2025-11-25 (initialize handshake, the default) "
        "or 2026-07-28 (stateless: the _meta envelope on every request)",
    )
    args = parser.parse_args()
    scale = 10 if args.quick else 1
    RawClient.tool = TOOLS["thread" if args.threaded else args.tool].encode()
    chosen = args.servers.split(",")
    if args.variants:  # mcpgen's other tool kinds, as servers of their own
        for kind in TOOLS:
            if TOOLS[kind].encode() != RawClient.tool:
                SERVERS[f"mcpgen {kind}"] = SERVERS["mcpgen"]
                chosen.append(f"mcpgen {kind}")
    for name in list(SERVERS):
        if name not in chosen:
            del SERVERS[name]
    RawClient.era = args.era
    counts = {"warmup": 1_000 // scale, "sequential": 5_000 // scale, "pipelined": 20_000 // scale}

    versions = {
        "python": platform.python_version(),
        **{name: version(name) for name in ("mcpgen", "mcp", "mcp-types", "msgspec", "pydantic", "anyio")},
    }
    if TS in SERVERS:
        versions["typescript sdk"] = ts_peer.version()
    print(", ".join(f"{k} {v}" for k, v in versions.items()))
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the start (other processes skew timings)")
    print(
        f"per server: warm-up {counts['warmup']:,} calls ({WINDOW} in flight), then {counts['sequential']:,}"
        f" calls 1 in flight, then {counts['pipelined']:,} calls {WINDOW} in flight; protocol {args.era};"
        f" tool {RawClient.tool.decode()}\n"
    )
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-stdio-pycache-") as pycache:
        env = server_environment(pycache)
        results = asyncio.run(measure(counts, env, lambda text: print(f"... {text}", file=sys.stderr, flush=True)))
    print(table(results))
    print()
    print(error_report(results))
    print(f"\ntotal time {time.perf_counter() - started:.1f} s, load average {os.getloadavg()[0]:.2f} at the end")

    if args.json is not None:
        report = {
            "versions": versions,
            "settings": {
                **counts,
                "window": WINDOW,
                "cold_starts": COLD_STARTS,
                "protocol": args.era,
                "tool": RawClient.tool.decode(),
            },
            "targets": TARGETS,
            "raw_targets": RAW_TARGETS,
            "ts_targets": TS_TARGETS,
            "servers": {name: asdict(r) for name, r in results.items()},
            "advantage": {
                row.label: {
                    "unit": row.unit,
                    **{other: advantage(row, other) for other in SERVERS if other != "mcpgen"},
                }
                for row in rows(results)
            },
        }
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 1 if any(r.errors for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
