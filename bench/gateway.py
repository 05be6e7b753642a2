"""``tools/call`` round trips through a gateway over stdio: mcpgen's echo server called
directly, through ``mcpgen gateway``, and through FastMCP's ``create_proxy`` (FastMCP 4.x),
the same backend and the same client for all three.

* ``direct``: ``bench/servers/mcpgen_echo.py``, the backend alone;
* ``gateway``: ``bench/servers/gateway_echo.py``, ``mcpgen gateway`` with that backend
  behind it (a child process over stdio);
* ``FastMCP proxy``: ``bench/servers/fastmcp_proxy_echo.py``, ``create_proxy`` with that
  backend behind it (likewise).

The client is ``bench/stdio.py``'s raw one (newline-delimited JSON-RPC over the front's
stdin/stdout, every answer checked to be the echo of what was sent). After opening and a
warm-up, each front serves a fixed number of calls with 1 in flight and with 64 in flight,
the fronts taking turns in 5 slices (so that a change in machine load hits them alike);
then its RSS. Reported: requests per second, p50/p99 latency, the CPU time of the front's
own process per call (the gateway's or the proxy's, not its backend's), and the ratios the
gateway is judged on: through the gateway ÷ direct, and gateway ÷ FastMCP proxy, at 64 in
flight. The FastMCP proxy is slow (hundreds of calls per second), so it gets a tenth of the
calls (its rate is a rate all the same).

    python bench/gateway.py                      # 2,000 sequential + 20,000 pipelined calls per front
    python bench/gateway.py --quick              # every count divided by 10
    python bench/gateway.py --era 2026-07-28     # the stateless era end to end
    python bench/gateway.py --json gateway.json  # also the numbers as JSON
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import stdio as peer  # noqa: E402  (bench/stdio.py: its raw client and measurements)

FRONTS: dict[str, Path] = {
    "direct": HERE / "servers" / "mcpgen_echo.py",
    "gateway": HERE / "servers" / "gateway_echo.py",
    "FastMCP proxy": HERE / "servers" / "fastmcp_proxy_echo.py",
}
SLOW = "FastMCP proxy"  # gets a tenth of the calls
COUNTS = {"warmup": 2000, "sequential": 2000, "pipelined": 20000}


def counts_for(name: str, quick: bool) -> dict[str, int]:
    scale = (10 if quick else 1) * (10 if name == SLOW else 1)
    return {phase: max(50, count // scale) for phase, count in COUNTS.items()}


async def measure(quick: bool, env: dict[str, str], era: str) -> dict[str, Any]:
    peer.SERVERS.clear()
    peer.SERVERS.update(FRONTS)
    peer.RawClient.era = era
    results = {name: peer.ServerResult(name) for name in FRONTS}
    clients: dict[str, peer.RawClient] = {}
    try:
        for name in FRONTS:
            client = await peer.start_session(name, env, results[name])
            if client is not None:
                clients[name] = client
        for name, client in clients.items():
            warmup = peer.Phase(peer.WINDOW, counts_for(name, quick)["warmup"])
            await peer.run_calls(client, warmup.calls, warmup)
            results[name].errors += [f"warm-up: {e}" for e in warmup.errors]
        for in_flight, kind in ((1, "sequential"), (peer.WINDOW, "pipelined")):
            print(
                f"[bench] {kind}: {in_flight} in flight, fronts taking turns in {peer.ROUNDS} slices", file=sys.stderr
            )
            phases = {name: peer.Phase(in_flight, counts_for(name, quick)[kind]) for name in clients}
            for round_ in range(peer.ROUNDS):
                for name, client in clients.items():
                    total = phases[name].calls
                    calls = total // peer.ROUNDS + (1 if round_ < total % peer.ROUNDS else 0)
                    await peer.run_calls(client, calls, phases[name])
            for name, phase in phases.items():
                results[name].phases.append(phase.summary())
                results[name].errors += [f"{in_flight} in flight: {e}" for e in phase.errors]
        for name, client in clients.items():
            memory = client.memory_kib()
            results[name].rss_kib, results[name].peak_rss_kib = memory.get("VmRSS"), memory.get("VmHWM")
    finally:
        for name, client in clients.items():
            await peer.end_session(client, results[name])
    return {name: vars(result) for name, result in results.items()}


def rate(report: dict[str, Any], name: str, in_flight: int) -> float | None:
    phase = next((p for p in report[name]["phases"] if p["in_flight"] == in_flight), None)
    return phase.get("rps") if phase else None


def ratios(report: dict[str, Any]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for in_flight in (1, peer.WINDOW):
        direct, gateway, fastmcp = (rate(report, n, in_flight) for n in ("direct", "gateway", SLOW))
        out[f"gateway / direct, {in_flight} in flight"] = gateway / direct if gateway and direct else None
        out[f"gateway / FastMCP proxy, {in_flight} in flight"] = gateway / fastmcp if gateway and fastmcp else None
    return out


def table(report: dict[str, Any]) -> str:
    lines = [
        "| front | in flight | calls | req/s | p50 ms | p99 ms | front CPU us/call | RSS MiB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, result in report.items():
        for phase in result["phases"]:
            rss = f"{result['rss_kib'] / 1024:.1f}" if result.get("rss_kib") else "-"

            def shown(value: Any, spec: str) -> str:
                return format(value, spec) if isinstance(value, (int, float)) else "-"

            lines.append(
                f"| {name} | {phase['in_flight']} | {phase['ok']:,} | {shown(phase['rps'], ',.0f')} | "
                f"{shown(phase['p50_ms'], '.2f')} | {shown(phase['p99_ms'], '.2f')} | "
                f"{shown(phase['server_cpu_us_per_call'], ',.0f')} | {rss} |"
            )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description="tools/call through a gateway, over stdio")
    parser.add_argument("--quick", action="store_true", help="every count divided by 10")
    parser.add_argument("--era", choices=peer.ERAS, default=peer.PROTOCOL_VERSION)
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mcpgen-bench-pyc-") as pycache:
        env = peer.server_environment(pycache)
        report = asyncio.run(measure(args.quick, env, args.era))
    found = ratios(report)
    print(table(report))
    for what, value in found.items():
        print(f"{what}: {value:.3f}x" if value is not None else f"{what}: -")
    errors = {name: result["errors"] for name, result in report.items() if result["errors"]}
    for name, problems in errors.items():
        print(f"{name}: {len(problems)} error(s): {problems[: peer.MAX_ERRORS_SHOWN]}", file=sys.stderr)
        print("\n".join(report[name]["stderr_tail"]), file=sys.stderr)
    if args.json is not None:
        settings = {"era": args.era, "quick": args.quick, "window": peer.WINDOW, "python": platform.python_version()}
        args.json.write_text(json.dumps({"settings": settings, "fronts": report, "ratios": found}, indent=2))
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
