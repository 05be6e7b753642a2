"""Run the official MCP conformance suite (pinned in package.json) against mcpgen, in the three
legs the official Python SDK runs in its CI, each judged against its own expected-failures file.

    python conformance/run.py server --leg 2026-07-28     # examples/everything_server.py over HTTP
    python conformance/run.py client --leg default        # examples/everything_client.py
    python conformance/run.py server                      # all three legs, one after the other
    python conformance/run.py client --leg 2025-11-25 --scenario sse-retry
    python conformance/run.py server --leg 2026-07-28 --write-baseline   # rewrite its baseline

Legs (CONFORMANCE-0.2.md §1.2): `2025-11-25` and `2026-07-28` pass `--spec-version` (every
scenario applicable at that revision, at that revision's wire); `default` passes none (every
scenario the harness ships, 2026-introduced and extension ones at 2026-07-28, the rest at
2025-11-25; it is the only leg that reaches the extension scenarios). Every leg is `--suite all`.

Baselines: conformance/expected/<side>-<leg>.yml, the harness's `--expected-failures` format
(`{server: [...]}` / `{client: [...]}`, entries `scenario` or `scenario:check-id`). The harness
exits 1 on a failure the file does not list and on a listed entry that now passes (stale), and
that verdict is this script's exit code. `--write-baseline` runs without the file and rewrites
it from the run's failures (only the given scenarios' entries with `--scenario`).

Client scenarios run one at a time (`--scenario` per harness run) by default: on 2 cores some
40 Python clients starting at once push timing checks (sse-retry's reconnect delay) past their
tolerance. `--together` runs them as the harness does by default (`--suite all`, concurrently),
the load under which a client's era probe is slow; CI runs both. Nothing is retried: a
scenario that fails once is a failure (a flaky scenario is a defect to fix, not to re-run).
Every scenario the harness lists for the leg must have a result: one that left none counts
as failed ("did not run"), so a leg cannot pass on fewer scenarios than it has.

Installs the pinned harness with `npm ci` when needed (Node 22 comes from the npm package
`node`). Results go to conformance/results/<side>-<time>-<pid>/<leg>/ (harness.log, and one
folder per scenario with checks.json). The last line printed is "N passed, M failed" counted in
scenarios (a scenario passes when no check is a FAILURE or WARNING, the baseline's rule).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BIN = HERE / "node_modules" / ".bin"
EXPECTED = HERE / "expected"
LEGS = {"2025-11-25": ["--spec-version", "2025-11-25"], "2026-07-28": ["--spec-version", "2026-07-28"], "default": []}
CLIENT_COMMAND = f"{sys.executable} {ROOT / 'examples' / 'everything_client.py'}"
# One client scenario alone takes a few seconds; the harness kills the client after this.
CLIENT_TIMEOUT_MS = 30000
# Bounds on the harness processes themselves (a scenario has its own 30 s timeout inside).
SERVER_LEG_SECONDS = 900
CLIENT_SCENARIO_SECONDS = 120
BASELINE_HEADER = """\
# Expected failures of the {side} leg `{leg}` of the pinned conformance harness
# (conformance/package.json), read by `python conformance/run.py {side} --leg {leg}`.
# {what}
# The harness fails the run on a failure not listed here and on a listed entry that now
# passes (stale): remove entries as features land, or rewrite this file from a run with
#   python conformance/run.py {side} --leg {leg} --write-baseline
# An entry is a scenario (the whole scenario may fail) or scenario:check-id (only that check).
"""
LEG_TEXT = {
    "2025-11-25": "Every scenario applicable at 2025-11-25, at the 2025-11-25 wire (stateful handshake).",
    "2026-07-28": "Every scenario applicable at 2026-07-28, at the 2026-07-28 wire (stateless, per-request _meta).",
    "default": "Every scenario the harness ships, each at its default wire; the only leg with extensions.",
}


@dataclass
class Scenario:
    """One scenario's outcome: its checks (from checks.json) and the harness's verdict."""

    name: str
    checks: list[dict[str, object]] = field(default_factory=list)
    note: str = ""
    missing: bool = False  # the harness ran nothing for it, or left no result (see harness.log)

    def worst(self) -> dict[str, str]:
        """check id -> worst status, INFO ignored (the harness's own reduction for baselines)."""
        rank = {"FAILURE": 3, "WARNING": 2, "SUCCESS": 1}
        worst: dict[str, str] = {}
        for check in self.checks:
            cid, status = str(check.get("id")), str(check.get("status"))
            if status != "INFO" and rank.get(status, 0) >= rank.get(worst.get(cid, ""), 0):
                worst[cid] = status
        return worst

    def failing(self) -> list[str]:
        return [cid for cid, status in self.worst().items() if status in ("FAILURE", "WARNING")]

    def entries(self) -> list[str]:
        """Baseline entries for this scenario: the failing checks when some real check passes
        (so a new failure elsewhere in the scenario still fails the run), else the scenario."""
        failing = self.failing()
        if not failing:
            return []
        passing = [cid for cid, s in self.worst().items() if s == "SUCCESS" and cid != "wire-schema-valid"]
        return [f"{self.name}:{cid}" for cid in failing] if passing else [self.name]

    def line(self) -> str:
        statuses = [str(c.get("status")) for c in self.checks]
        shown = [s for s in ("SUCCESS", "FAILURE", "WARNING") if s in statuses]
        counts = ", ".join(f"{statuses.count(s)} {s.lower()}" for s in shown)
        failing = self.failing()
        detail = f" [{', '.join(failing)}]" if failing else ""
        verdict = "FAIL" if failing or self.missing else "PASS"
        return f"{verdict} {self.name}: {counts or 'no checks'}{detail}{self.note}"


def ensure_harness() -> None:
    if (BIN / "conformance").exists() and (BIN / "node").exists():
        return
    print("[conformance] npm ci (pinned harness)", file=sys.stderr)
    subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=HERE, check=True, stdout=sys.stderr)


def harness_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"  # its node is Node 22
    env["NODE_OPTIONS"] = f"{env.get('NODE_OPTIONS', '')} --require {HERE / 'loopback.cjs'}".strip()
    env["NO_COLOR"] = "1"
    return env


def harness(args: list[str], log: Path, timeout: float) -> tuple[int, str]:
    """Run the harness CLI; its output goes to `log` (appended) and our stderr."""
    try:
        proc = subprocess.run(
            [str(BIN / "conformance"), *args],
            env=harness_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=timeout,
            check=False,
        )
        rc, output = proc.returncode, proc.stdout
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout or b""
        rc, output = 1, (out.decode(errors="replace") if isinstance(out, bytes) else out)
        output += f"\n[conformance] the harness did not finish within {timeout:.0f} s\n"
    output = re.sub(r"\x1b\[[0-9;]*m", "", output)
    with log.open("a") as handle:
        handle.write(f"$ conformance {' '.join(args)}\n{output}\n[exit {rc}]\n")
    sys.stderr.write(output)
    return rc, output


def leg_scenarios(side: str, leg: str) -> list[str]:
    """The scenarios `--suite all` selects in this leg, as the harness lists them."""
    proc = subprocess.run(
        [str(BIN / "conformance"), "list", f"--{side}", *LEGS[leg]],
        env=harness_env(),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return re.findall(r"^  - (\S+)", proc.stdout, flags=re.MULTILINE)


def read_results(out: Path, output: str) -> dict[str, Scenario]:
    """scenario -> its checks, from the harness's checks.json files under `out`, and from its
    output for a scenario that threw (the harness then records one FAILURE check named after
    the scenario, in memory only)."""
    results: dict[str, Scenario] = {}
    stamp = re.compile(r"-\d{4}-\d\d-\d\dT[\d-]+Z$")
    for folder in sorted(path for path in out.glob("**/*") if path.is_dir() and stamp.search(path.name)):
        # Folders: "server-<scenario>-<time>" or "<scenario>-<time>"; auth/<name> nests a folder.
        # A scenario that recorded no check gets its folder but no checks.json.
        name = stamp.sub("", folder.relative_to(out).as_posix()).removeprefix("server-")
        checks_file = folder / "checks.json"
        results[name] = Scenario(name, json.loads(checks_file.read_text()) if checks_file.exists() else [])
    for name, error in re.findall(r"^Failed to run scenario (\S+): (.*)$", output, flags=re.MULTILINE):
        results[name] = Scenario(name, [{"id": name, "status": "FAILURE", "errorMessage": error}], " (threw)")
    return results


def read_baseline(path: Path, side: str) -> list[str]:
    """The entries of a baseline file, read by the same YAML library the harness uses."""
    if not path.exists():
        return []
    code = "const Y=require('yaml');const d=Y.parse(require('fs').readFileSync(process.argv[1],'utf8'))??{};"
    code += f"console.log(JSON.stringify(d[{json.dumps(side)}]??[]))"
    proc = subprocess.run(
        [str(BIN / "node"), "-e", code, str(path)], cwd=HERE, capture_output=True, text=True, check=True, timeout=60
    )
    return [str(entry) for entry in json.loads(proc.stdout)]


def write_baseline(path: Path, side: str, leg: str, entries: list[str]) -> None:
    def scalar(entry: str) -> str:  # plain YAML where it is safe, else a JSON (= YAML) string
        return entry if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9/_.:-]*", entry) else json.dumps(entry)

    text = BASELINE_HEADER.format(side=side, leg=leg, what=LEG_TEXT[leg]) + "\n"
    text += f"{side}:" + ("".join(f"\n  - {scalar(e)}" for e in entries) if entries else " []") + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(url: str, process: subprocess.Popen[bytes], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"[conformance] the server exited with {process.returncode}")
        try:
            urllib.request.urlopen(url, timeout=1)
            return
        except urllib.error.HTTPError:
            return  # it answers (with an HTTP error for a bare GET): it is up
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"[conformance] nothing answers at {url}")


def run_server(leg: str, out: Path, baseline: Path | None, scenarios: list[str]) -> tuple[int, dict[str, Scenario]]:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"  # a loopback host, as dns-rebinding-protection requires
    with (out / "server.log").open("wb") as server_log:
        # MCPGEN_CONFORMANCE_SERVER: another server script taking --port, in place of the
        # everything server (the harness's own tests need one that fails a scenario).
        script = os.environ.get("MCPGEN_CONFORMANCE_SERVER") or str(ROOT / "examples" / "everything_server.py")
        command = [sys.executable, script, "--port", str(port)]
        server = subprocess.Popen(command, stdout=server_log, stderr=subprocess.STDOUT)
        try:
            wait_for(url, server)
            common = ["server", "--url", url, *LEGS[leg], "--output-dir", str(out)]
            common += ["--expected-failures", str(baseline)] if baseline else []
            rc, outputs = 0, ""
            for selection in [["--scenario", name] for name in scenarios] or [["--suite", "all"]]:
                code, output = harness([*common, *selection], out / "harness.log", SERVER_LEG_SECONDS)
                rc, outputs = rc or code, outputs + output
        finally:
            server.terminate()
            server.wait(10)
    return rc, read_results(out, outputs)


def run_client(leg: str, out: Path, baseline: Path | None, scenarios: list[str]) -> tuple[int, dict[str, Scenario]]:
    rc = 0
    results: dict[str, Scenario] = {}
    for name in scenarios:
        common = [
            "client",
            "--command",
            CLIENT_COMMAND,
            "--scenario",
            name,
            *LEGS[leg],
            "--timeout",
            str(CLIENT_TIMEOUT_MS),
        ]
        common += ["--expected-failures", str(baseline)] if baseline else []
        first = out / "runs" / name.replace("/", "_")
        code, output = harness([*common, "--output-dir", str(first)], out / "harness.log", CLIENT_SCENARIO_SECONDS)
        results[name] = read_results(first, output).get(name) or Scenario(name, note=" (no result)", missing=True)
        rc = rc or code
    return rc, results


def run_client_together(leg: str, out: Path, baseline: Path | None) -> tuple[int, dict[str, Scenario]]:
    """Every client scenario of the leg in one harness run (`--suite all`), concurrently, as
    the suite runs by default: the load that makes a client's probe slow."""
    common = ["client", "--command", CLIENT_COMMAND, "--suite", "all", *LEGS[leg], "--timeout", str(CLIENT_TIMEOUT_MS)]
    common += ["--expected-failures", str(baseline)] if baseline else []
    code, output = harness([*common, "--output-dir", str(out)], out / "harness.log", SERVER_LEG_SECONDS)
    return code, read_results(out, output)


def run_leg(
    side: str,
    leg: str,
    out: Path,
    scenarios: list[str] | None,
    rewrite: bool,
    baseline: Path | None = None,
    together: bool = False,
) -> tuple[int, int, int]:
    """Run one leg; returns (exit code, scenarios passed, scenarios failed)."""
    path = baseline or EXPECTED / f"{side}-{leg}.yml"
    if not rewrite and not path.exists():
        raise SystemExit(f"[conformance] no baseline {shown(path)}: create it with --write-baseline")
    out.mkdir(parents=True, exist_ok=True)
    # Every scenario of the leg, as the harness lists it (or those asked for): each must
    # have a result, whether the harness ran them one at a time or all at once.
    expected = scenarios or leg_scenarios(side, leg)
    start = time.monotonic()
    if together:
        rc, results = run_client_together(leg, out, None if rewrite else path)
    else:
        runner = run_server if side == "server" else run_client
        rc, results = runner(leg, out, None if rewrite else path, scenarios or (expected if side == "client" else []))
    wall = time.monotonic() - start
    missing = [name for name in expected if name not in results]
    results.update({name: Scenario(name, note=" (did not run: see harness.log)", missing=True) for name in missing})
    if missing and not rewrite:
        rc = rc or 1
    print(f"== {side} leg {leg} ({wall:.0f} s, results in {out.relative_to(ROOT)})")
    for result in results.values():
        print(result.line())
    if rewrite:
        # Keep the entries of scenarios this run did not cover (a --scenario run).
        kept = [e for e in read_baseline(path, side) if e.split(":", 1)[0] not in results] if scenarios else []
        entries = kept + [entry for result in results.values() for entry in result.entries()]
        write_baseline(path, side, leg, entries)
        print(f"wrote {shown(path)} ({len(entries)} entries)")
        rc = 0
    else:
        print(f"harness verdict with {shown(path)}: {'pass' if rc == 0 else 'FAIL'}")
    failed = sum(1 for r in results.values() if r.failing() or r.missing)
    return rc, len(results) - failed, failed


def main() -> int:
    parser = argparse.ArgumentParser(description="Run the MCP conformance suite against mcpgen.")
    parser.add_argument("side", choices=["server", "client"])
    parser.add_argument("--leg", choices=[*LEGS, "all"], default="all", help="spec-version leg (default: all three)")
    parser.add_argument("--scenario", action="append", help="only these scenario(s) of the leg")
    parser.add_argument("--write-baseline", action="store_true", help="rewrite the leg's baseline from this run")
    parser.add_argument("--baseline", type=Path, help="this expected-failures file instead of the leg's own")
    parser.add_argument(
        "--together",
        action="store_true",
        help="client: every scenario in one harness run, concurrently (the suite's default), instead of one at a time",
    )
    args = parser.parse_args()
    if args.together and (args.side != "client" or args.scenario):
        parser.error("--together runs a whole client leg")
    if args.baseline and args.leg == "all":
        parser.error("--baseline needs a single --leg")
    ensure_harness()
    out = HERE / "results" / f"{args.side}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    rc = passed = failed = 0
    for leg in LEGS if args.leg == "all" else [args.leg]:
        code, ok, bad = run_leg(
            args.side, leg, out / leg, args.scenario, args.write_baseline, args.baseline, args.together
        )
        rc, passed, failed = rc or code, passed + ok, failed + bad
    print(f"{passed} passed, {failed} failed")
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
