"""mcpgen.runtime.server.params_merge: one struct that refuses what either revision's params type
refuses and accepts what both accept, as an instance of the handshake type; and the
stateless era reading the params of its core methods once with it."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from msgspec import UNSET, UnsetType, field

from mcpgen import Server
from mcpgen.protocol import v2025_11_25 as old_pkg
from mcpgen.protocol import v2026_07_28 as new_pkg
from mcpgen.runtime.jsonrpc.framing import decode_envelope
from mcpgen.runtime.server.params_merge import decoder, merged_params


class Base(msgspec.Struct, kw_only=True):
    pass


class Old(Base):
    name: str
    meta: dict[str, Any] | UnsetType = field(default=UNSET, name="_meta")
    task: int | UnsetType = UNSET  # only the old revision has it


class New(Base):
    meta: dict[str, Any] = field(name="_meta")  # required here, optional there
    name: str
    state: str | UnsetType = field(default=UNSET, name="requestState")  # only the new one
    tags: list[str] = field(default_factory=list)


class WithOld(Base):
    schema: old_pkg.PrimitiveSchemaDefinition | UnsetType = UNSET


class WithNew(Base):
    answer: new_pkg.InputResponse | UnsetType = UNSET


def decode(data: dict[str, Any]) -> Any:
    merged = merged_params(Old, New)
    assert merged is not None
    return msgspec.json.decode(json.dumps(data).encode(), type=merged)


def test_accepts_what_both_accept_as_the_old_type() -> None:
    value = decode({"name": "x", "_meta": {"k": 1}, "task": 3, "requestState": "s"})
    assert isinstance(value, Old)
    assert (value.name, value.meta, value.task, value.state, value.tags) == ("x", {"k": 1}, 3, "s", [])
    assert type(value).__name__ == "Old"


@pytest.mark.parametrize(
    ("data", "where"),
    [
        ({"name": "x"}, "`_meta`"),  # the new revision requires it
        ({"name": "x", "_meta": {}, "task": "3"}, "$.task"),  # only the old one checks it
        ({"name": "x", "_meta": {}, "requestState": 3}, "$.requestState"),  # only the new one
        ({"name": 3, "_meta": {}}, "$.name"),  # both
        ({"name": "x", "_meta": {}, "tags": [1]}, "$.tags[0]"),
    ],
)
def test_refuses_what_either_refuses(data: dict[str, Any], where: str) -> None:
    with pytest.raises(msgspec.ValidationError) as caught:
        decode(data)
    assert where in str(caught.value)


def test_types_that_disagree_are_read_twice_instead() -> None:
    class OtherName(Base):
        name: int
        meta: dict[str, Any] = field(name="_meta")

    class Built(Base):
        name: str

        def __post_init__(self) -> None:
            pass

    assert merged_params(Old, OtherName) is None  # a shared field of another type
    assert merged_params(Built, New) is None  # a type that builds fields after decoding
    assert merged_params(Old, dict) is None  # not structs
    assert merged_params(Old, Old) is Old  # nothing to add: the type itself


def test_each_package_decodes_its_own_untagged_unions() -> None:
    """A merged struct holds fields of both bindings packages; the decoder hands each
    untagged union to the codec of the package it comes from."""
    merged = merged_params(WithOld, WithNew)
    assert merged is not None
    read = decoder(merged, new_pkg, old_pkg)
    value = read(b'{"schema": {"type": "boolean"}, "answer": {"action": "decline"}}')
    assert isinstance(value.schema, old_pkg.BooleanSchema)
    assert isinstance(value.answer, new_pkg.ElicitResult)
    with pytest.raises(msgspec.ValidationError):
        read(b'{"schema": {"type": "boolean", "default": "yes"}}')


@pytest.mark.anyio
async def test_core_methods_are_read_once_into_the_handlers_type() -> None:
    server = Server("merged")

    @server.tool(blocking=False)
    def echo(text: str) -> str:
        return text

    seen: list[Any] = []
    real = server.features.handlers.call_tool_now

    def spy(params: Any) -> Any:
        seen.append(params)
        return real(params)

    server.features.handlers.call_tool_now = spy  # type: ignore[method-assign]
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "_meta": meta}}
    body["params"]["arguments"] = {"text": "hi"}
    front = server.features.stateless
    frame, code = await front.handle(decode_envelope(json.dumps(body).encode()))
    assert code is None and b'"text":"hi"' in frame
    assert isinstance(seen[0], old_pkg.CallToolRequestParams)
    for method in ("tools/call", "prompts/get", "resources/read", "tools/list", "resources/list"):
        plan = front._plan(method)
        assert plan is not None and plan.read is not None and plan.read_handshake is None, method
    plan = front._plan("completion/complete")  # its params hold each revision's own structs
    assert plan is not None and plan.read is not None and plan.read_handshake is not None
