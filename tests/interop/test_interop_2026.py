"""Interop of mcpgen's dual-era server with the official Python SDK's client (``mcp`` 2.3).

The SDK's ``Client`` drives tests/servers/era_peer.py over stdio (a real subprocess) and
over Streamable HTTP (uvicorn on 127.0.0.1), in each of its connect modes:

- ``auto``: probes ``server/discover`` and falls back to ``initialize`` (mcpgen answers the
  probe, so the connection speaks 2026-07-28);
- ``2026-07-28``: pinned, no probe, every request carries its own ``_meta`` envelope;
- ``legacy``: the ``initialize`` handshake (2025-11-25), to show an old client sees no change.

Which era was spoken is checked from both ends: the SDK's negotiated version, and the
server's ``era`` tool, which reports what mcpgen itself served the request as. In the
stateless era a tool that asks the client (elicitation, sampling, roots) answers with an
InputRequiredResult and the SDK retries with the answers; in the handshake era the same
tool sends a real request. Either way the SDK's callbacks answer and the result reflects it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp.types as sdk
import pytest
from mcp import Client as SdkClient
from mcp import MCPError, StdioServerParameters, stdio_client
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ToolsListChanged
from pydantic import FileUrl

from tests.interop.test_interop import eventually, text_of
from tests.interop.test_interop_http import Exchange, Peer, Wire, serve
from tests.paths import ROOT, SERVERS

pytestmark = [
    pytest.mark.anyio,
    # The SDK flags logging, sampling and roots as deprecated by 2026-07-28; they are still
    # the spec of 2025-11-25 (legacy mode), and 2026-07-28 keeps them as input requests.
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

ERA_PEER = SERVERS / "era_peer.py"
TEST_TIMEOUT = 20.0  # seconds, per test
MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"  # what the SDK's initialize asks for, and mcpgen grants
MODES = ["auto", MODERN, "legacy"]
CLIENT_INFO = sdk.Implementation(name="sdk-interop", version="2.3-test")
NAMES = {"Dr": "Who", "Ms": "Marple", "Sir": "Galahad", "Prof": "Moriarty"}


def era_of(mode: str) -> str:
    return "handshake" if mode == "legacy" else "stateless"


def version_of(mode: str) -> str:
    return HANDSHAKE if mode == "legacy" else MODERN


@pytest.fixture(scope="module")
def http_peer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Peer]:
    """One era_peer process over Streamable HTTP for the module (both eras on one endpoint)."""
    stderr = tmp_path_factory.mktemp("era-peer") / "stderr.log"
    with serve(lambda port: [sys.executable, str(ERA_PEER), "--http", str(port)], stderr) as peer:
        yield peer


@dataclass
class Connected:
    """An SDK client connected to the era peer, and what the test can see around it."""

    client: SdkClient
    stderr: Path  # the server's stderr
    wire: Wire | None  # HTTP only: every exchange the SDK made


@asynccontextmanager
async def connect(
    transport: str, mode: str, tmp_path: Path, request: pytest.FixtureRequest, **options: Any
) -> AsyncIterator[Connected]:
    """The SDK's ``Client`` in ``mode`` over ``transport``, connected to the era peer."""
    options.setdefault("read_timeout_seconds", 10)
    options.setdefault("client_info", CLIENT_INFO)
    if transport == "stdio":
        stderr = tmp_path / "stderr.log"
        params = StdioServerParameters(command=sys.executable, args=[str(ERA_PEER)], cwd=str(ROOT))
        with stderr.open("w") as errlog:
            async with SdkClient(stdio_client(params, errlog=errlog), mode=mode, **options) as client:
                assert client.protocol_version == version_of(mode)  # auto: the probe found 2026-07-28
                yield Connected(client, stderr, None)
        return
    peer: Peer = request.getfixturevalue("http_peer")
    wire = Wire()
    hooks: dict[str, list[Callable[..., Any]]] = {"request": [wire.on_request], "response": [wire.on_response]}
    http = httpx2.AsyncClient(timeout=httpx2.Timeout(10, read=30), event_hooks=hooks)
    async with http, SdkClient(streamable_http_client(peer.url(), http_client=http), mode=mode, **options) as client:
        assert client.protocol_version == version_of(mode)
        yield Connected(client, peer.stderr, wire)


both = pytest.mark.parametrize("transport", ["stdio", "http"])
modes = pytest.mark.parametrize("mode", MODES)


# ==================================================================== era, tools, resources, prompts


@both
@modes
async def test_era_tools_resources_prompts(
    transport: str, mode: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with connect(transport, mode, tmp_path, request) as peer:
            client = peer.client
            assert client.protocol_version == version_of(mode)
            if mode == MODERN:
                # Pinned: no probe, so nothing about the server is known up front.
                assert client.server_info is None and client.instructions is None
            else:
                # From the discover result's serverInfo stamp (auto) or from initialize.
                assert client.server_info is not None
                assert (client.server_info.name, client.server_info.version) == ("era-peer", "2.0.0")
                assert client.instructions == "Speaks both eras."
                assert client.server_capabilities.tools is not None

            # What the server itself served the request as.
            era = await client.call_tool("era", {})
            assert era.is_error is False
            assert era.structured_content == {
                "era": era_of(mode),
                "version": version_of(mode),
                "client": "sdk-interop",
                "elicitation": False,
            }

            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert {"era", "add", "greet", "profile", "ask_model", "roots", "count", "survey", "slow"} <= set(tools)
            assert tools["add"].title == "Add two numbers"
            assert tools["add"].input_schema["properties"] == {"a": {"type": "integer"}, "b": {"type": "integer"}}
            # The SDK checks structuredContent against the listed outputSchema itself.
            add = await client.call_tool("add", {"a": 2, "b": 3})
            assert add.is_error is False and add.structured_content == {"result": 5}
            assert add.content == [sdk.TextContent(type="text", text='{"result":5}')]
            bad = await client.call_tool("add", {"a": "two", "b": 3})
            assert bad.is_error is True and "Invalid arguments for add" in text_of(bad)
            with pytest.raises(MCPError) as unknown:
                await client.call_tool("nosuch", {})
            assert unknown.value.error.code == -32602

            resources = {str(r.uri): r for r in (await client.list_resources()).resources}
            assert set(resources) == {"note://hello"} and resources["note://hello"].mime_type == "text/plain"
            templates = (await client.list_resource_templates()).resource_templates
            assert [t.uri_template for t in templates] == ["note://{topic}/today"]
            hello = await client.read_resource("note://hello")
            assert hello.contents == [
                sdk.TextResourceContents(uri="note://hello", mime_type="text/plain", text="hello from the era peer")
            ]
            owls = await client.read_resource("note://owls/today")
            assert [c.text for c in owls.contents if isinstance(c, sdk.TextResourceContents)] == [
                "today's note on owls"
            ]
            with pytest.raises(MCPError) as missing:
                await client.read_resource("note://missing")
            # 2026-07-28 reports an unknown resource as invalid params; 2025-11-25 had its own code.
            assert missing.value.error.code == (-32002 if mode == "legacy" else -32602)

            prompts = {p.name: p for p in (await client.list_prompts()).prompts}
            assert set(prompts) == {"review", "briefing"}
            review = await client.get_prompt("review", {"code": "x = 1", "language": "rust"})
            assert review.description == "Ask for a code review."
            assert [(m.role, m.content) for m in review.messages] == [
                ("user", sdk.TextContent(type="text", text="Review this rust code:\nx = 1"))
            ]


# ==================================================================== asking the client


@both
@modes
async def test_elicitation_sampling_and_roots(
    transport: str, mode: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The tools ask; the SDK's callbacks answer; the results reflect the answers. In the
    stateless era each question is an InputRequiredResult and a retry, in the handshake
    era a request to the client: the same callbacks serve both."""
    elicited: list[sdk.ElicitRequestFormParams] = []
    sampled: list[sdk.CreateMessageRequestParams] = []

    async def elicitation(context: ClientRequestContext, params: sdk.ElicitRequestParams) -> sdk.ElicitResult:
        assert isinstance(params, sdk.ElicitRequestFormParams)
        elicited.append(params)
        message = params.message
        if "decline" in message:
            return sdk.ElicitResult(action="decline")
        if "colour" in message or "Briefing" in message:
            return sdk.ElicitResult(action="accept", content={"colour": "teal"})
        title = message.removeprefix("What is your name").removeprefix(", ").removesuffix("?")
        return sdk.ElicitResult(action="accept", content={"name": NAMES.get(title, "Ada")})

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

    async def list_roots(context: ClientRequestContext) -> sdk.ListRootsResult:
        return sdk.ListRootsResult(roots=[sdk.Root(uri=FileUrl("file:///work"), name="work")])

    callbacks = {"elicitation_callback": elicitation, "sampling_callback": sampling, "list_roots_callback": list_roots}
    with anyio.fail_after(TEST_TIMEOUT):
        async with connect(transport, mode, tmp_path, request, **callbacks) as peer:
            client = peer.client
            era = await client.call_tool("era", {})
            assert era.structured_content is not None and era.structured_content["elicitation"] is True

            greeted = await client.call_tool("greet", {})
            assert greeted.is_error is False and text_of(greeted) == "Hello, Ada!"
            form = elicited[0]
            assert form.message == "What is your name?"
            assert form.requested_schema == {
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"],
            }
            assert text_of(await client.call_tool("greet", {"title": "decline"})) == "no name (decline)"

            # Two questions one after the other: two input rounds in the stateless era.
            elicited.clear()
            assert text_of(await client.call_tool("profile", {})) == "Ada likes teal"
            assert [e.message for e in elicited] == ["Your name?", "Your favourite colour?"]

            # Questions of concurrent calls must not cross (each retry carries its own state).
            answers: dict[str, str] = {}

            async def greet(title: str) -> None:
                answers[title] = text_of(await client.call_tool("greet", {"title": title}))

            async with anyio.create_task_group() as group:
                for title in NAMES:
                    group.start_soon(greet, title)
            assert answers == {title: f"Hello, {title} {name}!" for title, name in NAMES.items()}

            # An elicitation inside prompts/get.
            briefing = await client.get_prompt("briefing", {})
            assert [(m.role, m.content) for m in briefing.messages] == [
                ("user", sdk.TextContent(type="text", text="Brief me on teal"))
            ]

            answer = await client.call_tool("ask_model", {"question": "the answer"})
            assert answer.is_error is False and text_of(answer) == "42 is the answer"
            assert len(sampled) == 1 and sampled[0].max_tokens == 20
            listed = await client.call_tool("roots", {})
            assert listed.is_error is False and text_of(listed) == "file:///work"


# ==================================================================== progress, logs, cancellation


@both
@modes
async def test_progress_logs_and_cancellation(
    transport: str, mode: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    logs: list[sdk.LoggingMessageNotificationParams] = []
    reports: list[tuple[float, float | None, str | None]] = []

    async def on_log(params: sdk.LoggingMessageNotificationParams) -> None:
        logs.append(params)

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reports.append((progress, total, message))

    async def elicitation(context: ClientRequestContext, params: sdk.ElicitRequestParams) -> sdk.ElicitResult:
        return sdk.ElicitResult(action="accept", content={"colour": "red"})

    # log_level: the 2026-07-28 per-request opt-in to logs (the handshake era's server
    # default level lets info through without logging/setLevel).
    options = {"logging_callback": on_log, "log_level": "info", "elicitation_callback": elicitation}
    with anyio.fail_after(TEST_TIMEOUT):
        async with connect(transport, mode, tmp_path, request, **options) as peer:
            client = peer.client
            counted = await client.call_tool("count", {"to": 3}, progress_callback=on_progress)
            assert counted.is_error is False and text_of(counted) == "counted to 3"
            await eventually(lambda: len(reports) == 3 and len(logs) == 3, what="progress and logs")
            assert reports == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
            assert [(entry.level, entry.logger, entry.data) for entry in logs] == [
                ("info", "counter", f"counted {i}") for i in (1, 2, 3)
            ]

            # Progress around a question. In the stateless era the tool runs again on the
            # retry (a new request, with its own progress), so its first report comes twice.
            reports.clear()
            survey = await client.call_tool("survey", {}, progress_callback=on_progress)
            assert text_of(survey) == "colour: red"
            before, after = (1, 2, "before the question"), (2, 2, "after the question")
            expected = [before, after] if mode == "legacy" else [before, before, after]
            await eventually(lambda: len(reports) == len(expected), what="progress around the question")
            assert reports == expected

            # Abandoning a call cancels its handler: the SDK sends notifications/cancelled
            # (stdio, and HTTP in a session), or closes the POST's stream (stateless HTTP).
            cancelled = peer.stderr.read_text().count("slow cancelled")
            with anyio.move_on_after(0.3) as scope:
                await client.call_tool("slow", {"seconds": 30})
            assert scope.cancelled_caught
            await eventually(
                lambda: peer.stderr.read_text().count("slow cancelled") == cancelled + 1,
                what="the server cancelling the handler",
            )
            assert (await client.call_tool("add", {"a": 1, "b": 1})).structured_content == {"result": 2}


# ==================================================================== what crossed the wire (HTTP)


def body_of(exchange: Exchange) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(exchange.body)
    return body


@modes
async def test_http_wire_of_each_mode(mode: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """Over HTTP the era shows on the wire: 2026-07-28 is one POST per request with its
    own headers and no session; an elicitation is an input_required answer and a retry;
    a tool whose argument is mirrored in a header (x-mcp-header) is refused until the SDK
    has listed it, then called again with the header. The handshake era is unchanged."""

    async def elicitation(context: ClientRequestContext, params: sdk.ElicitRequestParams) -> sdk.ElicitResult:
        return sdk.ElicitResult(action="accept", content={"name": "Grace"})

    with anyio.fail_after(TEST_TIMEOUT):
        async with connect("http", mode, tmp_path, request, elicitation_callback=elicitation) as peer:
            client = peer.client
            # Not listed yet: the SDK cannot know the tool wants an Mcp-Param-Region header.
            assert text_of(await client.call_tool("region", {"region": "eu-west"})) == "region=eu-west"
            assert text_of(await client.call_tool("greet", {})) == "Hello, Grace!"
            quiet = await client.call_tool("count", {"to": 2})  # no progress token, no log level
            assert text_of(quiet) == "counted to 2"
            reports: list[float] = []

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                reports.append(progress)

            loud = await client.call_tool("count", {"to": 2}, progress_callback=on_progress)
            assert text_of(loud) == "counted to 2"
            await eventually(lambda: reports == [1, 2], what="progress")
            assert (await client.call_tool("add", {"a": 1, "b": 2})).structured_content == {"result": 3}
    assert peer.wire is not None
    wire = peer.wire
    assert wire.unanswered() == []
    posts = wire.of("POST")
    calls = [e for e in posts if body_of(e).get("method") == "tools/call"]
    by_tool = {
        name: [e for e in calls if body_of(e)["params"]["name"] == name] for name in ("region", "greet", "count", "add")
    }

    if mode == "legacy":
        initialize = body_of(posts[0])
        assert initialize["method"] == "initialize" and initialize["params"]["protocolVersion"] == HANDSHAKE
        later = posts[1:]
        assert {e.request_headers.get("mcp-protocol-version") for e in later} == {HANDSHAKE}
        session_ids = {e.request_headers.get("mcp-session-id") for e in later}
        assert len(session_ids) == 1 and None not in session_ids
        assert not [
            e
            for e in posts
            if "mcp-method" in e.request_headers
            or "protocolVersion" in json.dumps(body_of(e).get("params", {}).get("_meta", {}))
        ]  # no 2026-07-28 envelope
        # One POST per call; the elicitation was a request to the client, answered by a POST.
        assert [len(by_tool[name]) for name in by_tool] == [1, 1, 2, 1]
        assert [(e.status, e.content_type) for e in by_tool["region"]] == [(200, "application/json")]
        answers = [body_of(e) for e in posts if "result" in body_of(e)]
        assert [a["result"] for a in answers] == [{"action": "accept", "content": {"name": "Grace"}}]
        assert [(e.status, e.content_type) for e in wire.of("GET")][:1] == [(200, "text/event-stream")]
    else:
        methods = [body_of(e)["method"] for e in posts]
        assert methods[0] == ("server/discover" if mode == "auto" else "tools/call")
        assert "initialize" not in methods and wire.of("GET") == [] and wire.of("DELETE") == []
        for exchange in posts:
            headers, body = exchange.request_headers, body_of(exchange)
            assert "mcp-session-id" not in headers
            assert headers["mcp-protocol-version"] == MODERN and headers["mcp-method"] == body["method"]
            assert body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == MODERN
            assert body["params"]["_meta"]["io.modelcontextprotocol/clientInfo"]["name"] == "sdk-interop"
        # The header check refuses the unlisted call (400, HEADER_MISMATCH); the SDK lists
        # the tools and sends it again with the header.
        region_first, region_again = by_tool["region"]
        assert (region_first.status, "mcp-param-region" in region_first.request_headers) == (400, False)
        assert region_again.status == 200 and region_again.request_headers["mcp-param-region"] == "eu-west"
        assert "tools/list" in methods[methods.index("tools/call") :]
        # The elicitation: an input_required answer, then the same call again with the answer.
        asked, retried = by_tool["greet"]
        assert "inputResponses" not in body_of(asked)["params"] and asked.content_type == "application/json"
        retry = body_of(retried)["params"]
        assert retry["inputResponses"] == {"user_name": {"action": "accept", "content": {"name": "Grace"}}}
        assert isinstance(retry["requestState"], str) and retry["requestState"]
        assert body_of(retried)["id"] != body_of(asked)["id"]
        assert not [e for e in posts if "result" in body_of(e)]  # the client answers nothing
    # Notifications go on the request's own stream; a result with nothing before it is plain
    # JSON. A 2026-07-28 request gets logs only when it names a level (the quiet call named
    # none, nor a progress token); a handshake-era session logs until logging/setLevel.
    quiet_type = "text/event-stream" if mode == "legacy" else "application/json"
    assert [(e.status, e.content_type) for e in by_tool["count"]] == [(200, quiet_type), (200, "text/event-stream")]
    assert [(e.status, e.content_type) for e in by_tool["add"]] == [(200, "application/json")]


# ==================================================================== subscriptions/listen


@both
@modes
async def test_tool_list_changes(transport: str, mode: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """A tool registered at run time is announced: on a ``subscriptions/listen`` stream in
    2026-07-28, as ``notifications/tools/list_changed`` in a handshake-era session."""
    name = f"fresh_{transport}_{mode.replace('-', '_')}"  # the HTTP server is shared: a new name each time
    changes: list[sdk.ToolListChangedNotification] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, sdk.ToolListChangedNotification):
            changes.append(message)

    with anyio.fail_after(TEST_TIMEOUT):
        async with connect(transport, mode, tmp_path, request, message_handler=on_message) as peer:
            client = peer.client
            if mode == "legacy":
                assert text_of(await client.call_tool("add_tool", {"name": name})) == "added"
                await eventually(lambda: len(changes) == 1, what="notifications/tools/list_changed")
            else:
                async with client.listen(tools_list_changed=True) as subscription:
                    assert subscription.honored.tools_list_changed is True
                    subscription_id = subscription.subscription_id
                    assert text_of(await client.call_tool("add_tool", {"name": name})) == "added"
                    assert await anext(aiter(subscription)) == ToolsListChanged()
                # The SDK also hands the stream's notifications to message_handler: each
                # names the listen request it belongs to.
                await eventually(lambda: len(changes) == 1, what="the change at the message handler")
                assert [
                    (c.params.meta or {}).get("io.modelcontextprotocol/subscriptionId")
                    for c in changes
                    if c.params is not None
                ] == [subscription_id]
            assert name in {tool.name for tool in (await client.list_tools()).tools}
            assert text_of(await client.call_tool(name, {})) == "new"
