"""The middleware a server operator expects, each a few lines on :mod:`.chain`: request
timing and logging, a per-principal rate limit, and a response-size limit."""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from typing import Any

import msgspec

from mcpgen.protocol.v2025_11_25 import CallToolResult, TextContent
from mcpgen.runtime.errors import INTERNAL_ERROR, SERVER_BUSY, McpError
from mcpgen.runtime.middleware.chain import Call, CallNext, Middleware

RATE_LIMITED = SERVER_BUSY
"""The code a request over its principal's rate answers with (-32000, a server error: the
JSON-RPC range left to implementations; the message and ``data.retryAfter`` say why)."""


def principal_key(call: Call) -> str:
    """Who a request counts against: the token's owner (its issuer and subject, else its
    client id, each named by its kind, as sessions and tasks are owned), else the HTTP
    session, else one shared bucket (stdio: one client per process anyway)."""
    info = call.principal
    if info is not None:
        issuer, who = info.owner
        return f"{who}@{issuer}"
    return f"session:{call.session_id}" if call.session_id else "anonymous"


class Timing(Middleware):
    """Logs one structured record per request: method, target, request id, principal, era,
    outcome and milliseconds spent (``record.mcp`` holds them as a dict for a JSON
    formatter). Argument values are left out unless ``arguments=True``: they may hold what
    a user typed."""

    def __init__(
        self, logger: logging.Logger | None = None, level: int = logging.INFO, arguments: bool = False
    ) -> None:
        self.logger = logger or logging.getLogger("mcpgen.requests")
        self.level = level
        self.arguments = arguments

    async def on_request(self, call: Call, call_next: CallNext) -> Any:
        start = time.perf_counter()
        outcome = "ok"
        try:
            result = await call_next(call)
            if getattr(result, "is_error", False) is True:
                outcome = "tool_error"
            return result
        except McpError as exc:
            outcome = str(exc.code)
            raise
        except BaseException as exc:
            outcome = type(exc).__name__
            raise
        finally:
            if self.logger.isEnabledFor(self.level):
                self._log(call, outcome, (time.perf_counter() - start) * 1000)

    def _log(self, call: Call, outcome: str, ms: float) -> None:
        fields: dict[str, Any] = {
            "side": call.side,
            "method": call.method,
            "target": call.target or call.resource_uri,
            "request_id": call.request_id,
            "principal": principal_key(call) if call.side == "server" else None,
            "era": call.era,
            "session_id": call.session_id,
            "outcome": outcome,
            "duration_ms": round(ms, 3),
        }
        if self.arguments:
            params = call.params
            found = params.get("arguments") if isinstance(params, dict) else getattr(params, "arguments", None)
            fields["arguments"] = msgspec.to_builtins(found)
        text = " ".join(f"{k}={v}" for k, v in fields.items() if v is not None and k != "arguments")
        self.logger.log(self.level, "mcp %s", text, extra={"mcp": fields})


class RateLimit(Middleware):
    """A token bucket per principal (:func:`principal_key`, or ``key``): ``rate`` requests a
    second on average, bursts of up to ``burst``. A request over it is refused with -32000
    and a message naming when to retry (``data.retryAfter``, seconds). At most
    ``max_principals`` buckets are kept (the least recently used go first)."""

    def __init__(
        self,
        rate: float,
        burst: int | None = None,
        *,
        key: Any = principal_key,
        methods: frozenset[str] | None = None,
        max_principals: int = 10_000,
    ) -> None:
        if rate <= 0:
            raise ValueError("rate must be positive")
        self.rate = rate
        self.burst = float(burst if burst is not None else max(1, int(rate)))
        self.key = key
        self.methods = methods  # None: every method
        self.max_principals = max_principals
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # key -> (tokens, when)

    async def on_request(self, call: Call, call_next: CallNext) -> Any:
        if self.methods is None or call.method in self.methods:
            wait = self.take(self.key(call))
            if wait > 0:
                raise McpError(
                    RATE_LIMITED,
                    f"Rate limit exceeded: {self.rate:g} requests/s; retry in {wait:.2f} s",
                    {"retryAfter": round(wait, 3)},
                )
        return await call_next(call)

    def take(self, key: str, now: float | None = None) -> float:
        """Take a token from ``key``'s bucket: 0 when there was one, else the seconds until
        there is."""
        now = time.monotonic() if now is None else now
        tokens, when = self._buckets.pop(key, (self.burst, now))
        tokens = min(self.burst, tokens + (now - when) * self.rate)
        if tokens >= 1:
            tokens -= 1
            wait = 0.0
        else:
            wait = (1 - tokens) / self.rate
        self._buckets[key] = (tokens, now)
        if len(self._buckets) > self.max_principals:
            self._buckets.popitem(last=False)
        return wait


class ResponseLimit(Middleware):
    """Refuses results larger than ``max_bytes`` once encoded as JSON: a tool call gets a
    tool error (the model sees why), any other request -32603 with the sizes."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes

    async def on_request(self, call: Call, call_next: CallNext) -> Any:
        result = await call_next(call)
        size = len(msgspec.json.encode(result))
        if size <= self.max_bytes:
            return result
        text = f"Response too large: {size} bytes, the limit is {self.max_bytes}"
        if call.method == "tools/call" and call.side == "server":
            return CallToolResult(content=[TextContent(text=text)], is_error=True)
        raise McpError(INTERNAL_ERROR, text)


__all__ = ["RATE_LIMITED", "RateLimit", "ResponseLimit", "Timing", "principal_key"]
