"""An mcpgen server exposing what the official MCP conformance suite's server scenarios
exercise, served over Streamable HTTP on 127.0.0.1.

    python examples/everything_server.py --port 3001     # then: conformance server --url http://127.0.0.1:3001/mcp
    python examples/everything_server.py --versions 2025-11-25   # the handshake era only (2026-07-28: stateless only)
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import struct
from pathlib import Path
from typing import Any

from mcpgen import INTERNAL_ERROR, Context, McpError, Server, ToolError, close_current_stream
from mcpgen.generated import (
    AudioContent,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    PromptMessage,
    TextContent,
    TextResourceContents,
)

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


def tiny_wav() -> str:
    """A 10 ms, 8 kHz, 8-bit mono silence WAV file, base64."""
    samples = b"\x80" * 80
    header = b"RIFF" + struct.pack("<I", 36 + len(samples)) + b"WAVEfmt "
    header += struct.pack("<IHHIIHH", 16, 1, 1, 8000, 8000, 1, 8) + b"data" + struct.pack("<I", len(samples))
    return base64.b64encode(header + samples).decode()


def options(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--port", type=int, default=3001)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument(
        "--versions",
        default=None,
        help="serve only these protocol revisions, comma-separated (2025-11-25: the handshake era only; "
        "2026-07-28: the stateless era only); default: every revision",
    )
    return parser.parse_known_args(argv)[0]


# The revisions served are read before the server is made (its tools are registered below).
VERSIONS = [v for v in (options().versions or "").split(",") if v] or None
server = Server("mcpgen-everything", "1.0.0", instructions="Conformance test server.", versions=VERSIONS)


@server.tool(description="Returns a simple text response.")
def test_simple_text() -> str:
    return "This is a simple text response for testing."


@server.tool(description="Returns an image.")
def test_image_content() -> ImageContent:
    return ImageContent(data=PNG, mime_type="image/png")


@server.tool(description="Returns audio.")
def test_audio_content() -> AudioContent:
    return AudioContent(data=tiny_wav(), mime_type="audio/wav")


@server.tool(description="Returns an embedded resource.")
def test_embedded_resource() -> EmbeddedResource:
    return EmbeddedResource(
        resource=TextResourceContents(
            uri="test://embedded-resource", mime_type="text/plain", text="This is an embedded resource content."
        )
    )


@server.tool(description="Returns text, an image and a resource.")
def test_multiple_content_types() -> list[ContentBlock]:
    return [
        TextContent(text="Multiple content types test:"),
        ImageContent(data=PNG, mime_type="image/png"),
        EmbeddedResource(
            resource=TextResourceContents(
                uri="test://mixed-content-resource", mime_type="application/json", text='{"test":"data","value":123}'
            )
        ),
    ]


@server.tool(description="Logs three messages while it runs.")
async def test_tool_with_logging(ctx: Context) -> str:
    for message in ("Tool execution started", "Tool processing data", "Tool execution completed"):
        await ctx.info(message)
        await asyncio.sleep(0.05)
    return "Logging test completed"


@server.tool(description="Reports progress 0, 50, 100.")
async def test_tool_with_progress(ctx: Context) -> str:
    for value in (0, 50, 100):
        await ctx.report_progress(value, 100, f"{value}% done")
        await asyncio.sleep(0.05)
    return str(ctx.request.progress_token)


@server.tool(description="Always fails, reporting the error to the model.")
def test_error_handling() -> Any:
    from mcpgen import ToolError

    raise ToolError("This tool intentionally returns an error for testing")


@server.tool(description="Asks the client's model to answer a prompt.")
async def test_sampling(prompt: str, ctx: Context) -> str:
    result = await ctx.sample(prompt, max_tokens=100)
    text = result.content.text if isinstance(result.content, TextContent) else json.dumps(str(result.content))
    return f"LLM response: {text}"


@server.tool(description="Asks the user for a username and email.")
async def test_elicitation(message: str, ctx: Context) -> str:
    schema = {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "Your username"},
            "email": {"type": "string", "description": "Your email address"},
        },
        "required": ["username", "email"],
    }
    answer = await ctx.elicit(message, schema)
    return f"User response: action={answer.action}, content={json.dumps(answer.content or {})}"


@server.tool(description="Elicits fields with typed defaults (SEP-1034).")
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "default": True},
        },
    }
    answer = await ctx.elicit("Please review these defaults", schema)
    return f"Elicitation completed: action={answer.action}, content={json.dumps(answer.content or {})}"


@server.tool(description="Elicits every kind of enum field (SEP-1330).")
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    pairs = [{"const": f"value{i}", "title": f"Value {i}"} for i in (1, 2, 3)]
    schema = {
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {"type": "string", "oneOf": pairs},
            "legacyEnum": {
                "type": "string",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option 1", "Option 2", "Option 3"],
            },
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
            "titledMulti": {"type": "array", "items": {"anyOf": pairs}},
        },
    }
    answer = await ctx.elicit("Pick some options", schema)
    return f"Elicitation completed: action={answer.action}, content={json.dumps(answer.content or {})}"


@server.tool(description="Answers after closing its stream, so the client must resume.")
async def test_reconnection(ctx: Context) -> str:
    await close_current_stream()
    await asyncio.sleep(0.2)
    return "Reconnection test completed"


JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


@server.tool(description="Takes a JSON Schema 2020-12 input schema.", input_schema=JSON_SCHEMA_2020_12)
def json_schema_2020_12_tool(
    name: str = "",
    address: dict[str, Any] | None = None,
    contactMethod: str | None = None,  # noqa: N803 (wire name)
    phone: str | None = None,
    email: str | None = None,
) -> str:
    return f"name={name} address={json.dumps(address)} contact={contactMethod or ''}"


# ---------------------------------------------------------------- stateless era (2026-07-28)

X_MCP_HEADER_SCHEMA = {
    "type": "object",
    "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
    "required": ["region"],
}


@server.tool(
    description="Mirrors its region argument in the Mcp-Param-Region header.", input_schema=X_MCP_HEADER_SCHEMA
)
def test_x_mcp_header(region: str) -> str:
    return f"region={region}"


@server.tool(description="Needs the client's sampling capability.")
async def test_missing_capability(ctx: Context) -> str:
    result = await ctx.sample("Say hello", max_tokens=16)
    return f"sampled: {result.model}"


@server.tool(description="Streams progress and logs, never a request.")
async def test_streaming_elicitation(ctx: Context) -> str:
    await ctx.report_progress(1, 2, "half way")
    await ctx.info("streaming")
    return "streamed"


@server.tool(description="Logs a message when the request names a log level.")
async def test_logging_tool(ctx: Context) -> str:
    await ctx.info("a log message")
    return "logged"


_TOGGLES = {"tool": False, "prompt": False}


@server.tool(description="Adds or removes a tool, so listeners hear tools/list_changed.")
def test_trigger_tool_change() -> str:
    if _TOGGLES["tool"]:
        server.remove_tool("test_dynamic_tool")
    else:
        server.tool(name="test_dynamic_tool", description="Comes and goes.")(lambda: "dynamic")
    _TOGGLES["tool"] = not _TOGGLES["tool"]
    return "tools changed"


@server.tool(description="Adds or removes a prompt, so listeners hear prompts/list_changed.")
def test_trigger_prompt_change() -> str:
    if _TOGGLES["prompt"]:
        server.remove_prompt("test_dynamic_prompt")
    else:
        server.prompt(name="test_dynamic_prompt", description="Comes and goes.")(lambda: "dynamic")
    _TOGGLES["prompt"] = not _TOGGLES["prompt"]
    return "prompts changed"


NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


@server.tool(description="Asks for the user's name (InputRequiredResult) and greets them.")
async def test_input_required_result_elicitation(ctx: Context) -> str:
    answer = await ctx.elicit("What is your name?", NAME_FORM, key="user_name")
    return f"Hello, {(answer.content or {}).get('name', 'stranger')}!"


@server.tool(description="Asks the client's model a question (InputRequiredResult).")
async def test_input_required_result_sampling(ctx: Context) -> str:
    result = await ctx.sample("What is the capital of France?", max_tokens=32, key="capital_question")
    text = result.content.text if isinstance(result.content, TextContent) else str(result.content)
    return f"The model said: {text}"


@server.tool(description="Asks for the client's roots (InputRequiredResult).")
async def test_input_required_result_list_roots(ctx: Context) -> str:
    roots = await ctx.list_roots(key="client_roots")
    return "Roots: " + ", ".join(root.uri for root in roots)


@server.tool(description="Asks for a confirmation; the request's state carries what it needs.")
async def test_input_required_result_request_state(ctx: Context) -> str:
    form = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    answer = await ctx.elicit("Confirm?", form, key="confirm")
    return f"state-ok: confirmed={(answer.content or {}).get('ok')}"


@server.tool(description="Asks for a form, a model answer and the roots in one round.")
async def test_input_required_result_multiple_inputs(ctx: Context) -> str:
    answer, sampled, roots = await asyncio.gather(
        ctx.elicit("What is your name?", NAME_FORM, key="user_name"),
        ctx.sample("Say hello", max_tokens=16, key="greeting"),
        ctx.list_roots(key="client_roots"),
    )
    return f"all inputs: {answer.action}, {sampled.model}, {len(roots)} roots"


@server.tool(description="Asks two questions in two rounds.")
async def test_input_required_result_multi_round(ctx: Context) -> str:
    first = await ctx.elicit("Step 1: your name?", NAME_FORM, key="step1")
    second = await ctx.elicit("Step 2: your name again?", NAME_FORM, key="step2")
    return f"done: {first.action}, {second.action}"


@server.tool(description="Asks a question; its sealed state must come back unaltered.")
async def test_input_required_result_tampered_state(ctx: Context) -> str:
    answer = await ctx.elicit("What is your name?", NAME_FORM, key="user_name")
    return f"untampered: {answer.action}"


@server.tool(description="Asks only for what this request's client capabilities allow.")
async def test_input_required_result_capabilities(ctx: Context) -> str:
    caps = ctx.client_capabilities
    asks: list[Any] = []
    if "elicitation" in caps:
        asks.append(ctx.elicit("What is your name?", NAME_FORM, key="user_name"))
    if "sampling" in caps:
        asks.append(ctx.sample("Say hello", max_tokens=16, key="greeting"))
    if "roots" in caps:
        asks.append(ctx.list_roots(key="client_roots"))
    done = await asyncio.gather(*asks)
    return f"answered {len(done)} questions"


# Tasks extension (SEP-2663) fixtures: a client declaring io.modelcontextprotocol/tasks gets
# a task handle for the task-capable ones and polls tasks/get.

CONFIRM_FORM = {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}


@server.tool(description="Greets by name (an ordinary call, never a task).")
def greet(name: str) -> str:
    return f"Hello, {name}!"


@server.tool(description="Works for `seconds` seconds (a task when the client allows).", task="optional")
async def slow_compute(seconds: float, ctx: Context, label: str = "") -> str:
    steps = max(1, int(seconds * 4))
    for step in range(1, steps + 1):
        await asyncio.sleep(seconds / steps)
        await ctx.report_progress(step, steps, f"{label or 'compute'}: {step}/{steps}")
    return f"{label or 'compute'} done after {seconds:g} s"


@server.tool(description="Runs only as a task and ends with a tool error.", task="required")
async def failing_job() -> str:
    await asyncio.sleep(0.5)
    raise ToolError("the job failed (as it always does)")


@server.tool(description="A task that fails with a JSON-RPC error.", task="optional")
async def protocol_error_job() -> str:
    await asyncio.sleep(0.1)
    raise McpError(INTERNAL_ERROR, "the job hit an internal error")


@server.tool(description="Asks for confirmation (the task waits for input), then deletes.", task="optional")
async def confirm_delete(filename: str, ctx: Context) -> str:
    answer = await ctx.elicit(f"Delete {filename}?", CONFIRM_FORM, key="confirm_delete")
    confirmed = answer.action == "accept" and bool((answer.content or {}).get("confirm"))
    return f"{'Deleted' if confirmed else 'Kept'} {filename}"


@server.tool(description="Asks two questions at once (the task waits for both).", task="optional")
async def multi_input(ctx: Context) -> str:
    name, confirm = await asyncio.gather(
        ctx.elicit("Your name?", NAME_FORM, key="name"),
        ctx.elicit("Go ahead?", CONFIRM_FORM, key="confirm"),
    )
    return f"inputs: {(name.content or {}).get('name')}, {confirm.action}"


@server.tool(
    description="Asks the user's name (InputRequiredResult), then runs on as a task.",
    task="required",
    task_start="explicit",
)
async def test_tool_with_task(ctx: Context) -> str:
    answer = await ctx.elicit("What is your name?", NAME_FORM, key="user_name")
    await ctx.continue_as_task()
    await asyncio.sleep(0.2)
    return f"Hello, {(answer.content or {}).get('name', 'stranger')}, from a task!"


@server.prompt(description="Asks for context (InputRequiredResult) before it is rendered.")
async def test_input_required_result_prompt(ctx: Context) -> str:
    form = {"type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]}
    answer = await ctx.elicit("Any context for this prompt?", form, key="user_context")
    return f"Prompt with context: {(answer.content or {}).get('context', '')}"


WATCHED = {"text": "Watched resource content"}


@server.resource("test://static-text", mime_type="text/plain", description="A static text resource")
def static_text() -> str:
    return "This is the content of the static text resource."


@server.resource("test://static-binary", mime_type="image/png", description="A static binary resource")
def static_binary() -> bytes:
    return base64.b64decode(PNG)


@server.resource("test://watched-resource", mime_type="text/plain", description="A resource to subscribe to")
def watched() -> str:
    return WATCHED["text"]


@server.resource_template("test://template/{id}/data", mime_type="application/json", description="Data by id")
def template_data(id: str) -> str:
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


@server.prompt(description="A simple prompt.")
def test_simple_prompt() -> str:
    return "This is a simple prompt for testing."


@server.prompt(description="A prompt with two arguments.")
def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@server.prompt(description="A prompt embedding a resource.")
def test_prompt_with_embedded_resource(resourceUri: str) -> list[PromptMessage]:  # noqa: N803 (wire name)
    resource = TextResourceContents(
        uri=resourceUri, mime_type="text/plain", text="Embedded resource content for testing."
    )
    return [
        PromptMessage(role="user", content=EmbeddedResource(resource=resource)),
        PromptMessage(role="user", content=TextContent(text="Please process the embedded resource above.")),
    ]


@server.prompt(description="A prompt with an image.")
def test_prompt_with_image() -> list[PromptMessage]:
    return [
        PromptMessage(role="user", content=ImageContent(data=PNG, mime_type="image/png")),
        PromptMessage(role="user", content=TextContent(text="Please analyze the image above.")),
    ]


@server.completion(prompt="test_prompt_with_arguments", argument="arg1")
def complete_arg1(value: str, arguments: dict[str, str]) -> list[str]:
    return [v for v in ("test1", "test2", "testing") if v.startswith(value)]


# The skills extension (SEP-2640): our sample skills, with resources/directory/read.
server.skills(Path(__file__).parent / "skills")


def main() -> None:
    args = options()
    server.run("http", host=args.host, port=args.port, session_idle_timeout=300)


if __name__ == "__main__":
    main()
