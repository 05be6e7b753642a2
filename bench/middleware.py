"""What middleware costs per ``tools/call`` over stdio: one server per configuration
(bench/servers/mcpgen_middleware_echo.py: none, one pass-through hook, the OpenTelemetry
middleware on no-op providers, and on the real SDK), taking turns, one call in flight,
in one era. Reported: the median and mean round trip, and the difference to ``none``.

Run: python bench/middleware.py [--era 2025-11-25|2026-07-28] [--calls N] [--rounds R] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

from mcpgen import Client

SERVER = Path(__file__).resolve().parent / "servers" / "mcpgen_middleware_echo.py"
MODES = ("none", "hook", "otel", "otel-sdk")


async def measure(mode: str, era: str, calls: int) -> list[float]:
    era_name = "handshake" if era == "2025-11-25" else "stateless"
    async with Client.stdio(sys.executable, str(SERVER), mode, era=era_name) as client:
        for _ in range(max(50, calls // 10)):  # warm-up
            await client.call_tool("echo", {"text": "hi"})
        times = []
        for _ in range(calls):
            start = time.perf_counter()
            await client.call_tool("echo", {"text": "hi"})
            times.append(time.perf_counter() - start)
    return times


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--era", default="2025-11-25", choices=("2025-11-25", "2026-07-28"))
    parser.add_argument("--calls", type=int, default=2000, help="measured calls per server and round")
    parser.add_argument("--rounds", type=int, default=3, help="turns each server takes")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    samples: dict[str, list[float]] = {mode: [] for mode in MODES}
    for _ in range(args.rounds):
        for mode in MODES:
            samples[mode] += await measure(mode, args.era, args.calls)
    base = statistics.median(samples["none"])
    figures = {}
    print(f"tools/call over stdio, {args.era}, {args.rounds} x {args.calls} calls per configuration, 1 in flight")
    print(f"{'middleware':<10} {'p50 (µs)':>10} {'mean (µs)':>10} {'p50 - none (µs)':>16}")
    for mode, times in samples.items():
        p50, mean = statistics.median(times) * 1e6, statistics.fmean(times) * 1e6
        figures[mode] = {
            "p50_us": round(p50, 1),
            "mean_us": round(mean, 1),
            "p50_minus_none_us": round(p50 - base * 1e6, 1),
        }
        print(f"{mode:<10} {p50:>10.1f} {mean:>10.1f} {p50 - base * 1e6:>16.1f}")
    if args.json is not None:
        args.json.write_text(
            json.dumps({"era": args.era, "calls": args.calls, "rounds": args.rounds, "figures": figures})
        )


if __name__ == "__main__":
    asyncio.run(main())
