"""An mcpgen client doing what each of the conformance suite's client scenarios expects.

The harness runs ``python examples/everything_client.py <server-url>`` with the scenario
name in ``MCP_CONFORMANCE_SCENARIO``.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Coroutine
from typing import Any

from mcpgen import Client
from mcpgen.generated import ElicitRequestFormParams, ElicitRequestParams, ElicitResult


async def fill_defaults(params: ElicitRequestParams) -> ElicitResult:
    """Accept a form, answering every field with the default its schema gives."""
    if not isinstance(params, ElicitRequestFormParams):
        return ElicitResult(action="decline")
    content: dict[str, Any] = {}
    for name, field in params.requested_schema.properties.items():
        default = getattr(field, "default", None)
        if default is not None and not isinstance(default, type(None)):
            content[name] = default
    return ElicitResult(action="accept", content=content)


async def initialize(url: str) -> None:
    async with Client.http(url) as client:
        if client.session.peer_caps.has("tools"):  # only use what the server declared
            await client.list_tools()


async def tools_call(url: str) -> None:
    async with Client.http(url) as client:
        await client.list_tools()
        result = await client.call_tool("add_numbers", {"a": 5, "b": 3})
        print(result, file=sys.stderr)


async def elicitation_defaults(url: str) -> None:
    async with Client.http(url, elicitation=fill_defaults, elicitation_modes=("form",)) as client:
        await client.list_tools()
        result = await client.call_tool("test_client_elicitation_defaults", {})
        print(result, file=sys.stderr)


async def sse_retry(url: str) -> None:
    async with Client.http(url) as client:
        await client.list_tools()
        result = await client.call_tool("test_reconnection", {})
        print(result, file=sys.stderr)


SCENARIOS: dict[str, Callable[[str], Coroutine[Any, Any, None]]] = {
    "initialize": initialize,
    "tools_call": tools_call,
    "elicitation-sep1034-client-defaults": elicitation_defaults,
    "sse-retry": sse_retry,
}


def main() -> int:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    run = SCENARIOS.get(scenario)
    if run is None or len(sys.argv) < 2:
        print(f"everything_client: unsupported scenario {scenario!r}", file=sys.stderr)
        return 2
    asyncio.run(run(sys.argv[-1]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
