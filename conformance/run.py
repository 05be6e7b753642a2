"""Run the official MCP conformance suite (pinned in package.json) against mcpgen.

    python conformance/run.py server                 # every server scenario vs examples/everything_server.py
    python conformance/run.py client                 # the client scenarios mcpgen supports, one at a time
    python conformance/run.py client --scenario sse-retry

Installs the pinned harness with `npm ci` when needed (Node 22 comes from the npm package
`node`). Results go to conformance/results/<suite>-<time>/. The last line printed is
"N passed, M failed" counted in scenarios; the exit code is 0 only if none failed.
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
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BIN = HERE / "node_modules" / ".bin"
# Client scenarios mcpgen's example client implements: all 26 of the suite.
CLIENT_SCENARIOS = [
    "initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry",
    "auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3",
    "auth/basic-cimd", "auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined", "auth/scope-step-up", "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post", "auth/token-endpoint-auth-none",
    "auth/pre-registration", "auth/2025-03-26-oauth-metadata-backcompat", "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/resource-mismatch", "auth/offline-access-scope", "auth/offline-access-not-supported",
    "auth/client-credentials-jwt", "auth/client-credentials-basic", "auth/cross-app-access-complete-flow",
]  # fmt: skip


def ensure_harness() -> None:
    if (BIN / "conformance").exists() and (BIN / "node").exists():
        return
    print("[conformance] npm ci (pinned harness)", file=sys.stderr)
    subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=HERE, check=True, stdout=sys.stderr)


def harness_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"  # its node is Node 22
    env["NODE_OPTIONS"] = f"{env.get('NODE_OPTIONS', '')} --require {HERE / 'loopback.cjs'}".strip()
    return env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(url: str, process: subprocess.Popen[bytes], seconds: float = 20) -> None:
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


def scenario_results(out: Path) -> dict[str, tuple[int, int, int]]:
    """scenario -> (passed, failed, warnings) checks, from the harness's checks.json files."""
    results: dict[str, tuple[int, int, int]] = {}
    for checks_file in sorted(out.glob("**/checks.json")):
        # Folders: "server-<scenario>-<time>", "<scenario>-<time>", or "auth/<name>-<time>".
        folder = checks_file.parent.relative_to(out).as_posix()
        name = re.sub(r"-\d{4}-\d\d-\d\dT.*$", "", folder).removeprefix("server-")
        statuses = [c.get("status") for c in json.loads(checks_file.read_text())]
        results[name] = (statuses.count("SUCCESS"), statuses.count("FAILURE"), statuses.count("WARNING"))
    return results


def run_server(out: Path) -> dict[str, tuple[int, int, int]]:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    server = subprocess.Popen([sys.executable, str(ROOT / "examples" / "everything_server.py"), "--port", str(port)],
                              stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        wait_for(url, server)
        subprocess.run([str(BIN / "conformance"), "server", "--url", url, "--suite", "all", "--output-dir", str(out)],
                       env=harness_env(), stdout=sys.stderr, timeout=600)  # fmt: skip
    finally:
        server.terminate()
        server.wait(10)
    return scenario_results(out)


def run_client(out: Path, scenarios: list[str]) -> dict[str, tuple[int, int, int]]:
    command = f"{sys.executable} {ROOT / 'examples' / 'everything_client.py'}"
    results: dict[str, tuple[int, int, int]] = {}
    for name in scenarios:
        target = out / name.replace("/", "_")
        proc = subprocess.run(
            [str(BIN / "conformance"), "client", "--command", command, "--scenario", name,
             "--timeout", "60000", "--output-dir", str(target)],
            env=harness_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300,
        )  # fmt: skip
        sys.stderr.write(proc.stdout)
        found = scenario_results(target)
        passed = sum(p for p, _, _ in found.values())
        failed = sum(f for _, f, _ in found.values()) + (0 if "OVERALL: PASSED" in proc.stdout else 1)
        warnings = sum(w for _, _, w in found.values())
        results[name] = (passed, failed, warnings)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description="Run the MCP conformance suite against mcpgen.")
    parser.add_argument("suite", choices=["server", "client"])
    parser.add_argument("--scenario", action="append", help="client scenario(s) to run (default: all supported)")
    args = parser.parse_args()
    ensure_harness()
    out = HERE / "results" / f"{args.suite}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    out.mkdir(parents=True, exist_ok=True)
    if args.suite == "server":
        results = run_server(out)
    else:
        results = run_client(out, args.scenario or CLIENT_SCENARIOS)
    ok = 0
    for name, (passed, failed, warnings) in sorted(results.items()):
        # Server-mode warnings are SHOULD-level notes; client-mode warnings fail (as the harness says).
        good = failed == 0 and (args.suite == "server" or warnings == 0)
        ok += good
        print(f"{'PASS' if good else 'FAIL'} {name}: {passed} checks passed, {failed} failed, {warnings} warnings")
    if not results:
        print("no scenario results found")
    print(f"{ok} passed, {len(results) - ok + (0 if results else 1)} failed")
    return 0 if results and ok == len(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
