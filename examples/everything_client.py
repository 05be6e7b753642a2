"""An mcpgen client doing what each of the conformance suite's client scenarios expects.

The harness runs ``python examples/everything_client.py <server-url>`` with the scenario
name in ``MCP_CONFORMANCE_SCENARIO``, the wire it speaks in ``MCP_CONFORMANCE_PROTOCOL_VERSION``
and, for the scenarios that hand over data (credentials, tool calls), a JSON object in
``MCP_CONFORMANCE_CONTEXT``. Every ``auth/*`` scenario runs the same OAuth flow: the harness's
authorization server decides which grant and which checks apply.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable, Coroutine
from typing import Any

from mcpgen import Client
from mcpgen.generated import ElicitRequestFormParams, ElicitRequestParams, ElicitResult
from mcpgen.runtime.auth import ClientInfo, CrossAppAccess, OAuthClient, OAuthError

# The harness's stand-in for this client's metadata document (used when the AS supports CIMD).
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
# The scenario handing over an IdP's ID token for an RFC 8693 token exchange (harness 0.1.x
# named it auth/cross-app-access-complete-flow).
CROSS_APP_SCENARIO = "auth/enterprise-managed-authorization"


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


def oauth(scenario: str, context: dict[str, Any]) -> OAuthClient:
    """The OAuth set-up a real client would have for the scenario's server."""
    if scenario.startswith("auth/client-credentials-"):
        machine = ClientInfo(context["client_id"], context.get("client_secret"),
                             private_key_pem=context.get("private_key_pem"),
                             signing_algorithm=context.get("signing_algorithm", "ES256"))  # fmt: skip
        return OAuthClient(grant="client_credentials", client=machine)
    if scenario == CROSS_APP_SCENARIO:
        grant = CrossAppAccess(context["idp_token_endpoint"], context["idp_client_id"], context["idp_id_token"])
        return OAuthClient(grant=grant, client=ClientInfo(context["client_id"], context["client_secret"]))
    registered = ClientInfo(context["client_id"], context.get("client_secret")) if "client_id" in context else None
    return OAuthClient(client=registered, client_metadata_url=CLIENT_METADATA_URL, client_name="mcpgen-conformance")


async def authorized(url: str) -> None:
    """Connect through OAuth, list the tools and call test-tool (step-up needs a call)."""
    scenario = os.environ["MCP_CONFORMANCE_SCENARIO"]
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT", "{}"))
    async with Client.http(url, auth=oauth(scenario, context)) as client:
        tools = await client.list_tools()
        if any(tool.name == "test-tool" for tool in tools):
            result = await client.call_tool("test-tool", {})
            print(result, file=sys.stderr)


SCENARIOS: dict[str, Callable[[str], Coroutine[Any, Any, None]]] = {
    "initialize": initialize,
    "tools_call": tools_call,
    "elicitation-sep1034-client-defaults": elicitation_defaults,
    "sse-retry": sse_retry,
}


def main() -> int:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    run = authorized if scenario.startswith("auth/") else SCENARIOS.get(scenario)
    if run is None or len(sys.argv) < 2:
        print(f"everything_client: unsupported scenario {scenario!r}", file=sys.stderr)
        return 2
    try:
        asyncio.run(run(sys.argv[-1]))
    except OAuthError as exc:
        print(f"everything_client: authorization failed: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
