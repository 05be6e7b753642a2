"""OpenTelemetry through a proxy: the client's span, the proxy's server span, the proxy's
span of its call to the backend and the backend's own server span make one trace, each the
parent of the next (the ``traceparent`` is forwarded in ``_meta``), in both eras and across
them; and a gateway configured with ``"tracing": true`` traces both sides."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mcpgen import Client, Gateway, OpenTelemetry, Proxy
from tests.runtime.gateway.backends import HANDSHAKE, MODERN, backend

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("backend_era", [HANDSHAKE, MODERN])
@pytest.mark.parametrize("front", ["handshake", "stateless"])
async def test_front_and_backend_spans_make_one_trace(front: str, backend_era: str) -> None:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))

    def traced() -> OpenTelemetry:
        return OpenTelemetry(provider)

    behind = backend([backend_era])
    behind.middleware(traced())
    proxy = Proxy(behind, middleware=[traced()], client_middleware=[traced()])
    async with Client(proxy, era=front, middleware=[traced()]) as client:
        spans.clear()
        await client.call_tool("echo", {"text": "traced"})
    calls = [s for s in spans.get_finished_spans() if s.name == "tools/call echo"]
    assert len(calls) == 4, [(s.name, s.kind.name) for s in spans.get_finished_spans()]
    assert [s.kind.name for s in calls].count("CLIENT") == 2 and [s.kind.name for s in calls].count("SERVER") == 2
    assert len({s.context.trace_id for s in calls}) == 1  # one trace
    by_id = {s.context.span_id: s for s in calls}
    roots = [s for s in calls if s.parent is None or s.parent.span_id not in by_id]
    assert len(roots) == 1 and roots[0].kind.name == "CLIENT"  # the front client's
    chain: list[Any] = [roots[0]]
    while len(chain) < 4:
        chain.append(next(s for s in calls if s.parent is not None and s.parent.span_id == chain[-1].context.span_id))
    assert [s.kind.name for s in chain] == ["CLIENT", "SERVER", "CLIENT", "SERVER"]


def test_a_gateway_with_tracing_traces_both_sides() -> None:
    config = {"mcpServers": {"b": {"command": "python", "args": ["-c", "pass"]}}, "gateway": {"tracing": True}}
    front = Gateway(config).server()
    assert isinstance(front, Proxy)
    assert front.features.middleware_chain is not None
    assert any(isinstance(m, OpenTelemetry) for m in front.features.middleware_chain.middleware)
    assert any(isinstance(m, OpenTelemetry) for m in front.link.client_middleware)
