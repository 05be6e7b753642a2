"""``tools/call`` through each library's public client API: the mcpgen ``Client`` next to
the official MCP SDK's ``mcp.Client`` (``mcp`` 2.3), against the same fast server.

The server is ``bench/servers/raw_peer.py``, a hand-written minimal MCP server that speaks
both protocol eras over stdio and Streamable HTTP (plain JSON answers), so that what is
measured is the client. Every cell is one client library, one transport and one era:

* ``handshake``: mcpgen ``era="handshake"``, the SDK ``mode="legacy"`` (``initialize``,
  2025-11-25);
* ``2026-07-28``: the stateless era, pinned on both (mcpgen ``era="2026-07-28"``, the SDK
  ``mode="2026-07-28"``): no handshake, the ``_meta`` envelope on every request (over HTTP
  also the MCP-Protocol-Version, Mcp-Method and Mcp-Name headers).

Each cell runs in a fresh Python process (stdio: the server is that process's child; HTTP:
one raw server for all cells, started here), opens its client, warms up, then makes N calls
of ``echo`` with 1 call in flight (one after the other) and N more with 64 in flight (64
tasks calling in a loop), each result checked (not an error, the text sent comes back).
It reports calls/s (wall time) and the client's CPU per call: the process CPU time of the
client process (every thread, user + system; the stdio server is another process) divided by
the calls. On a shared machine the wall rate moves with the load; CPU per call moves much
less, so it is the number to compare. The cells of one run go one at a time, library after
library for each transport and era; ``--runs`` (3) repeats the whole sweep and the report
gives each number's range over the runs, the ratios taken run by run (mcpgen ÷ SDK for rates,
SDK ÷ mcpgen for CPU), and the load average before and after.

``--floor`` adds a third client to every sweep, "bare": the least a client can do through
asyncio against the same server (a request written per call, a future per call resolved
from the parsed answer; over HTTP one keep-alive connection per call in flight, parsed by
httptools), with no JSON-RPC engine, no types and no checks beyond the echoed text. Its
rate is what this machine and server allow any Python client on the stock event loop, so
it bounds the ratio any client could reach against the SDK here. Over stdio it also runs
"blocking", with 1 call in flight only: no event loop at all (write the request, block
reading the answer), the least any client pays per call on this machine's pipes.

Run from the repository root with the project's venv active::

    python bench/client.py                    # 3 runs of 2,000 + 20,000 calls per cell (~6 min)
    python bench/client.py --quick            # 1 run, every count divided by 20
    python bench/client.py --transports stdio --eras 2026-07-28 --runs 1
    python bench/client.py --json client.json

To profile one cell: ``python -m cProfile -o cell.prof bench/client.py --cell mcpgen stdio
2026-07-28 --calls 5000 --window-calls 5000``.
"""

from __future__ import annotations

import os
import sys

# Run as a script, this file's folder comes first on sys.path, where bench/http.py would
# shadow the standard library's http package (which both clients' HTTP stacks import).
if sys.path and sys.path[0] and os.path.samefile(sys.path[0], os.path.dirname(os.path.abspath(__file__))):
    del sys.path[0]

import argparse  # noqa: E402 (after the sys.path fix above)
import asyncio  # noqa: E402
import json  # noqa: E402
import socket  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
import urllib.error  # noqa: E402
import urllib.request  # noqa: E402
from importlib.metadata import version  # noqa: E402
from pathlib import Path  # noqa: E402
from types import SimpleNamespace  # noqa: E402
from typing import Any  # noqa: E402
from urllib.parse import urlsplit  # noqa: E402

import httptools  # noqa: E402
import msgspec  # noqa: E402

HERE = Path(__file__).resolve().parent
PEER = HERE / "servers" / "raw_peer.py"
LIBRARIES = ("mcpgen", "SDK")
FLOOR = "bare"
BLOCKING = "blocking"  # the machine's bound at 1 in flight over stdio (see run_blocking)
TRANSPORTS = ("stdio", "http")
ERAS = ("handshake", "2026-07-28")
WINDOW = 64
TARGETS = {1: 5.0, WINDOW: 20.0}  # mcpgen's calls/s over the SDK's, by calls in flight
CELL_TIMEOUT = 300.0  # seconds for one cell (spawn, open, warm-up, both phases)
TEXT = "hello from the client benchmark"


# --- One cell (a child process) ----------------------------------------------------------------


def open_client(library: str, transport: str, era: str, url: str | None) -> Any:
    """The library's client for the raw peer, in ``era``, through its public API."""
    if library == "mcpgen":
        from mcpgen import Client

        pinned = "handshake" if era == "handshake" else era
        if transport == "stdio":
            return Client.stdio(sys.executable, str(PEER), "stdio", era=pinned)
        assert url is not None
        return Client.http(url, era=pinned)
    import mcp

    mode = "legacy" if era == "handshake" else era
    if transport == "stdio":
        return mcp.Client(mcp.StdioServerParameters(command=sys.executable, args=[str(PEER), "stdio"]), mode=mode)
    assert url is not None
    return mcp.Client(url, mode=mode)


def spoken(library: str, client: Any) -> str:
    """The protocol version the open client speaks."""
    if library == "mcpgen":
        return str(client.session.protocol_version)
    return str(client.protocol_version)


async def phase(client: Any, calls: int, in_flight: int) -> dict[str, Any]:
    """``calls`` calls with ``in_flight`` of them outstanding at any time."""
    left = calls
    ok = 0
    errors: list[str] = []

    async def caller() -> None:
        nonlocal left, ok
        while left > 0:
            left -= 1
            try:
                result = await client.call_tool("echo", {"text": TEXT})
            except Exception as exc:  # counted and shown: the benchmark checks every call
                errors.append(repr(exc)[:200])
                continue
            block = result.content[0] if result.content else None
            if result.is_error or getattr(block, "text", None) != TEXT:
                errors.append(f"unexpected result: {result!r}"[:200])
            else:
                ok += 1

    cpu = time.process_time()
    wall = time.perf_counter()
    await asyncio.gather(*(caller() for _ in range(in_flight)))
    wall = time.perf_counter() - wall
    cpu = time.process_time() - cpu
    return {
        "in_flight": in_flight,
        "calls": calls,
        "ok": ok,
        "errors": len(errors),
        "error_samples": errors[:3],
        "seconds": wall,
        "calls_per_s": calls / wall,
        "cpu_us_per_call": cpu / calls * 1e6,
    }


class _Answer(msgspec.Struct):
    id: int
    result: Any = None


class _BareStdio(asyncio.SubprocessProtocol):
    """The raw peer as a child process; answers resolve the futures of their ids."""

    def __init__(self) -> None:
        self.buffer = b""
        self.waiting: dict[int, asyncio.Future[Any]] = {}
        self.decode = msgspec.json.Decoder(_Answer).decode
        self.exited = asyncio.get_running_loop().create_future()

    def process_exited(self) -> None:
        self.exited.set_result(None)

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd != 1:
            return
        *lines, self.buffer = (self.buffer + data).split(b"\n")
        for line in lines:
            if line.strip():
                answer = self.decode(line)
                self.waiting.pop(answer.id).set_result(answer.result)


class _BareHttp(asyncio.Protocol):
    """One keep-alive connection to the raw peer; one request at a time."""

    def __init__(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.transport: Any = None
        self.body: list[bytes] = []
        self.answer: asyncio.Future[bytes] | None = None

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.parser.feed_data(data)

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        assert self.answer is not None
        self.answer.set_result(b"".join(self.body))
        self.body = []


async def run_bare(transport: str, era: str, url: str | None, calls: int, window_calls: int) -> Any:
    """The floor: the same calls through the least asyncio code that makes them."""
    loop = asyncio.get_running_loop()
    params: dict[str, Any] = {"name": "echo", "arguments": {"text": TEXT}}
    if era != "handshake":
        params["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": era,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    ids = iter(range(1, 1 << 60))
    decode_answer = msgspec.json.Decoder(_Answer).decode

    def frame() -> tuple[int, bytes]:
        rid = next(ids)
        return rid, msgspec.json.encode({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})

    def checked(result: Any) -> Any:
        return SimpleNamespace(is_error=result.get("isError"), content=[SimpleNamespace(**result["content"][0])])

    if transport == "stdio":
        child, stdio = await loop.subprocess_exec(_BareStdio, sys.executable, str(PEER), "stdio", stderr=None)
        pipe: Any = child.get_pipe_transport(0)

        async def call_stdio(name: str, arguments: dict[str, Any]) -> Any:
            rid, data = frame()
            stdio.waiting[rid] = answer = loop.create_future()
            pipe.write(data + b"\n")
            return checked(await answer)

        async def close_stdio() -> None:
            pipe.close()  # the peer exits at the end of its input
            await asyncio.wait_for(stdio.exited, 10)
            child.close()

        call, close = call_stdio, close_stdio
    else:
        assert url is not None
        parts = urlsplit(url)
        host, port = parts.hostname or "127.0.0.1", parts.port or 80
        idle: list[_BareHttp] = []
        head = (
            f"POST {parts.path} HTTP/1.1\r\nhost: {parts.netloc}\r\ncontent-type: application/json\r\n"
            "accept: application/json, text/event-stream\r\n"
        )
        if era != "handshake":
            head += f"mcp-protocol-version: {era}\r\nmcp-method: tools/call\r\nmcp-name: echo\r\n"

        async def call_http(name: str, arguments: dict[str, Any]) -> Any:
            if idle:
                conn = idle.pop()
            else:
                _, conn = await loop.create_connection(_BareHttp, host, port)
            _, data = frame()
            conn.answer = loop.create_future()
            conn.transport.write(f"{head}content-length: {len(data)}\r\n\r\n".encode() + data)
            body = await conn.answer
            idle.append(conn)
            return checked(decode_answer(body).result)

        async def close_http() -> None:
            for conn in idle:
                conn.transport.close()

        call, close = call_http, close_http
    client = SimpleNamespace(call_tool=call)
    try:
        for _ in range(max(20, calls // 10)):
            await client.call_tool("echo", {"text": TEXT})
        phases = [await phase(client, calls, 1), await phase(client, window_calls, WINDOW)]
    finally:
        await close()
    spoken = "2025-11-25" if era == "handshake" else era
    return {"library": FLOOR, "transport": transport, "era": era, "spoken": spoken, "phases": phases}


def run_blocking(era: str, calls: int) -> dict[str, Any]:
    """What this machine allows at 1 in flight over stdio, whatever the client: no event
    loop at all. Each call writes its request to the raw peer's stdin and blocks reading
    its stdout until the answer's line is complete, so a call costs the two pipe wake-ups
    and the peer's answer and nothing else. No asyncio client can go faster; its rate over
    the SDK's bounds the ratio any client could reach with one call in flight."""
    params: dict[str, Any] = {"name": "echo", "arguments": {"text": TEXT}}
    if era != "handshake":
        params["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": era,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    decode_answer = msgspec.json.Decoder(_Answer).decode
    child = subprocess.Popen([sys.executable, str(PEER), "stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    out, into = child.stdin.fileno(), child.stdout.fileno()
    buffer = b""

    def call(rid: int) -> bool:
        nonlocal buffer
        request = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}
        os.write(out, msgspec.json.encode(request) + b"\n")
        while b"\n" not in buffer:
            chunk = os.read(into, 65536)
            if not chunk:
                raise ConnectionError("the raw peer exited")
            buffer += chunk
        line, _, buffer = buffer.partition(b"\n")
        answer = decode_answer(line)
        block = answer.result["content"][0] if answer.id == rid else {}
        return not answer.result.get("isError") and block.get("text") == TEXT

    try:
        for rid in range(1, max(20, calls // 10) + 1):
            call(rid)
        ok = 0
        cpu = time.process_time()
        wall = time.perf_counter()
        for rid in range(1_000_000, 1_000_000 + calls):
            ok += call(rid)
        wall = time.perf_counter() - wall
        cpu = time.process_time() - cpu
    finally:
        child.stdin.close()  # the peer exits at the end of its input
        child.wait(10)
    found = {
        "in_flight": 1,
        "calls": calls,
        "ok": ok,
        "errors": calls - ok,
        "error_samples": [],
        "seconds": wall,
        "calls_per_s": calls / wall,
        "cpu_us_per_call": cpu / calls * 1e6,
    }
    spoken = "2025-11-25" if era == "handshake" else era
    return {"library": BLOCKING, "transport": "stdio", "era": era, "spoken": spoken, "phases": [found]}


async def run_cell(library: str, transport: str, era: str, url: str | None, calls: int, window_calls: int) -> Any:
    if library == FLOOR:
        return await run_bare(transport, era, url, calls, window_calls)
    client = open_client(library, transport, era, url)
    async with client:
        version_spoken = spoken(library, client)
        warm = max(20, calls // 10)
        for _ in range(warm):  # also what a client does once (the SDK lists the tools)
            await client.call_tool("echo", {"text": TEXT})
        phases = [await phase(client, calls, 1), await phase(client, window_calls, WINDOW)]
    return {"library": library, "transport": transport, "era": era, "spoken": version_spoken, "phases": phases}


# --- The sweep ---------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_http_peer() -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    process = subprocess.Popen([sys.executable, str(PEER), "http", str(port)], stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the raw HTTP peer exited: {process.stderr.read() if process.stderr else b''!r}")
        try:
            urllib.request.urlopen(url, timeout=0.5)
        except urllib.error.HTTPError:
            return process, url  # 405 to a GET: it is up
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit("the raw HTTP peer did not come up")


def cell(library: str, transport: str, era: str, url: str | None, calls: int, window_calls: int) -> dict[str, Any]:
    """Run one cell in a fresh process and return what it measured."""
    command = [sys.executable, str(Path(__file__).resolve()), "--cell", library, transport, era]
    command += ["--calls", str(calls), "--window-calls", str(window_calls)]
    if url is not None:
        command += ["--url", url]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=CELL_TIMEOUT)
    except subprocess.TimeoutExpired:
        return {"library": library, "transport": transport, "era": era, "failed": "timed out"}
    if done.returncode != 0:
        return {"library": library, "transport": transport, "era": era, "failed": done.stderr[-2000:]}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def span(values: list[float], digits: int = 0) -> str:
    low, high = min(values), max(values)
    if digits == 0:
        return f"{low:,.0f}" if round(low) == round(high) else f"{low:,.0f}-{high:,.0f}"
    return f"{low:.{digits}f}" if f"{low:.{digits}f}" == f"{high:.{digits}f}" else f"{low:.{digits}f}-{high:.{digits}f}"


def summarize(runs: list[list[dict[str, Any]]]) -> tuple[list[dict[str, Any]], list[str]]:
    """One row per transport, era and calls in flight: ranges over the runs, ratios run by run."""
    rows: list[dict[str, Any]] = []
    problems: list[str] = []
    for results in runs:
        for item in results:
            if "failed" in item:
                problems.append(f"{item['library']} {item['transport']} {item['era']}: {item['failed']}")
                continue
            wanted = "2025-11-25" if item["era"] == "handshake" else item["era"]
            if item["spoken"] != wanted:
                problems.append(f"{item['library']} {item['transport']} {item['era']}: spoke {item['spoken']}")
            for p in item["phases"]:
                if p["errors"] or p["ok"] != p["calls"]:
                    problems.append(f"{item['library']} {item['transport']} {item['era']} x{p['in_flight']}: {p}")
    keys = sorted(
        {(i["transport"], i["era"], p["in_flight"]) for r in runs for i in r if "phases" in i for p in i["phases"]},
        key=lambda k: (TRANSPORTS.index(k[0]), ERAS.index(k[1]), k[2]),
    )
    for transport, era, in_flight in keys:
        per_run: list[dict[str, dict[str, Any]]] = []
        for results in runs:
            found = {
                i["library"]: p
                for i in results
                if "phases" in i and i["transport"] == transport and i["era"] == era
                for p in i["phases"]
                if p["in_flight"] == in_flight
            }
            if set(LIBRARIES) <= set(found):
                per_run.append(found)
        if not per_run:
            continue
        floor = [r for r in per_run if FLOOR in r]
        rate = {lib: [r[lib]["calls_per_s"] for r in per_run] for lib in LIBRARIES}
        cpu = {lib: [r[lib]["cpu_us_per_call"] for r in per_run] for lib in LIBRARIES}
        rate_ratio = [r["mcpgen"]["calls_per_s"] / r["SDK"]["calls_per_s"] for r in per_run]
        cpu_ratio = [r["SDK"]["cpu_us_per_call"] / r["mcpgen"]["cpu_us_per_call"] for r in per_run]
        rows.append(
            {
                "transport": transport,
                "era": era,
                "in_flight": in_flight,
                "calls_per_s": rate,
                "cpu_us_per_call": cpu,
                "rate_ratio": rate_ratio,
                "cpu_ratio": cpu_ratio,
                "target": TARGETS.get(in_flight),
                "median_rate_ratio": statistics.median(rate_ratio),
            }
        )
        if floor:  # what the bare client got, and how far above the SDK that is
            rows[-1]["floor"] = {
                "calls_per_s": [r[FLOOR]["calls_per_s"] for r in floor],
                "cpu_us_per_call": [r[FLOOR]["cpu_us_per_call"] for r in floor],
                "over_sdk": [r[FLOOR]["calls_per_s"] / r["SDK"]["calls_per_s"] for r in floor],
                "mcpgen_share": [r["mcpgen"]["calls_per_s"] / r[FLOOR]["calls_per_s"] for r in floor],
            }
        blocking = [r for r in per_run if BLOCKING in r]
        if blocking:  # stdio, 1 in flight: the machine's own bound
            rows[-1]["blocking"] = {
                "calls_per_s": [r[BLOCKING]["calls_per_s"] for r in blocking],
                "cpu_us_per_call": [r[BLOCKING]["cpu_us_per_call"] for r in blocking],
                "over_sdk": [r[BLOCKING]["calls_per_s"] / r["SDK"]["calls_per_s"] for r in blocking],
                "mcpgen_share": [r["mcpgen"]["calls_per_s"] / r[BLOCKING]["calls_per_s"] for r in blocking],
            }
    return rows, problems


def print_report(rows: list[dict[str, Any]], info: dict[str, Any]) -> None:
    print(
        f"\nclient benchmark: {info['runs']} run(s), {info['calls']:,} calls with 1 in flight and "
        f"{info['window_calls']:,} with {WINDOW} in flight per cell; mcpgen {info['mcpgen']}, mcp {info['mcp']}, "
        f"Python {info['python']}"
    )
    print(f"load average (1/5/15 min): before {info['load_before']}, after {info['load_after']}\n")
    header = (
        f"{'transport':9} {'era':10} {'in flight':>9} | {'mcpgen calls/s':>15} {'SDK calls/s':>13} "
        f"{'ratio':>10} | {'mcpgen CPU us':>13} {'SDK CPU us':>11} {'ratio':>10} | target"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        target = row["target"]
        met = target is not None and row["median_rate_ratio"] >= target
        verdict = "" if target is None else f">= {target:g}x: {'met' if met else 'NOT met'} (median)"
        print(
            f"{row['transport']:9} {row['era']:10} {row['in_flight']:>9} | "
            f"{span(row['calls_per_s']['mcpgen']):>15} {span(row['calls_per_s']['SDK']):>13} "
            f"{span(row['rate_ratio'], 1) + 'x':>10} | "
            f"{span(row['cpu_us_per_call']['mcpgen']):>13} {span(row['cpu_us_per_call']['SDK']):>11} "
            f"{span(row['cpu_ratio'], 1) + 'x':>10} | {verdict}"
        )
    print("\nRanges are min-max over the runs; ratios are taken run by run (rates mcpgen/SDK, CPU SDK/mcpgen).")
    print_floor(
        rows,
        "floor",
        "bare",
        "\nThe floor: a bare asyncio client (no JSON-RPC engine) against the same server, same runs",
    )
    print_floor(
        rows,
        "blocking",
        "blocking",
        "\nThe machine's bound at 1 in flight over stdio: a blocking client (no event loop: write the request,"
        "\nblock reading the answer) against the same server, same runs",
    )


def print_floor(rows: list[dict[str, Any]], key: str, name: str, title: str) -> None:
    """The table of one floor client (``key`` in the rows), when it ran."""
    found = [row for row in rows if key in row]
    if not found:
        return
    print(title)
    # Labels padded to the widest range they head (up to "123,456-234,567" calls/s).
    rate, cpu = f"{name} calls/s".rjust(15), f"{name} CPU us"
    over, share = f"{name}/SDK calls/s", f"mcpgen/{name} calls/s"
    header = (
        f"{'transport':9} {'era':10} {'in flight':>9} | {rate:>{len(rate)}} {cpu:>{len(cpu)}} | "
        f"{over:>{len(over)}} {share:>{len(share)}}"
    )
    print(header)
    print("-" * len(header))
    for row in found:
        floor = row[key]
        print(
            f"{row['transport']:9} {row['era']:10} {row['in_flight']:>9} | {span(floor['calls_per_s']):>{len(rate)}} "
            f"{span(floor['cpu_us_per_call']):>{len(cpu)}} | {span(floor['over_sdk'], 1) + 'x':>{len(over)}} "
            f"{span(floor['mcpgen_share'], 2):>{len(share)}}"
        )


def load() -> str:
    return "/".join(f"{value:.2f}" for value in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cell", nargs=3, metavar=("LIBRARY", "TRANSPORT", "ERA"), help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--calls", type=int, default=2000, help="calls with 1 in flight per cell")
    parser.add_argument("--window-calls", type=int, default=20000, help=f"calls with {WINDOW} in flight per cell")
    parser.add_argument("--runs", type=int, default=3, help="sweeps over every cell")
    parser.add_argument("--quick", action="store_true", help="one run, every count divided by 20")
    parser.add_argument("--transports", default=",".join(TRANSPORTS))
    parser.add_argument("--eras", default=",".join(ERAS))
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    parser.add_argument("--floor", action="store_true", help="also run the bare and blocking clients (see above)")
    args = parser.parse_args()

    if args.cell:
        library, transport, era = args.cell
        if library == BLOCKING:
            result = run_blocking(era, args.calls)
        else:
            result = asyncio.run(run_cell(library, transport, era, args.url, args.calls, args.window_calls))
        print(json.dumps(result))
        return

    if args.quick:
        args.runs = 1
        args.calls = max(20, args.calls // 20)
        args.window_calls = max(WINDOW, args.window_calls // 20)
    transports = [t for t in args.transports.split(",") if t]
    eras = [e for e in args.eras.split(",") if e]
    if not set(transports) <= set(TRANSPORTS) or not set(eras) <= set(ERAS):
        raise SystemExit(f"--transports is a subset of {TRANSPORTS}, --eras of {ERAS}")
    info: dict[str, Any] = {
        "runs": args.runs,
        "calls": args.calls,
        "window_calls": args.window_calls,
        "mcpgen": version("mcpgen"),
        "mcp": version("mcp"),
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "load_before": load(),
    }
    peer, url = start_http_peer() if "http" in transports else (None, None)
    runs: list[list[dict[str, Any]]] = []
    try:
        for number in range(1, args.runs + 1):
            results: list[dict[str, Any]] = []
            for transport in transports:
                for era in eras:
                    floors = (FLOOR, BLOCKING) if transport == "stdio" else (FLOOR,)
                    for library in (*LIBRARIES, *floors) if args.floor else LIBRARIES:
                        where = url if transport == "http" else None
                        results.append(cell(library, transport, era, where, args.calls, args.window_calls))
                        print(f"run {number}: {library} {transport} {era} done", file=sys.stderr, flush=True)
            runs.append(results)
    finally:
        if peer is not None:
            peer.terminate()
            peer.wait(10)
    info["load_after"] = load()
    rows, problems = summarize(runs)
    print_report(rows, info)
    for problem in problems:
        print("PROBLEM:", problem)
    if args.json is not None:
        args.json.write_text(json.dumps({"info": info, "rows": rows, "runs": runs, "problems": problems}, indent=2))
    if problems:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
