"""OpenTelemetry tracing and metrics per the MCP semantic conventions (gen-ai/mcp).

One middleware for both sides: on a server it opens a SERVER span per request, continuing
the trace context the client put in ``params._meta``; on a client a CLIENT span per
request, whose context it puts in ``params._meta`` (W3C ``traceparent``, ``tracestate``,
``baggage``, through the global propagator). A server takes the client's context as
untrusted input: ``traceparent`` and ``tracestate`` only when they are well formed and
within the W3C sizes (else the span starts its own trace, and nothing the client wrote
reaches a log), and ``baggage`` not at all unless asked to (``OpenTelemetry(baggage=True)``:
what a handler's context holds flows into the server's own outgoing calls). Span names and
attributes hold at most 128 characters of a tool or prompt name and 1,024 of a URI.

Span names are ``{mcp.method.name} {target}`` (target: the tool or prompt name),
attributes and error reporting as the conventions say and, where they leave a choice, as
the official Python SDK's middleware does. It records ``mcp.{server,client}.operation.
duration`` per request and ``mcp.{server,client}.session.duration`` per handshake-era
session.

``opentelemetry-api`` is imported when an :class:`OpenTelemetry` is made (``mcpgen[otel]``);
without an SDK configured its spans and instruments are no-ops.
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import TYPE_CHECKING, Any

from mcpgen.runtime.errors import INTERNAL_ERROR, METHOD_NOT_FOUND, McpError
from mcpgen.runtime.extras import require
from mcpgen.runtime.middleware.chain import Call, CallNext, Middleware, SessionEnd
from mcpgen.version import __version__

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider

# The conventions' advisory boundaries for the MCP duration histograms (seconds).
DURATION_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)
# Span attributes left off the duration metrics: per-request values (high cardinality), and
# the resource URI (opt-in there).
_NOT_ON_METRICS = frozenset({"jsonrpc.request.id", "mcp.session.id", "mcp.resource.uri"})
MAX_NAME = 128  # characters of a tool or prompt name in a span's name and attributes (the spec's own limit)
MAX_URI = 1024  # characters of a resource URI in an attribute
# W3C Trace Context (version 00's fields; a later version may add fields after them) and
# Baggage, as the recommendations define their members and bound their sizes.
_TRACEPARENT = re.compile(r"[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}(-[0-9a-f-]{0,200})?", re.ASCII)
_STATE_MEMBER = re.compile(
    r"[a-z0-9][_0-9a-z\-*/]{0,255}(@[a-z][_0-9a-z\-*/]{0,13})?=[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]",
    re.ASCII,
)
_BAGGAGE_MEMBER = re.compile(
    r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+[ \t]*=[ \t]*[\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]*"
    r"([ \t]*;[ \t]*[!#$%&'*+\-.^_`|~0-9A-Za-z]+([ \t]*=[ \t]*[\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]*)?)*",
    re.ASCII,
)


class OpenTelemetry(Middleware):
    """Spans and metrics for every request of this side (give it to ``Server(middleware=
    [...])`` or ``Client(middleware=[...])``). ``tracer_provider`` and ``meter_provider``
    default to the global ones."""

    def __init__(
        self,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        *,
        baggage: bool = False,
    ) -> None:
        """``baggage``: on a server, take the client's W3C baggage into the handler's context
        (and so into the server's own outgoing calls); off by default, since a client's
        baggage (``role=admin``) is only its say-so."""
        require("opentelemetry.trace", "otel", "OpenTelemetry tracing")
        self.baggage = baggage
        from opentelemetry import context, metrics, propagate, trace
        from opentelemetry.trace import SpanKind, StatusCode

        self._trace = trace
        self._context = context
        self._propagate = propagate
        self._kinds = {"server": SpanKind.SERVER, "client": SpanKind.CLIENT}
        self._error = StatusCode.ERROR
        self.tracer = trace.get_tracer("mcpgen", __version__, tracer_provider=tracer_provider)
        meter = metrics.get_meter("mcpgen", __version__, meter_provider=meter_provider)
        self.durations = {
            side: meter.create_histogram(
                f"mcp.{side}.operation.duration",
                unit="s",
                description=f"MCP request duration as observed on the {side}",
                explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
            )
            for side in ("server", "client")
        }
        self.session_durations = {
            side: meter.create_histogram(
                f"mcp.{side}.session.duration",
                unit="s",
                description=f"MCP session duration as observed on the {side}",
                explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
            )
            for side in ("server", "client")
        }

    async def on_request(self, call: Call, call_next: CallNext) -> Any:
        attributes, name = span_attributes(call)
        parent = self._parent(call.meta) if call.side == "server" else None
        # The client's context made current (not only the span's parent): its baggage is
        # then what the handler sees too.
        token = self._context.attach(parent) if parent is not None else None
        try:
            return await self._traced(call, call_next, attributes, name)
        finally:
            if token is not None:
                self._context.detach(token)

    async def _traced(self, call: Call, call_next: CallNext, attributes: dict[str, Any], name: str) -> Any:
        started = time.perf_counter()
        with self.tracer.start_as_current_span(
            name,
            kind=self._kinds[call.side],
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            if call.side == "client":
                carrier: dict[str, Any] = {}
                self._propagate.inject(carrier)  # this span's context, for the server's spans
                if carrier:
                    call.add_meta(carrier)
            failure: dict[str, str] = {}
            try:
                result = await call_next(call)
            except McpError as exc:
                failure = _code(exc.code)
                span.set_status(self._error, exc.message)
                raise
            except asyncio.CancelledError:
                failure = {"error.type": "cancelled"}
                raise
            except Exception as exc:
                if getattr(exc, "incomplete_result", False):
                    raise  # a stateless-era round asking the client for input: not a failure
                if call.side == "server":  # what the peer gets: -32601 or -32603, nothing more
                    failure = _code(METHOD_NOT_FOUND if isinstance(exc, NotImplementedError) else INTERNAL_ERROR)
                else:
                    failure = {"error.type": type(exc).__qualname__}
                span.record_exception(exc)
                span.set_status(self._error, type(exc).__qualname__)
                raise
            else:
                if call.method == "tools/call" and _is_tool_error(result):
                    failure = {"error.type": "tool_error"}
                    span.set_status(self._error)
                return result
            finally:
                if call.side == "client" and call.request_id is not None:  # numbered once sent
                    span.set_attribute("jsonrpc.request.id", str(call.request_id))
                if failure:
                    span.set_attributes(failure)
                measured = {k: v for k, v in attributes.items() if k not in _NOT_ON_METRICS}
                self.durations[call.side].record(time.perf_counter() - started, {**measured, **failure})

    async def on_session_end(self, end: SessionEnd) -> None:
        attributes: dict[str, Any] = {}
        if end.protocol_version is not None:
            attributes["mcp.protocol.version"] = end.protocol_version
        if end.error is not None:
            attributes["error.type"] = end.error
        self.session_durations[end.side].record(end.seconds, attributes)

    def _parent(self, meta: dict[str, Any]) -> Any:
        """The client's trace context from ``_meta``, or None (then the span nests under
        whatever is current, rather than starting an orphan trace from an empty context).
        Only well-formed values reach the propagator: what it refuses, it logs as sent."""
        carrier = trusted_context(meta, baggage=self.baggage)
        if carrier is None:
            return None
        try:
            found = self._propagate.extract(carrier)
        except (TypeError, ValueError):
            return None
        return found if self._trace.get_current_span(found).get_span_context().is_valid else None


def trusted_context(meta: dict[str, Any], *, baggage: bool) -> dict[str, str] | None:
    """What of a peer's W3C trace context in ``meta`` may be extracted: ``traceparent``
    (None without a well-formed one), ``tracestate`` when every member is well formed and
    there are at most 32 in 512 characters, and (``baggage``) ``baggage`` when every member
    is well formed and there are at most 180 in 8,192 bytes."""
    parent = meta.get("traceparent")
    if not isinstance(parent, str) or len(parent) > 256 or _TRACEPARENT.fullmatch(parent.strip(" \t")) is None:
        return None
    carrier = {"traceparent": parent.strip(" \t")}
    state = meta.get("tracestate")
    if isinstance(state, str) and len(state) <= 512:
        members = [m.strip(" \t") for m in state.split(",")]
        members = [m for m in members if m]
        if len(members) <= 32 and all(_STATE_MEMBER.fullmatch(m) for m in members):
            carrier["tracestate"] = ",".join(members)
    found = meta.get("baggage") if baggage else None
    if isinstance(found, str) and len(found.encode("utf-8", "replace")) <= 8192:
        members = [m.strip(" \t") for m in found.split(",")]
        if len(members) <= 180 and all(_BAGGAGE_MEMBER.fullmatch(m) for m in members):
            carrier["baggage"] = ",".join(members)
    return carrier


def span_attributes(call: Call) -> tuple[dict[str, Any], str]:
    """The conventions' attributes of a request's span, and the span's name."""
    attributes: dict[str, Any] = {"mcp.method.name": call.method}
    if call.protocol_version is not None:
        attributes["mcp.protocol.version"] = call.protocol_version
    if call.session_id is not None:
        attributes["mcp.session.id"] = call.session_id
    if call.request_id is not None:
        attributes["jsonrpc.request.id"] = str(call.request_id)
    target = call.target if call.method in ("tools/call", "prompts/get") else None
    if target is not None and len(target) > MAX_NAME:  # no real name is longer: a peer's
        target = target[:MAX_NAME] + "..."
    if call.method == "tools/call":
        attributes["gen_ai.operation.name"] = "execute_tool"
        if target is not None:
            attributes["gen_ai.tool.name"] = target
    elif target is not None:
        attributes["gen_ai.prompt.name"] = target
    uri = call.resource_uri
    if uri is not None:
        # The span name leaves it out (high cardinality); a peer's URI may be megabytes.
        attributes["mcp.resource.uri"] = uri if len(uri) <= MAX_URI else uri[:MAX_URI] + "..."
    return attributes, f"{call.method} {target}" if target is not None else call.method


def _code(code: int) -> dict[str, str]:
    return {"error.type": str(code), "rpc.response.status_code": str(code)}


def _is_tool_error(result: Any) -> bool:
    if isinstance(result, dict):
        return result.get("isError") is True
    return getattr(result, "is_error", None) is True


__all__ = ["DURATION_BUCKETS", "MAX_NAME", "MAX_URI", "OpenTelemetry", "span_attributes", "trusted_context"]
