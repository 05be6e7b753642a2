"""Interop with the official Python SDK (``mcp`` 2.x) over HTTP on loopback: real uvicorn
server processes and real HTTP clients, no mocks.

1. The SDK's Streamable HTTP client (``mcp.client.streamable_http``) drives our demo server
   (tests/servers/demo.py --http), in SSE mode and in JSON-response mode.
2. ``mcpgen.Client.http`` drives the SDK's ``MCPServer`` (tests/interop/sdk_server.py) in SSE,
   JSON-response, stateless and resumable modes; tests/interop/sdk_http_server.py serves all of
   them (and the legacy transport) from one process, since importing the SDK takes seconds.
3. The legacy 2024-11-05 HTTP+SSE transport both ways: the SDK's ``sse_client`` against our
   ``/sse`` endpoint, and ``mcpgen.Client.sse`` against the SDK's ``sse_app``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import mcp.types as sdk
import pytest
from mcp import ClientSession, MCPError
from mcp.client.session import ClientRequestContext
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from msgspec import UNSET
from pydantic import FileUrl

from mcpgen import Client, McpError
from mcpgen.generated import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitResult,
    LoggingMessageNotificationParams,
    PromptReference,
    ResourceTemplateReference,
    Root,
    TextContent,
    TextResourceContents,
)
from mcpgen.runtime.errors import RequestTimeout
from tests.http_server import free_port, wait_until_up
from tests.interop.test_interop import eventually, text_of
from tests.paths import INTEROP, ROOT
from tests.wire import DEMO

pytestmark = [
    pytest.mark.anyio,
    # The SDK flags logging, sampling and roots as deprecated by its 2026 draft; they are
    # the spec of the 2025-11-25 revision these sessions negotiate.
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

SDK_HTTP_SERVER = INTEROP / "sdk_http_server.py"
TEST_TIMEOUT = 15.0  # seconds, per test
WORK_ROOT = Root(uri="file:///work", name="work")
PING = {"jsonrpc": "2.0", "id": 99, "method": "ping"}


@dataclass
class Peer:
    """A server process on a loopback port; its stderr goes to a file the test can read."""

    base: str  # http://127.0.0.1:PORT
    stderr: Path
    process: subprocess.Popen[bytes]

    def url(self, path: str = "/mcp") -> str:
        return self.base + path

    def log(self) -> str:
        return self.stderr.read_text(errors="replace")

    def stop(self, grace: float = 5.0) -> float | None:
        """SIGTERM (uvicorn's graceful shutdown); the seconds it took, or None if it had to be killed."""
        if self.process.poll() is not None:
            return 0.0
        started = time.monotonic()
        self.process.terminate()
        try:
            self.process.wait(grace)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            return None
        return time.monotonic() - started


@contextlib.contextmanager
def serve(command: Callable[[int], list[str]], stderr: Path) -> Iterator[Peer]:
    """Start ``command(port)`` on a free loopback port and wait until it answers."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with stderr.open("wb") as sink:
        process = subprocess.Popen(command(port), stdout=subprocess.DEVNULL, stderr=sink, cwd=ROOT)
        peer = Peer(base, stderr, process)
        try:
            try:
                wait_until_up(base + "/", process, timeout=30)  # any HTTP answer (a 404) will do
            except (RuntimeError, TimeoutError) as exc:
                raise RuntimeError(f"{exc}\n{peer.log()}") from None
            yield peer
        finally:
            peer.stop()


def demo_command(*options: str) -> Callable[[int], list[str]]:
    """tests/servers/demo.py over Streamable HTTP at /mcp (and the legacy transport at /sse)."""
    return lambda port: [sys.executable, str(DEMO), "--http", str(port), *options]


def sdk_command(port: int) -> list[str]:
    """The SDK's MCPServer of tests/interop/sdk_server.py over HTTP (see sdk_http_server.py)."""
    return [sys.executable, str(SDK_HTTP_SERVER), str(port)]


# ==================================================================== 1. SDK HTTP client -> mcpgen server


@dataclass
class Exchange:
    """One HTTP request the SDK client made, and the response head it got (if any)."""

    method: str
    request_headers: dict[str, str]
    body: bytes
    status: int | None = None  # None: no response came back
    content_type: str = ""


@dataclass
class Wire:
    """Every HTTP exchange of one SDK client, seen through its httpx2 event hooks."""

    exchanges: list[Exchange] = field(default_factory=list)
    _by_request: dict[int, Exchange] = field(default_factory=dict)

    async def on_request(self, request: httpx2.Request) -> None:
        body = request.content if request.method == "POST" else b""
        exchange = Exchange(request.method, {k.lower(): v for k, v in request.headers.items()}, body)
        self.exchanges.append(exchange)
        self._by_request[id(request)] = exchange

    async def on_response(self, response: httpx2.Response) -> None:
        exchange = self._by_request[id(response.request)]
        exchange.status = response.status_code
        exchange.content_type = response.headers.get("content-type", "")

    def of(self, method: str) -> list[Exchange]:
        return [exchange for exchange in self.exchanges if exchange.method == method]

    def unanswered(self) -> list[str]:
        return [f"{e.method} {e.body.decode(errors='replace')}" for e in self.exchanges if e.status is None]


@pytest.fixture(scope="module", params=["sse", "json"])
def demo(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Peer]]:
    """The demo server over Streamable HTTP: default (SSE) or ``--json-response`` mode."""
    mode: str = request.param
    options = ["--json-response"] if mode == "json" else []
    with serve(demo_command(*options), tmp_path_factory.mktemp(f"demo-{mode}") / "stderr.log") as peer:
        yield mode, peer


@asynccontextmanager
async def sdk_http_session(url: str, wire: Wire | None = None, **callbacks: Any) -> AsyncIterator[ClientSession]:
    """The SDK's ClientSession over its streamable_http_client, with an httpx2 client that
    records every exchange into ``wire``."""
    hooks: dict[str, list[Callable[..., Any]]] = {}
    if wire is not None:
        hooks = {"request": [wire.on_request], "response": [wire.on_response]}
    http = httpx2.AsyncClient(timeout=httpx2.Timeout(10, read=30), event_hooks=hooks)
    async with http, streamable_http_client(url, http_client=http) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=10, **callbacks) as session:
            result = await session.initialize()
            assert result.server_info.name == "demo"
            yield session


async def test_sdk_http_client_handshake_tools_and_calls(demo: tuple[str, Peer]) -> None:
    mode, peer = demo
    wire = Wire()
    with anyio.fail_after(TEST_TIMEOUT):
        async with sdk_http_session(peer.url(), wire) as session:
            init = session.initialize_result
            assert init is not None
            assert init.protocol_version == "2025-11-25" == session.protocol_version
            assert (init.server_info.version, init.instructions) == ("1.2.3", "A server for tests.")
            caps = init.capabilities
            assert caps.tools is not None and caps.tools.list_changed is True
            assert caps.logging is not None and caps.completions is not None
            await session.send_ping()

            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            assert {"add", "sum_all", "weather", "count", "ask_model", "ask_user", "poll"} <= set(tools)
            assert tools["add"].output_schema == {
                "type": "object",
                "properties": {"result": {"type": "integer"}},
                "required": ["result"],
            }

            # The SDK checks structuredContent against each listed outputSchema itself.
            add = await session.call_tool("add", {"a": 2, "b": 3})
            assert add.is_error is False and add.structured_content == {"result": 5}
            assert add.content == [sdk.TextContent(type="text", text='{"result":5}')]
            total = await session.call_tool("sum_all", {"numbers": [1, 2, 3]})
            assert total.structured_content == {"total": 6, "terms": [1, 2, 3]}
            weather = await session.call_tool("weather", {"city": "Oslo", "days": 2})
            assert weather.structured_content == {"city": "Oslo", "celsius": 23.5}
            assert json.loads(text_of(weather)) == weather.structured_content
            failed = await session.call_tool("fail", {})
            assert failed.is_error is True and text_of(failed) == "it went wrong on purpose"
            assert (await session.call_tool("weather", {"city": ""})).is_error is True

    initialize, *later = wire.of("POST")
    assert "mcp-session-id" not in initialize.request_headers and initialize.status == 200
    session_ids = {exchange.request_headers.get("mcp-session-id") for exchange in later}
    assert len(session_ids) == 1 and None not in session_ids
    assert {exchange.request_headers.get("mcp-protocol-version") for exchange in later} == {"2025-11-25"}
    # notifications/initialized is accepted with 202; the SDK opens its GET stream after it.
    assert later[0].status == 202
    assert [(e.status, e.content_type) for e in wire.of("GET")][:1] == [(200, "text/event-stream")]
    # Nothing was sent before these results, so every request got one application/json body.
    assert {e.content_type for e in later[1:]} == {"application/json"}
    assert wire.unanswered() == []


async def test_sdk_http_client_logging_and_progress(demo: tuple[str, Peer]) -> None:
    mode, peer = demo
    logs: list[sdk.LoggingMessageNotificationParams] = []
    reports: list[tuple[float, float | None, str | None]] = []

    async def on_log(params: sdk.LoggingMessageNotificationParams) -> None:
        logs.append(params)

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reports.append((progress, total, message))

    with anyio.fail_after(TEST_TIMEOUT):
        async with sdk_http_session(peer.url(), logging_callback=on_log) as session:
            await session.set_logging_level("warning")  # info messages are filtered out
            quiet = await session.call_tool("count", {"to": 2})
            assert text_of(quiet) == "counted to 2"
            await anyio.sleep(0.2)
            assert logs == []

            await session.set_logging_level("info")
            loud = await session.call_tool("count", {"to": 3}, progress_callback=on_progress)
            assert text_of(loud) == "counted to 3"
            await eventually(lambda: len(logs) == 3, what="log notifications")
            assert [(entry.level, entry.logger, entry.data) for entry in logs] == [
                ("info", "counter", f"counted {i}") for i in (1, 2, 3)
            ]
            await anyio.sleep(0.3)  # give late progress notifications every chance
    # Checked outside the session, so a failure is not wrapped in the SDK's exception groups.
    expected = [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    if mode == "sse":
        assert reports == expected, f"the SDK's progress callback got {reports}, expected {expected}"
    else:
        # Known limitation of --json-response (documented in the README): a JSON reply
        # cannot carry the request's progress, so mcpgen sends it on the standalone GET
        # stream; that races the reply, and the SDK drops progress for a finished
        # request. Whatever arrives must still be the right reports, in order.
        assert reports == expected[: len(reports)], f"progress out of order or wrong: {reports}"


async def test_sdk_http_client_sampling_elicitation_and_roots(demo: tuple[str, Peer]) -> None:
    _, peer = demo
    sampled: list[sdk.CreateMessageRequestParams] = []
    elicited: list[sdk.ElicitRequestParams] = []
    answers = [
        sdk.ElicitResult(action="accept", content={"name": "Ada", "age": 36}),
        sdk.ElicitResult(action="decline"),
    ]

    async def sampling(
        context: ClientRequestContext, params: sdk.CreateMessageRequestParams
    ) -> sdk.CreateMessageResult:
        sampled.append(params)
        question = params.messages[0].content
        assert isinstance(question, sdk.TextContent)
        return sdk.CreateMessageResult(
            role="assistant",
            content=sdk.TextContent(type="text", text=f"42 is {question.text}"),
            model="sdk-fake",
            stop_reason="endTurn",
        )

    async def elicitation(context: ClientRequestContext, params: sdk.ElicitRequestParams) -> sdk.ElicitResult:
        elicited.append(params)
        return answers.pop(0)

    async def list_roots(context: ClientRequestContext) -> sdk.ListRootsResult:
        return sdk.ListRootsResult(roots=[sdk.Root(uri=FileUrl("file:///work"), name="work")])

    with anyio.fail_after(TEST_TIMEOUT):
        callbacks: dict[str, Any] = {
            "sampling_callback": sampling,
            "elicitation_callback": elicitation,
            "list_roots_callback": list_roots,
        }
        async with sdk_http_session(peer.url(), **callbacks) as session:
            answer = await session.call_tool("ask_model", {"question": "the answer"})
            assert answer.is_error is False and text_of(answer) == "42 is the answer"
            assert len(sampled) == 1 and sampled[0].max_tokens == 50

            accepted = await session.call_tool("ask_user", {})
            assert text_of(accepted) == 'accept: {"name":"Ada","age":36}'
            form = elicited[0]
            assert isinstance(form, sdk.ElicitRequestFormParams) and form.message == "Who?"
            assert set(form.requested_schema["properties"]) == {"name", "age"}
            assert text_of(await session.call_tool("ask_user", {})) == "decline: "

            roots = await session.call_tool("roots", {})
            assert [block.text for block in roots.content if isinstance(block, sdk.TextContent)] == ["file:///work"]


async def test_sdk_http_client_resumes_a_closed_stream(demo: tuple[str, Peer]) -> None:
    """``poll`` closes its SSE connection after the priming event (in JSON-response mode too:
    the server streams that one response); the SDK reconnects with a GET carrying
    Last-Event-ID after the 200 ms retry hint and gets the result there."""
    _, peer = demo
    wire = Wire()
    with anyio.fail_after(TEST_TIMEOUT):
        async with sdk_http_session(peer.url(), wire) as session:
            result = await session.call_tool("poll", {})
            assert result.is_error is False and text_of(result) == "answered after the reconnect"
            assert (await session.call_tool("add", {"a": 1, "b": 1})).structured_content == {"result": 2}
    poll = [e for e in wire.of("POST") if b'"poll"' in e.body]
    assert [(e.status, e.content_type) for e in poll] == [(200, "text/event-stream")]
    resumed = [e for e in wire.of("GET") if "last-event-id" in e.request_headers]
    assert [(e.status, e.content_type) for e in resumed] == [(200, "text/event-stream")]
    assert resumed[0].request_headers["mcp-session-id"] == poll[0].request_headers["mcp-session-id"]


async def test_sdk_http_client_resources_prompts_and_completion(demo: tuple[str, Peer]) -> None:
    _, peer = demo
    with anyio.fail_after(TEST_TIMEOUT):
        async with sdk_http_session(peer.url()) as session:
            resources = {str(r.uri): r for r in (await session.list_resources()).resources}
            assert set(resources) == {"config://app", "bin://logo"}
            templates = (await session.list_resource_templates()).resource_templates
            assert [(t.uri_template, t.mime_type) for t in templates] == [("file:///{name}", "text/plain")]
            config = await session.read_resource("config://app")
            assert config.contents == [
                sdk.TextResourceContents(
                    uri="config://app", mime_type="application/json", text='{"debug": false, "level": 3}'
                )
            ]
            logo = (await session.read_resource("bin://logo")).contents[0]
            assert isinstance(logo, sdk.BlobResourceContents) and logo.mime_type == "image/png"
            todo = (await session.read_resource("file:///todo.md")).contents
            assert todo == [
                sdk.TextResourceContents(uri="file:///todo.md", mime_type="text/plain", text="- write tests")
            ]
            with pytest.raises(MCPError) as missing:
                await session.read_resource("file:///missing.txt")
            assert missing.value.error.code == -32002

            prompts = {p.name: p for p in (await session.list_prompts()).prompts}
            assert set(prompts) == {"review", "chat"}
            review = await session.get_prompt("review", {"code": "x = 1", "language": "rust"})
            assert [(m.role, m.content) for m in review.messages] == [
                ("user", sdk.TextContent(type="text", text="Review this rust code:\nx = 1"))
            ]
            chat = await session.get_prompt("chat", {"topic": "owls"})
            assert [m.role for m in chat.messages] == ["user", "assistant"]
            with pytest.raises(MCPError) as bad:
                await session.get_prompt("review", {})
            assert bad.value.error.code == -32602

            language = sdk.PromptReference(type="ref/prompt", name="review")
            done = await session.complete(language, {"name": "language", "value": "p"})
            assert done.completion.values == ["python", "perl", "php"]
            template = sdk.ResourceTemplateReference(type="ref/resource", uri="file:///{name}")
            files = await session.complete(template, {"name": "name", "value": "t"})
            assert files.completion.values == ["todo.md"]


async def test_sdk_http_client_terminates_its_session(demo: tuple[str, Peer]) -> None:
    _, peer = demo
    wire = Wire()
    with anyio.fail_after(TEST_TIMEOUT):
        async with sdk_http_session(peer.url(), wire) as session:
            await session.send_ping()
        session_id = wire.of("POST")[-1].request_headers["mcp-session-id"]
        deletes = wire.of("DELETE")
        assert [(e.status, e.request_headers.get("mcp-session-id")) for e in deletes] == [(200, session_id)]
        async with httpx.AsyncClient() as raw:
            gone = await raw.post(
                peer.url(),
                json=PING,
                headers={"mcp-session-id": session_id, "accept": "application/json, text/event-stream"},
            )
        assert gone.status_code == 404
    assert wire.unanswered() == []


@pytest.mark.parametrize("mode", ["sse", "json"])
async def test_sdk_http_client_cancellation_and_timeout(mode: str, tmp_path: Path) -> None:
    """The SDK's read timeout POSTs notifications/cancelled and our handler is cancelled.

    The cancelled request's POST must still end, or its connection and ASGI task are stuck
    until the process dies (uvicorn's graceful shutdown waits for them). And it must end in
    a way that does not invite the client to resume a stream that will never carry a
    response: the SDK resumes every primed stream that ends early (GET + Last-Event-ID
    after the retry hint), again and again while each resumption ends empty."""
    wire = Wire()
    options = ["--json-response"] if mode == "json" else []
    with serve(demo_command(*options), tmp_path / "stderr.log") as peer:
        with anyio.fail_after(TEST_TIMEOUT):
            async with sdk_http_session(peer.url(), wire) as session:
                with pytest.raises(MCPError) as timeout:
                    await session.call_tool("slow", {"seconds": 30}, read_timeout_seconds=0.3)
                assert timeout.value.error.code == sdk.REQUEST_TIMEOUT
                await eventually(lambda: peer.log().count("slow cancelled") == 1, what="server-side cancel")
                assert text_of(await session.call_tool("slow", {"seconds": 0.01})) == "slept 0.01"
                await anyio.sleep(1.2)  # six 200 ms retry hints: time for the POST to end, and for resumptions
        cancels = [e for e in wire.of("POST") if b"notifications/cancelled" in e.body]
        assert [e.status for e in cancels] == [202]
        assert [e.status for e in wire.of("DELETE")] == [200]
        unanswered = wire.unanswered()
        stopped_in = peer.stop(grace=3.0)
    cancelled_post = next(e for e in wire.of("POST") if b'"seconds":30' in e.body)
    assert not unanswered and stopped_in is not None, (
        f"mcpgen bug ({mode} mode): after notifications/cancelled (202) the POST of the cancelled "
        f"tools/call never got a response - no status line, no headers, no body: {unanswered}. The SDK "
        "client gave up and the session was DELETEd (200), yet the ASGI task serving that POST still waits "
        "for a first frame that never comes (McpHttpApp._answer does not watch for http.disconnect), so "
        f"SIGTERM {'could not stop the server in 3 s (killed)' if stopped_in is None else 'worked'}: uvicorn's "
        "graceful shutdown waits for it. The SDK's own server ends such a POST with a -32800 'Request "
        "cancelled' error."
    )
    resumptions = [e for e in wire.of("GET") if "last-event-id" in e.request_headers]
    assert len(resumptions) <= 2, (
        f"mcpgen bug ({mode} mode): the cancelled tools/call's POST was answered "
        f"{cancelled_post.status} {cancelled_post.content_type} and then ended without a response, after a "
        "priming event (id + retry: 200) - which tells a 2025-11-25 client to resume. The SDK then sent "
        f"{len(resumptions)} GETs with Last-Event-ID "
        f"{sorted({e.request_headers['last-event-id'] for e in resumptions})} "
        f"in ~1.5 s ({[e.status for e in resumptions]}), each replaying nothing and ending, so it polls "
        "every 200 ms until the session closes. A stream that will never carry a response should end "
        "with one (the SDK server sends a -32800 error) or refuse the resumption (404 for that Last-Event-ID)."
    )


# ==================================================================== 2. mcpgen HTTP client -> SDK server


@pytest.fixture(scope="module")
def sdk_peer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Peer]:
    """tests/interop/sdk_http_server.py: the SDK's MCPServer at /mcp (SSE), /json/mcp,
    /stateless/mcp, /resumable/mcp and /legacy/sse."""
    with serve(sdk_command, tmp_path_factory.mktemp("sdk") / "stderr.log") as peer:
        yield peer


async def fake_sampler(params: CreateMessageRequestParams) -> CreateMessageResult:
    question = params.messages[0].content
    assert isinstance(question, TextContent)
    return CreateMessageResult(
        role="assistant", content=TextContent(text=f"answer to {question.text}"), model="fake-llm"
    )


@pytest.mark.parametrize("mode", ["sse", "json", "stateless"])
async def test_mcpgen_http_client_sdk_server(mode: str, sdk_peer: Peer) -> None:
    """The calls of test_interop.py::test_mcpgen_client_sdk_server, over Streamable HTTP.

    What the SDK server does differently per mode (its documented behaviour, not ours):
    JSON-response mode drops request-scoped notifications (progress, logs) and refuses
    request-scoped server-to-client requests (sampling, elicitation) with -32600; stateless
    mode has no back-channel at all (sampling, elicitation and roots/list fail with -32600).
    """
    logs: list[LoggingMessageNotificationParams] = []
    progress: list[tuple[float, float | None, str | None]] = []
    forms: list[ElicitRequestParams] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async def elicitor(params: ElicitRequestParams) -> ElicitResult:
        forms.append(params)
        return ElicitResult(action="accept", content={"name": "Ada", "age": 36})

    def cancelled() -> int:
        return sdk_peer.log().count("sleep cancelled") - before

    before = sdk_peer.log().count("sleep cancelled")
    url = sdk_peer.url({"sse": "/mcp", "json": "/json/mcp", "stateless": "/stateless/mcp"}[mode])
    client = Client.http(
        url, sampling=fake_sampler, elicitation=elicitor, roots=[WORK_ROOT], on_log=logs.append, era="handshake"
    )
    with anyio.fail_after(TEST_TIMEOUT):
        async with client:
            init = client.initialize_result
            assert init is not None and client.session.protocol_version == "2025-11-25"
            assert (init.server_info.name, init.server_info.version) == ("sdk-peer", "9.9.9")
            assert init.instructions == "An official-SDK server for interop tests."
            await client.ping()

            tools = {tool.name: tool for tool in await client.list_tools()}
            assert set(tools) == {"forecast", "shout", "count", "ask_model", "ask_user", "list_roots", "sleep"}
            assert tools["forecast"].output_schema["required"] == ["city", "celsius"]  # type: ignore[index]
            assert tools["shout"].output_schema is UNSET

            forecast = await client.call_tool("forecast", {"city": "Oslo", "days": 3})
            assert forecast.structured_content == {"city": "Oslo", "celsius": 23.0, "tags": ["sunny"]}
            assert json.loads(text_of(forecast)) == forecast.structured_content
            assert (await client.call_tool("shout", {"text": "hi"})).content == [TextContent(text="HI")]
            assert (await client.call_tool("shout", {})).is_error is True
            assert (await client.call_tool("no-such-tool", {})).is_error is True

            counted = await client.call_tool("count", {"to": 3}, on_progress=on_progress)
            assert counted.structured_content == {"result": "counted to 3"}
            if mode == "json":
                await anyio.sleep(0.3)
                assert (progress, logs) == ([], []), "the SDK drops request-scoped notifications in JSON mode"
            else:
                await eventually(lambda: len(logs) == 3, what="log notifications")
                assert progress == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
                assert [(entry.level, entry.logger, entry.data) for entry in logs] == [
                    ("info", "counter", f"counted {i}") for i in (1, 2, 3)
                ]

            if mode == "sse":
                assert text_of(await client.call_tool("ask_model", {"question": "life"})) == "fake-llm: answer to life"
                assert text_of(await client.call_tool("ask_user", {})) == "accept: Ada (36)"
                form = forms[0]
                assert isinstance(form, ElicitRequestFormParams) and form.message == "Who are you?"
                assert form.requested_schema.required == ["name", "age"]
            else:
                for name, arguments in (("ask_model", {"question": "life"}), ("ask_user", {})):
                    with pytest.raises(McpError) as refused:
                        await client.call_tool(name, arguments)
                    assert refused.value.code == -32600 and "back-channel" in str(refused.value)
                assert forms == []
            if mode == "stateless":
                with pytest.raises(McpError) as no_roots:
                    await client.call_tool("list_roots", {})
                assert no_roots.value.code == -32600
            else:  # roots/list is not tied to the call: it travels on the standalone GET stream
                assert text_of(await client.call_tool("list_roots", {})) == "file:///work"

            settings = await client.read_resource("config://settings")
            assert settings.contents == [
                TextResourceContents(uri="config://settings", text='{"theme": "dark"}', mime_type="application/json")
            ]
            book = await client.read_resource("book://dune")
            assert book.contents == [
                TextResourceContents(uri="book://dune", text="Frank Herbert", mime_type="text/plain")
            ]
            assert [t.uri_template for t in await client.list_resource_templates()] == ["book://{title}"]
            with pytest.raises(McpError):
                await client.read_resource("config://missing")  # the SDK says -32602, not -32002

            prompts = await client.list_prompts()
            assert [(p.name, p.title) for p in prompts] == [("summarize", "Summarize")]
            summary = await client.get_prompt("summarize", {"text": "a long story", "style": "long"})
            assert [(m.role, m.content) for m in summary.messages] == [
                ("user", TextContent(text="Summarize (long): a long story")),
                ("assistant", TextContent(text="Sure.")),
            ]
            with pytest.raises(McpError):
                await client.get_prompt("summarize", {})
            styles = await client.complete(PromptReference(name="summarize"), "style", "s")
            assert styles.completion.values == ["short", "silly"]
            titles = await client.complete(ResourceTemplateReference(uri="book://{title}"), "title", "e")
            assert titles.completion.values == ["emma"]

            # Cancelling a call sends notifications/cancelled (a stateless server cannot act on it).
            task = asyncio.ensure_future(client.call_tool("sleep", {"seconds": 2}))
            await anyio.sleep(0.3)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            if mode != "stateless":
                await eventually(lambda: cancelled() == 1, what="SDK handler cancelled")

            # A per-request timeout must fire on time, whatever the server's response mode.
            started = time.monotonic()
            with anyio.move_on_after(3) as guard, pytest.raises(RequestTimeout):
                await client.call_tool("sleep", {"seconds": 5}, timeout=0.3)
            waited = time.monotonic() - started
            if not guard.cancelled_caught and mode != "stateless":
                await eventually(lambda: cancelled() == 2, what="SDK handler cancelled on timeout")
            assert text_of(await client.call_tool("sleep", {"seconds": 0.01})) == "slept 0.01"
    assert not guard.cancelled_caught, (
        f"mcpgen bug ({mode} mode): call_tool(timeout=0.3) had not raised RequestTimeout after {waited:.1f} s. "
        "HttpTransport.send() awaits the POST's response (its headers, then the whole application/json "
        "body) and Session.send_request awaits the timed future only after send() returns, so against a "
        "server that answers with JSON (or sends no headers until the result) the timer's RequestTimeout "
        "lands on a future nobody awaits ('Future exception was never retrieved') and the call blocks "
        "until the server answers."
    )


async def test_mcpgen_http_client_resumes_against_sdk_server(sdk_peer: Peer) -> None:
    """The SDK server with an event store primes each SSE stream; its ``poll`` tool closes the
    stream and our client resumes with GET + Last-Event-ID after the 200 ms retry hint."""
    progress: list[float] = []
    with anyio.fail_after(TEST_TIMEOUT):
        async with Client.http(sdk_peer.url("/resumable/mcp"), sampling=fake_sampler, era="handshake") as client:
            assert "poll" in {tool.name for tool in await client.list_tools()}
            result = await client.call_tool("poll", {})
            assert result.is_error is False and text_of(result) == "answered after the reconnect"
            counted = await client.call_tool("count", {"to": 2}, on_progress=lambda p, t, m: progress.append(p))
            assert text_of(counted) == "counted to 2" and progress == [1, 2]
            assert text_of(await client.call_tool("ask_model", {"question": "again"})) == "fake-llm: answer to again"


# ==================================================================== 3. legacy HTTP+SSE (2024-11-05)


@pytest.mark.parametrize("demo", ["sse"], indirect=True)  # the legacy endpoint has no response modes
async def test_sdk_legacy_sse_client_to_mcpgen(demo: tuple[str, Peer]) -> None:
    _, peer = demo
    sampled: list[sdk.CreateMessageRequestParams] = []
    reports: list[float] = []

    async def sampling(
        context: ClientRequestContext, params: sdk.CreateMessageRequestParams
    ) -> sdk.CreateMessageResult:
        sampled.append(params)
        return sdk.CreateMessageResult(
            role="assistant", content=sdk.TextContent(type="text", text="legacy answer"), model="sdk-fake"
        )

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reports.append(progress)

    with anyio.fail_after(TEST_TIMEOUT):
        async with sse_client(peer.url("/sse"), timeout=5, sse_read_timeout=30) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=10, sampling_callback=sampling) as session:
                init = await session.initialize()
                assert (init.server_info.name, init.server_info.version) == ("demo", "1.2.3")
                assert "add" in {tool.name for tool in (await session.list_tools()).tools}
                add = await session.call_tool("add", {"a": 40, "b": 2})
                assert add.structured_content == {"result": 42}
                assert text_of(await session.call_tool("ask_model", {"question": "old"})) == "legacy answer"
                assert len(sampled) == 1
                counted = await session.call_tool("count", {"to": 2}, progress_callback=on_progress)
                assert text_of(counted) == "counted to 2"
                await eventually(lambda: reports == [1, 2], what="progress over the legacy stream")
                with pytest.raises(MCPError) as missing:
                    await session.read_resource("file:///missing.txt")
                assert missing.value.error.code == -32002


async def test_mcpgen_legacy_sse_client_to_sdk_server(sdk_peer: Peer) -> None:
    logs: list[LoggingMessageNotificationParams] = []
    progress: list[float] = []
    with anyio.fail_after(TEST_TIMEOUT):
        async with Client.sse(
            sdk_peer.url("/legacy/sse"), sampling=fake_sampler, roots=[WORK_ROOT], on_log=logs.append
        ) as client:
            init = client.initialize_result
            assert init is not None and (init.server_info.name, init.server_info.version) == ("sdk-peer", "9.9.9")
            forecast = await client.call_tool("forecast", {"city": "Oslo"})
            assert forecast.structured_content == {"city": "Oslo", "celsius": 21.0, "tags": ["sunny"]}
            assert text_of(await client.call_tool("ask_model", {"question": "old"})) == "fake-llm: answer to old"
            assert text_of(await client.call_tool("list_roots", {})) == "file:///work"
            counted = await client.call_tool("count", {"to": 2}, on_progress=lambda p, t, m: progress.append(p))
            assert text_of(counted) == "counted to 2" and progress == [1, 2]
            await eventually(lambda: len(logs) == 2, what="log notifications over the legacy stream")
            book = await client.read_resource("book://emma")
            assert book.contents[0].text == "Jane Austen"  # type: ignore[union-attr]
