"""Bring any supported document to one shape: OpenAPI 3.1, schemas in JSON Schema 2020-12.

* **Swagger 2.0**: ``host``/``basePath``/``schemes`` become ``servers``; ``definitions``,
  ``parameters`` and ``responses`` move under ``components``; ``body`` and ``formData``
  parameters become a ``requestBody`` (multipart when a file is sent); a parameter's own
  ``type``/``items``/``collectionFormat`` become a ``schema`` and a ``style``;
  ``produces``/``consumes`` become response and request media types; the
  ``securityDefinitions`` become ``securitySchemes``.
* **OpenAPI 3.0** schemas: ``nullable`` becomes a ``null`` type (or an ``anyOf`` with one,
  where there is no ``type``), ``example`` goes.
* Every schema: boolean ``exclusiveMinimum``/``exclusiveMaximum`` become numbers (3.1
  documents carry them too); binary strings (``format: binary``, a non-text
  ``contentMediaType``, Swagger's ``file``) become base64 text (``contentEncoding``), which
  is how a tool argument can carry bytes; a ``pattern`` the input check (jsonschema-rs)
  cannot compile goes (the API still checks it); ``x-`` extensions go.

The input is changed in place (the loader made it; nobody else holds it).
"""

from __future__ import annotations

import functools
from typing import Any

from mcpgen.openapi.loader import OpenApiError

_SCHEMA_CHILD_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_CHILD_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMA_CHILD_ONE = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames")
_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_COLLECTION_STYLES = {
    "csv": ("form", False),
    "ssv": ("spaceDelimited", False),
    "pipes": ("pipeDelimited", False),
    "tsv": ("form", False),  # no OpenAPI 3 style: read as csv
    "multi": ("form", True),
}
_SCHEMA_FIELDS = (
    "type format items enum default minimum maximum exclusiveMinimum exclusiveMaximum minLength maxLength pattern "
    "minItems maxItems uniqueItems multipleOf"
).split()


def normalize(document: dict[str, Any], source: str) -> dict[str, Any]:
    """The document as OpenAPI 3.1 (see the module docstring)."""
    if "swagger" in document:
        if str(document["swagger"]) != "2.0":
            raise OpenApiError(source, "/swagger", f"Swagger {document['swagger']!r} is not supported (only 2.0)")
        document = _from_swagger(document, source)
        dialect = "3.0"
    elif "openapi" in document:
        version = str(document["openapi"])
        if not version.startswith("3."):
            raise OpenApiError(source, "/openapi", f"OpenAPI {version!r} is not supported (3.0, 3.1)")
        dialect = "3.0" if version.startswith("3.0") else "3.1"
    else:
        raise OpenApiError(source, "", "not an OpenAPI document: no `openapi` or `swagger` field")
    for node in _schema_roots(document):
        _fix_schema(node, dialect)
    document["openapi"] = "3.1.0"
    return document


def _schema_roots(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Every schema the document holds outside other schemas."""
    found: list[dict[str, Any]] = []
    components = document.get("components")
    components = components if isinstance(components, dict) else {}
    schemas = components.get("schemas")
    if isinstance(schemas, dict):
        found += [s for s in schemas.values() if isinstance(s, dict)]

    def holders(node: Any) -> None:
        if isinstance(node, dict):
            schema = node.get("schema")
            if isinstance(schema, dict):
                found.append(schema)
            for key, value in node.items():
                if key not in ("schema", "schemas", "example", "examples") and not key.startswith("x-"):
                    holders(value)
        elif isinstance(node, list):
            for item in node:
                holders(item)

    holders(document.get("paths"))
    holders(document.get("webhooks"))
    holders({k: v for k, v in components.items() if k != "schemas"})
    return found


def _fix_schema(node: Any, dialect: str) -> None:
    if not isinstance(node, dict):
        return
    for key in [k for k in node if isinstance(k, str) and (k.startswith("x-") or k in ("example", "xml"))]:
        del node[key]
    if "pattern" in node and not _pattern_ok(node["pattern"]):
        del node["pattern"]  # the validator could not compile it: checked by the API alone
    # 3.0's boolean form: never valid in 2020-12, yet 3.1 documents carry it too.
    for bound, limit in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        flag = node.get(bound)
        if isinstance(flag, bool):
            del node[bound]
            if flag and limit in node:
                node[bound] = node.pop(limit)
    if isinstance(node.get("discriminator"), dict) and isinstance(node.get("oneOf"), list) and "anyOf" not in node:
        # OpenAPI's discriminator picks the branch by a property; JSON Schema knows no such
        # keyword, and branches that overlap (a Cat is also a valid Pet of any kind) make a
        # right value match several of them, which oneOf refuses. Any branch matching is
        # what the API checks for; it reads the property itself.
        node["anyOf"] = node.pop("oneOf")
    media = node.get("contentMediaType")
    raw_bytes = isinstance(media, str) and not media.startswith("text/") and "contentEncoding" not in node
    binary_format = node.get("format") == "binary" and node.get("type") in ("string", None)
    if node.get("type") == "file" or raw_bytes or binary_format:
        node.pop("format", None)
        node["type"] = "string"
        node["contentEncoding"] = "base64"
    for key in _SCHEMA_CHILD_MAPS:
        children = node.get(key)
        if isinstance(children, dict):
            for child in children.values():
                _fix_schema(child, dialect)
    for key in _SCHEMA_CHILD_LISTS:
        children = node.get(key)
        if isinstance(children, list):
            for child in children:
                _fix_schema(child, dialect)
    for key in _SCHEMA_CHILD_ONE:
        _fix_schema(node.get(key), dialect)
    if dialect == "3.0" and node.pop("nullable", False) is True:
        _make_nullable(node)
    elif "nullable" in node:
        del node["nullable"]


@functools.lru_cache(maxsize=4096)
def _compiles(pattern: str) -> bool:
    import jsonschema_rs

    try:
        jsonschema_rs.validator_for({"pattern": pattern})
    except (jsonschema_rs.ValidationError, ValueError):
        return False
    return True


def _pattern_ok(pattern: Any) -> bool:
    """A pattern the input check (jsonschema-rs, ECMA 262 regular expressions) can compile."""
    return isinstance(pattern, str) and _compiles(pattern)


def _make_nullable(node: dict[str, Any]) -> None:
    kind = node.get("type")
    if isinstance(kind, str):
        node["type"] = [kind, "null"]
    elif isinstance(kind, list):
        if "null" not in kind:
            kind.append("null")
    else:
        # No type to widen ($ref, allOf, oneOf...): the value is that, or null.
        inner = {k: node.pop(k) for k in list(node) if k not in ("description", "title", "default", "deprecated")}
        node["anyOf"] = [inner, {"type": "null"}]
        return
    if isinstance(node.get("enum"), list) and None not in node["enum"]:
        node["enum"].append(None)


# ---------------------------------------------------------------- Swagger 2.0


def _from_swagger(doc: dict[str, Any], source: str) -> dict[str, Any]:
    _rewrite_refs(doc)
    out: dict[str, Any] = {"openapi": "3.0.3", "info": doc.get("info") or {"title": "API", "version": "0"}}
    host = doc.get("host")
    base_path = str(doc.get("basePath") or "")
    schemes = [s for s in doc.get("schemes") or [] if s in ("https", "http")]
    if host:
        out["servers"] = [{"url": f"{scheme}://{host}{base_path}"} for scheme in (schemes or ["https"])]
    elif base_path:
        out["servers"] = [{"url": base_path}]
    for key in ("tags", "security", "externalDocs"):
        if key in doc:
            out[key] = doc[key]
    out.update({k: v for k, v in doc.items() if isinstance(k, str) and k.startswith("x-")})
    components: dict[str, Any] = {"schemas": doc.get("definitions") or {}}
    consumes = doc.get("consumes") or ["application/json"]
    produces = doc.get("produces") or ["application/json"]
    shared_params = doc.get("parameters") or {}
    components["responses"] = {
        name: _response(r, produces) for name, r in (doc.get("responses") or {}).items() if isinstance(r, dict)
    }
    components["securitySchemes"] = {
        name: _security_scheme(s) for name, s in (doc.get("securityDefinitions") or {}).items() if isinstance(s, dict)
    }
    out["components"] = components
    paths: dict[str, Any] = {}
    for path, item in (doc.get("paths") or {}).items():
        if not isinstance(item, dict):
            continue
        common = [_deref_param(p, shared_params, source) for p in item.get("parameters") or []]
        new_item: dict[str, Any] = {k: v for k, v in item.items() if isinstance(k, str) and k.startswith("x-")}
        for method in _METHODS:
            op = item.get(method)
            if isinstance(op, dict):
                own = [_deref_param(p, shared_params, source) for p in op.get("parameters") or []]
                new_item[method] = _swagger_operation(op, _merge_params(common, own), consumes, produces)
        paths[path] = new_item
    out["paths"] = paths
    return out


def _rewrite_refs(node: Any) -> None:
    prefixes = {
        "#/definitions/": "#/components/schemas/",
        "#/parameters/": "#/parameters/",  # inlined by _deref_param
        "#/responses/": "#/components/responses/",
    }
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            for old, new in prefixes.items():
                if ref.startswith(old):
                    node["$ref"] = new + ref[len(old) :]
        for key, value in node.items():
            if key not in ("example", "examples", "default", "enum"):
                _rewrite_refs(value)
    elif isinstance(node, list):
        for item in node:
            _rewrite_refs(item)


def _deref_param(param: Any, shared: dict[str, Any], source: str) -> dict[str, Any]:
    if isinstance(param, dict) and isinstance(param.get("$ref"), str):
        name = param["$ref"].rsplit("/", 1)[-1]
        found = shared.get(name)
        if not isinstance(found, dict):
            raise OpenApiError(source, param["$ref"], "the parameter reference points at nothing")
        return found
    if not isinstance(param, dict):
        raise OpenApiError(source, "/paths", "a parameter is not an object")
    return param


def _merge_params(common: list[dict[str, Any]], own: list[dict[str, Any]]) -> list[dict[str, Any]]:
    keyed = {(p.get("name"), p.get("in")): p for p in common}
    keyed.update({(p.get("name"), p.get("in")): p for p in own})
    return list(keyed.values())


def _swagger_operation(
    op: dict[str, Any], params: list[dict[str, Any]], consumes: list[str], produces: list[str]
) -> dict[str, Any]:
    consumes = op.get("consumes") or consumes
    produces = op.get("produces") or produces
    new = {k: v for k, v in op.items() if k not in ("parameters", "responses", "consumes", "produces", "schemes")}
    parameters = []
    form: dict[str, Any] = {"type": "object", "properties": {}, "required": []}
    has_file = False
    for p in params:
        where = p.get("in")
        if where == "body":
            body_schema = p.get("schema") or {}
            new["requestBody"] = {
                "required": bool(p.get("required")),
                "content": {media: {"schema": body_schema} for media in _json_first(consumes)},
                **({"description": p["description"]} if "description" in p else {}),
            }
        elif where == "formData":
            schema = _param_schema(p)
            has_file = has_file or p.get("type") == "file"
            form["properties"][p["name"]] = schema
            if p.get("required"):
                form["required"].append(p["name"])
        else:
            parameters.append(_parameter(p))
    if form["properties"]:
        multipart = has_file or "multipart/form-data" in consumes
        media = "multipart/form-data" if multipart else "application/x-www-form-urlencoded"
        required = bool(form["required"])
        if not required:
            del form["required"]
        new["requestBody"] = {"required": required, "content": {media: {"schema": form}}}
    if parameters:
        new["parameters"] = parameters
    new["responses"] = {
        str(code): _response(r, produces) for code, r in (op.get("responses") or {}).items() if isinstance(r, dict)
    }
    return new


def _json_first(media: list[str]) -> list[str]:
    jsonish = [m for m in media if "json" in m]
    return jsonish[:1] or media[:1] or ["application/json"]


def _param_schema(p: dict[str, Any]) -> dict[str, Any]:
    schema = {k: p[k] for k in _SCHEMA_FIELDS if k in p}
    if schema.get("type") == "array" and isinstance(schema.get("items"), dict):
        schema["items"] = _param_schema(schema["items"])
    if "description" in p:
        schema["description"] = p["description"]
    return schema


def _parameter(p: dict[str, Any]) -> dict[str, Any]:
    keys: tuple[str, ...] = ("name", "in", "description", "required", "deprecated", "allowEmptyValue")
    out: dict[str, Any] = {k: p[k] for k in keys if k in p}
    out.update({k: v for k, v in p.items() if isinstance(k, str) and k.startswith("x-")})
    schema = _param_schema(p)
    schema.pop("description", None)
    out["schema"] = schema
    if p.get("type") == "array":
        style, explode = _COLLECTION_STYLES.get(str(p.get("collectionFormat", "csv")), ("form", False))
        if p.get("in") in ("path", "header"):
            style = "simple"
        out["style"], out["explode"] = style, explode
    return out


def _response(r: dict[str, Any], produces: list[str]) -> dict[str, Any]:
    if "$ref" in r:
        return r
    out: dict[str, Any] = {"description": r.get("description", "")}
    schema = r.get("schema")
    if isinstance(schema, dict):
        media = produces if schema.get("type") != "file" else ["application/octet-stream"]
        out["content"] = {m: {"schema": schema} for m in _json_first(media)}
    if isinstance(r.get("headers"), dict):
        out["headers"] = {name: {"schema": _param_schema(h)} for name, h in r["headers"].items() if isinstance(h, dict)}
    return out


def _security_scheme(s: dict[str, Any]) -> dict[str, Any]:
    kind = s.get("type")
    if kind == "basic":
        return {"type": "http", "scheme": "basic", **({"description": s["description"]} if "description" in s else {})}
    if kind == "apiKey":
        return {k: s[k] for k in ("type", "name", "in", "description") if k in s}
    if kind == "oauth2":
        flow = {
            "application": "clientCredentials",
            "password": "password",
            "implicit": "implicit",
            "accessCode": "authorizationCode",
        }.get(str(s.get("flow")), "clientCredentials")
        details: dict[str, Any] = {k: s[k] for k in ("authorizationUrl", "tokenUrl") if k in s}
        details["scopes"] = s.get("scopes") or {}
        return {"type": "oauth2", "flows": {flow: details}}
    return dict(s)


__all__ = ["normalize"]
