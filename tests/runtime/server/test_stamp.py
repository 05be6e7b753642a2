"""The stateless era's stamp (mcpgen.runtime.server.stamp): every official 2026-07-28
result example, read into the handshake era's type the handlers build, comes out stamped
with exactly its own members plus the stamp's; and a large result is encoded in one pass,
without a second buffer of its size."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

import msgspec
import pytest

from mcpgen import Server
from mcpgen.protocol import v2025_11_25 as handshake_era
from mcpgen.protocol.v2025_11_25.types import CallToolResult, TextContent
from mcpgen.runtime.server.caching import CacheHint
from mcpgen.runtime.shared.meta import META_SERVER_INFO
from tests.conftest import SHARED, shared_params

STAMP = ("resultType", "ttlMs", "cacheScope")


def _examples() -> list[Any]:
    found = []
    for folder in sorted((SHARED / "mcp-schema" / "2026-07-28" / "examples").iterdir()):
        kind = getattr(handshake_era.types, folder.name, None)
        if not folder.name.endswith("Result") or not isinstance(kind, type):
            continue
        for path in sorted(folder.glob("*.json")):
            found.append(pytest.param(kind, path, id=f"{folder.name}/{path.stem}"))
    return found


def _server() -> Server:
    return Server("stamped", version="1.2.3")


@pytest.mark.parametrize(("kind", "path"), shared_params(_examples, 2))
def test_an_official_result_keeps_its_members_and_gains_the_stamp(kind: type, path: Path) -> None:
    example = json.loads(path.read_text())
    members = {k: v for k, v in example.items() if k not in STAMP}
    meta = members.get("_meta")
    if isinstance(meta, dict):
        meta.pop(META_SERVER_INFO, None)
        if not meta:
            del members["_meta"]
    result: Any
    try:
        result = msgspec.json.decode(json.dumps(members), type=kind)
    except msgspec.ValidationError:
        # What the handshake era's type cannot hold (an array as structuredContent, new
        # in 2026-07-28) a handler returns as a dict.
        result = members
    # What the handshake era writes for this result: the members the stamp must keep.
    kept = json.loads(msgspec.json.encode(result))
    server = _server()
    hint = CacheHint(ttl_ms=example["ttlMs"], scope=example["cacheScope"]) if "ttlMs" in example else None
    frame = json.loads(server.features.stateless.frame(7, result, example.get("resultType", "complete"), hint))

    assert set(frame) == {"jsonrpc", "id", "result"} and frame["id"] == 7
    stamped = frame["result"]
    expected_meta = {**kept.pop("_meta", {}), META_SERVER_INFO: {"name": "stamped", "version": "1.2.3"}}
    assert stamped.pop("_meta") == expected_meta
    assert stamped.pop("resultType") == example.get("resultType", "complete")
    if hint is not None:
        assert (stamped.pop("ttlMs"), stamped.pop("cacheScope")) == (hint.ttl_ms, hint.scope)
    assert stamped == kept


def test_a_dict_result_and_relayed_bytes_are_stamped_too() -> None:
    front = _server().features.stateless
    identity = {META_SERVER_INFO: {"name": "stamped", "version": "1.2.3"}}
    as_dict = json.loads(front.stamp({"a": 1, "_meta": {"k": 2}}, "task", None))
    assert as_dict == {"a": 1, "resultType": "task", "_meta": {"k": 2, **identity}}
    relayed = json.loads(front.stamp(msgspec.Raw(b'{"tools":[]}'), "complete", CacheHint(5, "public")))
    assert relayed == {"tools": [], "resultType": "complete", "ttlMs": 5, "cacheScope": "public", "_meta": identity}
    assert json.loads(front.stamp(msgspec.Raw(b"{}"), "complete", None)) == {
        "resultType": "complete",
        "_meta": identity,
    }


def test_a_replaced_identity_is_the_one_stamped() -> None:
    server = _server()
    front = server.features.stateless
    front.stamp(CallToolResult(content=[]), "complete", None)
    server.features.info = msgspec.structs.replace(server.info, version="2.0.0")
    stamped = json.loads(front.stamp(CallToolResult(content=[]), "complete", None))
    assert stamped["_meta"][META_SERVER_INFO]["version"] == "2.0.0"


def test_a_large_result_is_encoded_without_a_second_buffer_of_its_size() -> None:
    front = _server().features.stateless
    size = 8 * 1024 * 1024
    result = CallToolResult(content=[TextContent(text="a" * size)])
    front.frame(1, CallToolResult(content=[]), "complete", None)  # the type's twin made
    tracemalloc.start()
    try:
        frame = front.frame(1, result, "complete", None)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(frame) > size
    # One encode: the frame plus the encoder's growth (up to half again while it writes);
    # encoding and then joining behind the stamp, as before, peaked at 2.5 times the size.
    assert peak < 2 * size, peak / size
