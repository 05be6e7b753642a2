"""The official example payloads of 2026-07-28 against the committed bindings.

Each example in ``../shared/mcp-schema/2026-07-28/examples/<Definition>/`` must decode into
the generated type its folder names and encode back to the same JSON. Two examples are
defective upstream; they are listed with the exact deviation they show, so a fixed example
(or a changed decoder) fails this test instead of passing unnoticed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

import mcpgen.protocol.v2026_07_28 as v2026
from tests.conftest import OFFICIAL, shared_params, shared_path

EXAMPLES = OFFICIAL / "2026-07-28" / "examples"

# Example -> how it deviates. Every other example must round-trip exactly.
DEFECTS: dict[str, dict[str, Any]] = {
    # 2026-07-28 input requests have no JSON-RPC envelope (no id), yet this example keeps one;
    # undeclared keys are dropped by every closed struct of the bindings.
    "ListRootsRequest/list-roots-request.json": {"dropped": {"id"}},
    # A complete ReadResourceResult must carry ttlMs and cacheScope; the example has neither
    # (it validates against the schema only as an InputRequiredResult, which its resultType
    # says it is not).
    "ReadResourceResultResponse/read-resource-result-response.json": {"error": "cacheScope"},
}


def _examples() -> list[Any]:
    return [pytest.param(path, id=str(path.relative_to(EXAMPLES))) for path in sorted(EXAMPLES.glob("*/*.json"))]


@pytest.mark.parametrize("path", shared_params(_examples, 1))
def test_example_round_trips(path: Path) -> None:
    name = str(path.relative_to(EXAMPLES))
    type_ = getattr(v2026, path.parent.name)
    raw = path.read_bytes()
    defect = DEFECTS.get(name, {})
    if "error" in defect:
        with pytest.raises(msgspec.ValidationError, match=defect["error"]):
            v2026.decode(raw, type_)
        return
    value = v2026.decode(raw, type_)
    back = json.loads(v2026.encode(value))
    original = json.loads(raw)
    dropped = defect.get("dropped", set())
    assert back == {k: v for k, v in original.items() if k not in dropped}
    assert set(original) - set(back) == dropped


def test_every_example_folder_names_a_generated_type() -> None:
    folders = {p.parent.name for p in shared_path("mcp-schema", "2026-07-28", "examples").glob("*/*.json")}
    assert len(list(EXAMPLES.glob("*/*.json"))) == 129
    assert {f for f in folders if not hasattr(v2026, f)} == set()
    assert set(DEFECTS) <= {str(p.relative_to(EXAMPLES)) for p in EXAMPLES.glob("*/*.json")}


def test_results_that_may_ask_for_input_are_picked_by_result_type() -> None:
    """A tools/call result is decoded by the method's result union: resultType
    "input_required" selects InputRequiredResult, anything else the complete result."""
    spec = v2026.CLIENT_TO_SERVER["tools/call"]
    assert spec.input_required and not spec.cacheable
    asked = v2026.decode(b'{"resultType":"input_required","requestState":"s"}', spec.result_type)
    assert isinstance(asked, v2026.InputRequiredResult)
    done = v2026.decode(b'{"resultType":"complete","content":[]}', spec.result_type)
    assert isinstance(done, v2026.CallToolResult)
    with pytest.raises(msgspec.ValidationError, match="content"):
        v2026.decode(b'{"resultType":"complete"}', spec.result_type)
    assert [m for m, s in v2026.CLIENT_TO_SERVER.items() if s.input_required] == [
        "resources/read",
        "prompts/get",
        "tools/call",
    ]
    assert sorted(m for m, s in v2026.CLIENT_TO_SERVER.items() if s.cacheable) == [
        "prompts/list",
        "resources/list",
        "resources/read",
        "resources/templates/list",
        "server/discover",
        "tools/list",
    ]
    assert sorted(v2026.INPUT_REQUESTS) == ["elicitation/create", "roots/list", "sampling/createMessage"]


def test_open_meta_and_json_values_keep_what_the_schema_lets_through() -> None:
    """Vendor _meta keys survive; JSON values keep floats and nulls (the schema's JSONValue
    defect is patched); form values may be numbers."""
    params = v2026.decode(
        b'{"name":"t","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
        b'"io.modelcontextprotocol/clientCapabilities":{"extensions":{"x":{"a":1.5,"b":null}}},'
        b'"traceparent":"00-ab-cd-01"}}',
        v2026.CallToolRequestParams,
    )
    assert params.meta["traceparent"] == "00-ab-cd-01"
    assert json.loads(v2026.encode(params))["_meta"]["io.modelcontextprotocol/clientCapabilities"] == {
        "extensions": {"x": {"a": 1.5, "b": None}}
    }
    caps = v2026.decode(b'{"extensions":{"x":{"a":1.5,"b":null,"c":[1,{"d":2}]}}}', v2026.ClientCapabilities)
    assert caps.extensions == {"x": {"a": 1.5, "b": None, "c": [1, {"d": 2}]}}
    result = v2026.decode(b'{"action":"accept","content":{"age":95.5}}', v2026.ElicitResult)
    assert result.content == {"age": 95.5}
