"""What a generated server knows of each operation: the tables the generator writes to the
project's ``operations.json`` and the runtime reads back with msgspec, once, at import.

Everything here is plain data; nothing from the document reaches Python source through
these tables (they are JSON, written with ``json.dumps``)."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

Location = Literal["path", "query", "header", "cookie"]
BodyKind = Literal["json", "form", "multipart", "binary", "text"]
OutputKind = Literal["json", "text", "binary", "empty"]


class Param(msgspec.Struct, frozen=True, kw_only=True):
    """One parameter: the tool argument ``arg`` sent as ``name`` in ``location``, serialized
    by OpenAPI's ``style``/``explode`` (or as JSON text, ``json``, for a ``content`` one)."""

    arg: str
    name: str
    location: Location
    style: str
    explode: bool
    required: bool = False
    allow_reserved: bool = False
    json: bool = False


class Body(msgspec.Struct, frozen=True, kw_only=True):
    arg: str
    media_type: str
    kind: BodyKind
    required: bool = False
    binary_fields: tuple[str, ...] = ()  # form fields given as base64 text, sent as bytes


class Pagination(msgspec.Struct, frozen=True, kw_only=True):
    """How a list continues: ``style`` cursor, page, offset or link (the ``Link`` header);
    ``param`` the argument that asks for the next page; ``next`` a JSON pointer into the
    answer where the next cursor is, when the document says."""

    style: Literal["cursor", "page", "offset", "link"]
    param: str | None = None
    next: str | None = None


class Operation(msgspec.Struct, frozen=True, kw_only=True):
    tool: str
    method: str
    path: str
    params: tuple[Param, ...] = ()
    body: Body | None = None
    output: OutputKind = "json"
    output_media: str | None = None
    structured: bool = False  # the answer is a JSON object with an outputSchema
    security: tuple[dict[str, list[str]], ...] = ()  # alternatives; each names schemes to use together
    pagination: Pagination | None = None
    server: str | None = None  # an operation's own server URL, when the document gives one
    digest: str = ""  # of the operation as the document describes it: what --check compares


class SecurityScheme(msgspec.Struct, frozen=True, kw_only=True):
    """A ``securitySchemes`` entry reduced to what a request needs; ``env`` names the
    environment variables its credentials come from."""

    kind: Literal["apiKey", "http", "oauth2", "openIdConnect", "mutualTLS"]
    location: Location | None = None  # apiKey
    name: str | None = None  # apiKey: the header, query or cookie name
    scheme: str | None = None  # http: bearer, basic, ...
    token_url: str | None = None  # oauth2 client credentials
    scopes: tuple[str, ...] = ()
    env: dict[str, str] = msgspec.field(default_factory=dict)


class ToolInfo(msgspec.Struct, frozen=True, kw_only=True):
    """What tools/list shows of one operation."""

    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] = msgspec.field(default_factory=dict)
    title: str | None = None
    search_text: str = ""  # what code mode's search indexes: name, path, summary, tags, arguments


class Tables(msgspec.Struct, frozen=True, kw_only=True):
    """The whole of a project's ``operations.json``."""

    title: str
    version: str
    sha256: str
    base_url: str
    env_prefix: str
    operations: dict[str, Operation]
    tools: dict[str, ToolInfo]
    security: dict[str, SecurityScheme] = msgspec.field(default_factory=dict)
    mode: Literal["tools", "code"] = "tools"


def read_tables(data: bytes) -> Tables:
    return msgspec.json.decode(data, type=Tables)


__all__ = ["Body", "Operation", "Pagination", "Param", "SecurityScheme", "Tables", "ToolInfo", "read_tables"]
