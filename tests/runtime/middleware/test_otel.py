"""OpenTelemetry per the MCP semantic conventions (issue 24, points 3 and 5): a real server
process (tests/servers/traced.py) traced with the real opentelemetry-sdk, over stdio and
Streamable HTTP, in both eras; mcpgen's client traced in this process. The server's spans
come back through its ``telemetry`` tool."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from opentelemetry import baggage
from opentelemetry import context as otel_context
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mcpgen import Client, McpError, OpenTelemetry
from mcpgen.generated import ElicitResult
from tests.http_server import free_port, running
from tests.paths import SERVERS

TRACED = SERVERS / "traced.py"
pytestmark = pytest.mark.anyio
ERAS = {"handshake": "2025-11-25", "stateless": "2026-07-28"}


class Traced:
    """mcpgen's client with its own tracer and meter (the SDK's, in memory)."""

    def __init__(self) -> None:
        self.spans = InMemorySpanExporter()
        tracing = TracerProvider()
        tracing.add_span_processor(SimpleSpanProcessor(self.spans))
        self.metrics = InMemoryMetricReader()
        self.middleware = OpenTelemetry(tracing, MeterProvider(metric_readers=[self.metrics]))

    def span(self, name: str) -> Any:
        found = [s for s in self.spans.get_finished_spans() if s.name == name]
        assert len(found) == 1, [s.name for s in self.spans.get_finished_spans()]
        return found[0]

    def histogram(self, name: str) -> list[Any]:
        data = self.metrics.get_metrics_data()
        assert data is not None
        return [
            point
            for resource in data.resource_metrics
            for scope in resource.scope_metrics
            for metric in scope.metrics
            if metric.name == name
            for point in metric.data.data_points
        ]


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with running([sys.executable, str(TRACED), "--http", str(port)], url):
        yield url


async def _elicit(params: Any) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "Ada"})


@contextlib.asynccontextmanager
async def connect(transport: str, era: str, url: str, traced: Traced) -> AsyncIterator[Client]:
    options: dict[str, Any] = {"era": era, "middleware": [traced.middleware], "elicitation": _elicit}
    if transport == "stdio":
        client = Client.stdio(sys.executable, str(TRACED), **options)
    else:
        client = Client.http(url, **options)
    async with client:
        yield client


async def server_telemetry(client: Client) -> dict[str, Any]:
    result = await client.call_tool("telemetry", {})
    found: dict[str, Any] = result.structured_content  # type: ignore[assignment]
    return found


def server_span(telemetry: dict[str, Any], name: str, request_id: str | None = None) -> dict[str, Any]:
    found = [
        s
        for s in telemetry["spans"]
        if s["name"] == name and (request_id is None or s["attributes"].get("jsonrpc.request.id") == request_id)
    ]
    assert found, [s["name"] for s in telemetry["spans"]]
    return found[-1]


@pytest.mark.parametrize("era", list(ERAS))
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_tool_call_is_one_trace_across_client_and_server(transport: str, era: str, http_url: str) -> None:
    traced = Traced()
    async with connect(transport, era, http_url, traced) as client:
        token = otel_context.attach(baggage.set_baggage("tenant", "acme"))
        try:
            result = await client.call_tool("echo", {"text": "hi"})
            carried = await client.call_tool("carried", {})
        finally:
            otel_context.detach(token)
        telemetry = await server_telemetry(client)
    assert result.is_error is not True

    client_span = traced.span("tools/call echo")
    assert client_span.kind.name == "CLIENT"
    attributes = dict(client_span.attributes or {})
    assert attributes["mcp.method.name"] == "tools/call"
    assert attributes["gen_ai.operation.name"] == "execute_tool"
    assert attributes["gen_ai.tool.name"] == "echo"
    assert attributes["mcp.protocol.version"] == ERAS[era]

    served = server_span(telemetry, "tools/call echo")
    assert served["kind"] == "SERVER"
    # W3C trace context through params._meta: the server's span continues the client's trace.
    assert served["trace_id"] == client_span.context.trace_id
    assert served["parent"] == client_span.context.span_id
    assert served["status"] == "UNSET"
    got = served["attributes"]
    assert got["mcp.method.name"] == "tools/call"
    assert got["mcp.protocol.version"] == ERAS[era]
    assert got["gen_ai.tool.name"] == "echo"
    assert got["gen_ai.operation.name"] == "execute_tool"
    assert got["jsonrpc.request.id"].isdigit()
    assert attributes["jsonrpc.request.id"] == got["jsonrpc.request.id"]  # the client's, once sent
    assert "error.type" not in got
    # A session id only for a Streamable HTTP session (handshake era), the same on both sides.
    if transport == "http" and era == "handshake":
        assert got["mcp.session.id"] and got["mcp.session.id"] == attributes["mcp.session.id"]
    else:
        assert "mcp.session.id" not in got and "mcp.session.id" not in attributes
    # The client's baggage is its say-so: not taken unless the server asks for it
    # (OpenTelemetry(baggage=True), tests/runtime/middleware/test_untrusted_context.py).
    assert carried.structured_content == {}

    # The duration histograms, in seconds, with the low-cardinality attributes only.
    ops = telemetry["metrics"]["mcp.server.operation.duration"]
    echo = [p for p in ops if p["attributes"].get("gen_ai.tool.name") == "echo"]
    assert echo and echo[0]["unit"] == "s" and echo[0]["count"] >= 1
    assert "jsonrpc.request.id" not in echo[0]["attributes"] and "mcp.session.id" not in echo[0]["attributes"]
    mine = [p for p in traced.histogram("mcp.client.operation.duration") if p.attributes.get("gen_ai.tool.name")]
    assert sum(p.count for p in mine if p.attributes["gen_ai.tool.name"] == "echo") == 1
    if era == "handshake":  # the client's session, timed when it closed
        assert sum(p.count for p in traced.histogram("mcp.client.session.duration")) == 1
    else:
        assert traced.histogram("mcp.client.session.duration") == []


@pytest.mark.parametrize("era", list(ERAS))
async def test_errors_resources_prompts_and_input_rounds(era: str, http_url: str) -> None:
    traced = Traced()
    async with connect("http", era, http_url, traced) as client:
        failed = await client.call_tool("broken", {})
        with pytest.raises(McpError) as refused:
            await client.call_tool("refuse", {})
        with pytest.raises(McpError) as unknown:
            await client.call_tool("nope", {})
        await client.read_resource("memo://one")
        await client.get_prompt("greet", {"who": "Ada"})
        asked = await client.call_tool("ask", {})
        telemetry = await server_telemetry(client)
    assert failed.is_error is True and refused.value.code == -32001 and unknown.value.code == -32602
    assert asked.content[0].text == "hello Ada"  # type: ignore[union-attr]

    # A tool that failed answers with isError: error.type "tool_error", the span's status ERROR.
    broken = server_span(telemetry, "tools/call broken")
    assert broken["attributes"]["error.type"] == "tool_error" and broken["status"] == "ERROR"
    assert dict(traced.span("tools/call broken").attributes or {})["error.type"] == "tool_error"
    # A JSON-RPC error: its code as error.type and rpc.response.status_code, both sides.
    for name, code in (("tools/call refuse", "-32001"), ("tools/call nope", "-32602")):
        got = server_span(telemetry, name)["attributes"]
        assert got["error.type"] == code and got["rpc.response.status_code"] == code, name
        mine = dict(traced.span(name).attributes or {})
        assert mine["error.type"] == code and mine["rpc.response.status_code"] == code
    failures = [p for p in telemetry["metrics"]["mcp.server.operation.duration"] if "error.type" in p["attributes"]]
    assert {p["attributes"]["error.type"] for p in failures} >= {"tool_error", "-32001", "-32602"}

    # The resource's URI is an attribute, not part of the span's name; a prompt names its span.
    read = server_span(telemetry, "resources/read")["attributes"]
    assert read["mcp.resource.uri"] == "memo://one" and "gen_ai.tool.name" not in read
    prompt = server_span(telemetry, "prompts/get greet")["attributes"]
    assert prompt["gen_ai.prompt.name"] == "greet" and "gen_ai.operation.name" not in prompt

    # Asking the client for input: in the stateless era each round is a request of its own (the
    # first answered with an InputRequiredResult, not an error); in the handshake era the
    # question is a server-to-client request inside the one tools/call.
    trace = traced.span("tools/call ask").context.trace_id  # one client span: one trace
    rounds = [s for s in telemetry["spans"] if s["name"] == "tools/call ask" and s["trace_id"] == trace]
    assert len(rounds) == (2 if era == "stateless" else 1)
    assert all(s["status"] == "UNSET" and "error.type" not in s["attributes"] for s in rounds)


async def test_the_server_times_its_sessions(http_url: str) -> None:
    traced = Traced()
    async with connect("http", "handshake", http_url, traced) as client:
        await client.call_tool("echo", {"text": "one"})
    async with connect("http", "handshake", http_url, Traced()) as client:
        telemetry = await server_telemetry(client)
    sessions = telemetry["metrics"]["mcp.server.session.duration"]
    assert sum(p["count"] for p in sessions) >= 1
    assert all(p["attributes"]["mcp.protocol.version"] == "2025-11-25" and p["unit"] == "s" for p in sessions)
