"""The revision diff (mcpgen.codegen.diff) on the official schemas and on small models."""

from __future__ import annotations

import json
from functools import cache

import pytest
from rich.console import Console
from rich.table import Table

from mcpgen.codegen.build import build_model
from mcpgen.codegen.diff import KINDS, Change, RevisionDiff, diff_models, render_table
from mcpgen.codegen.ir import AliasDef, Const, Field, ListOf, Model, Prim, StructDef, UnionDef
from mcpgen.codegen.loader import load_schema
from tests.conftest import official_schema


@cache
def model(revision: str) -> Model:
    return build_model(load_schema(official_schema(revision)))


@cache
def diff(old: str, new: str) -> RevisionDiff:
    return diff_models(model(old), model(new))


def find(d: RevisionDiff, kind: str, change: str, where: str) -> list[Change]:
    return [c for c in d.changes if (c.kind, c.change, c.where) == (kind, change, where)]


def has(d: RevisionDiff, kind: str, change: str, where: str, detail: str = "") -> bool:
    return any(detail in c.detail for c in find(d, kind, change, where))


# ---------------------------------------------------------------- 2025-06-18 -> 2025-11-25


@pytest.mark.parametrize("method", ["tasks/get", "tasks/list", "tasks/cancel", "tasks/result"])
def test_tasks_methods_added(method: str) -> None:
    d = diff("2025-06-18", "2025-11-25")
    assert has(d, "method", "added", f"{method} (c2s)", "request")
    assert has(d, "method", "added", f"{method} (s2c)", "request")


def test_2025_11_25_additions() -> None:
    d = diff("2025-06-18", "2025-11-25")
    assert has(d, "definition", "added", "Icon", "struct")
    assert has(d, "definition", "added", "Task", "struct")
    assert has(d, "definition", "added", "TaskStatus", "alias")
    assert has(d, "field", "added", "Tool.icons", "list[Icon], optional")
    assert has(d, "field", "added", "Tool.execution")
    assert has(d, "field", "added", "Implementation.websiteUrl")
    assert has(d, "field", "added", "CallToolRequestParams.task", "TaskMetadata")
    assert has(d, "method", "added", "notifications/elicitation/complete (s2c)", "notification")
    assert has(d, "method", "added", "notifications/tasks/status (c2s)")
    assert has(d, "union", "added", "ServerNotification", "member added: ElicitationCompleteNotification")
    assert has(d, "union", "removed", "JSONRPCMessage", "member removed: JSONRPCError")


def test_2025_11_25_changes() -> None:
    d = diff("2025-06-18", "2025-11-25")
    # ElicitRequest's params became a union (form or URL) defined at the top level.
    assert has(d, "definition", "changed", "ElicitRequestParams", "struct (inline) -> union")
    assert has(d, "method", "changed", "elicitation/create (s2c)", "(struct) -> ElicitRequestParams (union)")
    assert has(d, "definition", "changed", "EnumSchema", "struct -> union")
    assert has(d, "field", "changed", "CancelledNotificationParams.requestId", "now optional")
    assert has(d, "field", "changed", "ListToolsRequest.params", "ListToolsRequestParams -> PaginatedRequestParams")
    assert has(d, "definition", "removed", "ListToolsRequestParams", "(inline)")


def test_2025_11_25_capabilities() -> None:
    d = diff("2025-06-18", "2025-11-25")
    assert has(d, "capability", "added", "server.tasks", "object")
    assert has(d, "capability", "added", "server.tasks.list")
    assert has(d, "capability", "added", "server.tasks.requests.tools.call")
    assert has(d, "capability", "added", "client.tasks.requests.sampling.createMessage")
    assert has(d, "capability", "changed", "client.elicitation", "dict[str, Any] -> object")
    assert has(d, "capability", "added", "client.elicitation.url")
    assert has(d, "definition", "added", "ServerCapabilitiesTasks", "struct (inline)")
    # capability structs are reported as capabilities, not field by field
    assert not [c for c in d.changes if c.kind == "field" and c.where.startswith("ServerCapabilities")]


def test_local_shape_only() -> None:
    """CallToolRequestParams changed, but CallToolRequest.params still names it: no change there."""
    d = diff("2025-06-18", "2025-11-25")
    assert find(d, "field", "added", "CallToolRequestParams.task")
    assert not [c for c in d.changes if c.where == "CallToolRequest.params"]
    assert not [c for c in d.changes if c.where == "Tool" and c.kind == "definition"]
    assert not [c for c in d.changes if c.where == "tools/call (c2s)"]


# ---------------------------------------------------------------- 2024-11-05 -> 2025-03-26


def test_2025_03_26_changes() -> None:
    d = diff("2024-11-05", "2025-03-26")
    assert has(d, "definition", "added", "AudioContent", "struct")
    assert has(d, "definition", "added", "ToolAnnotations", "struct")
    assert has(d, "definition", "added", "JSONRPCBatchRequest")
    assert has(d, "definition", "added", "JSONRPCBatchResponse")
    assert has(d, "definition", "added", "Annotations")
    assert has(d, "definition", "removed", "Annotated")
    assert has(d, "definition", "removed", "TextContentAnnotations", "(inline)")
    assert has(d, "capability", "added", "server.completions")
    assert has(d, "field", "added", "ProgressNotificationParams.message", "str, optional")
    assert has(d, "field", "added", "Tool.annotations", "ToolAnnotations")
    assert has(d, "field", "changed", "TextContent.annotations", "TextContentAnnotations -> Annotations")
    assert has(d, "union", "added", "JSONRPCMessage", "member added: list[JSONRPCBatchRequestItem]")
    assert not [c for c in d.changes if c.kind == "method"]  # same 27 methods


def test_2025_06_18_changes() -> None:
    d = diff("2025-03-26", "2025-06-18")
    assert has(d, "method", "added", "elicitation/create (s2c)", "capability client.elicitation")
    assert has(d, "field", "added", "CallToolResult.structuredContent")
    assert has(d, "definition", "added", "ResourceLink")
    assert has(d, "union", "removed", "JSONRPCMessage")  # batching dropped


# ---------------------------------------------------------------- properties


@pytest.mark.parametrize("revision", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
def test_identity(revision: str) -> None:
    d = diff(revision, revision)
    assert d.changes == []
    assert (d.old, d.new) == (revision, revision)


def test_reverse_swaps_added_and_removed() -> None:
    forward, back = diff("2025-06-18", "2025-11-25"), diff("2025-11-25", "2025-06-18")
    assert has(back, "method", "removed", "tasks/get (c2s)")
    assert has(back, "definition", "removed", "Icon")

    def count(d: RevisionDiff, change: str) -> int:
        return sum(c.change == change for c in d.changes)

    assert count(forward, "added") == count(back, "removed")
    assert count(forward, "changed") == count(back, "changed")


def test_json_shape_and_summary() -> None:
    d = diff("2025-06-18", "2025-11-25")
    data = json.loads(json.dumps(d.to_json()))
    assert (data["old"], data["new"]) == ("2025-06-18", "2025-11-25")
    assert set(data["summary"]) == set(KINDS)
    assert all(set(c) == {"kind", "change", "where", "detail"} for c in data["changes"])
    for kind, counts in data["summary"].items():
        for change, n in counts.items():
            assert n == sum(1 for c in data["changes"] if (c["kind"], c["change"]) == (kind, change))
    assert sum(n for counts in data["summary"].values() for n in counts.values()) == len(d.changes)
    assert data["summary"]["method"]["added"] == 11


def test_deterministic_order() -> None:
    a = diff_models(model("2024-11-05"), model("2025-03-26"))
    b = diff_models(build_model(load_schema(official_schema("2024-11-05"))), model("2025-03-26"))
    assert a.changes == b.changes
    keys = [(KINDS.index(c.kind), c.where) for c in a.changes]
    assert keys == sorted(keys)


def test_render_table() -> None:
    d = diff("2024-11-05", "2025-03-26")
    table = render_table(d)
    assert isinstance(table, Table)
    console = Console(record=True, width=120)
    console.print(table)
    text = console.export_text()
    for snippet in ("2024-11-05 -> 2025-03-26", "AudioContent", "server.completions", "added", "removed"):
        assert snippet in text
    empty = Console(record=True, width=120)
    empty.print(render_table(diff("2025-03-26", "2025-03-26")))
    assert "no changes" in empty.export_text()


# ---------------------------------------------------------------- small hand-made models


def tiny(revision: str, level: tuple[str, ...], mode: tuple[str, ...], kind: str, tag: str | None) -> Model:
    thing = StructDef(
        "Thing",
        [
            Field("mode", "mode", Const(mode), required=True),
            Field("kind", "kind", Const((kind,)), required=True),
            Field("tags", "tags", ListOf(Const(("a", "b"))), required=revision == "new"),
            Field("n", "n", Prim("int") if revision == "old" else Prim("str"), required=False),
        ],
        "/$defs/Thing",
    )
    level_def = AliasDef("Level", Const(level), "/$defs/Level")
    union = UnionDef("Any", [], "/$defs/Any", tag_field=tag, native=tag is not None)
    return Model(revision, "", "", {"Thing": thing, "Level": level_def, "Any": union}, [])


def test_enum_const_and_union_status() -> None:
    old = tiny("old", ("debug", "info"), ("x", "y"), "thing", None)
    new = tiny("new", ("info", "notice"), ("x", "y", "z"), "widget", "type")
    d = diff_models(old, new)
    assert has(d, "enum", "added", "Level", "values added: 'notice'")
    assert has(d, "enum", "removed", "Level", "values removed: 'debug'")
    assert has(d, "enum", "added", "Thing.mode", "values added: 'z'")
    assert has(d, "field", "changed", "Thing.kind", "const 'thing' -> 'widget'")
    assert has(d, "field", "changed", "Thing.tags", "now required")
    assert has(d, "field", "changed", "Thing.n", "type int -> str")
    assert has(d, "union", "changed", "Any", "tag field None -> 'type'")
    assert has(d, "union", "changed", "Any", "now decoded natively")


# ---------------------------------------------------------------- 2025-11-25 -> 2026-07-28


@pytest.mark.parametrize(
    "where",
    [
        "initialize (c2s)",
        "notifications/initialized (c2s)",
        "ping (c2s)",
        "ping (s2c)",
        "logging/setLevel (c2s)",
        "resources/subscribe (c2s)",
        "resources/unsubscribe (c2s)",
        "notifications/roots/list_changed (c2s)",
        "notifications/elicitation/complete (s2c)",
        "tasks/get (c2s)",
    ],
)
def test_2026_removed_methods(where: str) -> None:
    assert has(diff("2025-11-25", "2026-07-28"), "method", "removed", where)


def test_2026_added_methods_and_the_new_shape_of_old_ones() -> None:
    d = diff("2025-11-25", "2026-07-28")
    assert has(d, "method", "added", "server/discover (c2s)", "result DiscoverResult")
    assert has(d, "method", "added", "subscriptions/listen (c2s)", "result SubscriptionsListenResult")
    assert has(d, "method", "added", "notifications/subscriptions/acknowledged (s2c)", "notification")
    for method in ("sampling/createMessage", "elicitation/create", "roots/list"):
        assert has(d, "method", "changed", f"{method} (s2c)", "kind request -> input")
    assert has(d, "method", "changed", "tools/call (c2s)", "result CallToolResult -> CallToolResultResponseResult")
    assert has(d, "method", "changed", "tools/call (c2s)", "may ask for input False -> True")
    assert has(d, "method", "changed", "tools/list (c2s)", "cacheable False -> True")
    assert has(d, "method", "changed", "tools/list (c2s)", "optional -> PaginatedRequestParams (struct)")


def test_2026_result_type_and_caching_fields() -> None:
    d = diff("2025-11-25", "2026-07-28")
    for result in ("CallToolResult", "ListToolsResult", "CompleteResult", "GetPromptResult"):
        assert has(d, "field", "added", f"{result}.resultType", "str, required")
    for result in ("ListToolsResult", "ListPromptsResult", "ListResourcesResult", "ReadResourceResult"):
        assert has(d, "field", "added", f"{result}.ttlMs", "int, required")
        assert has(d, "field", "added", f"{result}.cacheScope", "Literal['private', 'public'], required")
    assert has(d, "field", "changed", "CallToolRequestParams._meta", "now required")
    assert has(d, "field", "removed", "CallToolRequestParams.task")
    assert has(d, "field", "removed", "ElicitRequest.id")


def test_2026_changed_unions() -> None:
    d = diff("2025-11-25", "2026-07-28")
    assert has(d, "definition", "changed", "ClientNotification", "union -> struct")
    assert has(d, "definition", "changed", "ClientResult", "union -> alias")
    assert has(d, "definition", "removed", "ServerRequest")
    assert has(d, "definition", "added", "InputRequest", "union")
    assert has(d, "union", "removed", "ClientRequest", "member removed: InitializeRequest")
    assert has(d, "union", "added", "ClientRequest", "member added: DiscoverRequest")
    assert has(d, "union", "added", "ServerResult", "member added: InputRequiredResult")
    assert has(d, "capability", "removed", "server.tasks")
    assert has(d, "capability", "added", "server.extensions")


def test_2026_diff_from_the_command_line_table_and_json() -> None:
    import subprocess
    import sys
    from pathlib import Path

    mcpgen = str(Path(sys.executable).parent / "mcpgen")
    table = subprocess.run(
        [mcpgen, "diff", "2025-11-25", "2026-07-28"],
        capture_output=True,
        text=True,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )
    assert table.returncode == 0, table.stderr
    for text in ("initialize (c2s)", "server/discover (c2s)", "subscriptions/listen (c2s)", "resultType", "ttlMs"):
        assert text in table.stdout, text
    # Piped: one tab-separated line per change, names whole (a table would wrap them at 80 columns).
    narrow = subprocess.run([mcpgen, "diff", "2025-06-18", "2025-11-25"], capture_output=True, text=True)
    assert "definition\tadded\tClientCapabilitiesTasksRequestsElicitation\tstruct (inline)\n" in narrow.stdout
    assert all(line.count("\t") == 3 for line in narrow.stdout.splitlines())
    as_json = subprocess.run([mcpgen, "diff", "2025-11-25", "2026-07-28", "--json"], capture_output=True, text=True)
    data = json.loads(as_json.stdout)
    wheres = {(c["kind"], c["change"], c["where"]) for c in data["changes"]}
    assert ("method", "removed", "ping (c2s)") in wheres
    assert ("method", "added", "server/discover (c2s)") in wheres
    assert ("field", "added", "ListToolsResult.cacheScope") in wheres
    assert data["summary"]["method"]["added"] == 3
