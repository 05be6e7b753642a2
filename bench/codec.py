"""Codec throughput of mcpgen's generated types next to the official SDK's and a hand-written floor.

For six typical MCP messages of revision 2025-11-25 and three of 2026-07-28 (a tools/call
request with its ``_meta`` envelope, a CallToolResult with ``resultType``, an
InputRequiredResult asking for a form) it measures, in operations per second:

* decode: JSON bytes -> validated object, and
* encode: object -> JSON bytes,

with three implementations of the same message types:

* ``mcpgen``: ``mcpgen.protocol.v2025_11_25`` and ``v2026_07_28`` (``decoder(T).decode`` and
  ``encode``);
* ``SDK``: the pydantic v2 models of the ``mcp-types`` package (``mcp_types`` and its
  ``_v2026_07_28`` models, the SDK's own for that revision), decoded with
  ``Model.model_validate_json`` and encoded with
  ``model_dump_json(by_alias=True, exclude_none=True)``, the form the SDK sends;
* ``hand-written``: plain msgspec Structs written below for just these messages, decoded
  in one pass by a reused ``msgspec.json.Decoder``: the practical limit. It accepts and
  rejects what the schema does for these messages (its definition is above the structs):
  where the schema has an untagged "one of these shapes", one struct with every shape's
  fields and a ``__post_init__`` check, as a person would write it.

Request and notification messages are whole JSON-RPC messages; results are the result
object alone. (The SDK's public request models leave the JSON-RPC envelope to its session
layer: they ignore ``jsonrpc`` and ``id``.) Before timing, every implementation must decode
every message, and the mcpgen and hand-written ones must re-encode it to JSON equal to the
input. Each number is the best of several loops calibrated to a target duration; the
implementations' loops take turns, so drifting machine speed hits them alike (GC stays
enabled). Finally, a fresh interpreter regenerates each committed revision three times,
timed from inside (import + generate) and as the subprocess's wall time.

Run from the repository root with the project's venv active::

    python bench/codec.py                       # ~0.3 s per measurement, best of 5
    python bench/codec.py --quick               # smoke run: ~0.05 s, best of 3
    python bench/codec.py --json results.json   # also write the numbers as JSON
"""

from __future__ import annotations

import argparse
import base64
import itertools
import json
import math
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any, Literal

import mcp_types as sdk
import mcp_types._v2026_07_28 as sdk26
import msgspec
import pydantic

import mcpgen.protocol.v2025_11_25 as gen
import mcpgen.protocol.v2026_07_28 as gen26

REPO = Path(__file__).resolve().parent.parent
IMPLEMENTATIONS = ("mcpgen", "SDK", "hand-written")
REGENERATE = (
    "import time; t=time.perf_counter(); from mcpgen.codegen.generate import generate;"
    " generate('{revision}'); print(time.perf_counter()-t)"
)
REGENERATED = ("2025-11-25", "2026-07-28")
REGENERATE_RUNS = 3


# --- The messages -------------------------------------------------------------------------


def compact(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def initialize_request() -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {
                "roots": {"listChanged": True},
                "sampling": {"tools": {}},
                "elicitation": {"form": {}, "url": {}},
                "experimental": {"com.example/trace": {"level": "basic"}},
            },
            "clientInfo": {
                "name": "bench-client",
                "title": "Benchmark Client",
                "version": "1.4.2",
                "websiteUrl": "https://client.example.com",
            },
        },
    }


def call_tool_request() -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": "req-42",
        "method": "tools/call",
        "params": {
            "name": "search_issues",
            "arguments": {
                "query": "decoder allocates too much",
                "labels": ["bug", "performance"],
                "limit": 20,
                "include_closed": False,
                "since": "2025-10-01T00:00:00Z",
            },
            "_meta": {"progressToken": "tok-42"},
        },
    }


def call_tool_result() -> dict[str, Any]:
    issues = [{"number": 101 + i, "title": f"Issue {101 + i}", "state": "open", "labels": ["bug"]} for i in range(3)]
    return {
        "content": [
            {
                "type": "text",
                "text": "Found 3 open issues matching 'decoder allocates too much'.",
                "annotations": {"audience": ["user", "assistant"], "priority": 0.8},
            },
            {
                "type": "image",
                "data": base64.b64encode(bytes(range(256)) * 6).decode(),
                "mimeType": "image/png",
            },
            {
                "type": "resource",
                "resource": {
                    "uri": "file:///repo/docs/decoding.md",
                    "mimeType": "text/markdown",
                    "text": "# Decoding\n\nMessages are decoded in a single pass.\n",
                },
            },
        ],
        "structuredContent": {"issues": issues, "total": len(issues)},
        "isError": False,
    }


def list_tools_result(count: int = 100) -> dict[str, Any]:
    def tool(i: int) -> dict[str, Any]:
        return {
            "name": f"tool_{i:03d}",
            "title": f"Tool {i}",
            "description": f"Reads entries below a path and returns up to `limit` of them (#{i}).",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Directory to read"},
                    "recursive": {"type": "boolean", "default": False},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 1000},
                    "pattern": {"type": "string", "description": "Glob to filter names"},
                },
                "required": ["path"],
            },
            "annotations": {
                "title": f"Tool {i}",
                "readOnlyHint": i % 2 == 0,
                "destructiveHint": False,
                "idempotentHint": True,
                "openWorldHint": False,
            },
        }

    return {"tools": [tool(i) for i in range(count)], "nextCursor": "page-2"}


def read_resource_result(size: int = 64 * 1024) -> dict[str, Any]:
    def log_line(i: int) -> str:
        return f'2025-11-25T12:{i // 60 % 60:02d}:{i % 60:02d}Z INFO worker-{i % 8} batch {i}: "ok"\n'

    text = "".join(map(log_line, range(size // 32)))[:size]  # every line is over 32 chars
    return {"contents": [{"uri": "file:///var/log/app.log", "mimeType": "text/plain", "text": text}]}


def progress_notification() -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {
            "progressToken": "tok-42",
            "progress": 37,
            "total": 100,
            "message": "Indexed 37 of 100 files",
        },
    }


def call_tool_request_2026() -> dict[str, Any]:
    request = call_tool_request()
    request["params"]["_meta"] = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}, "sampling": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "bench-client", "version": "1.4.2"},
        "progressToken": "tok-42",
    }
    return request


def call_tool_result_2026() -> dict[str, Any]:
    return {**call_tool_result(), "resultType": "complete"}


def input_required_result() -> dict[str, Any]:
    return {
        "resultType": "input_required",
        "inputRequests": {
            "confirm": {
                "method": "elicitation/create",
                "params": {
                    "mode": "form",
                    "message": "Delete 3 files in /tmp/build?",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {"confirm": {"type": "boolean", "title": "Delete them"}},
                        "required": ["confirm"],
                    },
                },
            }
        },
        "requestState": base64.b64encode(bytes(range(96))).decode(),
    }


# --- Hand-written msgspec structs: the practical limit, held to the schema -----------------
#
# The baseline accepts exactly what the schema accepts for these messages and rejects what
# it rejects, in whatever representation is fastest: a person writing msgspec structs for
# just these messages. So it validates every key the messages hold (a typed object stays a
# struct, never a dict skipped over), and where the schema says "one of these shapes" with no
# tag msgspec can read, it does what a person would: one struct with every shape's fields
# plus the cheapest ``__post_init__`` check that one shape's required keys are there; a union
# it can tag (the form's field schemas, by "type") is tagged. It may leave out what these
# messages never hold (other tagged variants, fields they lack), which does not change the
# time, and it may be lenient where leniency costs nothing (null for an absent optional).
# (Earlier versions skipped two checks the schema requires: the embedded resource's "text
# or blob", and the InputRequiredResult's form schema, kept as an unchecked dict.)


class Hand(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    """Base of the hand-written structs: camelCase wire names, absent optionals left out,
    untracked by the GC (no cycles possible) like mcpgen's structs."""


class HandImplementation(Hand):
    name: str
    version: str
    title: str | None = None
    website_url: str | None = None


class HandRoots(Hand):
    list_changed: bool | None = None


class HandClientCapabilities(Hand):
    roots: HandRoots | None = None
    sampling: dict[str, Any] | None = None
    elicitation: dict[str, Any] | None = None
    experimental: dict[str, dict[str, Any]] | None = None


class HandInitializeParams(Hand):
    protocol_version: str
    capabilities: HandClientCapabilities
    client_info: HandImplementation


class HandInitializeRequest(Hand):
    jsonrpc: Literal["2.0"]
    id: int | str
    method: Literal["initialize"]
    params: HandInitializeParams


class HandCallToolParams(Hand):
    name: str
    arguments: dict[str, Any] | None = None
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class HandCallToolRequest(Hand):
    jsonrpc: Literal["2.0"]
    id: int | str
    method: Literal["tools/call"]
    params: HandCallToolParams


class HandAnnotations(Hand):
    audience: list[Literal["user", "assistant"]] | None = None
    priority: float | None = None


class HandResourceContents(Hand):
    """TextResourceContents | BlobResourceContents: no tag, so one struct and a check."""

    uri: str
    mime_type: str | None = None
    text: str | None = None
    blob: str | None = None

    def __post_init__(self) -> None:
        if self.text is None and self.blob is None:
            raise ValueError("resource contents need `text` or `blob`")


class HandText(Hand, tag_field="type", tag="text"):
    text: str
    annotations: HandAnnotations | None = None


class HandImage(Hand, tag_field="type", tag="image"):
    data: str
    mime_type: str


class HandEmbeddedResource(Hand, tag_field="type", tag="resource"):
    resource: HandResourceContents


class HandCallToolResult(Hand):
    content: list[HandText | HandImage | HandEmbeddedResource]
    structured_content: dict[str, Any] | None = None
    is_error: bool | None = None


class HandToolAnnotations(Hand):
    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None


class HandTool(Hand):
    name: str
    input_schema: dict[str, Any]
    title: str | None = None
    description: str | None = None
    annotations: HandToolAnnotations | None = None


class HandListToolsResult(Hand):
    tools: list[HandTool]
    next_cursor: str | None = None


class HandReadResourceResult(Hand):
    contents: list[HandResourceContents]


class HandProgressParams(Hand):
    progress_token: int | str
    progress: float
    total: float | None = None
    message: str | None = None


class HandCallToolRequest2026(Hand):
    jsonrpc: Literal["2.0"]
    id: int | str
    method: Literal["tools/call"]
    params: HandCallToolParams  # its _meta stays a dict, as vendor keys must survive


class HandCallToolResult2026(HandCallToolResult, kw_only=True):
    result_type: str


# The form's field schemas (PrimitiveSchemaDefinition), tagged by "type", which every one
# requires. The four string shapes (plain, enum, titled enum, legacy titled enum) need no
# check: with all their keys optional, any "string" object is one of them.
class HandStringField(Hand, tag_field="type", tag="string"):
    title: str | None = None
    description: str | None = None
    default: str | None = None
    min_length: int | None = None
    max_length: int | None = None
    format: Literal["date", "date-time", "email", "uri"] | None = None
    enum: list[str] | None = None
    enum_names: list[str] | None = None
    one_of: list[HandTitledOption] | None = None


class HandTitledOption(Hand):
    const: str
    title: str


class HandNumberField(Hand, tag_field="type", tag="number"):
    title: str | None = None
    description: str | None = None
    default: float | None = None
    minimum: float | None = None
    maximum: float | None = None


class HandIntegerField(HandNumberField, tag="integer"):
    pass


class HandBooleanField(Hand, tag_field="type", tag="boolean"):
    title: str | None = None
    description: str | None = None
    default: bool | None = None


class HandArrayItems(Hand):
    """The multi-select items: untitled ({type, enum}) or titled ({anyOf}), untagged."""

    type: Literal["string"] | None = None
    enum: list[str] | None = None
    any_of: list[HandTitledOption] | None = None

    def __post_init__(self) -> None:
        if self.enum is None and self.any_of is None:
            raise ValueError("multi-select items need `enum` or `anyOf`")


class HandArrayField(Hand, tag_field="type", tag="array"):
    items: HandArrayItems
    title: str | None = None
    description: str | None = None
    default: list[str] | None = None
    min_items: int | None = None
    max_items: int | None = None


class HandFormSchema(Hand):
    type: Literal["object"]
    properties: dict[str, HandStringField | HandNumberField | HandIntegerField | HandBooleanField | HandArrayField]
    required: list[str] | None = None
    schema: str | None = msgspec.field(default=None, name="$schema")


class HandElicitParams(Hand):
    """ElicitRequestFormParams | ElicitRequestURLParams: no tag (a form's mode is optional),
    so one struct and a check; a requestedSchema makes it a form, as in mcpgen."""

    message: str
    requested_schema: HandFormSchema | None = None
    url: str | None = None
    mode: Literal["form", "url"] | None = None

    def __post_init__(self) -> None:
        if self.requested_schema is not None:
            if self.mode == "url":
                raise ValueError("a form's `mode` is 'form'")
        elif self.url is None or self.mode != "url":
            raise ValueError("URL elicitation needs `url` and `mode` 'url'")


class HandElicitRequest(Hand, tag_field="method", tag="elicitation/create"):
    params: HandElicitParams


class HandInputRequiredResult(Hand):
    result_type: str
    input_requests: dict[str, HandElicitRequest] | None = None
    request_state: str | None = None


class HandProgressNotification(Hand):
    jsonrpc: Literal["2.0"]
    method: Literal["notifications/progress"]
    params: HandProgressParams


# --- The three codecs ---------------------------------------------------------------------


@dataclass(frozen=True)
class Message:
    name: str
    data: bytes
    mcpgen_type: type[Any]
    sdk_type: type[pydantic.BaseModel]
    hand_type: type[Hand]


@dataclass(frozen=True)
class Codec:
    decode: Callable[[bytes], Any]
    encode: Callable[[Any], bytes]


def messages() -> list[Message]:
    # A table: one benchmark message a row, its name, sample and the three types that decode it.
    return [
        Message("initialize", compact(initialize_request()), gen.InitializeRequest,
                sdk.InitializeRequest, HandInitializeRequest),
        Message("tools/call", compact(call_tool_request()), gen.CallToolRequest,
                sdk.CallToolRequest, HandCallToolRequest),
        Message("CallToolResult", compact(call_tool_result()), gen.CallToolResult,
                sdk.CallToolResult, HandCallToolResult),
        Message("ListToolsResult x100", compact(list_tools_result()), gen.ListToolsResult,
                sdk.ListToolsResult, HandListToolsResult),
        Message("ReadResourceResult 64K", compact(read_resource_result()), gen.ReadResourceResult,
                sdk.ReadResourceResult, HandReadResourceResult),
        Message("notifications/progress", compact(progress_notification()),
                gen.ProgressNotification, sdk.ProgressNotification, HandProgressNotification),
        Message("2026 tools/call", compact(call_tool_request_2026()), gen26.CallToolRequest,
                sdk26.CallToolRequest, HandCallToolRequest2026),
        Message("2026 CallToolResult", compact(call_tool_result_2026()), gen26.CallToolResult,
                sdk26.CallToolResult, HandCallToolResult2026),
        Message("2026 InputRequiredResult", compact(input_required_result()),
                gen26.InputRequiredResult, sdk26.InputRequiredResult, HandInputRequiredResult),
    ]  # fmt: skip


def sdk_encode(model: pydantic.BaseModel) -> bytes:
    return model.model_dump_json(by_alias=True, exclude_none=True).encode()


def codecs(message: Message) -> dict[str, Codec]:
    package = gen26 if message.name.startswith("2026") else gen
    return {
        "mcpgen": Codec(package.decoder(message.mcpgen_type).decode, package.encode),
        "SDK": Codec(message.sdk_type.model_validate_json, sdk_encode),
        "hand-written": Codec(msgspec.json.Decoder(message.hand_type).decode, msgspec.json.Encoder().encode),
    }


def check(message: Message, implementation: str, codec: Codec) -> str | None:
    """Why ``codec`` cannot be benchmarked on ``message``, or None when it round-trips."""
    try:
        obj = codec.decode(message.data)
        if implementation != "SDK" and json.loads(codec.encode(obj)) != json.loads(message.data):
            return "re-encoded JSON differs from the input"
    except Exception as exc:  # noqa: BLE001 - any failure is reported, not raised
        return f"{type(exc).__name__}: {' '.join(str(exc).split())}"
    return None


# --- Timing -------------------------------------------------------------------------------


def time_loop(fn: Callable[[Any], object], arg: Any, n: int) -> float:
    loop = itertools.repeat(None, n)
    start = time.perf_counter()
    for _ in loop:
        fn(arg)
    return time.perf_counter() - start


Call = tuple[Callable[[Any], object], Any]  # a function and the argument to time it with


def loop_size(fn: Callable[[Any], object], arg: Any, target: float) -> int:
    """How many calls of ``fn(arg)`` take about ``target`` seconds."""
    n = 1
    while (elapsed := time_loop(fn, arg, n)) < target / 20:
        n *= 4
    return max(1, round(n * target / elapsed))


def ops_per_second(calls: dict[str, Call], target: float, repeats: int) -> dict[str, float]:
    """Calls per second of each call: the best of ``repeats`` loops of about ``target`` s.

    The loops of the different calls take turns, so drifting machine speed hits all alike.
    """
    counts = {name: loop_size(fn, arg, target) for name, (fn, arg) in calls.items()}
    best = dict.fromkeys(calls, math.inf)
    for _ in range(repeats):
        for name, (fn, arg) in calls.items():
            best[name] = min(best[name], time_loop(fn, arg, counts[name]))
    return {name: counts[name] / best[name] for name in calls}


Results = dict[str, dict[str, dict[str, float | None]]]  # message -> op -> implementation


def benchmark(target: float, repeats: int) -> tuple[Results, dict[str, int], list[str]]:
    results: Results = {}
    sizes: dict[str, int] = {}
    problems: list[str] = []
    for message in messages():
        sizes[message.name] = len(message.data)
        decodes: dict[str, Call] = {}
        encodes: dict[str, Call] = {}
        for implementation, codec in codecs(message).items():
            problem = check(message, implementation, codec)
            if problem is not None:
                problems.append(f"{message.name} / {implementation}: {problem}")
                continue
            decodes[implementation] = (codec.decode, message.data)
            encodes[implementation] = (codec.encode, codec.decode(message.data))
        results[message.name] = {
            op: {**dict.fromkeys(IMPLEMENTATIONS), **ops_per_second(calls, target, repeats)}
            for op, calls in (("decode", decodes), ("encode", encodes))
        }
    return results, sizes, problems


def time_regeneration(runs: int, revision: str) -> dict[str, float]:
    """Best in-process generation time and best subprocess wall time, in seconds."""
    inside: list[float] = []
    wall: list[float] = []
    code = REGENERATE.format(revision=revision)
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
        wall.append(time.perf_counter() - start)
        inside.append(float(done.stdout.split()[-1]))
    return {"in_process_s": min(inside), "subprocess_wall_s": min(wall)}


# --- Report -------------------------------------------------------------------------------


def rate(value: float | None) -> str:
    return "failed" if value is None else f"{value:,.0f}"


def ratio(top: float | None, bottom: float | None) -> str:
    return "-" if top is None or bottom is None else f"{top / bottom:.2f}x"


WIDTHS = (26, 8, 12, 12, 14, 11, 12)


def row(cells: tuple[str, ...]) -> str:
    first, *rest = cells
    return f"{first:<{WIDTHS[0]}}" + "".join(f"  {c:>{w}}" for c, w in zip(rest, WIDTHS[1:], strict=True))


def table(results: Results, sizes: dict[str, int]) -> str:
    header = row(("message", "bytes", *IMPLEMENTATIONS, "mcpgen÷SDK", "mcpgen÷hand"))
    out: list[str] = []
    for op, title in (("decode", "decode + validate"), ("encode", "encode")):
        out += [f"{title} (ops/s, higher is better)", header, "-" * len(header)]
        for name, ops in results.items():
            r = ops[op]
            cells = (
                name,
                f"{sizes[name]:,}",
                *(rate(r[i]) for i in IMPLEMENTATIONS),
                ratio(r["mcpgen"], r["SDK"]),
                ratio(r["mcpgen"], r["hand-written"]),
            )
            out.append(row(cells))
        out.append("")
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="~0.05 s per measurement, best of 3")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the numbers here")
    args = parser.parse_args()
    target, repeats = (0.05, 3) if args.quick else (0.3, 5)

    versions = {
        "python": platform.python_version(),
        **{name: version(name) for name in ("msgspec", "pydantic", "mcp-types", "mcpgen")},
    }
    print(", ".join(f"{k} {v}" for k, v in versions.items()))
    print(f"~{target} s per measurement, best of {repeats}\n")

    results, sizes, problems = benchmark(target, repeats)
    print(table(results, sizes))
    regeneration = {rev: time_regeneration(REGENERATE_RUNS, rev) for rev in REGENERATED}
    for rev, timing in regeneration.items():
        print(
            f"regenerate {rev} (best of {REGENERATE_RUNS}):"
            f" {timing['in_process_s']:.3f} s in process (import + generate),"
            f" {timing['subprocess_wall_s']:.3f} s subprocess wall time"
        )
    for problem in problems:
        print(f"PROBLEM: {problem}")

    if args.json is not None:
        report = {
            "versions": versions,
            "settings": {"target_s": target, "repeats": repeats},
            "messages": {name: {"bytes": sizes[name], **ops} for name, ops in results.items()},
            "regeneration": regeneration,
            "problems": problems,
        }
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
