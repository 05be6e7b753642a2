"""Interop with real peers over stdio (real subprocesses, no mocks).

1. The official Python SDK's ``ClientSession`` (``mcp`` 2.x) drives our demo server.
2. ``mcpgen.Client`` drives a server written with the SDK's ``MCPServer`` (tests/interop/sdk_server.py).
3. ``mcpgen.Client`` drives ``@modelcontextprotocol/server-everything`` (Node), pinned in
   tests/interop/package-lock.json and installed by the ``everything_command`` fixture with
   ``npm ci`` when missing or stale.
"""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp.types as sdk
import pytest
from mcp import Client as SdkClient
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.client.session import ClientRequestContext
from msgspec import UNSET
from pydantic import FileUrl

from mcpgen import Client, McpError
from mcpgen.generated import (
    BlobResourceContents,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitRequestURLParams,
    ElicitResult,
    EmbeddedResource,
    ImageContent,
    LoggingMessageNotificationParams,
    PromptReference,
    ResourceLink,
    ResourceTemplateReference,
    Root,
    TextContent,
    TextResourceContents,
)
from mcpgen.runtime.errors import RequestTimeout
from tests.paths import INTEROP, ROOT
from tests.wire import DEMO

pytestmark = [
    pytest.mark.anyio,
    # The SDK flags logging, sampling and roots as deprecated by its 2026 draft; they are
    # the spec of the 2025-11-25 revision these sessions negotiate.
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

SDK_SERVER = INTEROP / "sdk_server.py"
EVERYTHING_PACKAGE = INTEROP / "node_modules" / "@modelcontextprotocol" / "server-everything"
TEST_TIMEOUT = 20.0  # seconds, per test
WORK_ROOT = Root(uri="file:///work", name="work")


async def eventually(check: Callable[[], bool], timeout: float = 5.0, what: str = "condition") -> None:
    """Wait until ``check()`` holds (notifications may be handled after the result)."""
    with anyio.move_on_after(timeout):
        while not check():
            await anyio.sleep(0.02)
    assert check(), f"timed out waiting for {what}"


def text_of(result: Any) -> str:
    """The concatenated text blocks of a CallToolResult (ours or the SDK's)."""
    return "".join(block.text for block in result.content if isinstance(block, TextContent | sdk.TextContent))


# ==================================================================== 1. SDK client -> mcpgen server


@asynccontextmanager
async def sdk_session(errlog_path: Path, **callbacks: Any) -> AsyncIterator[ClientSession]:
    """The SDK's ClientSession over its stdio_client, connected to tests/servers/demo.py."""
    params = StdioServerParameters(command=sys.executable, args=[str(DEMO)], cwd=str(ROOT))
    with errlog_path.open("w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=15, **callbacks) as session:
                result = await session.initialize()
                assert result.server_info.name == "demo"
                yield session


async def test_sdk_client_handshake_tools_and_calls(tmp_path: Path) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with sdk_session(tmp_path / "stderr.log") as session:
            init = session.initialize_result
            assert init is not None
            assert init.protocol_version == "2025-11-25" == session.protocol_version
            assert init.server_info.version == "1.2.3"
            assert init.instructions == "A server for tests."
            caps = init.capabilities
            assert caps.tools is not None and caps.tools.list_changed is True
            assert caps.resources is not None and caps.resources.subscribe is True
            assert caps.prompts is not None and caps.logging is not None and caps.completions is not None
            await session.send_ping()

            listed = await session.list_tools()
            assert listed.next_cursor is None
            tools = {tool.name: tool for tool in listed.tools}
            assert {"add", "sum_all", "weather", "fail", "slow", "count", "ask_model", "ask_user", "roots"} <= set(
                tools
            )
            assert tools["add"].title == "Add two numbers"
            assert tools["add"].input_schema["properties"] == {"a": {"type": "integer"}, "b": {"type": "integer"}}
            assert tools["add"].input_schema["required"] == ["a", "b"]
            assert tools["add"].output_schema == {
                "type": "object",
                "properties": {"result": {"type": "integer"}},
                "required": ["result"],
            }
            assert tools["sum_all"].output_schema is not None
            assert tools["sum_all"].output_schema["properties"]["terms"] == {
                "type": "array",
                "items": {"type": "integer"},
            }
            assert tools["weather"].input_schema["properties"]["city"] == {"type": "string", "minLength": 1}
            assert tools["weather"].input_schema["required"] == ["city"]
            assert "ctx" not in tools["slow"].input_schema["properties"]

            # The SDK checks structuredContent against each listed outputSchema itself.
            add = await session.call_tool("add", {"a": 2, "b": 3})
            assert add.is_error is False
            assert add.structured_content == {"result": 5}
            assert add.content == [sdk.TextContent(type="text", text='{"result":5}')]
            total = await session.call_tool("sum_all", {"numbers": [1, 2, 3]})
            assert total.structured_content == {"total": 6, "terms": [1, 2, 3]}
            weather = await session.call_tool("weather", {"city": "Oslo", "days": 2})
            assert weather.structured_content == {"city": "Oslo", "celsius": 23.5}
            assert json.loads(text_of(weather)) == weather.structured_content
            echo = await session.call_tool("echo", {"text": "héllo"})
            assert echo.content == [sdk.TextContent(type="text", text="héllo")] and echo.structured_content is None
            pixel = await session.call_tool("pixel", {})
            assert isinstance(pixel.content[0], sdk.ImageContent) and pixel.content[0].mime_type == "image/png"
            noisy = await session.call_tool("noisy", {})  # its print() must not reach the protocol stream
            assert text_of(noisy) == "done"

            failed = await session.call_tool("fail", {})
            assert failed.is_error is True and text_of(failed) == "it went wrong on purpose"
            crashed = await session.call_tool("fail", {"kind": "crash"})
            assert crashed.is_error is True and "Traceback" not in text_of(crashed)
            invalid = await session.call_tool("weather", {"city": ""})
            assert invalid.is_error is True


async def test_sdk_client_resources_prompts_and_completion(tmp_path: Path) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with sdk_session(tmp_path / "stderr.log") as session:
            resources = {str(r.uri): r for r in (await session.list_resources()).resources}
            assert set(resources) == {"config://app", "bin://logo"}
            assert resources["config://app"].mime_type == "application/json"
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
            notes = (await session.read_resource("file:///notes.txt")).contents
            assert notes == [
                sdk.TextResourceContents(uri="file:///notes.txt", mime_type="text/plain", text="remember the milk")
            ]
            with pytest.raises(MCPError) as missing:
                await session.read_resource("file:///missing.txt")
            assert missing.value.error.code == -32002

            prompts = {p.name: p for p in (await session.list_prompts()).prompts}
            assert set(prompts) == {"review", "chat"}
            review_args = prompts["review"].arguments or []
            assert [(a.name, a.required) for a in review_args] == [("code", True), ("language", False)]
            review = await session.get_prompt("review", {"code": "x = 1", "language": "rust"})
            assert review.description == "Ask for a code review."
            assert [(m.role, m.content) for m in review.messages] == [
                ("user", sdk.TextContent(type="text", text="Review this rust code:\nx = 1"))
            ]
            chat = await session.get_prompt("chat", {"topic": "owls"})
            assert [m.role for m in chat.messages] == ["user", "assistant"]
            with pytest.raises(MCPError) as bad:
                await session.get_prompt("review", {})
            assert bad.value.error.code == -32602

            ref = sdk.PromptReference(type="ref/prompt", name="review")
            done = await session.complete(ref, {"name": "language", "value": "p"})
            assert done.completion.values == ["python", "perl", "php"]
            template = sdk.ResourceTemplateReference(type="ref/resource", uri="file:///{name}")
            files = await session.complete(template, {"name": "name", "value": "t"})
            assert files.completion.values == ["todo.md"]


async def test_sdk_client_logging_and_progress(tmp_path: Path) -> None:
    logs: list[sdk.LoggingMessageNotificationParams] = []
    reports: list[tuple[float, float | None, str | None]] = []

    async def on_log(params: sdk.LoggingMessageNotificationParams) -> None:
        logs.append(params)

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reports.append((progress, total, message))

    with anyio.fail_after(TEST_TIMEOUT):
        async with sdk_session(tmp_path / "stderr.log", logging_callback=on_log) as session:
            await session.set_logging_level("warning")  # info messages are filtered out
            quiet = await session.call_tool("count", {"to": 2}, progress_callback=on_progress)
            assert text_of(quiet) == "counted to 2"
            await eventually(lambda: len(reports) == 2, what="progress of the first call")
            assert logs == []

            reports.clear()
            await session.set_logging_level("info")
            loud = await session.call_tool("count", {"to": 3}, progress_callback=on_progress)
            assert text_of(loud) == "counted to 3"
            await eventually(lambda: len(logs) == 3 and len(reports) == 3, what="logs and progress")
            assert reports == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
            assert [(entry.level, entry.logger, entry.data) for entry in logs] == [
                ("info", "counter", f"counted {i}") for i in (1, 2, 3)
            ]


async def test_sdk_client_cancellation_and_timeout(tmp_path: Path) -> None:
    errlog = tmp_path / "stderr.log"
    with anyio.fail_after(TEST_TIMEOUT):
        async with sdk_session(errlog) as session:
            # Abandoning a call (cancel scope) makes the SDK send notifications/cancelled.
            with anyio.move_on_after(0.5) as scope:
                await session.call_tool("slow", {"seconds": 30})
            assert scope.cancelled_caught
            await eventually(lambda: errlog.read_text().count("slow cancelled") == 1, what="server-side cancel")
            await session.send_ping()
            assert (await session.call_tool("add", {"a": 1, "b": 1})).structured_content == {"result": 2}

            # A per-request timeout raises in the SDK and cancels the handler too.
            with pytest.raises(MCPError) as timeout:
                await session.call_tool("slow", {"seconds": 30}, read_timeout_seconds=0.3)
            assert timeout.value.error.code == sdk.REQUEST_TIMEOUT
            await eventually(lambda: errlog.read_text().count("slow cancelled") == 2, what="second cancel")
            assert text_of(await session.call_tool("slow", {"seconds": 0.01})) == "slept 0.01"


async def test_sdk_client_sampling_elicitation_and_roots(tmp_path: Path) -> None:
    sampled: list[sdk.CreateMessageRequestParams] = []
    elicited: list[sdk.ElicitRequestParams] = []
    answers: list[sdk.ElicitResult] = [
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
        return sdk.ListRootsResult(
            roots=[sdk.Root(uri=FileUrl("file:///work"), name="work"), sdk.Root(uri=FileUrl("file:///tmp"))]
        )

    with anyio.fail_after(TEST_TIMEOUT):
        callbacks = {
            "sampling_callback": sampling,
            "elicitation_callback": elicitation,
            "list_roots_callback": list_roots,
        }
        async with sdk_session(tmp_path / "stderr.log", **callbacks) as session:
            answer = await session.call_tool("ask_model", {"question": "the answer"})
            assert answer.is_error is False and text_of(answer) == "42 is the answer"
            assert len(sampled) == 1 and sampled[0].max_tokens == 50
            assert [m.role for m in sampled[0].messages] == ["user"]

            accepted = await session.call_tool("ask_user", {})
            assert text_of(accepted) == 'accept: {"name":"Ada","age":36}'
            form = elicited[0]
            assert isinstance(form, sdk.ElicitRequestFormParams) and form.message == "Who?"
            schema = form.requested_schema
            assert schema["type"] == "object" and set(schema["properties"]) == {"name", "age"}
            assert schema["properties"]["name"] == {"type": "string"}
            assert schema["properties"]["age"]["type"] == "integer"
            assert schema["required"] == ["name"]
            declined = await session.call_tool("ask_user", {})
            assert text_of(declined) == "decline: "

            roots = await session.call_tool("roots", {})
            assert [block.text for block in roots.content if isinstance(block, sdk.TextContent)] == [
                "file:///work",
                "file:///tmp",
            ]


async def test_sdk_client_pagination_subscriptions_and_list_changed(tmp_path: Path) -> None:
    seen: list[sdk.ServerNotification] = []

    async def on_message(message: sdk.ServerNotification | Exception) -> None:
        if not isinstance(message, Exception):
            seen.append(message)

    with anyio.fail_after(TEST_TIMEOUT):
        params = StdioServerParameters(command=sys.executable, args=[str(DEMO), "--page-size", "2"], cwd=str(ROOT))
        with (tmp_path / "stderr.log").open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write, read_timeout_seconds=15, message_handler=on_message) as session:
                    await session.initialize()
                    # Cursors are opaque to the SDK: it walks our pages and we reject a forged one.
                    names: list[str] = []
                    cursor: str | None = None
                    pages = 0
                    while True:
                        page = await session.list_tools(params=sdk.PaginatedRequestParams(cursor=cursor))
                        assert len(page.tools) <= 2
                        names += [tool.name for tool in page.tools]
                        pages += 1
                        if page.next_cursor is None:
                            break
                        cursor = page.next_cursor
                    assert pages > 5 and len(names) == len(set(names)) and "add" in names
                    with pytest.raises(MCPError) as forged:
                        await session.list_tools(params=sdk.PaginatedRequestParams(cursor="not-a-cursor"))
                    assert forged.value.error.code == -32602

                    await session.subscribe_resource("file:///notes.txt")
                    await session.call_tool("touch", {"name": "notes.txt"})
                    await session.call_tool("touch", {"name": "todo.md"})  # not subscribed
                    await session.call_tool("add_tool", {"name": "fresh"})

                    def updated() -> list[str]:
                        return [m.params.uri for m in seen if isinstance(m, sdk.ResourceUpdatedNotification)]

                    await eventually(
                        lambda: any(isinstance(m, sdk.ToolListChangedNotification) for m in seen),
                        what="notifications/tools/list_changed",
                    )
                    assert updated() == ["file:///notes.txt"]
                    await session.unsubscribe_resource("file:///notes.txt")
                    notes = await session.read_resource("file:///notes.txt")
                    assert notes.contents[0].text == "remember the milk!"  # type: ignore[union-attr]


async def test_sdk_high_level_client_auto_mode_speaks_the_stateless_era() -> None:
    """``mcp.Client`` probes ``server/discover`` first; our server answers it, so the SDK
    speaks 2026-07-28 (no initialize) and every call works."""
    params = StdioServerParameters(command=sys.executable, args=[str(DEMO)], cwd=str(ROOT))
    with anyio.fail_after(TEST_TIMEOUT):
        async with SdkClient(params, read_timeout_seconds=15) as client:
            assert client.session.protocol_version == "2026-07-28"
            assert client.session.initialize_result is None
            result = await client.call_tool("add", {"a": 20, "b": 22})
            assert result.structured_content == {"result": 42}
            assert "sum_all" in {tool.name for tool in (await client.list_tools()).tools}


# ==================================================================== 2. mcpgen client -> SDK server


async def fake_sampler(params: CreateMessageRequestParams) -> CreateMessageResult:
    question = params.messages[0].content
    assert isinstance(question, TextContent)
    return CreateMessageResult(
        role="assistant", content=TextContent(text=f"answer to {question.text}"), model="fake-llm"
    )


async def test_mcpgen_client_sdk_server() -> None:
    logs: list[LoggingMessageNotificationParams] = []
    progress: list[tuple[float, float | None, str | None]] = []
    stderr: list[str] = []
    forms: list[ElicitRequestParams] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async def elicitor(params: ElicitRequestParams) -> ElicitResult:
        forms.append(params)
        return ElicitResult(action="accept", content={"name": "Ada", "age": 36})

    client = Client.stdio(
        sys.executable,
        str(SDK_SERVER),
        cwd=str(ROOT),
        on_stderr=stderr.append,
        sampling=fake_sampler,
        elicitation=elicitor,
        roots=[WORK_ROOT],
        on_log=logs.append,
        era="handshake",
    )
    with anyio.fail_after(TEST_TIMEOUT):
        async with client:
            init = client.initialize_result
            assert init is not None and client.session.protocol_version == "2025-11-25"
            assert (init.server_info.name, init.server_info.version) == ("sdk-peer", "9.9.9")
            assert init.instructions == "An official-SDK server for interop tests."
            assert init.capabilities.tools is not UNSET and init.capabilities.completions is not UNSET
            await client.ping()

            tools = {tool.name: tool for tool in await client.list_tools()}
            assert set(tools) == {"forecast", "shout", "count", "ask_model", "ask_user", "list_roots", "sleep"}
            assert tools["forecast"].title == "City forecast"
            assert tools["forecast"].input_schema["required"] == ["city"]
            assert tools["forecast"].input_schema["properties"]["days"]["default"] == 1
            assert tools["forecast"].output_schema["required"] == ["city", "celsius"]  # type: ignore[index]
            assert tools["shout"].output_schema is UNSET
            assert "ctx" not in tools["count"].input_schema["properties"]

            # Structured output: checked against the listed outputSchema by our client.
            forecast = await client.call_tool("forecast", {"city": "Oslo", "days": 3})
            assert forecast.is_error is False
            assert forecast.structured_content == {"city": "Oslo", "celsius": 23.0, "tags": ["sunny"]}
            assert json.loads(text_of(forecast)) == forecast.structured_content
            shout = await client.call_tool("shout", {"text": "hi"})
            assert shout.content == [TextContent(text="HI")] and shout.structured_content is UNSET
            invalid = await client.call_tool("shout", {})
            assert invalid.is_error is True
            unknown = await client.call_tool("no-such-tool", {})
            assert unknown.is_error is True

            counted = await client.call_tool("count", {"to": 3}, on_progress=on_progress)
            assert counted.structured_content == {"result": "counted to 3"} and text_of(counted) == "counted to 3"
            await eventually(lambda: len(logs) == 3, what="log notifications")
            assert progress == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
            assert [(entry.level, entry.logger, entry.data) for entry in logs] == [
                ("info", "counter", f"counted {i}") for i in (1, 2, 3)
            ]
            if init.capabilities.logging is UNSET:
                # The SDK server sends notifications/message without declaring `logging`,
                # so our client refuses logging/setLevel locally (capability negotiation).
                with pytest.raises(McpError) as refused:
                    await client.set_logging_level("debug")
                assert refused.value.code == -32601
            else:
                await client.set_logging_level("debug")

            sampled = await client.call_tool("ask_model", {"question": "life"})
            assert text_of(sampled) == "fake-llm: answer to life"
            elicited = await client.call_tool("ask_user", {})
            assert text_of(elicited) == "accept: Ada (36)"
            form = forms[0]
            assert isinstance(form, ElicitRequestFormParams) and form.message == "Who are you?"
            assert set(form.requested_schema.properties) == {"name", "age"}
            assert form.requested_schema.required == ["name", "age"]
            roots = await client.call_tool("list_roots", {})
            assert text_of(roots) == "file:///work"

            # Cancelling a call sends notifications/cancelled; a timeout does too.
            task = asyncio.ensure_future(client.call_tool("sleep", {"seconds": 30}))
            await anyio.sleep(0.3)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await eventually(lambda: stderr.count("sleep cancelled") == 1, what="SDK handler cancelled")
            with pytest.raises(RequestTimeout):
                await client.call_tool("sleep", {"seconds": 30}, timeout=0.3)
            await eventually(lambda: stderr.count("sleep cancelled") == 2, what="SDK handler cancelled on timeout")
            assert text_of(await client.call_tool("sleep", {"seconds": 0.01})) == "slept 0.01"

            resources = await client.list_resources()
            assert [(r.uri, r.name, r.mime_type) for r in resources] == [
                ("config://settings", "settings", "application/json")
            ]
            templates = await client.list_resource_templates()
            assert [(t.uri_template, t.name) for t in templates] == [("book://{title}", "book")]
            settings = await client.read_resource("config://settings")
            assert settings.contents == [
                TextResourceContents(uri="config://settings", text='{"theme": "dark"}', mime_type="application/json")
            ]
            book = await client.read_resource("book://dune")
            assert book.contents == [
                TextResourceContents(uri="book://dune", text="Frank Herbert", mime_type="text/plain")
            ]
            with pytest.raises(McpError):
                await client.read_resource("config://missing")

            prompts = await client.list_prompts()
            assert [(p.name, p.title) for p in prompts] == [("summarize", "Summarize")]
            assert [(a.name, a.required) for a in prompts[0].arguments] == [("text", True), ("style", False)]  # type: ignore[union-attr]
            summary = await client.get_prompt("summarize", {"text": "a long story", "style": "long"})
            assert summary.description == "Summarize a text."
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
            nothing = await client.complete(PromptReference(name="summarize"), "text", "x")
            assert nothing.completion.values == []


# ==================================================================== 3. mcpgen client -> server-everything


def _locked_version() -> str:
    lock = json.loads((INTEROP / "package-lock.json").read_text())
    return str(lock["packages"]["node_modules/@modelcontextprotocol/server-everything"]["version"])


def _installed_version() -> str | None:
    manifest = EVERYTHING_PACKAGE / "package.json"
    if not manifest.is_file() or not (EVERYTHING_PACKAGE / "dist" / "index.js").is_file():
        return None
    return str(json.loads(manifest.read_text())["version"])


@pytest.fixture(scope="session")
def everything_command() -> list[str]:
    """The command that starts server-everything over stdio; runs ``npm ci`` in
    tests/interop when node_modules is missing or does not match the lockfile."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not on PATH: the server-everything interop test needs Node.js (>= 20)")
    version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    if int(version.lstrip("v").split(".")[0] or 0) < 20:
        pytest.fail(f"node {version} is too old: server-everything's dependencies need Node.js >= 20")
    if _installed_version() != _locked_version():
        npm = shutil.which("npm")
        if npm is None:
            pytest.fail("npm is not on PATH: cannot install tests/interop (npm ci)")
        try:
            done = subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund"], cwd=INTEROP, capture_output=True, text=True, timeout=600
            )
        except subprocess.TimeoutExpired as exc:
            pytest.fail(f"npm ci in {INTEROP} timed out:\n{exc.stdout!r}\n{exc.stderr!r}")
        if done.returncode != 0 or _installed_version() != _locked_version():
            pytest.fail(f"npm ci in {INTEROP} failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr}")
    return [node, str(EVERYTHING_PACKAGE / "dist" / "index.js"), "stdio"]


async def everything_sampler(params: CreateMessageRequestParams) -> CreateMessageResult:
    question = params.messages[0].content
    assert isinstance(question, TextContent)
    assert params.system_prompt == "You are a helpful test server." and params.temperature == 0.7
    return CreateMessageResult(
        role="assistant",
        content=TextContent(text=f"sampled <{question.text}>"),
        model="fake-llm",
        stop_reason="endTurn",
    )


async def everything_elicitor(params: ElicitRequestParams) -> ElicitResult:
    if isinstance(params, ElicitRequestURLParams):
        assert params.url == "https://example.com/login" and params.elicitation_id
        return ElicitResult(action="accept")
    assert isinstance(params, ElicitRequestFormParams)
    properties = params.requested_schema.properties
    assert {"name", "check", "email", "integer", "untitledMultipleSelectEnum"} <= set(properties)
    assert params.requested_schema.required == ["name"]
    return ElicitResult(
        action="accept", content={"name": "Ada", "check": True, "integer": 7, "untitledMultipleSelectEnum": ["Piano"]}
    )


@asynccontextmanager
async def everything_client(command: list[str], **options: Any) -> AsyncIterator[Client]:
    """A connected client, once the server registered its capability-dependent tools."""
    changed = anyio.Event()
    seen: Callable[[str, Any], Awaitable[None] | None] | None = options.pop("on_notification", None)

    def on_notification(method: str, params: Any) -> None:
        if method == "notifications/tools/list_changed":
            changed.set()
        if seen is not None:
            seen(method, params)

    client = Client.stdio(*command, cwd=str(INTEROP), on_notification=on_notification, **options)
    async with client:
        with anyio.fail_after(5):
            await changed.wait()
        yield client


async def test_mcpgen_client_everything_catalog(
    everything_command: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="mcpgen")
    with anyio.fail_after(TEST_TIMEOUT):
        async with everything_client(
            everything_command,
            sampling=everything_sampler,
            elicitation=everything_elicitor,
            roots=[WORK_ROOT],
            on_stderr=lambda line: None,
        ) as client:
            init = client.initialize_result
            assert init is not None and client.session.protocol_version == "2025-11-25"
            assert init.server_info.name == "mcp-servers/everything"
            assert init.instructions  # the server's docs/instructions.md
            await client.ping()

            tools = {tool.name: tool for tool in await client.list_tools()}
            echo = next(name for name in tools if "echo" in name)
            add = next(name for name in tools if "sum" in name or "add" in name)
            # The capability-dependent tools exist because our client declared the capabilities.
            assert {
                "trigger-sampling-request",
                "trigger-elicitation-request",
                "trigger-url-elicitation",
                "get-roots-list",
                "trigger-long-running-operation",
                "get-structured-content",
            } <= set(tools)
            assert tools[echo].input_schema["required"] == ["message"]
            assert tools["get-structured-content"].output_schema is not UNSET
            assert not [r for r in caplog.records if "outputSchema" in r.getMessage()], (
                "an outputSchema we cannot check"
            )

            assert (await client.call_tool(echo, {"message": "héllo"})).content == [TextContent(text="Echo: héllo")]
            assert text_of(await client.call_tool(add, {"a": 2, "b": 3})) == "The sum of 2 and 3 is 5."
            weather = await client.call_tool("get-structured-content", {"location": "Chicago"})
            assert weather.structured_content == {
                "temperature": 36,
                "conditions": "Light rain / drizzle",
                "humidity": 82,
            }
            image = await client.call_tool("get-tiny-image", {})
            assert any(isinstance(block, ImageContent) and block.mime_type == "image/png" for block in image.content)
            annotated = await client.call_tool("get-annotated-message", {"messageType": "error", "includeImage": True})
            assert annotated.content[0].annotations.priority == 1.0  # type: ignore[union-attr]
            assert isinstance(annotated.content[-1], ImageContent)
            reference = await client.call_tool("get-resource-reference", {"resourceType": "Blob", "resourceId": 2})
            embedded = [block for block in reference.content if isinstance(block, EmbeddedResource)]
            assert len(embedded) == 1 and isinstance(embedded[0].resource, BlobResourceContents)
            assert embedded[0].resource.uri == "demo://resource/dynamic/blob/2"
            links = await client.call_tool("get-resource-links", {"count": 2})
            assert len([block for block in links.content if isinstance(block, ResourceLink)]) == 2
            bad = await client.call_tool(add, {"a": "two"})
            assert bad.is_error is True

            resources = await client.list_resources()
            assert len(resources) >= 5 and all(r.uri.startswith("demo://resource/static/") for r in resources)
            doc = await client.read_resource(resources[0].uri)
            assert isinstance(doc.contents[0], TextResourceContents) and doc.contents[0].text
            templates = {t.uri_template for t in await client.list_resource_templates()}
            assert templates == {
                "demo://resource/dynamic/text/{resourceId}",
                "demo://resource/dynamic/blob/{resourceId}",
            }
            text = await client.read_resource("demo://resource/dynamic/text/3")
            assert text.contents[0].text.startswith("Resource 3: This is a plaintext resource")  # type: ignore[union-attr]
            blob = await client.read_resource("demo://resource/dynamic/blob/3")
            assert isinstance(blob.contents[0], BlobResourceContents)
            ids = await client.complete(
                ResourceTemplateReference(uri="demo://resource/dynamic/text/{resourceId}"), "resourceId", "7"
            )
            assert ids.completion.values == ["7"]

            prompts = {p.name: p for p in await client.list_prompts()}
            assert {"simple-prompt", "args-prompt", "completable-prompt", "resource-prompt"} <= set(prompts)
            assert [(a.name, a.required) for a in prompts["args-prompt"].arguments] == [  # type: ignore[union-attr]
                ("city", True),
                ("state", False),
            ]
            simple = await client.get_prompt("simple-prompt")
            assert simple.messages[0].role == "user" and isinstance(simple.messages[0].content, TextContent)
            weather_prompt = await client.get_prompt("args-prompt", {"city": "Oslo", "state": "Oslo"})
            assert weather_prompt.messages[0].content == TextContent(text="What's weather in Oslo, Oslo?")
            embedded_prompt = await client.get_prompt("resource-prompt", {"resourceType": "Text", "resourceId": "2"})
            assert any(isinstance(m.content, EmbeddedResource) for m in embedded_prompt.messages)
            departments = await client.complete(PromptReference(name="completable-prompt"), "department", "")
            assert departments.completion.values == ["Engineering", "Sales", "Marketing", "Support"]
            team = await client.complete(
                PromptReference(name="completable-prompt"), "name", "", context={"department": "Engineering"}
            )
            assert team.completion.values == ["Alice", "Bob", "Charlie"]


async def test_mcpgen_client_everything_client_features(everything_command: list[str]) -> None:
    logs: list[LoggingMessageNotificationParams] = []
    updates: list[str] = []
    progress: list[tuple[float, float | None, str | None]] = []

    def on_notification(method: str, params: Any) -> None:
        if method == "notifications/resources/updated":
            updates.append(params.uri)

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    with anyio.fail_after(TEST_TIMEOUT):
        async with everything_client(
            everything_command,
            sampling=everything_sampler,
            elicitation=everything_elicitor,
            roots=[WORK_ROOT],
            on_log=logs.append,
            on_notification=on_notification,
            on_stderr=lambda line: None,
        ) as client:
            # The server asks for our roots by itself ~350 ms after initialization.
            await eventually(
                lambda: any("Roots updated: 1 root(s)" in str(entry.data) for entry in logs),
                what="the server's roots/list",
            )
            roots = await client.call_tool("get-roots-list", {})
            assert "URI: file:///work" in text_of(roots) and "1. work" in text_of(roots)

            sampled = await client.call_tool("trigger-sampling-request", {"prompt": "hello", "maxTokens": 12})
            assert sampled.is_error is not True  # omitted: isError defaults to false
            payload = json.loads(text_of(sampled).split("\n", 1)[1])
            assert payload["model"] == "fake-llm" and payload["role"] == "assistant"
            assert payload["content"] == {
                "type": "text",
                "text": "sampled <Resource trigger-sampling-request context: hello>",
            }

            form = await client.call_tool("trigger-elicitation-request", {})
            assert "User provided the requested information" in text_of(form)
            assert "- Name: Ada" in text_of(form) and "- Favorite Integer: 7" in text_of(form)
            url = await client.call_tool("trigger-url-elicitation", {"url": "https://example.com/login"})
            assert "User completed the URL elicitation flow" in text_of(url)
            with pytest.raises(McpError) as required:
                await client.call_tool(
                    "trigger-url-elicitation", {"url": "https://example.com/login", "errorPath": True}
                )
            assert required.value.code == -32042  # URLElicitationRequiredError, with the elicitations as data
            assert required.value.data["elicitations"][0]["mode"] == "url"  # type: ignore[index]

            done = await client.call_tool(
                "trigger-long-running-operation", {"duration": 0.5, "steps": 5}, on_progress=on_progress
            )
            assert "Duration: 0.5 seconds, Steps: 5" in text_of(done)
            assert progress == [(float(i), 5.0, None) for i in range(1, 6)]

            # logging/setLevel and a log notification sent right away by the toggle.
            await client.set_logging_level("debug")
            count = len(logs)
            assert "Started" in text_of(await client.call_tool("toggle-simulated-logging", {}))
            await eventually(lambda: len(logs) > count, what="a simulated log message")
            assert "Stopped" in text_of(await client.call_tool("toggle-simulated-logging", {}))

            # Subscriptions: the toggle sends an update for each subscribed URI right away.
            uri = "demo://resource/static/document/features.md"
            await client.subscribe(uri)
            assert "Started" in text_of(await client.call_tool("toggle-subscriber-updates", {}))
            await eventually(lambda: uri in updates, what="notifications/resources/updated")
            assert "Stopped" in text_of(await client.call_tool("toggle-subscriber-updates", {}))
            await client.unsubscribe(uri)


async def test_mcpgen_client_everything_tasks_of_2025_11_25(everything_command: list[str]) -> None:
    """server-everything's task-only tool runs as a 2025-11-25 task (tools/call with
    ``task``, tasks/get, tasks/result; the elicitation of an input_required task answered
    while tasks/result waits), through ``Client`` and through ``mcpgen call --task``; a
    plain call gets the server's own refusal, never one the client made up."""
    tool = "simulate-research-query"
    asked: list[str] = []

    async def clarify(params: ElicitRequestParams) -> ElicitResult:
        assert isinstance(params, ElicitRequestFormParams)
        asked.append(params.message)
        return ElicitResult(action="accept", content={"interpretation": "programming"})

    async def cli() -> subprocess.CompletedProcess[bytes]:
        target = " ".join(everything_command)
        command = [sys.executable, "-m", "mcpgen", "call", target, "tool", tool, "-a", "topic=rust", "--task", "-q"]
        return await anyio.run_process(command, cwd=INTEROP, check=False)

    # Three tasks at once, one of them through a second server-everything that mcpgen call
    # starts: node's start alone took seconds on a loaded machine, so three tests' budget.
    with anyio.fail_after(3 * TEST_TIMEOUT):
        async with everything_client(everything_command, elicitation=clarify, on_stderr=lambda line: None) as client:
            assert client.tasks_offered
            tools = {t.name: t for t in await client.list_tools()}
            assert tools[tool].execution.task_support == "required"

            seen: list[tuple[str, str | None]] = []
            outcomes: dict[str, Any] = {}

            async def asks() -> None:
                handle = await client.start_task(
                    tool,
                    {"topic": "python", "ambiguous": True},
                    on_status=lambda s: seen.append((s.status, s.status_message)),
                )
                assert handle.task_id
                outcomes["asks"] = await handle.wait(15)

            async def plain_task() -> None:
                outcomes["plain"] = await client.call_tool(tool, {"topic": "quantum"}, task=True)

            async def via_cli() -> None:
                outcomes["cli"] = await cli()

            async with anyio.create_task_group() as group:
                group.start_soon(asks)
                group.start_soon(plain_task)
                group.start_soon(via_cli)

            assert "(programming)" in text_of(outcomes["asks"]) and len(asked) == 1
            statuses = [status for status, _ in seen]
            assert statuses[0] == "working" and "input_required" in statuses and statuses[-1] == "completed"
            assert "Research Report: quantum" in text_of(outcomes["plain"])
            done = outcomes["cli"]
            assert done.returncode == 0, done.stderr.decode()
            assert b"Research Report: rust" in done.stdout
            assert b"task " in done.stderr and b"has no tasks" not in done.stderr

            # Not as a task: the server's refusal as the server worded it.
            refused = await client.call_tool(tool, {"topic": "rust"})
            assert refused.is_error and "requires task augmentation" in text_of(refused)
