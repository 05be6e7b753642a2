"""Trace context across implementations (issue 24, point 5), over stdio with real processes:

1. the official SDK's client (``mcp`` 2.3, which opens a CLIENT span per request and puts
   its context in ``params._meta``) calls tests/servers/traced.py: mcpgen's SERVER span
   continues the SDK's trace, in both eras;
2. mcpgen's client with :class:`~mcpgen.OpenTelemetry` calls an SDK server traced by the
   SDK's own ``OpenTelemetryMiddleware`` (tests/interop/sdk_traced_server.py): the SDK's
   SERVER span continues mcpgen's trace, in both eras.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client as SdkClient
from mcp import StdioServerParameters, stdio_client
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mcpgen import Client, OpenTelemetry
from tests.paths import ROOT

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::DeprecationWarning")]
TRACED = ROOT / "tests" / "servers" / "traced.py"
SDK_TRACED = ROOT / "tests" / "interop" / "sdk_traced_server.py"


def global_spans() -> InMemorySpanExporter:
    """An in-memory exporter on the global tracer provider, which the SDK's client uses (set
    once per process: an SDK provider already there gets one more exporter)."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        trace.set_tracer_provider(TracerProvider())
        provider = trace.get_tracer_provider()
    assert isinstance(provider, TracerProvider)
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_the_sdk_client_trace_continues_in_mcpgen(mode: str, tmp_path: Path) -> None:
    exporter = global_spans()
    params = StdioServerParameters(command=sys.executable, args=[str(TRACED)], cwd=str(ROOT))
    with (tmp_path / "stderr.log").open("w") as errlog:
        async with SdkClient(stdio_client(params, errlog=errlog), mode=mode, read_timeout_seconds=10) as client:
            await client.call_tool("echo", {"text": "hi"})
            telemetry = (await client.call_tool("telemetry", {})).structured_content
    assert telemetry is not None
    sent = [s for s in exporter.get_finished_spans() if s.name.endswith("tools/call echo") and s.kind.name == "CLIENT"]
    assert len(sent) == 1, [s.name for s in exporter.get_finished_spans()]
    served = [s for s in telemetry["spans"] if s["name"] == "tools/call echo"]
    assert len(served) == 1
    assert served[0]["trace_id"] == sent[0].context.trace_id
    assert served[0]["parent"] == sent[0].context.span_id
    assert served[0]["attributes"]["mcp.protocol.version"] == ("2025-11-25" if mode == "legacy" else "2026-07-28")


@pytest.mark.parametrize("era", ["handshake", "stateless"])
async def test_the_mcpgen_client_trace_continues_in_the_sdk(era: str) -> None:
    exporter = InMemorySpanExporter()
    tracing = TracerProvider()
    tracing.add_span_processor(SimpleSpanProcessor(exporter))
    client = Client.stdio(
        sys.executable, str(SDK_TRACED), era=era, middleware=[OpenTelemetry(tracing)], on_stderr=lambda line: None
    )
    async with client:
        await client.call_tool("echo", {"text": "hi"})
        result = await client.call_tool("spans", {})
    served: list[dict[str, Any]] = json.loads(result.content[0].text)  # type: ignore[union-attr]
    sent = [s for s in exporter.get_finished_spans() if s.name == "tools/call echo"]
    assert len(sent) == 1 and sent[0].kind.name == "CLIENT"
    echo = [s for s in served if s["name"] == "tools/call echo"]
    assert len(echo) == 1 and echo[0]["kind"] == "SERVER"
    assert echo[0]["trace_id"] == sent[0].context.trace_id
    assert echo[0]["parent"] == sent[0].context.span_id
    # Both name and describe the call alike.
    theirs, ours = echo[0]["attributes"], dict(sent[0].attributes or {})
    for key in ("mcp.method.name", "gen_ai.tool.name", "gen_ai.operation.name", "mcp.protocol.version"):
        assert theirs[key] == ours[key], key
