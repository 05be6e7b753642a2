"""Reading documents: files and ``$ref`` s, Swagger 2.0 and OpenAPI 3.0 brought to 3.1,
overlays, curation, and the names tools and arguments get."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcpgen.openapi.loader import OpenApiError, load_document
from mcpgen.openapi.normalize import normalize
from mcpgen.openapi.operations import MAX_TOOL_NAME, Curation, build_operations
from mcpgen.openapi.overlay import apply_overlay

PET = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "kids": {"type": "array", "items": {"$ref": "#/components/schemas/Pet"}},
    },
}


def doc(paths: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"openapi": "3.1.0", "info": {"title": "T", "version": "1"}, "paths": paths, **extra}


def op(**fields: Any) -> dict[str, Any]:
    return {"responses": {"200": {"description": "ok"}}, **fields}


def build(document: dict[str, Any], curation: Curation | None = None) -> Any:
    return build_operations(
        normalize(document, "t"), "t", "0" * 64, env_prefix="T", base_url="http://x", curation=curation
    )


def write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


# ---------------------------------------------------------------- files and references


def test_relative_file_refs_are_bundled_and_cycles_through_files_stay_cycles(tmp_path: Path) -> None:
    (tmp_path / "schemas").mkdir()
    write(
        tmp_path / "schemas" / "node.json",
        {"type": "object", "properties": {"next": {"$ref": "node.json"}, "tag": {"$ref": "../common.yaml#/Tag"}}},
    )
    (tmp_path / "common.yaml").write_text(
        "Tag:\n  type: string\n  enum: [a, b]\nLimit:\n  name: limit\n  in: query\n  schema: {type: integer}\n"
    )
    root = doc(
        {
            "/nodes": {
                "get": op(
                    parameters=[{"$ref": "common.yaml#/Limit"}],
                    responses={
                        "200": {
                            "description": "ok",
                            "content": {"application/json": {"schema": {"$ref": "schemas/node.json"}}},
                        }
                    },
                )
            }
        }
    )
    loaded = load_document(write(tmp_path / "api.json", root))
    schemas = loaded.document["components"]["schemas"]
    assert schemas["node"]["properties"]["next"] == {"$ref": "#/components/schemas/node"}
    assert schemas["Tag"] == {"type": "string", "enum": ["a", "b"]}
    assert loaded.document["paths"]["/nodes"]["get"]["parameters"][0]["name"] == "limit"
    built = build(loaded.document)
    tool = built.tables.tools["get_nodes"]
    assert tool.input_schema["properties"]["limit"] == {"type": "integer"}
    assert tool.output_schema is not None and tool.output_schema["$defs"]["node"]["properties"]["next"] == {
        "$ref": "#/$defs/node"
    }
    assert len(loaded.files) == 3


def test_remote_refs_are_refused_unless_asked(tmp_path: Path) -> None:
    root = doc({}, components={"schemas": {"X": {"$ref": "https://example.invalid/x.json"}}})
    with pytest.raises(OpenApiError, match="remote reference .*--remote-refs"):
        load_document(write(tmp_path / "api.json", root))


def test_a_cycle_outside_schemas_is_named(tmp_path: Path) -> None:
    write(tmp_path / "a.json", {"P": {"$ref": "b.json#/P"}})
    write(tmp_path / "b.json", {"P": {"$ref": "a.json#/P"}})
    root = doc({"/x": {"get": op(parameters=[{"$ref": "a.json#/P"}])}})
    with pytest.raises(OpenApiError, match="cycle of references outside schemas"):
        load_document(write(tmp_path / "api.json", root))


def test_bad_documents_are_refused_with_a_message_that_names_the_problem(tmp_path: Path) -> None:
    for text, message in (
        ("{not json", "invalid JSON at line 1"),
        ("a: [b", "invalid YAML"),
        ("- a\n- b\n", "not an object"),
    ):
        path = tmp_path / "bad.yaml"
        path.write_text(text)
        with pytest.raises(OpenApiError, match=message):
            load_document(path)
    with pytest.raises(OpenApiError, match="no `openapi` or `swagger`"):
        normalize({"info": {}}, "t")
    with pytest.raises(OpenApiError, match="cannot read file"):
        load_document(tmp_path / "missing.json")


def test_yaml_documents_load(tmp_path: Path) -> None:
    (tmp_path / "api.yaml").write_text(
        "openapi: 3.0.3\ninfo: {title: Y, version: '1'}\npaths:\n  /a:\n    get:\n"
        "      operationId: getA\n      responses: {'200': {description: ok}}\n"
    )
    assert set(build(load_document(tmp_path / "api.yaml").document).tables.tools) == {"getA"}


# ---------------------------------------------------------------- versions


def test_swagger_2_becomes_openapi_3_1() -> None:
    swagger = {
        "swagger": "2.0",
        "info": {"title": "S", "version": "1"},
        "host": "api.example.com",
        "basePath": "/v2",
        "schemes": ["https"],
        "consumes": ["application/json"],
        "securityDefinitions": {"key": {"type": "apiKey", "in": "header", "name": "X-Key"}, "basic": {"type": "basic"}},
        "definitions": {
            "Pet": {"type": "object", "properties": {"name": {"type": "string"}, "photo": {"type": "file"}}}
        },
        "paths": {
            "/pets/{id}": {
                "parameters": [{"name": "id", "in": "path", "required": True, "type": "integer"}],
                "put": {
                    "operationId": "updatePet",
                    "security": [{"key": []}],
                    "parameters": [
                        {"name": "body", "in": "body", "required": True, "schema": {"$ref": "#/definitions/Pet"}},
                        {
                            "name": "tags",
                            "in": "query",
                            "type": "array",
                            "items": {"type": "string"},
                            "collectionFormat": "pipes",
                        },
                    ],
                    "responses": {"200": {"description": "ok", "schema": {"$ref": "#/definitions/Pet"}}},
                },
                "post": {
                    "operationId": "uploadPhoto",
                    "consumes": ["multipart/form-data"],
                    "parameters": [
                        {"name": "file", "in": "formData", "type": "file", "required": True},
                        {"name": "note", "in": "formData", "type": "string"},
                    ],
                    "responses": {"200": {"description": "ok"}},
                },
            }
        },
    }
    document = normalize(swagger, "s")
    assert document["servers"] == [{"url": "https://api.example.com/v2"}]
    built = build_operations(document, "s", "0", env_prefix="S", base_url="https://api.example.com/v2")
    update = built.tables.operations["updatePet"]
    assert [(p.name, p.location, p.style, p.explode) for p in update.params] == [
        ("id", "path", "simple", False),
        ("tags", "query", "pipeDelimited", False),
    ]
    assert update.body is not None and update.body.kind == "json" and update.structured
    assert built.tables.security["key"].location == "header" and built.tables.security["key"].name == "X-Key"
    upload = built.tables.operations["uploadPhoto"]
    assert upload.body is not None and upload.body.kind == "multipart" and upload.body.binary_fields == ("file",)
    schema = built.tables.tools["uploadPhoto"].input_schema["properties"]["body"]
    assert schema["properties"]["file"] == {"type": "string", "contentEncoding": "base64"}


def test_openapi_3_0_nullable_and_exclusive_bounds_become_2020_12() -> None:
    three = {
        "openapi": "3.0.3",
        "info": {"title": "N", "version": "1"},
        "paths": {},
        "components": {
            "schemas": {
                "A": {"type": "string", "nullable": True, "enum": ["x"], "example": "x"},
                "B": {"$ref": "#/components/schemas/A"},
                "C": {"allOf": [{"$ref": "#/components/schemas/A"}], "nullable": True, "description": "c"},
                "D": {
                    "type": "number",
                    "minimum": 1,
                    "exclusiveMinimum": True,
                    "maximum": 5,
                    "exclusiveMaximum": False,
                },
            }
        },
    }
    schemas = normalize(three, "n")["components"]["schemas"]
    assert schemas["A"] == {"type": ["string", "null"], "enum": ["x", None]}
    assert schemas["C"] == {
        "description": "c",
        "anyOf": [{"allOf": [{"$ref": "#/components/schemas/A"}]}, {"type": "null"}],
    }
    assert schemas["D"] == {"type": "number", "exclusiveMinimum": 1, "maximum": 5}


def test_circular_and_recursive_schemas_keep_their_references() -> None:
    built = build(
        doc(
            {
                "/p": {
                    "post": op(
                        requestBody={"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}}
                    )
                }
            },
            components={"schemas": {"Pet": PET}},
        )
    )
    schema = built.tables.tools["post_p"].input_schema
    assert schema["properties"]["body"] == {"$ref": "#/$defs/Pet"}
    assert schema["$defs"]["Pet"]["properties"]["kids"]["items"] == {"$ref": "#/$defs/Pet"}


def test_read_only_properties_are_not_asked_for_and_write_only_not_answered() -> None:
    pet = {
        "type": "object",
        "required": ["id", "name"],
        "properties": {
            "id": {"type": "integer", "readOnly": True},
            "name": {"type": "string"},
            "secret": {"type": "string", "writeOnly": True},
        },
    }
    body = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}}
    answer = {
        "200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}}
    }
    built = build(doc({"/p": {"post": op(requestBody=body, responses=answer)}}, components={"schemas": {"Pet": pet}}))
    tool = built.tables.tools["post_p"]
    assert set(tool.input_schema["$defs"]["Pet"]["properties"]) == {"name", "secret"}
    assert tool.input_schema["$defs"]["Pet"]["required"] == ["name"]
    assert tool.output_schema is not None and set(tool.output_schema["properties"]) == {"id", "name"}


def test_a_discriminated_one_of_accepts_a_value_that_fits_several_branches() -> None:
    """OpenAPI's own example: a Cat is also a valid Dog (neither closes its properties), so
    JSON Schema's oneOf refused every right body; with the discriminator, any branch that
    fits is accepted (the API picks by petType), and a body that fits none is still refused."""
    import jsonschema_rs

    def kind(extra: str) -> dict[str, Any]:
        return {
            "type": "object",
            "required": ["petType"],
            "properties": {"petType": {"type": "string"}, extra: {"type": "string"}},
        }

    pet = {
        "oneOf": [{"$ref": "#/components/schemas/Cat"}, {"$ref": "#/components/schemas/Dog"}],
        "discriminator": {"propertyName": "petType"},
    }
    body = {"content": {"application/json": {"schema": pet}}}
    schemas = {"Cat": kind("name"), "Dog": kind("bark")}
    built = build(doc({"/pets": {"post": op(requestBody=body)}}, components={"schemas": schemas}))
    check = jsonschema_rs.validator_for(built.tables.tools["post_pets"].input_schema)
    assert check.is_valid({"body": {"petType": "Cat", "name": "Tom"}})
    assert check.is_valid({"body": {"petType": "Dog", "bark": "loud"}})
    assert not check.is_valid({"body": {"name": "no petType"}})


# ---------------------------------------------------------------- overlays and curation


def test_overlays_update_and_remove() -> None:
    document = doc({"/a": {"get": op(operationId="a", tags=["x"])}, "/b": {"get": op(operationId="b", tags=["y"])}})
    overlay = {
        "overlay": "1.0.0",
        "info": {"title": "o", "version": "1"},
        "actions": [
            {"target": "$.paths['/a'].get", "update": {"summary": "Renamed by the overlay", "x-mcp": True}},
            {"target": "$.paths['/b']", "remove": True},
            {"target": "$.paths['/nothing']", "remove": True},
        ],
    }
    notes = apply_overlay(document, overlay)
    assert notes == ["overlay/actions/2: target \"$.paths['/nothing']\" selects nothing"]
    built = build(document)
    assert set(built.tables.tools) == {"a"} and built.tables.tools["a"].title == "Renamed by the overlay"
    with pytest.raises(OpenApiError, match="invalid JSONPath"):
        apply_overlay(document, {"overlay": "1.0.0", "actions": [{"target": "$[?", "remove": True}]})


def test_curation_by_tag_path_id_and_x_mcp() -> None:
    paths = {
        "/pets": {
            "get": op(operationId="listPets", tags=["pets"]),
            "post": op(operationId="createPet", tags=["pets", "write"]),
        },
        "/admin": {
            "x-mcp": False,
            "get": op(operationId="admin", tags=["admin"]),
            "delete": op(operationId="wipe", **{"x-mcp": True}),
        },
        "/store": {"get": op(operationId="store", tags=["store"])},
    }
    assert set(build(doc(paths)).tables.tools) == {"listPets", "createPet", "wipe", "store"}
    assert set(build(doc(paths), Curation(include_tags=["pets"])).tables.tools) == {"listPets", "createPet"}
    assert set(build(doc(paths), Curation(include_tags=["pets"], exclude_tags=["write"])).tables.tools) == {"listPets"}
    assert set(build(doc(paths), Curation(include_paths=["/st*"], include_ops=["admin"])).tables.tools) == {
        "store",
        "admin",
    }
    assert set(build(doc(paths), Curation(exclude_ops=["*Pet*"])).tables.tools) == {"wipe", "store"}
    assert set(build(doc(paths, **{"x-mcp": False})).tables.tools) == {"wipe"}


# ---------------------------------------------------------------- names


def test_tool_names_are_unique_valid_and_at_most_64_characters() -> None:
    long = "a" * 100
    paths = {
        "/x": {
            "get": op(operationId="get x"),
            "put": op(operationId="get/x"),
            "post": op(operationId=long),
            "patch": op(operationId=long),
        },
        "/ünï/{id}": {"get": op(), "delete": op(operationId="获取")},
    }
    names = list(build(doc(paths)).tables.tools)
    assert len(names) == len(set(names)) == 6
    assert all(
        len(n) <= MAX_TOOL_NAME and n.replace("_", "").replace("-", "").replace(".", "").isalnum() and n.isascii()
        for n in names
    )
    assert "get_x" in names and "get_x_2" in names
    assert "get_n_id" in names and "delete_n_id" in names


def test_argument_names_are_python_names_and_say_what_they_send() -> None:
    params = [
        {"name": "X-Request-ID", "in": "header", "schema": {"type": "string"}},
        {"name": "class", "in": "query", "schema": {"type": "string"}},
        {"name": "page[size]", "in": "query", "schema": {"type": "integer"}},
        {"name": "id", "in": "query", "schema": {"type": "string"}},
        {"name": "id", "in": "header", "schema": {"type": "string"}},
        {"name": "body", "in": "query", "schema": {"type": "string"}},
        {"name": "ctx", "in": "query", "schema": {"type": "string"}},
    ]
    built = build(
        doc(
            {
                "/x": {
                    "post": op(
                        operationId="x",
                        parameters=params,
                        requestBody={"content": {"application/json": {"schema": {"type": "object"}}}},
                    )
                }
            }
        )
    )
    ops = built.tables.operations["x"]
    assert [(p.arg, p.name) for p in ops.params] == [
        ("x_request_id", "X-Request-ID"),
        ("class_", "class"),
        ("page_size", "page[size]"),
        ("id", "id"),
        ("id_2", "id"),
        ("body", "body"),
        ("ctx_2", "ctx"),
    ]
    assert ops.body is not None and ops.body.arg == "body_2"
    props = built.tables.tools["x"].input_schema["properties"]
    assert 'Sent as the header parameter "X-Request-ID".' in props["x_request_id"]["description"]


def test_a_document_nested_too_deeply_is_refused_not_crashed_on(tmp_path: Path) -> None:
    from mcpgen.openapi.project import Options, generate

    deep = '{"items":' * 50_000 + "{}" + "}" * 50_000
    text = '{"openapi": "3.1.0", "info": {"title": "x", "version": "1"}, "paths": {}, "components": {"schemas": {"A": '
    (tmp_path / "deep.json").write_text(text + deep + "}}}")
    with pytest.raises(OpenApiError, match="nested too deeply"):
        generate(Options(spec=str(tmp_path / "deep.json"), name="deep"))
