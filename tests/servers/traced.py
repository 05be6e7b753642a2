"""A server traced with mcpgen's OpenTelemetry middleware and the real opentelemetry-sdk,
its spans and metrics kept in memory; the ``telemetry`` tool hands them to the test.

Run: python tests/servers/traced.py [--http PORT]  (stdio without --http)
"""

from __future__ import annotations

import sys
from typing import Any

from opentelemetry import baggage
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mcpgen import Context, McpError, OpenTelemetry, Server

SPANS = InMemorySpanExporter()
TRACING = TracerProvider()
TRACING.add_span_processor(SimpleSpanProcessor(SPANS))
METRICS = InMemoryMetricReader()

server = Server("traced", middleware=[OpenTelemetry(TRACING, MeterProvider(metric_readers=[METRICS]))])


@server.tool()
def echo(text: str) -> str:
    return text


@server.tool()
def carried() -> dict[str, Any]:
    """The baggage the client's context carried, as this handler sees it."""
    return dict(baggage.get_all())


@server.tool()
def broken() -> str:
    raise RuntimeError("a secret /etc/path")


@server.tool()
async def ask(ctx: Context) -> str:
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    answer = await ctx.elicit("Your name?", schema)
    return f"hello {answer.content['name'] if answer.content else '?'}"


@server.resource("memo://one")
def memo() -> str:
    return "one"


@server.prompt()
def greet(who: str) -> str:
    return f"Hello {who}"


@server.tool()
def refuse() -> str:
    raise McpError(-32001, "refused")


@server.tool()
def telemetry() -> dict[str, Any]:
    """Every span finished so far, and the duration histograms' counts."""
    spans = [
        {
            "name": s.name,
            "kind": s.kind.name,
            "trace_id": s.context.trace_id,
            "span_id": s.context.span_id,
            "parent": s.parent.span_id if s.parent is not None else None,
            "status": s.status.status_code.name,
            "attributes": dict(s.attributes or {}),
        }
        for s in SPANS.get_finished_spans()
    ]
    metrics: dict[str, list[dict[str, Any]]] = {}
    data = METRICS.get_metrics_data()
    for resource in data.resource_metrics if data is not None else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                points = metrics.setdefault(metric.name, [])
                for point in metric.data.data_points:
                    attributes = dict(point.attributes or {})
                    points.append({"attributes": attributes, "count": point.count, "unit": metric.unit})
    return {"spans": spans, "metrics": metrics}


if __name__ == "__main__":
    if "--http" in sys.argv:
        server.run("http", port=int(sys.argv[sys.argv.index("--http") + 1]))
    else:
        server.run()
