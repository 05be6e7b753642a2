"""Run in a subprocess by test_openapi_corpora.py: import every generated project given,
list its tools in memory, and call each tool once with arguments made from its input
schema against a recording upstream, checking what reached the wire.

Usage: python corpus_check.py PROJECTS.json RECORDER_URL. Prints one JSON object: per
project, the tools listed and, per call, "ok", "unsampled" (the simple sampler made no
valid arguments: nothing called) or what was wrong."""

from __future__ import annotations

import asyncio
import importlib
import json
import re
import sys
from typing import Any
from urllib.parse import parse_qsl

import jsonschema_rs

from mcpgen import Client, McpError
from mcpgen.generated import TextContent

FORMATS = {
    "date-time": "2024-01-02T03:04:05Z",
    "date": "2024-01-02",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "email": "a@example.com",
    "uri": "https://example.com/x",
    "url": "https://example.com/x",
}


def sample(schema: Any, defs: dict[str, Any], depth: int = 0) -> Any:
    """A value the schema accepts, most of the time (a pattern or a `not` may refuse it)."""
    if not isinstance(schema, dict) or depth > 12:
        return "x"
    if "$ref" in schema:
        return sample(defs.get(schema["$ref"].rsplit("/", 1)[-1], {}), defs, depth + 1)
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return next((v for v in schema["enum"] if v is not None), schema["enum"][0])
    if "default" in schema and schema["default"] is not None:
        return schema["default"]
    for key in ("oneOf", "anyOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            options = [o for o in schema[key] if not (isinstance(o, dict) and o.get("type") == "null")]
            return sample((options or schema[key])[0], defs, depth + 1)
    if isinstance(schema.get("allOf"), list):
        merged: dict[str, Any] = {}
        for part in schema["allOf"]:
            value = sample(part, defs, depth + 1)
            if isinstance(value, dict):
                merged.update(value)
        return merged
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "string" or (kind is None and "contentEncoding" in schema):
        if schema.get("contentEncoding") == "base64":
            return "AAEC"
        return FORMATS.get(schema.get("format", ""), "x" * max(1, schema.get("minLength", 1)))
    if kind == "integer":
        return int(schema.get("minimum", 1))
    if kind == "number":
        return float(schema.get("minimum", 1.5))
    if kind == "boolean":
        return True
    if kind == "array":
        return [sample(schema.get("items", {}), defs, depth + 1) for _ in range(max(1, schema.get("minItems", 1)))]
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {})
        wanted = [k for k in schema.get("required", []) if k in props] or list(props)[:1]
        return {k: sample(props[k], defs, depth + 1) for k in wanted}
    return "x"


def arguments(tool: dict[str, Any]) -> dict[str, Any]:
    """Every argument (parameters and body), so that each parameter's serialization is seen."""
    schema = tool["input_schema"]
    defs = schema.get("$defs", {})
    return {name: sample(prop, defs) for name, prop in schema.get("properties", {}).items()}


def check(op: dict[str, Any], given: dict[str, Any], seen: dict[str, Any]) -> str:
    if seen["method"] != op["method"]:
        return f"method {seen['method']} != {op['method']}"
    template = "^" + re.sub(r"\\\{[^}]*\\\}", "[^/]*", re.escape(op["path"].split("#")[0])) + "$"
    if not re.match(template, seen["raw_path"]):
        return f"path {seen['raw_path']} does not match {op['path']}"
    query = {k for k, _ in parse_qsl(seen["query"], keep_blank_values=True)}
    for p in op["params"]:
        if p["arg"] not in given or given[p["arg"]] is None:
            continue
        if (
            p["location"] == "query"
            and p["style"] != "deepObject"
            and not (p["explode"] and isinstance(given[p["arg"]], dict))
        ):
            if p["name"] not in query:
                return f"query parameter {p['name']} missing from {seen['query']!r}"
        if p["location"] == "header" and p["name"].lower() not in seen["headers"]:
            return f"header {p['name']} missing"
        if p["location"] == "cookie" and p["name"] not in seen["headers"].get("cookie", ""):
            return f"cookie {p['name']} missing"
    body = op.get("body")
    if body and given.get(body["arg"]) not in (None, {}, ""):  # an empty form sends nothing
        if not seen["body"]:
            return "body missing"
        if body["kind"] == "json":
            import base64

            sent = json.loads(base64.b64decode(seen["body"]))
            if sent != given[body["arg"]]:
                return f"body {sent!r} != {given[body['arg']]!r}"
    return "ok"


async def main(projects: list[dict[str, str]], recorder: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for project in projects:
        sys.path.insert(0, project["root"])
        server = importlib.import_module(f"{project['package']}.server").server
        tables = json.loads(open(f"{project['root']}/{project['package']}/operations.json", encoding="utf-8").read())
        calls: dict[str, str] = {}
        # The recorder answers with the request it saw, not what the output schema says.
        async with Client(server=server, check_output=False) as client:
            listed = [t.name for t in await client.list_tools()]
            if tables["mode"] == "tools":
                for name, tool in tables["tools"].items():
                    given = arguments(tool)
                    if not jsonschema_rs.validator_for(tool["input_schema"]).is_valid(given):
                        calls[name] = "unsampled"  # what sample() made is not valid: no call to judge
                        continue
                    try:
                        result = await client.call_tool(name, given)
                    except McpError as exc:  # the server failed: what the test reports
                        calls[name] = f"server error: {exc}"
                        continue
                    text = "".join(b.text for b in result.content if isinstance(b, TextContent))
                    if result.is_error:
                        calls[name] = "refused: " + text[:200]
                        continue
                    calls[name] = check(tables["operations"][name], given, json.loads(text.split("\nnext page")[0]))
        out[project["name"]] = {"listed": len(listed), "calls": calls}
        sys.path.remove(project["root"])
    return out


if __name__ == "__main__":
    given_projects = json.loads(open(sys.argv[1], encoding="utf-8").read())
    print(json.dumps(asyncio.run(main(given_projects, sys.argv[2]))))
