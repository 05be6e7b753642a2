"""The HTTP client against a hostile server (issue 36, points 5 to 7): a raw asyncio
server on loopback (tests/servers/hostile_http.py) that sends a gzip bomb, an encoding
never offered, a 100 MiB answer, a stream line or event that never ends, a flood of
notifications during one call, a redirect and a legacy ``endpoint`` to another origin.

What the client may hold is measured in a client subprocess (its peak resident memory,
before and after the one call): the limits are 16 MiB of decoded answer, line or event
(as over stdio), and an inbox of at most 16 MiB or 1,024 frames waiting for the session."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import httpx
import pytest

from mcpgen import Client, McpError
from mcpgen.runtime.errors import ConnectionClosed
from mcpgen.runtime.transports import bounded, sse
from mcpgen.runtime.transports.http_client import HttpTransport
from mcpgen.runtime.transports.legacy_sse_client import LegacySseTransport
from tests.paths import ROOT
from tests.servers.hostile_http import FLOOD_MIB, serving

pytestmark = pytest.mark.anyio
MIB = 1024


async def measured(url: str, timeout: float = 180) -> dict[str, Any]:
    """One call by a client in its own process: its outcome and peak memory (KiB)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.servers.hostile_http",
        "client",
        url,
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), timeout)
    except TimeoutError:
        process.kill()
        await process.wait()
        pytest.fail(f"the client did not finish within {timeout} s")
    assert process.returncode == 0, err.decode()[-3000:]
    result: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    result["grew_mib"] = (result["rss_kib_peak"] - result["rss_kib_before"]) / MIB
    return result


# ---------------------------------------------------------------- sizes (point 5)


@pytest.mark.slow  # a client process and 200 MiB inflated or 100 MiB sent: about 10 s
@pytest.mark.parametrize("path", ["/bomb", "/huge", "/endless-line", "/endless-event"])
async def test_an_answer_over_the_limit_fails_the_call_and_is_not_held(path: str) -> None:
    async with serving() as (origin, _):
        outcome = await measured(origin + path)
    assert not outcome["ok"], outcome
    assert f"exceeds the limit of {16 * 1024 * 1024} bytes" in outcome["error"], outcome
    # Without the limit: the bomb held 200 MiB inflated (451 MB measured), the huge
    # answer 100 MiB twice over, the endless streams whatever the server sent.
    assert outcome["grew_mib"] < 80, outcome  # measured without the limits: 613, 300, 431 MiB; with: 16-20


async def test_the_limits_in_process() -> None:
    """The same answers, in-process: each call fails at once, naming the limit."""
    async with serving() as (origin, _):
        for path in ("/bomb", "/endless-event"):
            async with Client.http(origin + path, era="handshake", standalone_stream=False) as client:
                with pytest.raises((McpError, ConnectionClosed), match="exceeds the limit"):
                    await client.call_tool("t", {})


async def test_an_encoding_not_offered_is_refused_and_what_we_offer_is_said() -> None:
    async with serving() as (origin, state):
        async with Client.http(origin + "/brotli", era="handshake", standalone_stream=False) as client:
            with pytest.raises((McpError, ConnectionClosed), match="'br', which was not offered"):
                await client.call_tool("t", {})
        posts = [seen for seen in state.seen if seen.method == "POST"]
        assert posts and all(seen.headers.get("accept-encoding") == bounded.ACCEPT_ENCODING for seen in posts)
        # The httpx path (GET streams, DELETE, a transport that left the fast path) says the same.
        transport = HttpTransport(origin + "/brotli")
        try:
            got = await transport._client.get(origin + "/anything")
            assert got.status_code == 405
        finally:
            await transport.close()
        assert state.seen[-1].headers.get("accept-encoding") == bounded.ACCEPT_ENCODING


def test_the_decoder_inflates_in_bounded_pieces() -> None:
    packed = __import__("gzip").compress(b"a" * (8 * 1024 * 1024))
    pieces = list(bounded.Decoder("gzip").feed(packed))
    assert b"".join(pieces) == b"a" * (8 * 1024 * 1024)
    assert max(map(len, pieces)) <= bounded.PIECE  # never 8 MiB at once from 8 KB
    with pytest.raises(bounded.ResponseTooLarge):
        bounded.decode_whole([packed], "gzip", 1024 * 1024, "the answer")
    with pytest.raises(bounded.EncodingRefused):
        bounded.Decoder("zstd")
    parser = sse.Parser(max_event=10)
    parser.line("data: 12345")
    with pytest.raises(sse.EventTooLarge):
        parser.line("data: 67890")


async def test_lines_are_cut_at_the_limit_without_copying_the_line_again_and_again() -> None:
    async def pieces() -> Any:
        yield b"data: ok\r"
        yield b"\nnext"
        yield b" line\n"
        for _ in range(20):
            yield b"x" * 100

    got = []
    with pytest.raises(bounded.ResponseTooLarge):
        async for line in bounded.lines(pieces(), 1000):
            got.append(line)
    assert got == ["data: ok", "next line"]


# ---------------------------------------------------------------- backpressure (point 6)


@pytest.mark.slow  # 150 MiB of notifications through a client process: about 20 s
async def test_a_flood_of_notifications_is_held_back_at_the_socket() -> None:
    async with serving() as (origin, state):
        outcome = await measured(origin + "/flood", timeout=300)
        assert state.flood_done.is_set()
    assert outcome["ok"], outcome
    sent = state.flood_sent
    assert sent >= FLOOD_MIB * 1024 * 1024
    assert outcome["progress"] == int(outcome["text"].split()[0]), outcome  # every one arrived
    # Without a bounded inbox the client held what the server sent faster than the session
    # took it (2.3 GB in 25 s measured); bounded, the server's writes wait instead.
    assert outcome["grew_mib"] < 50, outcome  # 110 MiB measured without the bound, 10 with it


async def test_the_inbox_makes_a_stream_wait_until_the_session_takes_half() -> None:
    inbox = bounded.Inbox(max_bytes=1000, max_frames=4)
    for n in range(4):
        await inbox.put(b"%d" % n)
    blocked = asyncio.ensure_future(inbox.put(b"4"))
    await asyncio.sleep(0.05)
    assert not blocked.done() and len(inbox) == 4
    inbox.put_nowait(b"answer")  # an answer to our own request never waits
    assert await inbox.get() == b"0" and await inbox.get() == b"1" and await inbox.get() == b"2"
    await asyncio.wait_for(blocked, 1)  # two left: half the frames, room again
    assert [await inbox.get() for _ in range(3)] == [b"3", b"answer", b"4"] and inbox.empty()


# ---------------------------------------------------------------- origins (point 7)


async def test_a_redirect_to_another_origin_is_not_followed_and_nothing_reaches_it() -> None:
    secret = {"x-api-key": "k-123", "authorization": "Bearer t-456", "cookie": "s=1"}
    async with serving() as (elsewhere, other), serving(elsewhere) as (origin, _):
        client = Client.http(origin + "/redirect", headers=secret, era="handshake", standalone_stream=False)
        with pytest.raises(ConnectionClosed, match="another origin"):
            async with client:
                pass
    assert other.seen == []  # not one request, so not one header, went there


async def test_a_legacy_endpoint_on_another_origin_is_refused() -> None:
    async with serving() as (elsewhere, other), serving(elsewhere) as (origin, _):
        with pytest.raises(ConnectionClosed, match="another origin"):
            await LegacySseTransport.connect(origin + "/sse", headers={"x-api-key": "k-123"})
    assert other.seen == []


async def test_a_redirect_hook_sees_the_origin_only() -> None:
    from mcpgen.runtime.transports.http_client import CrossOriginRedirect, same_origin_redirects

    check = same_origin_redirects("http://127.0.0.1:8000/mcp")
    request = httpx.Request("POST", "http://127.0.0.1:8000/old")
    moved = httpx.Response(307, headers={"location": "/mcp"}, request=request)
    await check(moved)  # the same origin: followed
    for target in ("http://127.0.0.1:8001/mcp", "https://127.0.0.1:8000/mcp", "http://localhost:8000/mcp"):
        with pytest.raises(CrossOriginRedirect):
            await check(httpx.Response(307, headers={"location": target}, request=request))
