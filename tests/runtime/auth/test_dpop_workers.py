"""DPoP across workers (issue 36, point 20): two processes of one protected server sharing a
real redis-server, serving one public resource URL, each reached on its own port. A proof
one worker accepted is a replay at the other, and a nonce one worker handed out is good at
the other (a client moving between workers is not refused), both through the store; with
the store gone, a proof is refused (503), never let through unchecked."""

from __future__ import annotations

import json
import secrets
import sys
from typing import Any

import httpx
import pytest

from mcpgen.runtime.auth.challenge import challenge_params
from mcpgen.runtime.auth.dpop import DPoP, DPoPKey
from tests.http_server import free_port, running
from tests.paths import SERVERS
from tests.redis_server import redis_server

pytestmark = pytest.mark.slow  # two server processes and a redis-server

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}


def post(url: str, token: str, proof: str) -> httpx.Response:
    headers = {
        "authorization": f"DPoP {token}",
        "dpop": proof,
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
    }
    return httpx.post(url, headers=headers, content=json.dumps(INITIALIZE), timeout=10)


def dpop_error(response: httpx.Response) -> Any:
    return challenge_params(response.headers.get("www-authenticate", ""), "dpop").get("error")


def test_proofs_and_nonces_hold_across_workers() -> None:
    key, token = DPoPKey(), "tok-" + secrets.token_hex(8)
    ports = free_port(), free_port()
    resource = f"http://127.0.0.1:{ports[0]}/mcp"  # the one public URL both serve
    a, b = (f"http://127.0.0.1:{port}/mcp" for port in ports)
    with redis_server() as redis:
        script = [sys.executable, str(SERVERS / "dpop_worker.py")]
        with (
            running([*script, str(ports[0]), resource, redis.url, token, key.thumbprint], a),
            running([*script, str(ports[1]), resource, redis.url, token, key.thumbprint], b),
        ):
            dpop = DPoP(key)
            first = post(a, token, dpop.proof("POST", resource, token))
            assert first.status_code == 401 and dpop_error(first) == "use_dpop_nonce"
            assert dpop.note(first)  # the nonce worker A hands out
            proof = dpop.proof("POST", resource, token)
            moved = post(b, token, proof)  # the client's next request reaches worker B
            assert moved.status_code == 200, (moved.status_code, moved.headers.get("www-authenticate"))
            for worker in (a, b):  # the same proof again, at either worker: a replay
                replayed = post(worker, token, proof)
                assert replayed.status_code == 401 and dpop_error(replayed) == "invalid_dpop_proof"
                assert "already used" in replayed.text
            assert post(a, token, dpop.proof("POST", resource, token)).status_code == 200  # a fresh one
            redis.stop()
            down = post(a, token, dpop.proof("POST", resource, token))
            assert down.status_code == 503 and "shared store" in down.text
