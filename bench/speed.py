"""The speed tables of ``docs/speed.md``: ``bench/stdio.py`` and ``bench/http.py`` run
``--repeat`` times in each protocol era, their medians as Markdown tables.

Each run measures every server side by side (stdio: the servers take turns in slices;
HTTP: one server after another, restarted per mode); the tables give the median of the
runs' figures and of their ratios, so that a change in the machine's load between runs
moves no ratio much. The raw JSON of every run is kept in ``--out``.

Run from the repository root with the project's venv active (Linux; Node.js >= 20 and npm
for the TypeScript SDK, installed on first use)::

    python bench/speed.py                 # 3 runs per era and transport (~25 min on 2 cores)
    python bench/speed.py --repeat 1 --http-scale 20 --quick   # a smoke run
    python bench/speed.py --tables-only --out DIR   # the tables again from a previous run's JSON
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ERAS = ("2025-11-25", "2026-07-28")
TS = "TS SDK"
STDIO_ROWS = (  # (label, server name in bench/stdio.py)
    ("mcpgen, `async def` tool", "mcpgen"),
    ("mcpgen, plain `def` tool (thread pool)", "mcpgen thread"),
    ("TypeScript SDK v2 (`serveStdio`)", TS),
    ("Python SDK, low-level server", "SDK low"),
    ("Python SDK, `MCPServer` (FastMCP)", "SDK high"),
)
STDIO_SPECIAL = (("mcpgen, `blocking=False` tool (answered on the spot)", "mcpgen now"), ("raw asyncio server", "raw"))
HTTP_ROWS = (  # (label, server, mode in bench/http.py)
    ("mcpgen, `async def` tool", "mcpgen", "async"),
    ("mcpgen, plain `def` tool (thread pool)", "mcpgen", "thread"),
    ("TypeScript SDK v2 (`createMcpHandler`)", TS, "async"),
    ("Python SDK, `MCPServer` (FastMCP)", "SDK", "async"),
)
HTTP_SPECIAL = (
    ("mcpgen, `blocking=False` tool (answered on the spot)", "mcpgen", "json"),
    ("raw ASGI app", "raw", "json"),
)


def run(argv: list[str], log: Path) -> None:
    before = os.getloadavg()[0]
    started = time.monotonic()
    with log.open("w") as out:
        done = subprocess.run([sys.executable, *argv], stdout=out, stderr=subprocess.STDOUT, cwd=HERE.parent)
    after = os.getloadavg()[0]
    took = time.monotonic() - started
    print(f"  {' '.join(argv)}: exit {done.returncode}, {took:.0f} s, load {before:.2f} -> {after:.2f}", flush=True)
    with log.open("a") as out:
        out.write(f"\n[bench/speed.py] load average {before:.2f} before, {after:.2f} after, {took:.0f} s\n")


def measure(out: Path, repeat: int, http_scale: int, quick: bool) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for n in range(1, repeat + 1):
        for era in ERAS:
            tag = f"{era}-{n}"
            argv = ["bench/stdio.py", "--variants", "--era", era, "--json", str(out / f"stdio-{tag}.json")]
            run([*argv, *(["--quick"] if quick else [])], out / f"stdio-{tag}.txt")
            argv = ["bench/http.py", "--modes", "async,json,thread", "--scale", str(http_scale), "--era", era]
            argv += ["--cold-starts", "3", "--json", str(out / f"http-{tag}.json")]
            run(argv, out / f"http-{tag}.txt")


def load(out: Path, kind: str, era: str) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(out.glob(f"{kind}-{era}-*.json"))]


def median(values: list[float | None]) -> float | None:
    found = [v for v in values if v is not None]
    return statistics.median(found) if found else None


def fmt(value: float | None, unit: str = "") -> str:
    if value is None:
        return "–"
    if unit == "x":
        return f"{value:.2f}x"
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


# ---------------------------------------------------------------- stdio


def stdio_figure(report: dict[str, Any], name: str, key: str) -> float | None:
    server = report["servers"].get(name)
    if server is None or server["errors"]:
        return None
    if key == "cold":
        return statistics.median(server["cold_start_ms"]) if server["cold_start_ms"] else None
    if key == "rss":
        return server["rss_kib"] / 1024 if server["rss_kib"] else None
    in_flight, field = key.split(":")
    phase = next((p for p in server["phases"] if p["in_flight"] == int(in_flight)), None)
    return phase.get(field) if phase else None


STDIO_COLUMNS = (
    ("req/s, 1 in flight", "1:rps", True),
    ("req/s, 64 in flight", "64:rps", True),
    ("server CPU µs/call, 64 in flight", "64:server_cpu_us_per_call", False),
    ("cold start ms (median)", "cold", False),
    ("RSS MiB after the calls", "rss", False),
)


def stdio_tables(reports: list[dict[str, Any]], era: str) -> str:
    def row(label: str, name: str) -> str:
        cells = [fmt(median([stdio_figure(r, name, key) for r in reports])) for _, key, _ in STDIO_COLUMNS]
        return f"| {label} | " + " | ".join(cells) + " |"

    def ratio_row(label: str, ours: str, other: str) -> str:
        cells = []
        for _, key, higher in STDIO_COLUMNS:
            each = []
            for r in reports:
                a, b = stdio_figure(r, ours, key), stdio_figure(r, other, key)
                each.append((a / b if higher else b / a) if a and b else None)
            cells.append(fmt(median(each), "x"))
        return f"| {label} | " + " | ".join(cells) + " |"

    head = "| stdio, " + era + " | " + " | ".join(c for c, _, _ in STDIO_COLUMNS) + " |"
    rule = "|---" * (len(STDIO_COLUMNS) + 1) + "|"
    lines = [head, rule, *(row(label, name) for label, name in STDIO_ROWS)]
    lines += [
        ratio_row("**mcpgen `async def` vs TypeScript SDK**", "mcpgen", TS),
        ratio_row("**mcpgen `async def` vs Python SDK low-level**", "mcpgen", "SDK low"),
        ratio_row("**mcpgen `async def` vs Python SDK `MCPServer`**", "mcpgen", "SDK high"),
        ratio_row("mcpgen plain `def` vs TypeScript SDK", "mcpgen thread", TS),
        "",
        "The special mode and the ceiling:",
        "",
        head,
        rule,
        *(row(label, name) for label, name in STDIO_SPECIAL),
        ratio_row("mcpgen `async def` vs `blocking=False` (1.00x: as fast; below: slower)", "mcpgen", "mcpgen now"),
        ratio_row("mcpgen plain `def` vs `blocking=False`", "mcpgen thread", "mcpgen now"),
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------- HTTP


def http_cell(report: dict[str, Any], server: str, mode: str, conc: int) -> dict[str, Any] | None:
    for cell in report["cells"]:
        if (cell["server"], cell["mode"], cell["concurrency"]) == (server, mode, conc) and not cell["errors"]:
            return dict(cell)
    return None


def http_figure(report: dict[str, Any], server: str, mode: str, key: str) -> float | None:
    if key == "cold":
        found = report["cold_start_ms"].get(server)
        return statistics.median(found) if found and mode == "async" else None
    if key == "rss":
        cell = http_cell(report, server, mode, 32)
        return cell["server_rss_mib"] if cell else None
    conc, field = key.split(":")
    cell = http_cell(report, server, mode, int(conc))
    return cell[field] if cell else None


HTTP_COLUMNS = (
    ("req/s, 1 in flight", "1:rps", True),
    ("req/s, 32 in flight", "32:rps", True),
    ("server CPU µs/call, 32 in flight", "32:server_cpu_us_per_call", False),
    ("cold start ms (median)", "cold", False),
    ("RSS MiB after the calls", "rss", False),
)


def http_tables(reports: list[dict[str, Any]], era: str) -> str:
    def row(label: str, server: str, mode: str) -> str:
        cells = [fmt(median([http_figure(r, server, mode, key) for r in reports])) for _, key, _ in HTTP_COLUMNS]
        return f"| {label} | " + " | ".join(cells) + " |"

    def ratio_row(label: str, ours: tuple[str, str], other: tuple[str, str]) -> str:
        cells = []
        for _, key, higher in HTTP_COLUMNS:
            each = []
            for r in reports:
                a, b = http_figure(r, *ours, key), http_figure(r, *other, key)
                each.append((a / b if higher else b / a) if a and b else None)
            cells.append(fmt(median(each), "x"))
        return f"| {label} | " + " | ".join(cells) + " |"

    head = "| HTTP, JSON responses, " + era + " | " + " | ".join(c for c, _, _ in HTTP_COLUMNS) + " |"
    rule = "|---" * (len(HTTP_COLUMNS) + 1) + "|"
    ours = ("mcpgen", "async")
    lines = [head, rule, *(row(*spec) for spec in HTTP_ROWS)]
    lines += [
        ratio_row("**mcpgen `async def` vs TypeScript SDK**", ours, (TS, "async")),
        ratio_row("**mcpgen `async def` vs Python SDK**", ours, ("SDK", "async")),
        ratio_row("mcpgen plain `def` vs TypeScript SDK", ("mcpgen", "thread"), (TS, "async")),
        "",
        "The special mode and the ceiling:",
        "",
        head,
        rule,
        *(row(*spec) for spec in HTTP_SPECIAL),
        ratio_row("mcpgen `async def` vs `blocking=False` (1.00x: as fast; below: slower)", ours, ("mcpgen", "json")),
        ratio_row("mcpgen plain `def` vs `blocking=False`", ("mcpgen", "thread"), ("mcpgen", "json")),
    ]
    return "\n".join(lines)


def tables(out: Path) -> str:
    parts: list[str] = []
    sections: tuple[tuple[str, str, Callable[[list[dict[str, Any]], str], str]], ...] = (
        ("stdio", "stdio", stdio_tables),
        ("http", "Streamable HTTP", http_tables),
    )
    for kind, title, make in sections:
        for era in ERAS:
            reports = load(out, kind, era)
            if reports:
                parts.append(f"### {title}, {era} (median of {len(reports)} runs)\n\n{make(reports, era)}")
    return "\n\n".join(parts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=Path("speed-runs"), help="where the runs' JSON and logs go")
    parser.add_argument("--repeat", type=int, default=3, help="runs per era and transport (default 3)")
    parser.add_argument("--http-scale", type=int, default=4, help="bench/http.py --scale (default 4)")
    parser.add_argument("--quick", action="store_true", help="bench/stdio.py --quick")
    parser.add_argument("--tables-only", action="store_true", help="print the tables of the runs in --out")
    args = parser.parse_args()
    if not args.tables_only:
        print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the start", flush=True)
        measure(args.out, args.repeat, args.http_scale, args.quick)
    print(tables(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
