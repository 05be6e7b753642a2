"""The echo server of bench/servers/mcpgen_echo.py with a middleware configuration, for
bench/middleware.py: ``none``, ``hook`` (one pass-through middleware), ``otel`` (mcpgen's
OpenTelemetry middleware on the API's no-op providers: no SDK) or ``otel-sdk`` (the real
SDK recording every span and metric, exporting nowhere).

Run: python bench/servers/mcpgen_middleware_echo.py MODE
"""

from __future__ import annotations

import sys
from typing import Any

from mcpgen import Call, CallNext, Server

mode = sys.argv[1] if len(sys.argv) > 1 else "none"
middleware: list[Any] = []
if mode == "hook":

    async def passthrough(call: Call, call_next: CallNext) -> Any:
        return await call_next(call)

    middleware.append(passthrough)
elif mode == "otel":
    from mcpgen import OpenTelemetry

    middleware.append(OpenTelemetry())
elif mode == "otel-sdk":
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.trace import TracerProvider

    from mcpgen import OpenTelemetry

    middleware.append(OpenTelemetry(TracerProvider(), MeterProvider()))
elif mode != "none":
    sys.exit(f"unknown mode {mode!r}: none, hook, otel or otel-sdk")

server = Server("mcpgen-middleware-echo", middleware=middleware)


@server.tool(blocking=False)
def echo(text: str) -> str:
    """Echo the text back."""
    return text


if __name__ == "__main__":
    server.run()
