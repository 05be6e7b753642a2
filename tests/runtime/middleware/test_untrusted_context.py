"""What a client writes into a server's logs and traces is bounded and escaped (issue 36.15,
36.16): ``Timing`` escapes and cuts the tool names, URIs, ids and principals it logs; the
OpenTelemetry middleware hands the propagator only a well-formed ``traceparent`` and
``tracestate`` (the propagator logs what it refuses as it came), takes the client's
``baggage`` only when told to, and cuts a made-up tool name in span names. A real
opentelemetry-sdk; the client and server in one process."""

from __future__ import annotations

import logging
import shlex
from typing import Any

import pytest
from opentelemetry import baggage
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mcpgen import Client, McpError, OpenTelemetry, Server, Timing
from mcpgen.runtime.middleware.chain import Call, CallNext
from mcpgen.runtime.middleware.otel import trusted_context

pytestmark = pytest.mark.anyio
PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
INJECTED = "\nmcp side=server method=tools/call target=admin outcome=ok"


def with_meta(entries: dict[str, Any]) -> Any:
    """A client middleware writing ``entries`` into every request's ``_meta`` as they are."""

    def add(call: Call, call_next: CallNext) -> Any:
        call.add_meta(entries)
        return call_next(call)

    return add


def traced_server(**options: Any) -> tuple[Server, InMemorySpanExporter]:
    spans = InMemorySpanExporter()
    tracing = TracerProvider()
    tracing.add_span_processor(SimpleSpanProcessor(spans))
    server = Server("traced", middleware=[OpenTelemetry(tracing, **options)])

    @server.tool()
    def carried() -> dict[str, Any]:
        return dict(baggage.get_all())

    return server, spans


async def test_timing_escapes_and_cuts_what_the_peer_wrote(caplog: pytest.LogCaptureFixture) -> None:
    server = Server("timed", middleware=[Timing()])

    caplog.set_level(logging.INFO, logger="mcpgen.requests")
    async with Client(server, era="handshake") as client:
        with pytest.raises(McpError):
            await client.call_tool("evil" + INJECTED, {})
        with pytest.raises(McpError):  # not a note's name: refused, and logged
            await client.read_resource("note://\x1b]52;c;cHduZWQ=\x07" + "x" * 5000)
    records = [
        r
        for r in caplog.records
        if r.name == "mcpgen.requests" and r.mcp["side"] == "server" and r.mcp["method"] != "initialize"  # type: ignore[attr-defined]
    ]
    assert len(records) == 2
    for record in records:
        line = record.getMessage()
        assert line.isprintable(), line  # one line: no newline, no escape sequence
        assert len(line) < 1000, len(line)
    called, read = (r.getMessage() for r in records)
    assert 'target="evil\\nmcp side=server method=tools/call target=admin outcome=ok"' in called
    fields = [word.partition("=") for word in shlex.split(called)[1:]]
    assert [key for key, _, _ in fields].count("outcome") == 1  # the peer's fake field stays inside the target
    assert dict((key, value) for key, _, value in fields)["outcome"] == "-32602"
    assert "\\x1b]52;c;cHduZWQ=\\x07" in read and "...(5" in read  # escaped, and cut at 200 characters


async def test_a_malformed_trace_context_reaches_no_log_and_starts_its_own_trace(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server, spans = traced_server()
    caplog.set_level(logging.DEBUG)
    bad_state = "vendor=ok,evil=x" + INJECTED + "\x1b[2J"
    bad_baggage = "role=admin" + INJECTED
    meta = {"traceparent": PARENT, "tracestate": bad_state, "baggage": bad_baggage}
    async with Client(server, middleware=[with_meta(meta)]) as client:
        result = await client.call_tool("carried", {})
        name = "t" * (1024 * 1024)
        with pytest.raises(McpError):
            await client.call_tool(name, {})
        broken = {"traceparent": PARENT + INJECTED}
    async with Client(server, middleware=[with_meta(broken)]) as client:
        await client.call_tool("carried", {})
    assert result.structured_content == {}  # no baggage taken by default
    for record in caplog.records:
        text = record.getMessage()
        assert "admin outcome=ok" not in text and "\x1b" not in text, (record.name, text)
    served = [s for s in spans.get_finished_spans() if s.kind.name == "SERVER"]
    assert served, [s.name for s in spans.get_finished_spans()]
    first = next(s for s in served if s.name == "tools/call carried")
    assert f"{first.context.trace_id:032x}" == PARENT.split("-")[1]  # the well-formed parent is kept
    assert first.context.trace_state.get("vendor") is None  # a tracestate with a bad member is dropped whole
    longest = max(len(s.name) for s in served)
    assert longest <= len("tools/call ") + 128 + 3, longest  # a made-up 1 MiB name is cut
    tool_names = [s.attributes.get("gen_ai.tool.name", "") for s in served if s.attributes]
    assert max(len(str(n)) for n in tool_names) <= 131
    last = served[-1]
    assert f"{last.context.trace_id:032x}" != PARENT.split("-")[1]  # a malformed traceparent: a trace of its own


async def test_baggage_is_taken_only_when_the_server_asks_for_it() -> None:
    meta = {"traceparent": PARENT, "baggage": "tenant=acme, role = admin"}
    refused, _ = traced_server()
    taken, _ = traced_server(baggage=True)
    async with Client(refused, middleware=[with_meta(meta)]) as client:
        assert (await client.call_tool("carried", {})).structured_content == {}
    async with Client(taken, middleware=[with_meta(meta)]) as client:
        assert (await client.call_tool("carried", {})).structured_content == {"tenant": "acme", "role": "admin"}
    malformed = {"traceparent": PARENT, "baggage": "tenant=acme,role=\x00admin"}
    async with Client(taken, middleware=[with_meta(malformed)]) as client:
        assert (await client.call_tool("carried", {})).structured_content == {}  # dropped whole


@pytest.mark.parametrize(
    ("meta", "kept"),
    [
        ({"traceparent": PARENT}, {"traceparent": PARENT}),
        ({"traceparent": PARENT.upper()}, None),
        ({"traceparent": PARENT[:-1]}, None),
        ({"traceparent": 7}, None),
        ({"traceparent": PARENT, "tracestate": "a=1,b@t=2"}, {"traceparent": PARENT, "tracestate": "a=1,b@t=2"}),
        ({"traceparent": PARENT, "tracestate": ",".join(f"k{i}=v" for i in range(33))}, {"traceparent": PARENT}),
        ({"traceparent": PARENT, "tracestate": "a=" + "v" * 600}, {"traceparent": PARENT}),
        ({"traceparent": PARENT, "baggage": "a=1"}, {"traceparent": PARENT}),
    ],
)
def test_which_trace_context_is_trusted(meta: dict[str, Any], kept: dict[str, str] | None) -> None:
    assert trusted_context(meta, baggage=False) == kept


@pytest.mark.parametrize(
    ("sent", "kept"),
    [
        ("a=1,b=%20x;prop=1;flag", "a=1,b=%20x;prop=1;flag"),
        ("a=1,b=\x7f", None),
        ("a=1,b=\u00e9", None),
        ("a=" + "v" * 8200, None),
        (",".join(f"k{i}=v" for i in range(181)), None),
        ("a b=1", None),
    ],
)
def test_which_baggage_is_taken_when_asked_for(sent: str, kept: str | None) -> None:
    found = trusted_context({"traceparent": PARENT, "baggage": sent}, baggage=True)
    assert found is not None and found.get("baggage") == kept
