"""Fuzzing the frame decoder, the session engine, stdio and the Streamable HTTP endpoint.

Every frame goes through the oracle of ``tests/fuzzing.py``: it says from the frame's bytes
alone (``json.loads`` and the official schema) what a ready demo-server session must answer,
and the test checks that exactly that came back (one reply per request, none for
notifications and responses, the right error code, the id echoed with its type). After
each hypothesis example the session must still answer a ping and have no task, in-flight
or queued request left over.

Frames fuzzed in one run of this file (in-process unless said otherwise):

======================================================  ==========================
bulk seeded mutations (``test_bulk_seeded_mutations``)  100,000 (asserted)
every member of every corpus frame x every JSON type    ~2,500
ids of every JSON type x every corpus frame             ~2,000
hypothesis strategies (bytes, invalid UTF-8, mutations,  ~6,500
envelopes, ids, huge numbers, duplicate ids in flight,
stray responses, notifications) and deep nesting
stdio, a real ``python tests/servers/demo.py``          5,000 lines (+ 5,000 pings)
Streamable HTTP through ``httpx.ASGITransport``          5,000 POSTs
atheris, coverage-guided (``fuzz/fuzz_frames.py``)       20,000 runs
======================================================  ==========================

About 140,000 frames in all (111,000 of them in-process, counted and printed when the
module's harness closes), for about 72 s of CPU (one core; the stdio server and atheris
run as subprocesses). In CI (``CI`` set) hypothesis is derandomized and the stdio/HTTP
seeds are fixed, so a run is reproducible; locally every run explores new inputs.

A frame the oracle finds wrongly answered fails the test that fed it: no failure is
tolerated as known. One frame of each bug the fuzzers found (all fixed) is replayed by
``test_fixed_bug_stays_fixed`` (``tests.fuzzing.FIXED_BUGS``).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.conftest import needs_shared
from tests.fuzzing import (
    CORPUS,
    CORPUS_FRAMES,
    DEMO,
    FIXED_BUGS,
    INIT,
    INITIALIZED,
    INVALID_PARAMS,
    INVALID_REQUEST,
    JSON_SAMPLES,
    METHODS,
    PARSE_ERROR,
    ROOT,
    SPEC,
    Expectation,
    FrameFactory,
    FuzzHarness,
    OracleError,
    Outcome,
    Reply,
    expect,
    frame_of,
    load_demo,
    paths,
    replaced,
    unbounded_work,
    verify,
    wrong_type_frames,
)

# The fuzz suite: run by `pytest -m slow` (CI runs both). Its oracle reads the official schema in ../shared.
pytestmark = [pytest.mark.slow, needs_shared]

CI = bool(os.environ.get("CI"))
BULK_FRAMES = 100_000
BULK_BATCH = 1_000
FUZZ_SETTINGS = settings(
    deadline=None,
    derandomize=CI,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)


@pytest.fixture(scope="module")
def harness() -> Iterator[FuzzHarness]:
    fuzz = FuzzHarness()
    # Handlers log tracebacks on purpose (the fail tool): formatting them costs more than a frame.
    logger = logging.getLogger("mcpgen")
    was = logger.disabled
    logger.disabled = True
    try:
        yield fuzz
    finally:
        logger.disabled = was
        fuzz.close()
        print(f"\nin-process fuzzing: {fuzz.frames} frames fed, {fuzz.skipped} refused as unbounded work")


def check_all(harness: FuzzHarness, frames: list[bytes]) -> None:
    harness.check_many(frames)
    harness.assert_healthy()


# ---------------------------------------------------------------- the corpus and every member of it


def test_corpus_frames_get_the_right_answers(harness: FuzzHarness) -> None:
    check_all(harness, CORPUS_FRAMES)
    call = harness.check_frame(
        frame_of(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "add", "arguments": {"a": 2, "b": 3}},
            }
        )
    )
    assert call is not None and call[0]["result"]["structuredContent"] == {"result": 5}


def test_every_member_of_every_corpus_frame_with_every_json_type(harness: FuzzHarness) -> None:
    frames = list(wrong_type_frames())
    assert len(frames) > 2_000
    for start in range(0, len(frames), 500):
        check_all(harness, frames[start : start + 500])


# ---------------------------------------------------------------- hypothesis strategies

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=10,
)
any_id = st.integers(min_value=-(2**64), max_value=2**64) | st.text(max_size=8) | json_values
corpus_messages = st.sampled_from(CORPUS)
corpus_params = st.sampled_from([m["params"] for m in CORPUS if "params" in m])
envelopes = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.just("2.0") | json_values,
        "id": any_id,
        "method": st.sampled_from(METHODS) | st.text(max_size=16) | json_values,
        "params": corpus_params | json_values,
        "result": json_values,
        "error": st.fixed_dictionaries({"code": st.integers(), "message": st.text(max_size=8)}) | json_values,
    },
)
frame_lists = st.lists(st.binary(max_size=300), min_size=1, max_size=60)


@FUZZ_SETTINGS
@given(frames=frame_lists)
def test_random_bytes(harness: FuzzHarness, frames: list[bytes]) -> None:
    check_all(harness, frames)


@st.composite
def invalid_utf8(draw: st.DrawFn) -> bytes:
    frame = draw(st.sampled_from(CORPUS_FRAMES))
    bad = draw(
        st.sampled_from([b"\xff", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\xc0\xaf", b"\x80", b"\xf8\x88\x80\x80\x80"])
    )
    at = draw(st.integers(min_value=0, max_value=len(frame)))
    return frame[:at] + bad + frame[at:]


@FUZZ_SETTINGS
@given(frames=st.lists(invalid_utf8(), min_size=1, max_size=60))
def test_invalid_utf8(harness: FuzzHarness, frames: list[bytes]) -> None:
    check_all(harness, frames)


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    frame = bytearray(draw(st.sampled_from(CORPUS_FRAMES)))
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        at = draw(st.integers(min_value=0, max_value=len(frame)))
        op = draw(st.sampled_from(["truncate", "set", "insert", "delete"]))
        if op == "truncate":
            del frame[at:]
        elif op == "set" and at < len(frame):
            frame[at] = draw(st.integers(min_value=0, max_value=255))
        elif op == "insert":
            frame[at:at] = draw(st.binary(min_size=1, max_size=4))
        else:
            del frame[at : at + draw(st.integers(min_value=1, max_value=8))]
    return bytes(frame)


@FUZZ_SETTINGS
@given(frames=st.lists(mutated(), min_size=1, max_size=60))
def test_truncated_and_mutated_corpus_frames(harness: FuzzHarness, frames: list[bytes]) -> None:
    check_all(harness, frames)


@FUZZ_SETTINGS
@given(messages=st.lists(envelopes, min_size=1, max_size=15))
def test_random_envelopes(harness: FuzzHarness, messages: list[dict[str, Any]]) -> None:
    check_all(harness, [frame_of(m) for m in messages])


@FUZZ_SETTINGS
@given(pairs=st.lists(st.tuples(corpus_messages, json_values | any_id), min_size=1, max_size=40))
def test_ids_of_every_json_type(harness: FuzzHarness, pairs: list[tuple[dict[str, Any], Any]]) -> None:
    check_all(harness, [frame_of({**message, "id": rid}) for message, rid in pairs])


def test_ids_of_each_json_type_exhaustively(harness: FuzzHarness) -> None:
    ids = [v for values in JSON_SAMPLES.values() for v in values] + [2**64, -(2**63) - 1, 10**20, -0.0, 1.0, "", " "]
    check_all(harness, [frame_of({**m, "id": rid}) for m in CORPUS for rid in ids])


@FUZZ_SETTINGS
@given(
    messages=st.lists(
        st.fixed_dictionaries(
            {"jsonrpc": st.just("2.0"), "method": st.sampled_from(sorted(SPEC.notifications)) | st.text(max_size=12)},
            optional={"params": json_values | corpus_params},
        ),
        min_size=1,
        max_size=40,
    )
)
def test_notifications_with_params_of_the_wrong_shape(harness: FuzzHarness, messages: list[dict[str, Any]]) -> None:
    frames = [frame_of(m) for m in messages]
    check_all(harness, frames)
    assert harness.session.state == "ready"


@FUZZ_SETTINGS
@given(
    messages=st.lists(
        st.fixed_dictionaries(
            {"jsonrpc": st.just("2.0"), "id": any_id},
            optional={"result": json_values, "error": json_values | st.just({"code": -1, "message": "m"})},
        ),
        min_size=1,
        max_size=20,
    )
)
def test_responses_to_unknown_ids(harness: FuzzHarness, messages: list[dict[str, Any]]) -> None:
    check_all(harness, [frame_of(m) for m in messages])


# ---------------------------------------------------------------- nesting and numbers

DEPTHS = [1_000, 10_000, 100_000]


def _nested(depth: int, kind: str) -> bytes:
    if kind == "array":
        return b"[" * depth + b"]" * depth
    return b'{"a":' * depth + b"1" + b"}" * depth


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize("kind", ["array", "object"])
def test_deep_nesting_gets_one_error_reply(harness: FuzzHarness, depth: int, kind: str) -> None:
    deep = _nested(depth, kind)
    frames = {
        "bare": deep,
        "unclosed": deep[: len(deep) // 2],
        "params": b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x":' + deep + b"}}",
        "arguments": b'{"jsonrpc":"2.0","id":"t","method":"tools/call","params":{"name":"echo","arguments":{"text":'
        + deep
        + b"}}}",
        "member": b'{"jsonrpc":"2.0","id":8,"method":"ping","extra":' + deep + b"}",
        "id": b'{"jsonrpc":"2.0","method":"ping","id":' + deep + b"}",
        "notification": b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"x":' + deep + b"}}",
    }
    for where, frame in frames.items():
        outcome = harness.feed([frame])
        assert not outcome.raised, f"{where}: on_frame raised {outcome.raised}"
        replies = [r.message for r in outcome.replies]
        if where == "notification":
            assert len(replies) <= 1, replies  # it may be refused as too deep, never answered twice
            continue
        assert len(replies) == 1, f"{where}: a frame nested {depth} deep got {replies!r}"
        error = replies[0].get("error")
        assert error is not None and error["code"] in (PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS), replies
        if "id" in replies[0]:
            assert replies[0]["id"] in (7, "t", 8), replies
        verify([frame], [expect(frame)], outcome)
    harness.assert_healthy()


HUGE = [
    b"1e400",
    b"-1e400",
    b"1e-400",
    b"12345678901234567890",
    b"-9223372036854775809",
    b"18446744073709551616",
    b"9" * 60,
    b"1" + b"0" * 400,
    b"1E+308",
    b"-0.0",
]
_SENTINEL = "\x00number\x00"


@st.composite
def huge_number_frames(draw: st.DrawFn) -> bytes:
    """A corpus frame with one of its members (any depth) replaced by a huge number."""
    message = draw(corpus_messages)
    path = draw(st.sampled_from(list(paths(message))))
    frame = frame_of(replaced(message, path, _SENTINEL))
    return frame.replace(b'"\\u0000number\\u0000"', draw(st.sampled_from(HUGE)))


@FUZZ_SETTINGS
@given(frames=st.lists(huge_number_frames(), min_size=1, max_size=40))
def test_huge_numbers(harness: FuzzHarness, frames: list[bytes]) -> None:
    check_all(harness, frames)


# ---------------------------------------------------------------- ids in flight


def test_duplicate_ids_in_flight(harness: FuzzHarness) -> None:
    slow = {
        "jsonrpc": "2.0",
        "id": "d",
        "method": "tools/call",
        "params": {"name": "slow", "arguments": {"seconds": 5}},
    }
    replies = harness.check_batch([frame_of(slow), frame_of(slow), frame_of({**slow, "method": "ping", "params": {}})])
    assert replies is not None and len(replies) == 3
    assert sum(1 for r in replies if r.get("error", {}).get("code") == INVALID_REQUEST) == 2
    done = [r for r in replies if "result" in r]
    assert len(done) == 1 and done[0]["result"]["content"][0]["text"] == "slept 5.0"
    harness.assert_healthy()


@FUZZ_SETTINGS
@given(
    batch=st.lists(
        st.tuples(
            st.sampled_from([m for m in CORPUS if "id" in m and "method" in m]), st.sampled_from([1, "1", "x", 0])
        ),
        min_size=2,
        max_size=12,
    )
)
def test_duplicate_ids_in_flight_batches(harness: FuzzHarness, batch: list[tuple[dict[str, Any], Any]]) -> None:
    harness.check_batch([frame_of({**message, "id": rid}) for message, rid in batch])
    harness.assert_healthy()


# ---------------------------------------------------------------- the bulk run: >= 100,000 frames


@settings(
    max_examples=BULK_FRAMES // BULK_BATCH,
    deadline=None,
    derandomize=CI,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # a seed does not shrink
    suppress_health_check=[HealthCheck.too_slow],
)
@given(seed=st.integers(min_value=0, max_value=2**64 - 1))
def _bulk(harness: FuzzHarness, seed: int) -> None:
    factory = FrameFactory(random.Random(seed))
    fed = 0
    while fed < BULK_BATCH:  # a frame refused as unbounded work is not counted
        fed += harness.check_many(factory.any() for _ in range(BULK_BATCH - fed))
    _BULK_COUNT.append(fed)
    harness.assert_healthy()


_BULK_COUNT: list[int] = []


def test_bulk_seeded_mutations(harness: FuzzHarness) -> None:
    """Hypothesis draws the seeds, a fast seeded generator makes 1,000 frames of every
    kind (corpus, truncated, byte-mutated, token-spliced, random bytes, invalid UTF-8,
    wrong types, odd ids, huge numbers, deep nesting, bad notifications, stray responses,
    random envelopes) from each."""
    _BULK_COUNT.clear()
    started = time.monotonic()
    _bulk(harness)
    generated = sum(_BULK_COUNT)
    assert generated >= BULK_FRAMES, f"only {generated} frames fuzzed"
    print(f"bulk: {generated} frames in {time.monotonic() - started:.1f} s")


# ---------------------------------------------------------------- bugs found: each stays fixed


@pytest.mark.parametrize("frame", list(FIXED_BUGS.values()), ids=list(FIXED_BUGS))
def test_fixed_bug_stays_fixed(harness: FuzzHarness, frame: bytes) -> None:
    expectation = expect(frame)
    verify([frame], [expectation], harness.feed([frame]))
    harness.assert_healthy()


def test_a_wrong_answer_fails_even_with_a_known_bugs_symptom(
    harness: FuzzHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fuzzers tolerate nothing: an answer showing exactly the symptom of a bug they
    once listed as known (a null-id error response answered with -32600 and no id) fails."""
    frame = FIXED_BUGS["null-id-error-response-answered"]
    symptom = {"jsonrpc": "2.0", "error": {"code": INVALID_REQUEST, "message": "Invalid Request"}}

    async def answered(frames: list[bytes]) -> Outcome:
        return Outcome(replies=[Reply(symptom, _unset(), True)])

    monkeypatch.setattr(harness, "_feed", answered)
    with pytest.raises(OracleError):
        harness.check_frame(frame)


# ---------------------------------------------------------------- stdio, end to end

STDIO_LINES = 5_000
MAX_MESSAGE = 16 * 1024 * 1024


class StdioPeer:
    def __init__(self, process: asyncio.subprocess.Process, stderr: Any) -> None:
        self.process = process
        self.stderr = stderr
        self.messages: list[dict[str, Any]] = []

    async def write(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        await self.process.stdin.drain()

    async def read(self, timeout: float = 10.0) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), timeout)
        assert line, f"the server closed stdout (exit {self.process.returncode}); stderr: {self.stderr_tail()}"
        message = json.loads(line)
        assert isinstance(message, dict), line[:200]
        return message

    def stderr_tail(self) -> str:
        self.stderr.seek(0)
        return str(self.stderr.read().decode(errors="replace"))[-3000:]


def _stdio_line(factory: FrameFactory) -> tuple[bytes, Expectation]:
    """A generated line that the subprocess can serve in bounded time."""
    while True:
        frame = factory.any().replace(b"\n", b" ")
        roll = factory.rng.random()
        if roll < 0.03:
            frame = b""  # a blank line
        elif roll < 0.08:
            at = factory.rng.randrange(len(frame) + 1)
            frame = frame[:at] + b"\r" + frame[at:]  # a stray carriage return
        line = frame + (b"\r\n" if factory.rng.random() < 0.1 else b"\n")
        expectation = expect(line) if line.strip() else Expectation("blank", ())
        if not expectation.long_running and not unbounded_work(expectation.message):
            return line, expectation


async def _stdio_round(peer: StdioPeer, line: bytes, expectation: Expectation, probe: str) -> Outcome:
    """Send the line and a ping after it; collect what comes until the ping's answer (and,
    when the line must be answered and was not yet, a little longer: its handler may still
    be running)."""
    await peer.write(line + frame_of({"jsonrpc": "2.0", "id": probe, "method": "ping"}) + b"\n")
    outcome = Outcome()
    wants_reply = bool(expectation.options) and all(o.reply for o in expectation.options)
    probed = False
    while True:
        if probed and (outcome.replies or not wants_reply):
            break
        try:
            message = await peer.read(0.05 if probed else 10.0)
        except TimeoutError:
            assert probed, f"no answer to the ping after {line[:300]!r}; stderr: {peer.stderr_tail()}"
            break  # the line's reply is not coming: the oracle judges the silence
        if message.get("id") == probe and not probed:
            assert message == {"jsonrpc": "2.0", "id": probe, "result": {}}, message
            probed = True
        elif "method" in message:
            outcome.messages.append(message)
        else:
            outcome.replies.append(Reply(message, message["id"] if "id" in message else _unset(), True))
    return outcome


def _unset() -> Any:
    from msgspec import UNSET

    return UNSET


async def _stdio_fuzz(seed: int) -> dict[str, int]:
    stderr = tempfile.TemporaryFile()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(DEMO),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=stderr,
        limit=4 * MAX_MESSAGE,
    )
    peer = StdioPeer(process, stderr)
    tally: dict[str, int] = {"lines": 0, "replies": 0}
    try:
        await peer.write(frame_of(INIT) + b"\n")
        assert "result" in await peer.read()
        await peer.write(frame_of(INITIALIZED) + b"\n")
        factory = FrameFactory(random.Random(seed))
        big_at = {1_000: "over", 2_000: "under"}
        for n in range(STDIO_LINES):
            if n in big_at:
                await _stdio_big_line(peer, big_at[n])
            line, expectation = _stdio_line(factory)
            outcome = await _stdio_round(peer, line, expectation, f"probe-{n}")
            tally["lines"] += 1
            tally["replies"] += len(outcome.replies)
            if expectation.category == "blank":
                assert not outcome.replies, f"a blank line was answered: {line!r} -> {outcome.replies}"
                continue
            try:
                verify([line], [expectation], outcome)
            except OracleError as exc:
                raise AssertionError(f"over stdio, line {n}: {exc}\nstderr: {peer.stderr_tail()}") from None
            assert process.returncode is None, f"the server died: {peer.stderr_tail()}"
        await peer.write(b'{"jsonrpc":"2.0","id":"last","method":"ping"}\n')
        assert await peer.read() == {"jsonrpc": "2.0", "id": "last", "result": {}}
    finally:
        assert process.stdin is not None
        process.stdin.close()
        try:
            code = await asyncio.wait_for(process.wait(), 10)
        except TimeoutError:
            process.kill()
            code = await process.wait()
        stderr.close()
    assert code == 0, f"the server exited with {code}"
    return tally


async def _stdio_big_line(peer: StdioPeer, which: str) -> None:
    """One line just over the 16 MiB limit (refused, the session goes on), or one just
    under it (served)."""
    head = b'{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"echo","arguments":{"text":"'
    tail = b'"}}}'
    size = MAX_MESSAGE + 1024 if which == "over" else MAX_MESSAGE - 4096
    text = b"x" * (size - len(head) - len(tail))
    await peer.write(head + text + tail + b"\n")
    reply = await peer.read(60)
    if which == "over":
        assert "id" not in reply and reply["error"]["code"] in (PARSE_ERROR, INVALID_REQUEST), str(reply)[:300]
    else:
        assert reply["id"] == "big" and reply["result"]["content"][0]["text"] == text.decode(), str(reply)[:300]


def test_stdio_end_to_end() -> None:
    seed = 20_240_611 if CI else random.randrange(2**32)
    tally = asyncio.run(_stdio_fuzz(seed))
    assert tally["lines"] == STDIO_LINES, (seed, tally)
    print(f"stdio (seed {seed}): {tally}")


# ---------------------------------------------------------------- Streamable HTTP

HTTP_POSTS = 5_000
GOOD_HOSTS = ["localhost", "localhost:8000", "127.0.0.1", "127.0.0.1:1", "[::1]:8080", "LOCALHOST"]
BAD_HOSTS = ["evil.example", "localhost.evil.example", "127.0.0.2", "", "[::2]:80", "0.0.0.0"]
GOOD_ORIGINS = [None, "http://localhost:5173", "https://127.0.0.1", "http://[::1]:3000"]
BAD_ORIGINS = ["http://evil.example", "null", "file://", "ftp://localhost", "http://localhost.evil.example"]
GOOD_TYPES = ["application/json", "application/json; charset=utf-8", "Application/JSON"]
BAD_TYPES = [None, "", "text/plain", "application/jsonx", "multipart/form-data", "application/x-www-form-urlencoded"]
GOOD_ACCEPTS = [None, "application/json, text/event-stream", "*/*", "application/*", "text/event-stream", "text/*"]
BAD_ACCEPTS = ["text/html", "image/png", "", "application/xml"]
VERSIONS = [None, "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
BAD_VERSIONS = ["2099-01-01", "", "latest", "2025-11-26"]


def _http_headers(rng: random.Random, session_id: str) -> tuple[dict[str, str], set[int], str]:
    """Random headers, the statuses any problem among them may cause, and which session."""
    headers: dict[str, str] = {}
    problems: set[int] = set()

    def pick(good: list[Any], bad: list[Any], status: int, name: str, p_bad: float = 0.08) -> None:
        value = rng.choice(bad) if rng.random() < p_bad else rng.choice(good)
        if value in bad:
            problems.add(status)
        if value is not None:
            headers[name] = value

    pick(GOOD_HOSTS, BAD_HOSTS, 403, "host")
    pick(GOOD_ORIGINS, BAD_ORIGINS, 403, "origin")
    pick(GOOD_TYPES, BAD_TYPES, 415, "content-type")
    pick(GOOD_ACCEPTS, BAD_ACCEPTS, 406, "accept")
    pick(VERSIONS, BAD_VERSIONS, 400, "mcp-protocol-version")
    which = rng.choices(["ready", "none", "unknown"], weights=[85, 8, 7])[0]
    if which == "ready":
        headers["mcp-session-id"] = session_id
    elif which == "unknown":
        headers["mcp-session-id"] = rng.choice(["nope", session_id + "x", "", session_id[:-1]])
    return headers, problems, which


async def _http_fuzz(seed: int) -> dict[str, int]:
    demo = load_demo()
    tools = dict(demo.server.catalog.tools)
    app = demo.server.http_app()
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    rng = random.Random(seed)
    factory = FrameFactory(rng)
    base = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    tally: dict[str, int] = {"posts": 0}
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost", timeout=30) as client:
            opened = await client.post("/mcp", content=frame_of(INIT), headers=base)
            assert opened.status_code == 200, opened.text
            session_id = opened.headers["mcp-session-id"]
            sid = {**base, "mcp-session-id": session_id}
            assert (await client.post("/mcp", content=frame_of(INITIALIZED), headers=sid)).status_code == 202
            for n in range(HTTP_POSTS):
                body, expectation = _http_body(factory)
                headers, problems, which = _http_headers(rng, session_id)
                reply = await asyncio.wait_for(client.post("/mcp", content=body, headers=headers), 30)
                tally["posts"] += 1
                tally[str(reply.status_code)] = tally.get(str(reply.status_code), 0) + 1
                try:
                    _check_http(reply, body, expectation, problems, which)
                except AssertionError as exc:
                    raise AssertionError(f"POST {n} {headers!r}\nbody {body[:300]!r}\n{exc}") from None
                if reply.status_code == 200 and "mcp-session-id" in reply.headers and which == "none":
                    # an initialize that opened another session: end it
                    gone = await client.delete(
                        "/mcp", headers={**base, "mcp-session-id": reply.headers["mcp-session-id"]}
                    )
                    assert gone.status_code == 200
            # the app still serves: a fresh session, a ping, the old session too
            fresh = await client.post("/mcp", content=frame_of(INIT), headers=base)
            assert fresh.status_code == 200, fresh.text
            new = {**base, "mcp-session-id": fresh.headers["mcp-session-id"]}
            await client.post("/mcp", content=frame_of(INITIALIZED), headers=new)
            for headers in (new, sid):
                ping = await client.post("/mcp", content=b'{"jsonrpc":"2.0","id":"p","method":"ping"}', headers=headers)
                assert ping.status_code == 200 and ping.json() == {"jsonrpc": "2.0", "id": "p", "result": {}}, ping.text
    finally:
        await app.close()
        for name in [n for n in demo.server.catalog.tools if n not in tools]:
            demo.server.remove_tool(name)
    return tally


def _http_body(factory: FrameFactory) -> tuple[bytes, Expectation]:
    while True:
        body = factory.any()
        expectation = expect(body)
        if not expectation.long_running and not unbounded_work(expectation.message):
            return body, expectation


def _check_http(reply: httpx.Response, body: bytes, expectation: Expectation, problems: set[int], which: str) -> None:
    status = reply.status_code
    assert status < 500 or status == 503, f"status {status}: {reply.text[:300]}"
    if problems:
        assert status in problems, f"status {status}, expected one of {sorted(problems)}: {reply.text[:200]}"
        return
    if which == "unknown":
        assert status in (400, 404), f"status {status} for an unknown session"
        return
    if which == "none":
        allowed = {400, 200, 202} if expectation.method == "initialize" else {400}
        assert status in allowed, f"status {status} without a session id"
        return
    if status == 202:
        assert not reply.content, reply.content[:200]
        outcome = Outcome()
    else:
        assert status in (200, 400), f"status {status}: {reply.text[:200]}"
        message = _http_reply(reply)
        outcome = Outcome(replies=[Reply(message, message.get("id", _unset()), True)])
    verify([body], [expectation], outcome)


def _http_reply(reply: httpx.Response) -> dict[str, Any]:
    if reply.headers.get("content-type", "").startswith("text/event-stream"):
        frames: list[dict[str, Any]] = [
            json.loads(line[5:]) for line in reply.text.splitlines() if line.startswith("data:") and line[5:].strip()
        ]
        finals = [f for f in frames if "method" not in f]
        assert len(finals) == 1, frames
        return finals[0]
    message = reply.json()
    assert isinstance(message, dict)
    return dict(message)


def test_http_endpoint() -> None:
    seed = 424_242 if CI else random.randrange(2**32)
    tally = asyncio.run(_http_fuzz(seed))
    assert tally["posts"] == HTTP_POSTS, (seed, tally)
    print(f"http (seed {seed}): {tally}")


def test_invalid_utf8_over_http_is_no_server_error() -> None:
    async def post() -> httpx.Response:
        app = load_demo().server.http_app()
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        try:
            async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
                return await client.post(
                    "/mcp",
                    content=b'{"jsonrpc":"2.0","id":1,"method":"\xff"}',
                    headers={"content-type": "application/json"},
                )
        finally:
            await app.close()

    reply = asyncio.run(post())
    assert reply.status_code == 400, (
        f"BUG unicode-decode-error-escapes over HTTP: a POST whose method holds invalid UTF-8 "
        f"got {reply.status_code} (the UnicodeDecodeError escapes decode_envelope), not 400 with -32700"
    )


# ---------------------------------------------------------------- atheris, coverage-guided

ATHERIS_RUNS = 20_000


def test_atheris_fuzzer_ci_run(tmp_path: Path) -> None:
    if importlib.util.find_spec("atheris") is None:
        pytest.fail("atheris is not installed: pip install atheris (it is in the test extras)")
    (tmp_path / "corpus").mkdir()
    started = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "fuzz" / "fuzz_frames.py"),
            f"-runs={ATHERIS_RUNS}",
            "-seed=1",
            f"-artifact_prefix={tmp_path}/",
            str(tmp_path / "corpus"),
            str(ROOT / "fuzz" / "corpus"),
            str(ROOT / "fuzz" / "crashes"),  # every input atheris ever failed on, replayed first
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"atheris found a failure (exit {proc.returncode}):\n{output[-6000:]}"
    assert f"Done {ATHERIS_RUNS} runs" in output, output[-3000:]
    print(f"atheris: {ATHERIS_RUNS} runs in {time.monotonic() - started:.1f} s")
