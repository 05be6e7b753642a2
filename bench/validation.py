"""JSON Schema validation speed: mcpgen's validator next to the official SDK's.

The schema is a typical tool ``outputSchema``: four properties, one of them a 7-item
array whose items are a ``$ref`` to a ``$defs`` entry. It measures

* validate: microseconds to check one valid structuredContent (and one invalid one,
  which includes building the error message), with a validator compiled beforehand;
* compile: milliseconds to turn the schema into a validator: "cold" with mcpgen's cache of
  compiled schemas emptied first, "cached" for a schema compiled before (what a client
  pays when ``tools/list`` lists the same tool again),

for two implementations:

* ``mcpgen``: ``mcpgen.runtime.shared.jsonschema.compile_schema``, what ``Client`` and
  ``Server`` use;
* ``SDK``: what the official client (``mcp`` 2.x) does for each tools/call result:
  ``jsonschema``'s ``validator_for`` + ``check_schema`` + a validator with an empty
  ``referencing`` registry, compiled once per tool, then ``iter_errors`` + ``best_match``.

Before timing, both must accept the valid instance and reject the invalid one. Each
number is the best of several loops calibrated to a target duration, the two
implementations taking turns (GC stays enabled).

Run from the repository root with the project's venv active::

    python bench/validation.py                      # ~0.3 s per measurement, best of 5
    python bench/validation.py --quick              # smoke run
    python bench/validation.py --json results.json  # also write the numbers as JSON
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from mcpgen.runtime.shared import jsonschema as mcpgen_jsonschema  # noqa: E402 (after the sys.path line above)
from mcpgen.runtime.shared.jsonschema import SchemaValidationError, compile_schema  # noqa: E402

DAY = {
    "type": "object",
    "properties": {
        "date": {"type": "string"},
        "high": {"type": "number"},
        "low": {"type": "number"},
        "summary": {"type": "string", "enum": ["sunny", "cloudy", "rain", "snow"]},
    },
    "required": ["date", "high", "low"],
    "additionalProperties": False,
}

SCHEMA: dict[str, Any] = {
    "type": "object",
    "$defs": {"day": DAY},
    "properties": {
        "city": {"type": "string", "minLength": 1},
        "temperature": {"type": "number"},
        "updated": {"type": "integer", "minimum": 0},
        "forecast": {"type": "array", "items": {"$ref": "#/$defs/day"}, "minItems": 1, "maxItems": 14},
    },
    "required": ["city", "temperature", "forecast"],
}

VALID: dict[str, Any] = {
    "city": "Oslo",
    "temperature": -3.5,
    "updated": 1_760_000_000,
    "forecast": [{"date": f"2026-01-0{i + 1}", "high": 2.0 + i, "low": -4.5 + i, "summary": "snow"} for i in range(7)],
}
INVALID: dict[str, Any] = {**VALID, "forecast": [*VALID["forecast"][:6], {**VALID["forecast"][6], "low": "cold"}]}

Check = Callable[[Any], bool]


def mcpgen_compile(schema: dict[str, Any]) -> Check:
    validate = compile_schema(schema)

    def check(instance: Any) -> bool:
        try:
            validate(instance)
        except SchemaValidationError:
            return False
        return True

    return check


def sdk_compile(schema: dict[str, Any]) -> Check:
    # The same steps as mcp.client.session.ClientSession._output_schema_validator and
    # validate_tool_result (mcp 2.3).
    from jsonschema import exceptions
    from jsonschema.validators import validator_for
    from referencing import Registry

    cls = validator_for(schema)
    cls.check_schema(schema)
    validator = cls(schema, registry=Registry())

    def check(instance: Any) -> bool:
        return exceptions.best_match(validator.iter_errors(instance)) is None

    return check


IMPLEMENTATIONS: dict[str, Callable[[dict[str, Any]], Check]] = {"mcpgen": mcpgen_compile, "SDK": sdk_compile}


def per_call(fn: Callable[[], Any], target: float) -> float:
    """Seconds per call of ``fn``, from one loop sized to last about ``target`` seconds."""
    n = 1
    while True:
        start = time.perf_counter()
        for _ in range(n):
            fn()
        spent = time.perf_counter() - start
        if spent >= target / 4 or n >= 1 << 24:
            break
        n *= 4
    n = max(1, int(n * target / max(spent, 1e-9)))
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: short loops, best of 2")
    parser.add_argument("--json", type=Path, help="also write the results here as JSON")
    args = parser.parse_args()
    target, rounds = (0.02, 2) if args.quick else (0.3, 5)

    problems: list[str] = []
    checks = {name: make(SCHEMA) for name, make in IMPLEMENTATIONS.items()}
    for name, check in checks.items():
        if not check(VALID):
            problems.append(f"{name} rejects the valid instance")
        if check(INVALID):
            problems.append(f"{name} accepts the invalid instance")

    tasks: dict[tuple[str, str], Callable[[], Any]] = {}
    for name, check in checks.items():
        tasks[(name, "valid")] = lambda check=check: check(VALID)
        tasks[(name, "invalid")] = lambda check=check: check(INVALID)
        tasks[(name, "compile")] = lambda make=IMPLEMENTATIONS[name]: make(SCHEMA)
    tasks[("mcpgen", "compile cold")] = lambda: (mcpgen_jsonschema._cache.clear(), mcpgen_compile(SCHEMA))  # noqa: SLF001 (a cold compile empties the cache)
    best = {key: float("inf") for key in tasks}
    for _ in range(rounds):
        for key, fn in tasks.items():  # implementations take turns within each round
            best[key] = min(best[key], per_call(fn, target))

    results = {
        name: {
            "validate_valid_us": best[(name, "valid")] * 1e6,
            "validate_invalid_us": best[(name, "invalid")] * 1e6,
            "compile_ms": best[(name, "compile cold" if name == "mcpgen" else "compile")] * 1e3,
        }
        for name in IMPLEMENTATIONS
    }
    results["mcpgen"]["compile_cached_ms"] = best[("mcpgen", "compile")] * 1e3
    print(f"Python {platform.python_version()}, jsonschema {version('jsonschema')}")
    print(f"{'':8} {'valid (µs)':>12} {'invalid (µs)':>13} {'compile (ms)':>13} {'cached (ms)':>12}")
    for name, r in results.items():
        cached = f"{r['compile_cached_ms']:12.4f}" if "compile_cached_ms" in r else f"{'-':>12}"
        print(
            f"{name:8} {r['validate_valid_us']:12.1f} {r['validate_invalid_us']:13.1f} {r['compile_ms']:13.3f} {cached}"
        )
    mine, sdk = results["mcpgen"], results["SDK"]
    print(
        f"SDK ÷ mcpgen: valid {sdk['validate_valid_us'] / mine['validate_valid_us']:.1f}x, "
        f"invalid {sdk['validate_invalid_us'] / mine['validate_invalid_us']:.1f}x, "
        f"compile {sdk['compile_ms'] / mine['compile_ms']:.1f}x"
    )
    for problem in problems:
        print("PROBLEM:", problem)
    if args.json:
        args.json.write_text(json.dumps({"problems": problems, "results": results}, indent=2))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
