"""`mcpgen stubs` generation time against the size of a server's schema: is it linear?

A server chooses its tools' schemas, so generation must not be quadratic in them (issue 36,
point 2: 16,000 ``$defs`` took 15-41 s). Two shapes, each at growing sizes:

* ``chained``: one tool whose ``inputSchema`` has N ``$defs``, each an object referring to
  the next (``D0`` -> ``D1`` -> ... -> ``D0``);
* ``clashing``: N ``$defs`` whose names all make the same Python name (``x``, ``x_``,
  ``x__`` ... all ``X``), so every name but the first must be made unique.

For each it times the whole generation (description -> model -> rendered, formatted and
guarded module: :func:`mcpgen.stubs.render.render_stubs`) and reports the time per
definition; a linear generator keeps that flat as N grows (``growth``: the per-definition
time at the largest N over that at the smallest; about 1 when linear, N_max / N_min when
quadratic).

Run from the repository root with the project's venv active::

    python bench/stubs.py                        # 1,000 to 16,000 definitions
    python bench/stubs.py --quick                # smoke run (250 to 1,000)
    python bench/stubs.py --json results.json    # also write the numbers as JSON
"""

from __future__ import annotations

import os
import sys

# Run as a script, this file's folder comes first on sys.path, where bench/http.py would
# shadow the standard library's http (which the generator's loader imports): drop it.
if sys.path and sys.path[0] and os.path.samefile(sys.path[0], os.path.dirname(os.path.abspath(__file__))):
    del sys.path[0]

import argparse  # noqa: E402 (after the sys.path fix above)
import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from mcpgen.stubs.model import build_stubs, description_from_json  # noqa: E402 (after sys.path)
from mcpgen.stubs.render import render_stubs  # noqa: E402

SIZES = [1000, 2000, 4000, 8000, 16000]
QUICK_SIZES = [250, 500, 1000]


def chained(n: int) -> dict[str, Any]:
    defs = {
        f"D{i}": {
            "type": "object",
            "properties": {"v": {"type": "integer"}, "next": {"$ref": f"#/$defs/D{(i + 1) % n}"}},
        }
        for i in range(n)
    }
    return {"type": "object", "$defs": defs, "properties": {"d": {"$ref": "#/$defs/D0"}}}


def clashing(n: int) -> dict[str, Any]:
    defs = {"x" + "_" * i: {"type": "object", "properties": {"v": {"type": "integer"}}} for i in range(n)}
    return {"type": "object", "$defs": defs, "properties": {"d": {"$ref": "#/$defs/x"}}}


SHAPES = {"chained": chained, "clashing": clashing}


def measure(shape: str, n: int) -> dict[str, Any]:
    description = {"server": {"name": "big", "version": "1"}, "tools": [{"name": "t", "inputSchema": SHAPES[shape](n)}]}
    started = time.perf_counter()
    model = build_stubs(description_from_json(description))
    text = render_stubs(model, "bench")
    seconds = time.perf_counter() - started
    return {
        "shape": shape,
        "defs": n,
        "types": len(model.types),
        "seconds": round(seconds, 3),
        "us_per_def": round(seconds / n * 1e6, 1),
        "module_bytes": len(text.encode()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: 250 to 1,000 definitions")
    parser.add_argument("--json", type=Path, help="also write the results here as JSON")
    args = parser.parse_args()
    sizes = QUICK_SIZES if args.quick else SIZES
    rows = []
    growth: dict[str, float] = {}
    for shape in SHAPES:
        measured = [measure(shape, n) for n in sizes]
        rows += measured
        growth[shape] = round(measured[-1]["us_per_def"] / measured[0]["us_per_def"], 2)
        for row in measured:
            print(f"{shape:9} {row['defs']:6} defs  {row['seconds']:7.2f} s  {row['us_per_def']:8.1f} us/def")
        print(f"{shape:9} growth of the time per definition, {sizes[0]} -> {sizes[-1]}: {growth[shape]}x")
    if args.json:
        settings = {"sizes": sizes, "python": platform.python_version(), "machine": platform.machine()}
        report = {"settings": settings, "rows": rows, "growth": growth}
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
