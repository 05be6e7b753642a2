"""Scale-out in the stateless era (2026-07-28): four uvicorn workers behind one port.

100 concurrent clients make 200 ``tools/call`` each over raw stateless-era JSON-RPC (httpx,
HTTP/1.1 keep-alive); a tenth of the calls run a tool that elicits, so the call comes back
as an InputRequiredResult and the client retries it (new id) with its answer and the
sealed ``requestState``. Every POST must be answered once, with its own id, no call lost,
no error; the workers share the state key (``$MCPGEN_STATE_KEY``), so a retry completes on
whichever worker it lands. Each client keeps two connections and uses them in turn, so a
retry travels on the other connection than its first round: uvicorn's workers split
connections (not requests) between them, and the test checks that retries really did
complete on another worker than the one that asked.

A worker holding another key must refuse such a state (-32602) without running the tool.
"""

from __future__ import annotations

import contextlib
import json
import re
import ssl
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from tests.workers import uvicorn_workers

pytestmark = pytest.mark.anyio

APP = "tests.servers.scale_stateless:app"
VERSION = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    "io.modelcontextprotocol/clientInfo": {"name": "scale", "version": "0"},
}
CLIENTS = 100
CALLS = 200  # per client
ASK_EVERY = 10  # one call in ten elicits
WORKERS = 4
TIME_LIMIT = 100.0  # seconds for the whole load; measured well under it (see the report)
_ASKED_BY = re.compile(r"pid=(\d+) ")


# ------------------------------------------------------------------ the workers


@contextlib.contextmanager
def serving(key: str, workers: int, log: Path) -> Iterator[str]:
    """uvicorn serving the scale app with ``workers`` processes and this state key; yields
    the endpoint once every worker answers."""
    with uvicorn_workers(APP, workers, {"MCPGEN_STATE_KEY": key}, log, whoami={"n": 0}) as url:
        yield url


# ------------------------------------------------------------------ the wire


def _headers(tool: str) -> dict[str, str]:
    return {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": VERSION,
        "mcp-method": "tools/call",
        "mcp-name": tool,
    }


def _body(rid: int, tool: str, arguments: dict[str, Any], **extra: Any) -> bytes:
    params = {"name": tool, "arguments": arguments, "_meta": META, **extra}
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}).encode()


async def _post(
    client: httpx.AsyncClient, url: str, rid: int, tool: str, arguments: dict[str, Any], **extra: Any
) -> tuple[int, dict[str, Any]]:
    reply = await client.post(url, content=_body(rid, tool, arguments, **extra), headers=_headers(tool))
    return reply.status_code, reply.json()


def _answer(n: int) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": f"user-{n}"}}


# ------------------------------------------------------------------ the load


@dataclass
class Tally:
    sent: Counter[int] = field(default_factory=Counter)  # JSON-RPC ids posted
    answered: Counter[int] = field(default_factory=Counter)  # ids that came back
    completed: Counter[int] = field(default_factory=Counter)  # call numbers finished
    pids: Counter[int] = field(default_factory=Counter)  # worker -> calls it completed
    moved: int = 0  # retries completed by another worker than the one that asked
    stayed: int = 0
    asks: int = 0
    errors: list[str] = field(default_factory=list)
    state: tuple[int, str] | None = None  # one sealed state (call number, requestState)


async def _client(url: str, c: int, tally: Tally, tls: ssl.SSLContext) -> None:
    """One client: CALLS calls in a row over two keep-alive connections used in turn.
    (``tls``: one context for all, never used over http://, but httpx would otherwise
    load the CA bundle for each client, some 40 ms of CPU each.)"""
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    options: dict[str, Any] = {"limits": limits, "timeout": 30, "verify": tls}
    async with httpx.AsyncClient(**options) as one, httpx.AsyncClient(**options) as two:
        connections = (one, two)
        posts = 0

        async def post(rid: int, tool: str, arguments: dict[str, Any], **extra: Any) -> dict[str, Any] | None:
            nonlocal posts
            connection = connections[posts % 2]
            posts += 1
            tally.sent[rid] += 1
            status, data = await _post(connection, url, rid, tool, arguments, **extra)
            got = data.get("id")
            tally.answered[got if isinstance(got, int) else -1] += 1  # -1: no usable id came back
            if status != 200 or data.get("id") != rid or "error" in data or "result" not in data:
                tally.errors.append(f"id {rid}: {status} {str(data)[:300]}")
                return None
            result: dict[str, Any] = data["result"]
            return result

        for i in range(CALLS):
            n = c * CALLS + i
            if i % ASK_EVERY != c % ASK_EVERY:
                result = await post(2 * n, "whoami", {"n": n})
                if result is None:
                    continue
                done = result.get("structuredContent") or {}
                if result.get("resultType") != "complete" or done.get("n") != n:
                    tally.errors.append(f"call {n}: {result}")
                    continue
            else:
                tally.asks += 1
                first = await post(2 * n, "ask", {"n": n})
                if first is None:
                    continue
                question = (first.get("inputRequests") or {}).get("answer") or {}
                asked = _ASKED_BY.match(str((question.get("params") or {}).get("message")))
                state = first.get("requestState")
                if first.get("resultType") != "input_required" or asked is None or not isinstance(state, str):
                    tally.errors.append(f"call {n} round 1: {first}")
                    continue
                if question.get("method") != "elicitation/create" or set(first["inputRequests"]) != {"answer"}:
                    tally.errors.append(f"call {n} asked: {first['inputRequests']}")
                    continue
                # The retry: the same request, a new id, the answer and the state echoed.
                result = await post(
                    2 * n + 1, "ask", {"n": n}, inputResponses={"answer": _answer(n)}, requestState=state
                )
                if result is None:
                    continue
                done = result.get("structuredContent") or {}
                if result.get("resultType") != "complete" or done.get("n") != n or done.get("name") != f"user-{n}":
                    tally.errors.append(f"call {n} retry: {result}")
                    continue
                if done["pid"] == int(asked.group(1)):
                    tally.stayed += 1
                else:
                    tally.moved += 1
                tally.state = (n, state)
            tally.completed[n] += 1
            tally.pids[done["pid"]] += 1


async def _refused_by_stranger(stranger: str, n: int, state: str) -> None:
    """A worker holding another key refuses the state with -32602 and never runs the tool."""
    async with httpx.AsyncClient(timeout=10) as client:
        status, data = await _post(
            client, stranger, 7, "ask", {"n": n}, inputResponses={"answer": _answer(n)}, requestState=state
        )
        assert status == 400, (status, data)
        assert data.get("id") == 7 and "result" not in data, data
        assert data["error"]["code"] == -32602, data
        assert "requestState" in data["error"]["message"], data
        status, ran = await _post(client, stranger, 8, "runs", {})
        assert ran["result"]["structuredContent"]["result"] == 0, ran  # the handler never ran


@pytest.mark.slow
async def test_four_workers_serve_stateless_load_with_retries_on_any_worker(tmp_path: Path) -> None:
    tally = Tally()
    with serving("scale-key-shared-by-all-workers-of-this-test", WORKERS, tmp_path / "workers.log") as url:
        tls = ssl.create_default_context()
        started, cpu = time.perf_counter(), time.process_time()
        with anyio.fail_after(TIME_LIMIT):
            async with anyio.create_task_group() as group:
                for c in range(CLIENTS):
                    group.start_soon(_client, url, c, tally, tls)
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        posts = sum(tally.sent.values())
        print(
            f"\n{CLIENTS} clients x {CALLS} calls on {WORKERS} workers: {posts} POSTs in {elapsed:.1f} s "
            f"({posts / elapsed:.0f} POST/s, {CLIENTS * CALLS / elapsed:.0f} calls/s); calls per worker "
            f"{sorted(tally.pids.values())}; MRTR retries on another worker {tally.moved}, "
            f"on the same {tally.stayed}; the clients' process used {cpu:.1f} s of CPU"
        )
        assert tally.errors == [], tally.errors[:10]
        # Every POST answered exactly once, with its own id; every call completed once.
        assert set(tally.answered) == set(tally.sent)
        assert set(tally.sent.values()) == {1} and set(tally.answered.values()) == {1}
        assert posts == CLIENTS * CALLS + CLIENTS * CALLS // ASK_EVERY
        assert sorted(tally.completed) == list(range(CLIENTS * CALLS))
        assert set(tally.completed.values()) == {1}
        assert tally.asks == CLIENTS * CALLS // ASK_EVERY == tally.moved + tally.stayed
        # The load spread, and MRTR retries completed on another worker than the asker.
        assert len(tally.pids) > 1, tally.pids
        assert tally.moved > 0, (tally.moved, tally.stayed)

        assert tally.state is not None
        n, state = tally.state
        with serving("another-key-that-no-worker-of-the-app-holds", 1, tmp_path / "stranger.log") as stranger:
            await _refused_by_stranger(stranger, n, state)


async def test_a_worker_with_another_key_refuses_the_state(tmp_path: Path) -> None:
    """The fast-suite half: a state sealed under one key is refused under another (and
    still opens where it was sealed, so the key alone made the difference)."""
    with (
        serving("key-one-held-by-the-first-server-only", 1, tmp_path / "one.log") as one,
        serving("key-two-held-by-the-second-server-only", 1, tmp_path / "two.log") as two,
    ):
        async with httpx.AsyncClient(timeout=10) as client:
            status, first = await _post(client, one, 1, "ask", {"n": 42})
            assert status == 200 and first["result"]["resultType"] == "input_required", first
            state = first["result"]["requestState"]
            await _refused_by_stranger(two, 42, state)
            status, done = await _post(
                client, one, 2, "ask", {"n": 42}, inputResponses={"answer": _answer(42)}, requestState=state
            )
            assert status == 200, done
            assert done["result"]["structuredContent"]["name"] == "user-42", done
