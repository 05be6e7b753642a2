"""The conformance suite's server under test, through ``mcpgen gateway``: started by
conformance/run.py in place of the everything server (``MCPGEN_CONFORMANCE_SERVER``), it
takes ``--port`` as that server does, starts ``examples/everything_server.py`` on another
port (pinned with ``--versions`` to what ``MCPGEN_GATEWAY_BACKEND_VERSIONS`` names, if
anything), and serves ``mcpgen gateway`` over HTTP on ``--port``, fronting it. Both stop
when this process is terminated."""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
EVERYTHING = ROOT / "examples" / "everything_server.py"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(url: str, process: subprocess.Popen[bytes], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the everything server exited with {process.returncode}")
        try:
            urllib.request.urlopen(url, timeout=1)
            return
        except urllib.error.HTTPError:
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"nothing answers at {url}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    versions = os.environ.get("MCPGEN_GATEWAY_BACKEND_VERSIONS", "")
    backend_port = free_port()
    command = [sys.executable, str(EVERYTHING), "--port", str(backend_port)]
    if versions:
        command += ["--versions", versions]
    backend = subprocess.Popen(command)
    gateway: subprocess.Popen[bytes] | None = None

    def stop(*_: object) -> None:
        # Both at once, briefly: conformance/run.py waits 10 s for this process.
        for process in (gateway, backend):
            if process is not None and process.poll() is None:
                process.terminate()
        deadline = time.monotonic() + 4
        for process in (gateway, backend):
            if process is not None:
                try:
                    process.wait(max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()

    def terminated(*_: object) -> None:
        # Unwind whatever waits (a child's wait() holds its lock): stop() runs below.
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, terminated)
    try:
        wait_for(f"http://127.0.0.1:{backend_port}/mcp", backend)
        with tempfile.TemporaryDirectory() as folder:
            config = Path(folder) / "gateway.json"
            config.write_text(
                json.dumps({"mcpServers": {"everything": {"url": f"http://127.0.0.1:{backend_port}/mcp"}}})
            )
            command = [sys.executable, "-m", "mcpgen", "gateway", str(config)]
            gateway = subprocess.Popen([*command, "--transport", "http", "--port", str(args.port)])
            gateway.wait()
    finally:
        stop()


if __name__ == "__main__":
    main()
