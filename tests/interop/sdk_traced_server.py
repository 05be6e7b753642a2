"""An official-SDK server (``mcp`` 2.3, ``MCPServer``) traced by the SDK's own
``OpenTelemetryMiddleware`` (on by default) into the real opentelemetry-sdk, in memory;
its ``spans`` tool hands the finished spans to tests/runtime/middleware/test_otel_interop.py.

Run: python tests/interop/sdk_traced_server.py   (stdio; the client's first request picks the era)
"""

from __future__ import annotations

import json
import warnings

from mcp.server.mcpserver import MCPServer
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

warnings.simplefilter("ignore")
SPANS = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(SPANS))
trace.set_tracer_provider(provider)  # the SDK's tracer is the global one

server = MCPServer("sdk-traced", version="2.3.0", log_level="WARNING")


@server.tool(structured_output=False)
def echo(text: str) -> str:
    return text


@server.tool(structured_output=False)
def spans() -> str:
    """Every span finished so far, as JSON."""
    found = [
        {
            "name": s.name,
            "kind": s.kind.name,
            "trace_id": s.context.trace_id,
            "parent": s.parent.span_id if s.parent is not None else None,
            "attributes": dict(s.attributes or {}),
        }
        for s in SPANS.get_finished_spans()
    ]
    return json.dumps(found)


if __name__ == "__main__":
    server.run("stdio")
