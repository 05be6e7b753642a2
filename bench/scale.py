"""Cost as the work grows: mcpgen beside the TypeScript SDK v2 and the official Python SDK.

Four sections, each in both protocol eras (the handshake era, 2025-11-25, and the
stateless era, 2026-07-28), the three servers measured in turn cell by cell (peers
interleaved), a fresh server process for every cell, every answer checked:

* ``sessions``: a Streamable HTTP server holding more and more idle handshake-era sessions
  (``initialize`` + ``notifications/initialized`` each, nothing else open), up to a few
  thousand: its RSS after a full garbage collection, and the latency of ``tools/call`` made
  one at a time over the open sessions in turn. The stateless era has no session: there the
  same number of distinct clients (each its own ``clientInfo``) make one call each, and the
  RSS shows what a server keeps per client. Servers: ``bench/servers/scale_mcpgen.py``,
  ``scale_sdk.py`` (both through ``gc_probe.py``: SIGUSR2 runs a collection) and, for the
  TypeScript SDK, ``ts/scale.mjs sessions`` (its sessionful wiring: one ``McpServer`` and
  transport per session; ``node --expose-gc``).
* ``tools``: a stdio server with N tools (each a function of its own with a description
  of its own): start-up (spawning the process to the first answer: ``initialize``, or in
  the stateless era a first ``tools/call``), then a full ``tools/list`` (every page,
  following ``nextCursor``) twice: wall time, the server's CPU time, pages, µs per tool, RSS
  after. Registration cost per tool is the slope of start-up between the smallest and the
  largest N; the listing ratio is that of the largest N to a tenth of it.
* ``payload``: the server CPU per MB of a large ``tools/call`` result (``blob``: a text of
  1, 8 or 32 MiB, made on its first call and kept, so that the tool itself costs nothing),
  over stdio and Streamable HTTP (JSON responses), one call at a time, after one untimed
  call; the stateless ÷ handshake ratio of it per server, transport and size.
* ``concurrency``: Streamable HTTP throughput and p50/p99 latency of ``tools/call``
  (``echo_async``, JSON responses) with 1 to 512 clients, each a keep-alive connection with
  one request in flight (sharing one session in the handshake era), for a fixed time after
  a warm-up; the servers of ``bench/http.py`` (``raw_http.py``, the bare ASGI app under the
  same uvicorn, shows what uvicorn and this load generator allow), the Python ones through
  ``gc_probe.py``: the share of the server's CPU spent in Python's cyclic garbage collector
  during each cell (``gc.callbacks``, the collecting thread's CPU clock). Node's collector
  is not Python's: no share for the TypeScript SDK.

Method: the server runs on the last CPU this process may use (``os.sched_setaffinity``,
set before it executes), the benchmark on the others; server CPU is user + system time from
``/proc/<pid>/stat`` (10 ms ticks: cells are sized to take many), RSS ``VmRSS`` and peak
``VmHWM`` from ``/proc/<pid>/status``. Python servers cache bytecode in a private folder
warmed by one untimed start of each. The tables give the median of ``--repeat`` runs (3),
ratios the median of each run's own ratio, and the load average at the start and end of
each section. The TypeScript SDK's Node project is installed with ``npm ci`` on first use
(``bench/ts_peer.py``).

Run from the repository root with the project's venv active (Linux, for ``/proc``)::

    python bench/scale.py                        # everything, 3 repetitions (~23 min on 2 cores, shared)
    python bench/scale.py --quick                # a smoke run: small counts, 1 repetition (~2 min)
    python bench/scale.py --sections tools,payload --repeat 1
    python bench/scale.py --json scale.json      # also write every measurement and table as JSON
    python bench/scale.py --tables scale.json    # the tables again from such a file
"""

from __future__ import annotations

import sys

# This file's folder holds http.py, which would shadow the standard library's http package:
# keep it off the front of sys.path and load the benchmark's own modules by path.
if sys.path and sys.path[0] and __import__("os").path.samefile(sys.path[0], __import__("os").path.dirname(__file__)):
    del sys.path[0]

import argparse
import asyncio
import contextlib
import functools
import importlib.util
import itertools
import json
import os
import platform
import signal
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from types import ModuleType
from typing import Any

import msgspec

HERE = Path(__file__).resolve().parent
SERVERS = HERE / "servers"


def load_module(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


sys.path.insert(0, str(HERE))  # for http.py to take off again, as it does when run as a script
bench_http = load_module("bench_http", HERE / "http.py")  # its load generator and /proc readers
gc_probe = load_module("gc_probe", SERVERS / "gc_probe.py")  # the layout of its shared file
import ts_peer  # noqa: E402
from scale_tables import (  # noqa: E402
    BARE,
    ERAS,
    FULL,
    HANDSHAKE,
    MCPGEN,
    PEERS,
    QUICK,
    SDK,
    SECTIONS,
    STATELESS,
    TS,
    Counts,
    Row,
    report,
)

REQUEST_TIMEOUT = 120.0  # seconds for one request (the SDK lists 10,000 tools in seconds)
START_TIMEOUT = 180.0  # seconds for a server to answer its first request (the SDK registers 10,000 tools in 20-50)
GC_SETTLE = 0.5  # seconds after asking a server for a full collection before reading its RSS
CONNECTIONS = 16  # keep-alive connections used to open sessions, and sessions opened at once


CPUS: tuple[set[int], set[int]] | None = None  # (the benchmark's, the server's), set by main()
PYCACHE = ""  # the servers' private bytecode cache, set by main()


class Failed(Exception):
    """A request that failed, or an answer that is wrong."""


# ---------------------------------------------------------------- server processes


def pin_server() -> None:  # runs in the child between fork and exec
    if CPUS is not None:
        os.sched_setaffinity(0, CPUS[1])


def server_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = PYCACHE
    return env


@functools.cache
def node_command(script: str) -> tuple[str, ...]:
    """``node SCRIPT`` for a script of the TypeScript peer (installed on the first call)."""
    return tuple(ts_peer.node_command(script))


def command(peer: str, transport: str, port: int = 0, *, tools: int = 0, probe: Path | None = None) -> list[str]:
    """The argv of ``peer``'s scale server: ``transport`` is stdio, http or sessions."""
    if peer == TS:
        node, script = node_command("scale.mjs")
        gc = ["--expose-gc"] if transport == "sessions" else []  # for HttpServer.collect
        args = [transport] + ([str(port), "--json-response"] if transport != "stdio" else [])
        return [node, *gc, script, *args, *(["--tools", str(tools)] if tools else [])]
    script = SERVERS / ("scale_mcpgen.py" if peer == MCPGEN else "scale_sdk.py")
    args = ["stdio"] if transport == "stdio" else ["http", str(port), "--json-response"]
    args += ["--tools", str(tools)] if tools else []
    return [sys.executable, *([str(SERVERS / "gc_probe.py"), str(probe)] if probe else []), str(script), *args]


def echo_command(peer: str, port: int, *, probe: Path | None) -> list[str]:
    """The argv of ``peer``'s echo server of ``bench/http.py`` (JSON responses)."""
    if peer == TS:
        return [*node_command("http.mjs"), str(port), "--json-response"]
    script = {BARE: "raw_http.py", MCPGEN: "mcpgen_http.py", SDK: "sdk_http.py"}[peer]
    wrap = [str(SERVERS / "gc_probe.py"), str(probe)] if probe else []
    return [sys.executable, *wrap, str(SERVERS / script), str(port), "--json-response"]


def cpu_seconds(pid: int) -> float:
    try:
        return float(bench_http.cpu_seconds(pid))
    except OSError:
        return 0.0


def memory_kib(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (the peak) of a process, in KiB."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0])
    return found


class HttpServer:
    """A server subprocess listening on a free port of 127.0.0.1."""

    def __init__(self, argv: Callable[[int], list[str]], probe: Path | None = None) -> None:
        self.port = bench_http.free_port()
        self.probe = probe
        self.output = tempfile.TemporaryFile()  # what it prints, shown when a cell fails
        self.proc = subprocess.Popen(
            argv(self.port),
            env=server_env(),
            stdin=subprocess.DEVNULL,
            stdout=self.output,
            stderr=subprocess.STDOUT,
            preexec_fn=pin_server,
        )

    async def ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise Failed(f"the server exited with {self.proc.returncode}")
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", self.port)
            except OSError:
                await asyncio.sleep(0.02)
                continue
            writer.close()
            return
        raise Failed(f"the server did not listen within {START_TIMEOUT:g} s")

    def gc_seconds(self) -> tuple[float, int] | None:
        return gc_probe.read(self.probe) if self.probe else None

    async def collect(self) -> None:
        """A full garbage collection in the server (SIGUSR2: gc_probe.py, or Node with
        --expose-gc), then a pause for it to finish."""
        self.proc.send_signal(signal.SIGUSR2)
        await asyncio.sleep(GC_SETTLE)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.output.close()


FAILURES = (Failed, OSError, TimeoutError, msgspec.DecodeError, bench_http.CallError)


@contextlib.asynccontextmanager
async def http_server(argv: Callable[[int], list[str]], probe: Path | None = None) -> AsyncIterator[HttpServer]:
    """A server listening, stopped after; a failure carries the tail of its output."""
    server = HttpServer(argv, probe)
    try:
        await server.ready()
        yield server
    except FAILURES as exc:
        server.output.seek(0)
        tail = server.output.read()[-600:].decode(errors="replace")
        raise Failed(f"{type(exc).__name__}: {exc}; the server's output ends: {tail}") from exc
    finally:
        server.stop()


# ---------------------------------------------------------------- clients


def envelope(client: str) -> dict[str, Any]:
    """The stateless era's ``_meta`` on every request (a client that declared no capabilities)."""
    return {
        "io.modelcontextprotocol/protocolVersion": STATELESS,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": client, "version": "0"},
    }


def initialize_params() -> dict[str, Any]:
    return {"protocolVersion": HANDSHAKE, "capabilities": {}, "clientInfo": {"name": "bench-scale", "version": "0"}}


def checked(message: Any, rid: int, stateless: bool) -> dict[str, Any]:
    """The result of the answer to request ``rid``, or Failed."""
    if not isinstance(message, dict) or message.get("id") != rid or message.get("jsonrpc") != "2.0":
        raise Failed(f"not the answer to {rid}: {str(message)[:200]}")
    result = message.get("result")
    if not isinstance(result, dict):
        raise Failed(f"no result: {str(message)[:200]}")
    if result.get("isError"):
        raise Failed(f"tool error: {str(result)[:200]}")
    if stateless and result.get("resultType") != "complete":
        raise Failed(f"resultType is not complete: {str(result)[:200]}")
    return result


def text_of(result: dict[str, Any]) -> str:
    content = result.get("content") or [{}]
    return str(content[0].get("text"))


class StdioPeer:
    """A stdio server subprocess, one request at a time."""

    def __init__(self, process: asyncio.subprocess.Process, era: str, stderr: Any) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process, self.era, self.stderr = process, era, stderr
        self.stdin, self.stdout = process.stdin, process.stdout
        self.ids = itertools.count(1)

    @classmethod
    @contextlib.asynccontextmanager
    async def running(cls, argv: list[str], era: str) -> AsyncIterator[StdioPeer]:
        """The server spawned and opened (the handshake, or a first call), closed after; a
        failure carries the tail of its stderr."""
        peer = await cls.spawn(argv, era)
        try:
            await asyncio.wait_for(peer.open(), START_TIMEOUT)
            yield peer
        except FAILURES as exc:
            raise Failed(f"{type(exc).__name__}: {exc}; its stderr ends: {peer.stderr_tail()}") from exc
        finally:
            await peer.close()

    @classmethod
    async def spawn(cls, argv: list[str], era: str) -> StdioPeer:
        stderr = tempfile.TemporaryFile()
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=server_env(),
            preexec_fn=pin_server,
            limit=1 << 28,  # one line can hold a 32 MiB result, or 30,000 tools
        )
        return cls(process, era, stderr)

    async def request(self, method: str, params: dict[str, Any]) -> tuple[dict[str, Any], int, float]:
        """(result, bytes of the answer's line, seconds from writing to reading it)."""
        rid = next(self.ids)
        stateless = self.era == STATELESS and method != "initialize"
        if stateless:
            params = {**params, "_meta": envelope("bench-scale")}
        started = time.perf_counter()
        self.stdin.write(msgspec.json.encode({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}) + b"\n")
        while True:
            line = await asyncio.wait_for(self.stdout.readline(), REQUEST_TIMEOUT)
            if not line:
                raise Failed(f"the server closed stdout; stderr: {self.stderr_tail()}")
            message = msgspec.json.decode(line)
            if isinstance(message, dict) and "method" in message and "id" not in message:
                continue  # a notification
            return checked(message, rid, stateless), len(line), time.perf_counter() - started

    async def open(self) -> None:
        """The handshake, or in the stateless era a first call."""
        if self.era == HANDSHAKE:
            await self.request("initialize", initialize_params())
            self.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        else:
            await self.request("tools/call", {"name": "echo_async", "arguments": {"text": "first"}})

    def stderr_tail(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read()[-600:].decode(errors="replace")

    async def close(self) -> None:
        self.stdin.close()
        try:
            await asyncio.wait_for(self.process.wait(), 10)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()
        self.stderr.close()


class Pool:
    """Keep-alive HTTP/1.1 connections to one server (``bench/http.py``'s), each carrying
    one request at a time; a new one is opened when none is idle."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.idle: list[Any] = []
        self.all: list[Any] = []

    async def post(self, body: bytes, headers: dict[str, str]) -> Any:
        if self.idle:
            connection = self.idle.pop()
        else:
            _, connection = await asyncio.get_running_loop().create_connection(
                bench_http.Connection, "127.0.0.1", self.port
            )
            self.all.append(connection)
        head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        request = f"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{self.port}\r\n{head}content-length: {len(body)}\r\n\r\n"
        response = await asyncio.wait_for(connection.exchange(request.encode("latin-1") + body), REQUEST_TIMEOUT)
        if response.headers.get("connection", "").lower() != "close":
            self.idle.append(connection)
        return response

    def close(self) -> None:
        for connection in self.all:
            if connection.transport is not None:
                connection.transport.close()
        self.all.clear()
        self.idle.clear()


def message_in(response: Any, rid: int) -> Any:
    """The JSON-RPC message answering ``rid`` in a JSON body or an event stream."""
    if response.status != 200:
        raise Failed(f"HTTP {response.status}: {response.body[:200]!r}")
    ctype = response.headers.get("content-type", "").split(";")[0].strip()
    if ctype == "application/json":
        return msgspec.json.decode(response.body)
    if ctype != "text/event-stream":
        raise Failed(f"unexpected content-type {ctype!r}")
    for data in bench_http.sse_events(bytearray(response.body)):
        message = msgspec.json.decode(data) if data else None
        if isinstance(message, dict) and message.get("id") == rid and "method" not in message:
            return message
    raise Failed("the event stream ended without the answer")


class HttpPeer:
    """One MCP client over a shared ``Pool``: a session in the handshake era, a client
    named ``name`` sending the ``_meta`` envelope and the era's headers in the stateless one."""

    def __init__(self, pool: Pool, era: str, name: str = "bench-scale") -> None:
        self.pool, self.era, self.meta = pool, era, envelope(name)
        self.headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        self.ids = itertools.count(1)

    async def request(self, method: str, params: dict[str, Any]) -> tuple[dict[str, Any], int, float]:
        """(result, bytes of the body, seconds from writing the request to its answer)."""
        rid = next(self.ids)
        headers = self.headers
        stateless = self.era == STATELESS
        if stateless:
            params = {**params, "_meta": self.meta}
            headers = {**headers, "mcp-protocol-version": STATELESS, "mcp-method": method}
            if method == "tools/call":
                headers["mcp-name"] = params["name"]
        body = msgspec.json.encode({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        started = time.perf_counter()
        response = await self.pool.post(body, headers)
        if method == "initialize":
            session = response.headers.get("mcp-session-id")
            self.headers = {**self.headers, "mcp-protocol-version": HANDSHAKE}
            if session is not None:
                self.headers["mcp-session-id"] = session
        return checked(message_in(response, rid), rid, stateless), len(response.body), response.arrived - started

    async def open(self) -> None:
        """The handshake, or in the stateless era a first call."""
        if self.era == STATELESS:
            await self.echo("first")
            return
        await self.request("initialize", initialize_params())
        body = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
        response = await self.pool.post(body, self.headers)
        if response.status != 202:
            raise Failed(f"notifications/initialized: HTTP {response.status}")

    async def echo(self, text: str) -> float:
        result, _, seconds = await self.request("tools/call", {"name": "echo_async", "arguments": {"text": text}})
        if text_of(result) != text:
            raise Failed(f"wrong echo: {str(result)[:200]}")
        return seconds


# ---------------------------------------------------------------- measurements


def percentile(values: list[float], q: float) -> float | None:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else None


def ms(seconds: float | None) -> float | None:
    return seconds * 1000 if seconds is not None else None


async def sessions_cell(peer: str, era: str, counts: Counts, probe: Path) -> list[Row]:
    """RSS and call latency with more and more sessions (clients) open, in one server."""
    rows: list[Row] = []
    argv = functools.partial(command, peer, "sessions" if peer == TS else "http", probe=probe)
    async with http_server(argv, probe) as server:
        pool = Pool(server.port)
        peers: list[HttpPeer] = []
        for step in counts.session_steps:
            while len(peers) < step:
                batch = [
                    HttpPeer(pool, era, f"client-{len(peers) + i}") for i in range(min(CONNECTIONS, step - len(peers)))
                ]
                await asyncio.gather(*(p.open() for p in batch))
                if era == HANDSHAKE and not all("mcp-session-id" in p.headers for p in batch):
                    raise Failed("an initialize answer without an Mcp-Session-Id: no session to count")
                peers += batch
            calls = counts.session_calls  # spread over all the sessions open
            latencies = [await peers[i * len(peers) // calls].echo(f"call {i}") for i in range(calls)]
            await server.collect()
            memory = memory_kib(server.proc.pid)
            rows.append(
                {
                    "sessions": step,
                    "rss_kib": memory["VmRSS"],
                    "p50_ms": ms(percentile(latencies, 0.5)),
                    "p99_ms": ms(percentile(latencies, 0.99)),
                }
            )
        pool.close()
    return rows


async def list_all(client: StdioPeer) -> dict[str, Any]:
    """One full ``tools/list``, following ``nextCursor``: time, server CPU, pages, tools."""
    cpu = cpu_seconds(client.process.pid)
    started = time.perf_counter()
    cursor: str | None = None
    pages = tools = size = 0
    while True:
        result, nbytes, _ = await client.request("tools/list", {"cursor": cursor} if cursor else {})
        pages, tools, size = pages + 1, tools + len(result.get("tools") or []), size + nbytes
        cursor = result.get("nextCursor")
        if not cursor:
            break
    seconds = time.perf_counter() - started
    return {
        "ms": seconds * 1000,
        "cpu_ms": (cpu_seconds(client.process.pid) - cpu) * 1000,
        "pages": pages,
        "tools": tools,
        "mib": size / (1 << 20),
    }


async def tools_cell(peer: str, era: str, n: int) -> list[Row]:
    """Start-up with ``n`` tools, then two full listings."""
    argv = command(peer, "stdio", tools=n)
    started = time.perf_counter()
    async with StdioPeer.running(argv, era) as client:
        start_ms = (time.perf_counter() - started) * 1000
        first = await list_all(client)
        second = await list_all(client)
        memory = memory_kib(client.process.pid)
    if first["tools"] != n + 2 or second["tools"] != n + 2:
        raise Failed(f"listed {first['tools']} and {second['tools']} tools, not {n + 2}")
    return [
        {
            "tools": n,
            "start_ms": start_ms,
            "list_ms": first["ms"],
            "list_cpu_ms": first["cpu_ms"],
            "pages": first["pages"],
            "list_mib": first["mib"],
            "us_per_tool": first["ms"] * 1000 / n,
            "relist_ms": second["ms"],
            "relist_cpu_ms": second["cpu_ms"],
            "rss_mib": memory["VmRSS"] / 1024,
            "peak_mib": memory["VmHWM"] / 1024,
        }
    ]


async def blobs(client: StdioPeer | HttpPeer, pid: int, megabytes: int, counts: Counts) -> Row:
    """Calls of ``blob`` one at a time, after an untimed one (which makes the text), until
    the server has spent ``counts.payload_cpu`` seconds of CPU on them (its clock ticks
    every 10 ms) or ``counts.payload_mb`` MiB have been sent, at least 2 calls."""
    args = {"name": "blob", "arguments": {"megabytes": megabytes}}
    await client.request("tools/call", args)
    cpu, latencies, size = cpu_seconds(pid), [], 0
    while len(latencies) < 2 or (
        cpu_seconds(pid) - cpu < counts.payload_cpu and (len(latencies) + 1) * megabytes <= counts.payload_mb
    ):
        result, size, seconds = await client.request("tools/call", args)
        if len(text_of(result)) != megabytes << 20:
            raise Failed(f"a result of {len(text_of(result))} characters, not {megabytes} MiB")
        latencies.append(seconds)
    cpu = cpu_seconds(pid) - cpu
    return {
        "megabytes": megabytes,
        "calls": len(latencies),
        "cpu_ms_per_mb": cpu * 1000 / (len(latencies) * megabytes),
        "p50_ms": ms(percentile(latencies, 0.5)),
        "answer_mib": size / (1 << 20),
    }


async def payload_cell(peer: str, transport: str, era: str, megabytes: int, counts: Counts) -> list[Row]:
    """Server CPU per MB of ``blob`` results, one call at a time."""
    if transport == "stdio":
        async with StdioPeer.running(command(peer, "stdio"), era) as client:
            return [await blobs(client, client.process.pid, megabytes, counts)]
    async with http_server(functools.partial(command, peer, "http")) as server:
        pool = Pool(server.port)
        http = HttpPeer(pool, era)
        await asyncio.wait_for(http.open(), START_TIMEOUT)
        found = await blobs(http, server.proc.pid, megabytes, counts)
        pool.close()
    return [found]


async def drive(session: Any, clients: int, seconds: float, ids: Iterable[int]) -> dict[str, Any]:
    """``clients`` workers each keeping one ``tools/call`` in flight for ``seconds``."""
    latencies: list[float] = []
    errors: list[str] = []
    numbers = iter(ids)
    deadline = time.perf_counter() + seconds

    async def worker() -> None:
        while time.perf_counter() < deadline:
            rid = next(numbers)
            try:
                latencies.append(await session.call(rid, f"hello {rid}"))
            except Exception as exc:  # counted; the first few reported
                errors.append(f"{type(exc).__name__}: {exc}")

    started = time.perf_counter()
    await asyncio.wait_for(asyncio.gather(*(worker() for _ in range(clients))), seconds + REQUEST_TIMEOUT)
    return {"latencies": latencies, "errors": errors, "seconds": time.perf_counter() - started}


async def concurrency_cell(peer: str, era: str, clients: int, counts: Counts, probe: Path) -> list[Row]:
    """Throughput, latency and the garbage collector's share with ``clients`` in flight."""
    watched = probe if peer != TS else None
    ids = itertools.count(1)
    async with http_server(functools.partial(echo_command, peer, probe=watched), watched) as server:
        session = bench_http.Session(f"http://127.0.0.1:{server.port}/mcp", clients, "async", era, peer == TS)
        if era == HANDSHAKE:
            await session.initialize()
        warm = await drive(session, clients, counts.warm_seconds, ids)
        gc_before, cpu = server.gc_seconds(), cpu_seconds(server.proc.pid)
        run = await drive(session, clients, counts.measure_seconds, ids)
        gc_after, cpu = server.gc_seconds(), cpu_seconds(server.proc.pid) - cpu
        await session.close()
    errors = warm["errors"] + run["errors"]
    if errors:
        raise Failed(f"{len(errors)} failed calls, the first: {errors[0]}")
    done = len(run["latencies"])
    gc_share = None
    if gc_before is not None and gc_after is not None and cpu > 0:
        gc_share = (gc_after[0] - gc_before[0]) / cpu * 100
    return [
        {
            "clients": clients,
            "calls": done,
            "rps": done / run["seconds"],
            "p50_ms": ms(percentile(run["latencies"], 0.5)),
            "p99_ms": ms(percentile(run["latencies"], 0.99)),
            "cpu_us_per_call": cpu / max(done, 1) * 1e6,
            "gc_pct": gc_share,
            "collections": gc_after[1] - gc_before[1] if gc_before is not None and gc_after is not None else None,
        }
    ]


@dataclass
class Run:
    """Everything one invocation measured."""

    counts: Counts
    rows: list[Row] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    sections: dict[str, dict[str, Any]] = field(default_factory=dict)  # section: {"load": [start, end], "seconds"}


async def cell(run: Run, key: Row, measure: Awaitable[list[Row]]) -> None:
    """Record the rows one cell measured, or its failure."""
    label = " ".join(f"{v}" for v in key.values())
    try:
        found = await measure
    except Exception as exc:  # a failed cell is reported and fails the run, the others go on
        run.errors.append(f"{label}: {type(exc).__name__}: {exc}")
        print(f"  {label}: FAILED {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        return
    run.rows += [{**key, **row} for row in found]
    print(f"  {label}: {found[-1]}", file=sys.stderr, flush=True)


async def measure(run: Run, sections: list[str], probe: Path) -> None:
    counts = run.counts
    # One untimed start of each server first: it writes the private bytecode cache.
    for peer in PEERS:
        await cell(Run(counts), {"warm-up": peer}, tools_cell(peer, HANDSHAKE, counts.tools[0]))
    for section in sections:
        load, started = os.getloadavg()[0], time.monotonic()
        print(f"... {section}, load average {load:.2f}", file=sys.stderr, flush=True)
        for rep in range(1, counts.repeat + 1):
            for key, job in plan(section, rep, counts, probe):
                await cell(run, key, job())
        run.sections[section] = {"load": [load, os.getloadavg()[0]], "seconds": time.monotonic() - started}


def plan(section: str, rep: int, counts: Counts, probe: Path) -> list[tuple[Row, Callable[[], Awaitable[list[Row]]]]]:
    """The cells of one repetition of a section, peers innermost (interleaved)."""
    jobs: list[tuple[Row, Callable[[], Awaitable[list[Row]]]]] = []
    for era in ERAS:
        if section == "sessions":
            for peer in PEERS:
                jobs.append(
                    (row_key(section, rep, peer, era), lambda p=peer, e=era: sessions_cell(p, e, counts, probe))
                )
        elif section == "tools":
            for n in counts.tools:
                for peer in (p for p in PEERS if p != SDK or n <= counts.sdk_tools):
                    jobs.append((row_key(section, rep, peer, era), lambda p=peer, e=era, n=n: tools_cell(p, e, n)))
        elif section == "payload":
            for transport in ("stdio", "http"):
                for mb in counts.megabytes:
                    for peer in PEERS:
                        key = {**row_key(section, rep, peer, era), "transport": transport}
                        jobs.append((key, lambda p=peer, t=transport, e=era, mb=mb: payload_cell(p, t, e, mb, counts)))
        else:
            for clients in counts.clients:
                for peer in (BARE, *PEERS):
                    jobs.append(
                        (
                            row_key(section, rep, peer, era),
                            lambda p=peer, e=era, c=clients: concurrency_cell(p, e, c, counts, probe),
                        )
                    )
    return jobs


def row_key(section: str, rep: int, peer: str, era: str) -> Row:
    return {"section": section, "rep": rep, "peer": peer, "era": era}


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="small counts and 1 repetition: a smoke run")
    parser.add_argument("--repeat", type=int, help="repetitions of every cell (default 3; --quick: 1)")
    parser.add_argument(
        "--sections", default=",".join(SECTIONS), help=f"a comma-separated subset of {','.join(SECTIONS)}"
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write every measurement and table here")
    parser.add_argument("--tables", type=Path, metavar="PATH", help="print the tables of a previous --json and stop")
    parser.add_argument("--no-pin", action="store_true", help="leave the servers and the benchmark to the kernel")
    args = parser.parse_args()
    if args.tables is not None:
        saved = json.loads(args.tables.read_text())
        counts = Counts(**{k: tuple(v) if isinstance(v, list) else v for k, v in saved["counts"].items()})
        print("\n\n".join(report(saved["rows"], counts, saved["sections"]).values()))
        return 0
    counts = QUICK if args.quick else FULL
    if args.repeat is not None:
        counts = Counts(**{**counts.__dict__, "repeat": max(1, args.repeat)})
    sections = [s for s in SECTIONS if s in args.sections.split(",")]
    global CPUS, PYCACHE
    CPUS = None if args.no_pin else bench_http.split_cpus()
    if CPUS is not None:
        os.sched_setaffinity(0, CPUS[0])
    info = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "pinning": f"servers on CPU {min(CPUS[1])}, the benchmark on {sorted(CPUS[0])}" if CPUS else "not pinned",
        **{name: version(name) for name in ("mcpgen", "mcp", "msgspec", "uvicorn")},
        "typescript sdk": ts_peer.version(),
    }
    print(", ".join(f"{k} {v}" for k, v in info.items()), flush=True)
    run = Run(counts)
    started, load = time.monotonic(), os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as scratch:
        PYCACHE = str(Path(scratch) / "pycache")
        await measure(run, sections, Path(scratch) / "gc-stats")
    tables = report(run.rows, counts, run.sections)
    print("\n\n".join(tables.values()))
    took = time.monotonic() - started
    print(
        f"\n{took:.0f} s; load average {load:.2f} at the start, {os.getloadavg()[0]:.2f} at the end; {info['pinning']}"
    )
    for problem in run.errors:
        print(f"error: {problem}")
    if args.json is not None:
        saved = {"info": info, "counts": counts.__dict__, "seconds": took, "sections": run.sections}
        saved |= {"errors": run.errors, "tables": tables, "rows": run.rows}
        args.json.write_text(json.dumps(saved, indent=1) + "\n")
    return 1 if run.errors else 0


if __name__ == "__main__":
    try:
        import uvloop
    except ImportError:
        sys.exit(asyncio.run(main()))
    else:
        sys.exit(uvloop.run(main()))
