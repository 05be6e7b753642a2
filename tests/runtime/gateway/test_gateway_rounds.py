"""Rounds: a stateless-era client's call through to a handshake-era backend, held open while
the client answers, in process (raw stateless-era requests, so that each round is the
test's to send): answered on the same proxy or on another sharing the store and the key
(two workers in one process), never answered (the call is cancelled and its connection
freed), too many at once (refused), a malformed or missing answer, and two calls' rounds
never crossing."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator
from typing import Any

import msgspec
import pytest

from mcpgen import Proxy
from mcpgen.runtime.jsonrpc.framing import decode_envelope
from mcpgen.runtime.stores.task_store import MemoryTaskStore
from tests.runtime.gateway.backends import HANDSHAKE, MODERN, backend

pytestmark = pytest.mark.anyio
FORM = {"action": "accept", "content": {"name": "Ada"}}


@contextlib.asynccontextmanager
async def serving(*proxies: Proxy) -> AsyncIterator[None]:
    async with contextlib.AsyncExitStack() as stack:
        for proxy in proxies:
            assert proxy.lifespan_runner is not None
            await stack.enter_async_context(proxy.lifespan_runner)
        yield


_ids = iter(range(1, 1_000_000))


async def call(proxy: Proxy, name: str, caps: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """One stateless-era tools/call served by ``proxy``; the answer as JSON."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": caps if caps is not None else {"elicitation": {}},
    }
    frame = {
        "jsonrpc": "2.0",
        "id": next(_ids),
        "method": "tools/call",
        "params": {"name": name, "_meta": meta, **extra},
    }
    answer, _ = await proxy.features.stateless.handle(decode_envelope(msgspec.json.encode(frame)))
    return dict(msgspec.json.decode(answer))


async def retry(proxy: Proxy, name: str, asked: dict[str, Any], answers: dict[str, Any]) -> dict[str, Any]:
    return await call(proxy, name, inputResponses=answers, requestState=asked["result"]["requestState"])


def text(answer: dict[str, Any]) -> str:
    return "".join(block.get("text", "") for block in answer["result"]["content"])


def handshake_proxy(**options: Any) -> Proxy:
    return Proxy(backend([HANDSHAKE]), **options)


async def test_a_round_on_one_proxy() -> None:
    proxy = handshake_proxy()
    async with serving(proxy):
        asked = await call(proxy, "ask")
        assert asked["result"]["resultType"] == "input_required"
        question = asked["result"]["inputRequests"]["user_name"]
        assert question["method"] == "elicitation/create" and question["params"]["message"] == "What is your name?"
        assert "_meta" not in question["params"]  # the key the backend named it by is not shown again
        assert len(proxy.rounds.live) == 1
        done = await retry(proxy, "ask", asked, {"user_name": FORM})
        assert text(done) == "Hello, Ada!"
        assert proxy.rounds.live == {}
        assert [c.busy for pool in proxy.link.conns.values() for c in pool] == [0, 0]  # its connection is free


async def test_answers_sent_with_the_first_request_need_no_round() -> None:
    proxy = handshake_proxy()
    async with serving(proxy):
        done = await call(proxy, "ask", inputResponses={"user_name": FORM, "extra": {"action": "cancel"}})
        assert text(done) == "Hello, Ada!"


async def test_a_missing_answer_asks_again_and_a_malformed_one_is_refused() -> None:
    proxy = handshake_proxy()
    async with serving(proxy):
        asked = await call(proxy, "ask")
        again = await retry(proxy, "ask", asked, {"wrong_key": FORM})
        assert again["result"]["resultType"] == "input_required"
        assert list(again["result"]["inputRequests"]) == ["user_name"]
        refused = await retry(proxy, "ask", again, {"user_name": 12345})
        assert refused["error"]["code"] == -32602  # refused as it is read, before the round
        # The malformed answer never reached the backend: the question still waits.
        done = await retry(proxy, "ask", again, {"user_name": FORM})
        assert text(done) == "Hello, Ada!"


async def test_two_workers_share_a_round_through_the_store() -> None:
    store, key = MemoryTaskStore(), secrets.token_hex(32)
    a = handshake_proxy(store=store, state_key=key)
    b = handshake_proxy(store=store, state_key=key)
    async with serving(a, b):
        one = await call(a, "two_rounds")
        assert list(one["result"]["inputRequests"]) == ["step1"]
        two = await retry(b, "two_rounds", one, {"step1": FORM})  # b holds no round: a does
        assert list(two["result"]["inputRequests"]) == ["step2"], two
        assert b.rounds.live == {} and len(a.rounds.live) == 1
        grace = {"action": "accept", "content": {"name": "Grace"}}
        three = await retry(b, "two_rounds", two, {"step2": grace})
        assert text(three) == "Ada then Grace"
        assert a.rounds.live == {}
        stale = await retry(a, "two_rounds", two, {"step2": grace})
        assert stale["error"]["code"] == -32602


async def test_a_round_never_answered_ends_and_frees_its_connection() -> None:
    proxy = handshake_proxy(round_timeout=0.2)
    async with serving(proxy):
        asked = await call(proxy, "ask")
        assert asked["result"]["resultType"] == "input_required"
        for _ in range(100):
            if not proxy.rounds.live:
                break
            await asyncio.sleep(0.02)
        assert proxy.rounds.live == {}
        assert all(c.busy == 0 for pool in proxy.link.conns.values() for c in pool)
        late = await retry(proxy, "ask", asked, {"user_name": FORM})
        assert late["error"]["code"] == -32602 and "ended" in late["error"]["message"]


async def test_too_many_waiting_rounds_are_refused() -> None:
    proxy = handshake_proxy(max_rounds=2)
    async with serving(proxy):
        first = [await call(proxy, "ask") for _ in range(2)]
        assert all(a["result"]["resultType"] == "input_required" for a in first)
        busy = await call(proxy, "ask")
        assert busy["error"]["code"] == -32000
        assert text(await call(proxy, "echo", caps={}, arguments={"text": "still here"})) == "still here"


async def test_concurrent_rounds_do_not_cross() -> None:
    proxy = handshake_proxy()
    names = ["Ada", "Grace", "Edsger", "Barbara"]
    async with serving(proxy):
        asked = await asyncio.gather(*(call(proxy, "ask") for _ in names))
        answered = await asyncio.gather(
            *(
                retry(proxy, "ask", question, {"user_name": {"action": "accept", "content": {"name": name}}})
                for question, name in zip(asked, names, strict=True)
            )
        )
        assert [text(answer) for answer in answered] == [f"Hello, {name}!" for name in names]


async def test_a_stateless_backend_is_relayed_without_keeping_anything() -> None:
    proxy = Proxy(backend([MODERN]))
    async with serving(proxy):
        asked = await call(proxy, "two_rounds")
        assert list(asked["result"]["inputRequests"]) == ["step1"]
        assert proxy.rounds.live == {}  # the backend's own requestState travels, sealed in ours
        two = await retry(proxy, "two_rounds", asked, {"step1": FORM})
        grace = {"action": "accept", "content": {"name": "Grace"}}
        done = await retry(proxy, "two_rounds", two, {"step2": grace})
        assert text(done) == "Ada then Grace"
        tampered = dict(asked["result"])
        tampered["requestState"] = tampered["requestState"][:-4] + "AAAA"
        refused = await retry(proxy, "two_rounds", {"result": tampered}, {"step1": FORM})
        assert refused["error"]["code"] == -32602
