"""An mcpgen client doing what each of the conformance suite's client scenarios expects.

The harness runs ``python examples/everything_client.py <server-url>`` with the scenario
name in ``MCP_CONFORMANCE_SCENARIO``, the wire it speaks in ``MCP_CONFORMANCE_PROTOCOL_VERSION``
and, for the scenarios that hand over data (credentials, tool calls), a JSON object in
``MCP_CONFORMANCE_CONTEXT``. Every ``auth/*`` scenario runs the same OAuth flow: the harness's
authorization server decides which grant and which checks apply.

Every scenario uses the public :class:`~mcpgen.Client` in its automatic era: it probes with
``server/discover`` and speaks whichever era the scenario's mock proves it serves, so the
same driver passes the 2025-11-25 and the 2026-07-28 legs.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable, Coroutine
from typing import Any

from msgspec import UNSET

from mcpgen import (
    Client,
    ClientInfo,
    CrossAppAccess,
    McpError,
    OAuthClient,
    OAuthError,
    SkillVerificationError,
    WorkloadIdentity,
)
from mcpgen.generated import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitResult,
    Root,
    TextContent,
)

# The harness's stand-in for this client's metadata document (used when the AS supports CIMD).
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
# The scenario handing over an IdP's ID token for an RFC 8693 token exchange (harness 0.1.x
# named it auth/cross-app-access-complete-flow).
CROSS_APP_SCENARIO = "auth/enterprise-managed-authorization"
# The scenario handing over the workload's identity JWT (SEP-1933); the context also holds
# an expired one and one for another audience, which a workload never has reason to send.
WORKLOAD_SCENARIO = "auth/wif-jwt-bearer"
# sep-2322-client-request-state: the mock's tools, called in this order (one elicits with a
# requestState, one must carry nothing of that flow, one elicits without a state, one
# answers with no resultType at all).
MRTR_TOOLS = ("test_mrtr_echo_state", "test_mrtr_unrelated", "test_mrtr_no_state", "test_mrtr_no_result_type")
# Stand-in values for the required arguments of a tool the scenario lets us pick freely.
STUB_VALUES: dict[str, Any] = {
    "string": "x",
    "integer": 1,
    "number": 1.5,
    "boolean": True,
    "array": [],
    "object": {},
    "null": None,
}


def log(*items: object) -> None:
    """The harness shows a client's output only when a scenario fails: keep it readable."""
    print("everything_client:", *items, file=sys.stderr)


def context() -> dict[str, Any]:
    data = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT", "{}"))
    return data if isinstance(data, dict) else {}


async def fill_defaults(params: ElicitRequestParams) -> ElicitResult:
    """Accept a form, answering every field with the default its schema gives."""
    if not isinstance(params, ElicitRequestFormParams):
        return ElicitResult(action="decline")
    content: dict[str, Any] = {}
    for name, field in params.requested_schema.properties.items():
        default = getattr(field, "default", None)
        if default is not None and default is not UNSET:
            content[name] = default
    return ElicitResult(action="accept", content=content)


async def confirm(params: ElicitRequestParams) -> ElicitResult:
    """Accept any question with ``confirmed: true`` (the MRTR mock's elicitation)."""
    return ElicitResult(action="accept", content={"confirmed": True})


async def sample(params: CreateMessageRequestParams) -> CreateMessageResult:
    return CreateMessageResult(content=TextContent(text="ok"), model="stub", role="assistant")


async def add_numbers(url: str, **options: Any) -> None:
    """List the tools and call add_numbers(5, 3), the core mocks' tool."""
    async with Client.http(url, **options) as client:
        await client.list_tools()
        result = await client.call_tool("add_numbers", {"a": 5, "b": 3})
        log(client.spoken_era, result)


async def initialize(url: str) -> None:
    async with Client.http(url) as client:
        if client.stateless or client.session.peer_caps.has("tools"):  # only use what the server declared
            await client.list_tools()


async def tools_call(url: str) -> None:
    await add_numbers(url)


async def request_metadata(url: str) -> None:
    """Every capability declared (the mock checks each is an object), then list and call."""
    await add_numbers(
        url, sampling=sample, elicitation=confirm, roots=[Root(uri="file:///tmp/conformance", name="conformance")]
    )


async def elicitation_defaults(url: str) -> None:
    async with Client.http(url, elicitation=fill_defaults, elicitation_modes=("form",)) as client:
        await client.list_tools()
        result = await client.call_tool("test_client_elicitation_defaults", {})
        log(result)


async def sse_retry(url: str) -> None:
    async with Client.http(url) as client:
        await client.list_tools()
        result = await client.call_tool("test_reconnection", {})
        log(result)


async def request_state(url: str) -> None:
    """The four MRTR tools in order: call_tool answers each question and retries itself."""
    async with Client.http(url, elicitation=confirm, elicitation_modes=("form",)) as client:
        await client.list_tools()
        for name in MRTR_TOOLS:
            result = await client.call_tool(name, {})
            log(name, result)


async def custom_headers(url: str) -> None:
    """Replay the context's tool calls verbatim: the Client mirrors the annotated arguments."""
    calls = context().get("toolCalls", [])
    async with Client.http(url) as client:
        await client.list_tools()
        for call in calls:
            result = await client.call_tool(call["name"], call.get("arguments", {}))
            log(call["name"], result)


def stub_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """A value of the declared type for every required property."""
    properties = schema.get("properties", {})
    arguments: dict[str, Any] = {}
    for name in schema.get("required", []):
        kind = properties.get(name, {}).get("type", "string")
        arguments[name] = STUB_VALUES.get(kind if isinstance(kind, str) else kind[0], "x")
    return arguments


async def invalid_tool_headers(url: str) -> None:
    """Call every tool list_tools kept: the Client leaves out those with invalid annotations."""
    async with Client.http(url) as client:
        for tool in await client.list_tools():
            result = await client.call_tool(tool.name, stub_arguments(tool.input_schema))
            log(tool.name, result)


async def list_only(url: str) -> None:
    """json-schema-ref-no-deref: listing must not follow the tool schema's remote $ref."""
    async with Client.http(url) as client:
        for tool in await client.list_tools():
            log(tool.name, json.dumps(tool.input_schema))


async def schema_echo(url: str) -> None:
    """Send the focal tool's inputSchema back exactly as listed, for the mock to diff."""
    async with Client.http(url) as client:
        tools = {tool.name: tool for tool in await client.list_tools()}
        focal = tools["json_schema_2020_12_tool"]
        result = await client.call_tool("json_schema_echo", {"schema": focal.input_schema})
        log(result)


async def skills_listed(url: str) -> None:
    """sep-2640-client-no-prefetch: list the skills; no skill is loaded, so no file is read."""
    async with Client.http(url) as client:
        for entry in await client.list_skills():
            log(entry.uri, entry.description)


async def skills_loaded(url: str) -> None:
    """sep-2640-client-verify-*: list the skills, then load each and read the files it
    lists, each checked against the entry; a tampered SKILL.md is refused
    (SkillVerificationError) before any other file of its skill is read."""
    async with Client.http(url) as client:
        for entry in await client.list_skills():
            skill = await client.read_skill(entry)
            for file in entry.resources if isinstance(entry.resources, list) else []:
                if file.uri != entry.uri:
                    await client.read_skill_file(skill, file.uri)
            log("loaded", entry.uri)


def oauth(scenario: str, context: dict[str, Any]) -> OAuthClient:
    """The OAuth set-up a real client would have for the scenario's server."""
    if scenario.startswith("auth/client-credentials-"):
        machine = ClientInfo(
            context["client_id"],
            context.get("client_secret"),
            private_key_pem=context.get("private_key_pem"),
            signing_algorithm=context.get("signing_algorithm", "ES256"),
        )
        return OAuthClient(grant="client_credentials", client=machine)
    if scenario == WORKLOAD_SCENARIO:
        workload = ClientInfo(context["client_id"], auth_method="none")
        return OAuthClient(grant=WorkloadIdentity(context["valid_jwt"]), client=workload)
    if scenario == CROSS_APP_SCENARIO:
        grant = CrossAppAccess(context["idp_token_endpoint"], context["idp_client_id"], context["idp_id_token"])
        return OAuthClient(grant=grant, client=ClientInfo(context["client_id"], context["client_secret"]))
    registered = None
    if "client_id" in context:  # auth/pre-registration: credentials issued by the harness's AS
        registered = ClientInfo(context["client_id"], context.get("client_secret"), issuer=context.get("issuer"))
    return OAuthClient(client=registered, client_metadata_url=CLIENT_METADATA_URL, client_name="mcpgen-conformance")


async def authorized(url: str) -> None:
    """Connect through OAuth, list the tools and call one (step-up needs a call).

    auth/authorization-server-migration moves the resource to another authorization server
    after the first success: the next request's 401 sends the OAuthClient to the new one."""
    scenario = os.environ["MCP_CONFORMANCE_SCENARIO"]
    async with Client.http(url, auth=oauth(scenario, context())) as client:
        tools = await client.list_tools()
        names = [tool.name for tool in tools]
        if names:
            name = "test-tool" if "test-tool" in names else names[0]
            result = await client.call_tool(name, {})
            log(client.spoken_era, result)


SCENARIOS: dict[str, Callable[[str], Coroutine[Any, Any, None]]] = {
    "initialize": initialize,
    "tools_call": tools_call,
    "http-standard-headers": tools_call,
    "request-metadata": request_metadata,
    "elicitation-sep1034-client-defaults": elicitation_defaults,
    "sse-retry": sse_retry,
    "sep-2322-client-request-state": request_state,
    "http-custom-headers": custom_headers,
    "http-invalid-tool-headers": invalid_tool_headers,
    "json-schema-ref-no-deref": list_only,
    "json-schema-2020-12-preservation": schema_echo,
    "sep-2640-client-no-prefetch": skills_listed,
    "sep-2640-client-verify-digest": skills_loaded,
    "sep-2640-client-verify-size": skills_loaded,
    "sep-2640-client-verify-frontmatter": skills_loaded,
}


def main() -> int:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    run = authorized if scenario.startswith("auth/") else SCENARIOS.get(scenario)
    if run is None or len(sys.argv) < 2:
        log(f"unsupported scenario {scenario!r}")
        return 2
    try:
        asyncio.run(run(sys.argv[-1]))
    except OAuthError as exc:
        log(f"authorization failed: {exc}")
        return 1
    except McpError as exc:
        log(f"the server refused: {exc}")
        return 1
    except SkillVerificationError as exc:
        log(exc)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
