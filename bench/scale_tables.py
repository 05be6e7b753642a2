"""The tables of ``bench/scale.py``: the medians of its measurements over the repetitions,
as Markdown (what ``docs/speed.md`` shows), and the names and counts they are laid out by.

Each measurement is a row: its section, repetition, server (``peer``), era and the cell's
own parameters (sessions open, tools, transport and size, clients), then the figures
measured. A table's figure is the median over the repetitions; a ratio is the median of
each repetition's own ratio, so that a change of load between repetitions moves it less.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

HANDSHAKE, STATELESS = "2025-11-25", "2026-07-28"
ERAS = (HANDSHAKE, STATELESS)
MCPGEN, TS, SDK, BARE = "mcpgen", "TS SDK", "SDK", "bare ASGI"
PEERS = (MCPGEN, TS, SDK)
SECTIONS = ("sessions", "tools", "payload", "concurrency")
Row = dict[str, Any]


@dataclass(frozen=True)
class Counts:
    repeat: int
    session_steps: tuple[int, ...]  # sessions open when RSS and latency are read (the first: 1)
    session_calls: int  # calls timed at each step
    tools: tuple[int, ...]  # N, smallest first, each a tenth of one after it or so
    sdk_tools: int  # the most tools the Python SDK's server is given (it registers a tool in ms)
    megabytes: tuple[int, ...]
    payload_cpu: float  # seconds of server CPU a payload cell runs for (at least 2 calls) ...
    payload_mb: int  # ... unless it has sent this many MiB
    clients: tuple[int, ...]
    warm_seconds: float
    measure_seconds: float


FULL = Counts(
    repeat=3,
    session_steps=(1, 500, 1000, 2000, 3000),
    session_calls=200,
    tools=(1000, 3000, 10000, 30000),
    sdk_tools=10000,
    megabytes=(1, 8, 32),
    # A second of server CPU per cell: a large result's cost moves with the machine's page
    # faults from call to call, and a quarter of a second (about 25 ticks) let one cell's
    # spread pass for a difference between eras.
    payload_cpu=1.0,
    payload_mb=768,
    clients=(1, 8, 32, 128, 512),
    warm_seconds=0.5,
    measure_seconds=2.0,
)
# A smoke run: every table, small counts (a minute or two).
QUICK = Counts(
    repeat=1,
    session_steps=(1, 50, 100),
    session_calls=20,
    tools=(100, 1000),
    sdk_tools=1000,
    megabytes=(1, 4),
    payload_cpu=0.05,
    payload_mb=64,
    clients=(1, 16, 64),
    warm_seconds=0.1,
    measure_seconds=0.3,
)


def select(rows: list[Row], section: str, **match: Any) -> list[Row]:
    return [r for r in rows if r["section"] == section and all(r.get(k) == v for k, v in match.items())]


def median(values: Iterable[float | None]) -> float | None:
    found = [v for v in values if v is not None]
    return statistics.median(found) if found else None


def figure(rows: list[Row], section: str, metric: str, **match: Any) -> float | None:
    """The median over the repetitions of one measurement."""
    return median(r.get(metric) for r in select(rows, section, **match))


def ratio(rows: list[Row], section: str, metric: str, top: Row, bottom: Row, **match: Any) -> float | None:
    """The median over the repetitions of each one's ``metric`` at ``top`` ÷ at ``bottom``."""
    each = []
    for rep in sorted({r["rep"] for r in select(rows, section)}):
        a = figure(rows, section, metric, rep=rep, **match, **top)
        b = figure(rows, section, metric, rep=rep, **match, **bottom)
        each.append(a / b if a is not None and b else None)
    return median(each)


def fmt(value: float | None, unit: str = "") -> str:
    if value is None:
        return "–"
    if unit == "x":
        return f"{value:.2f}x"
    if unit == "%":
        return f"{value:.1f} %"
    if unit == "n":  # a count
        return f"{value:,.0f}"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.2f}" if abs(value) < 10 else f"{value:.1f}"


def markdown(head: list[str], body: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(cells) + " |" for cells in body])


def sessions_tables(rows: list[Row], counts: Counts) -> str:
    steps = counts.session_steps
    parts = []
    for era in ERAS:
        noun = "sessions" if era == HANDSHAKE else "clients"
        head = [
            "server",
            *(f"RSS MiB, {s:,} open" for s in steps),
            f"KiB per {noun[:-1]}, {steps[0]:,}→{steps[-1]:,}",
        ]
        head += [f"KiB per {noun[:-1]}, each step", f"call p50 ms, {steps[0]:,} → {steps[-1]:,}", "call p99 ms, same"]
        body = []
        for peer in PEERS:
            match = {"peer": peer, "era": era}
            rss = [figure(rows, "sessions", "rss_kib", sessions=s, **match) for s in steps]
            growth = [ratio_delta(rows, "rss_kib", a, b, match) for a, b in itertools.pairwise(steps)]
            body.append(
                [
                    peer,
                    *(fmt(v / 1024 if v is not None else None) for v in rss),
                    fmt(ratio_delta(rows, "rss_kib", steps[0], steps[-1], match)),
                    ", ".join(fmt(g) for g in growth),
                    " → ".join(
                        fmt(figure(rows, "sessions", "p50_ms", sessions=s, **match)) for s in (steps[0], steps[-1])
                    ),
                    " → ".join(
                        fmt(figure(rows, "sessions", "p99_ms", sessions=s, **match)) for s in (steps[0], steps[-1])
                    ),
                ]
            )
        parts.append(f"{noun} open, {era}:\n\n" + markdown(head, body))
    return "\n\n".join(parts)


def ratio_delta(rows: list[Row], metric: str, low: int, high: int, match: Row) -> float | None:
    """The median over the repetitions of (metric at ``high`` sessions − at ``low``) ÷ (high − low)."""
    each = []
    for rep in sorted({r["rep"] for r in select(rows, "sessions")}):
        a = figure(rows, "sessions", metric, rep=rep, sessions=high, **match)
        b = figure(rows, "sessions", metric, rep=rep, sessions=low, **match)
        each.append((a - b) / (high - low) if a is not None and b is not None and high > low else None)
    return median(each)


def tools_tables(rows: list[Row], counts: Counts) -> str:
    parts = []
    head = ["server", "tools", "start-up ms", "tools/list ms (all pages)", "its server CPU ms", "pages"]
    head += ["µs per tool", "tools/list again ms", "RSS MiB after", "peak RSS MiB"]
    for era in ERAS:
        body = []
        for peer in PEERS:
            for n in counts.tools:
                match = {"peer": peer, "era": era, "tools": n}
                if not select(rows, "tools", **match):
                    continue  # not run (the Python SDK's largest counts)
                metrics = ("start_ms", "list_ms", "list_cpu_ms", "pages", "us_per_tool", "relist_ms", "rss_mib")
                cells = [fmt(figure(rows, "tools", m, **match), "n" if m == "pages" else "") for m in metrics]
                body.append([peer, f"{n:,}", *cells, fmt(figure(rows, "tools", "peak_mib", **match))])
        parts.append(f"{era}:\n\n" + markdown(head, body))
    head = ["server", "era", "start-up µs per tool (fewest → most tools)", f"start-up ms, {counts.tools[-2]:,} tools"]
    head += ["tools/list of the most tools ÷ of a tenth of them", "the same, listed again"]
    body = []
    reps = sorted({r["rep"] for r in select(rows, "tools")})
    for era in ERAS:
        for peer in PEERS:
            match = {"peer": peer, "era": era}
            ran = sorted({r["tools"] for r in select(rows, "tools", **match)})
            if not ran:
                continue
            low, high = ran[0], ran[-1]
            slope = []
            for rep in reps:
                a = figure(rows, "tools", "start_ms", rep=rep, tools=high, **match)
                b = figure(rows, "tools", "start_ms", rep=rep, tools=low, **match)
                slope.append((a - b) * 1000 / (high - low) if a is not None and b is not None and high > low else None)
            listed = [
                f"{high:,} ÷ {high // 10:,}: "
                + fmt(ratio(rows, "tools", metric, {"tools": high}, {"tools": high // 10}, **match), "x")
                for metric in ("list_ms", "relist_ms")
            ]
            start = fmt(figure(rows, "tools", "start_ms", tools=counts.tools[-2], **match))
            body.append([peer, era, fmt(median(slope)), start, *listed])
    parts.append("The curves in a line:\n\n" + markdown(head, body))
    return "\n\n".join(parts)


def payload_tables(rows: list[Row], counts: Counts) -> str:
    sizes = counts.megabytes
    head = ["server", "transport", "era", *(f"server CPU ms per MB, {mb} MiB" for mb in sizes)]
    head += [*(f"p50 ms, {mb} MiB" for mb in sizes), f"answer MiB at {sizes[-1]} MiB"]
    body = []
    for transport in ("stdio", "http"):
        for era in ERAS:
            for peer in PEERS:
                match = {"peer": peer, "era": era, "transport": transport}
                body.append(
                    [
                        peer,
                        transport,
                        era,
                        *(fmt(figure(rows, "payload", "cpu_ms_per_mb", megabytes=mb, **match)) for mb in sizes),
                        *(fmt(figure(rows, "payload", "p50_ms", megabytes=mb, **match)) for mb in sizes),
                        fmt(figure(rows, "payload", "answer_mib", megabytes=sizes[-1], **match)),
                    ]
                )
    head2 = ["server", "transport", *(f"{mb} MiB: {STATELESS} ÷ {HANDSHAKE}" for mb in sizes)]
    body2 = []
    for transport in ("stdio", "http"):
        for peer in PEERS:
            match = {"peer": peer, "transport": transport}
            cells = [
                fmt(
                    ratio(
                        rows, "payload", "cpu_ms_per_mb", {"era": STATELESS}, {"era": HANDSHAKE}, megabytes=mb, **match
                    ),
                    "x",
                )
                for mb in sizes
            ]
            body2.append([peer, transport, *cells])
    return (
        markdown(head, body)
        + "\n\nServer CPU per MB, the stateless era's ÷ the handshake era's:\n\n"
        + markdown(head2, body2)
    )


def concurrency_tables(rows: list[Row], counts: Counts) -> str:
    parts = []
    head = ["server", "clients", "req/s", "p50 ms", "p99 ms", "server CPU µs/call", "GC share of server CPU"]
    top = counts.clients[-1]
    for era in ERAS:
        body = []
        for peer in (BARE, *PEERS):
            for c in counts.clients:
                match = {"peer": peer, "era": era, "clients": c}
                cells = [
                    fmt(figure(rows, "concurrency", m, **match)) for m in ("rps", "p50_ms", "p99_ms", "cpu_us_per_call")
                ]
                body.append([peer, str(c), *cells, fmt(figure(rows, "concurrency", "gc_pct", **match), "%")])
        parts.append(f"{era}:\n\n" + markdown(head, body))
    head = ["server", "era", "peak req/s (clients)", f"req/s at {top} ÷ peak", f"÷ the bare app's at {top} ÷ its peak"]
    body = []
    for era in ERAS:
        falls = {}
        for peer in (BARE, *PEERS):
            each, peaks = [], []
            for rep in sorted({r["rep"] for r in select(rows, "concurrency")}):
                rates = {
                    c: figure(rows, "concurrency", "rps", rep=rep, peer=peer, era=era, clients=c)
                    for c in counts.clients
                }
                known = {c: v for c, v in rates.items() if v is not None}
                if known and rates[top] is not None:
                    best = max(known, key=lambda c: known[c])
                    peaks.append((known[best], best))
                    each.append(rates[top] / known[best])
            falls[peer] = median(each)
            peak = f"{fmt(median(p for p, _ in peaks))} ({'/'.join(str(c) for c in sorted({c for _, c in peaks}))})"
            relative = falls[peer] / falls[BARE] if falls[peer] is not None and falls.get(BARE) else None
            body.append([peer, era, peak, fmt(falls[peer], "x"), fmt(relative, "x") if peer != BARE else ""])
    parts.append("Throughput at the most clients against each server's own peak:\n\n" + markdown(head, body))
    return "\n\n".join(parts)


TABLES: dict[str, Callable[[list[Row], Counts], str]] = {
    "sessions": sessions_tables,
    "tools": tools_tables,
    "payload": payload_tables,
    "concurrency": concurrency_tables,
}


def report(rows: list[Row], counts: Counts, sections: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Each section's tables under a title saying how many runs, the load and the time."""
    found = {}
    for section, make in TABLES.items():
        if select(rows, section):
            done = sections.get(section, {})
            load = done.get("load", [None, None])
            seconds = f"; {done['seconds']:.0f} s" if "seconds" in done else ""
            runs = f"median of {counts.repeat} runs" if counts.repeat > 1 else "1 run"
            title = f"{section} ({runs}; load average {fmt(load[0])} → {fmt(load[1])}{seconds})"
            found[section] = f"### {title}\n\n{make(rows, counts)}"
    return found
