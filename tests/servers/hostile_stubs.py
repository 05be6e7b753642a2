"""A hostile MCP server for the tests of `mcpgen stubs` (issue 36, points 1 and 2): every
name, description, schema keyword and value it lists is written to break out of the string,
docstring or comment it lands in, and each break-out would create a file named ``PWNED-*``
in the working directory (or print PWNED) if it ever ran. Its tools, prompt and resource
template answer with what they were called with (names and arguments as they arrived),
so a test can check the typed module sends exactly the server's wire names.

Written by hand (newline-delimited JSON-RPC over stdio, handshake era only), as a hostile
server would be: nothing in mcpgen's Server checks what it lists.

Run: python tests/servers/hostile_stubs.py [VERSION]   (VERSION: the server's version,
default a hostile one; "" is the official Python SDK's default)
"""

from __future__ import annotations

import json
import sys
from typing import Any

BREAK = '"""\nopen("PWNED-{0}", "w")\n"""'  # closes a docstring, runs, reopens it
LINE = "\nopen('PWNED-{0}', 'w')\n#"  # ends a comment, runs, comments out the rest
ODD = "\x00\x1b]52;c;cHduZWQ=\x07\u202e"  # NUL, a clipboard escape, a bidi override


def hostile(tag: str) -> str:
    return BREAK.format(tag) + LINE.format(tag) + ODD + '\\"'


NAME = 'evil"""\nopen("PWNED-name", "w")\n"""'
VERSION = '1.0\n"""\nopen("PWNED-version", "w")\n#'

TOOLS: list[dict[str, Any]] = [
    {
        "name": 'run"""\nopen("PWNED-tool", "w")\n#',
        "description": hostile("tool-description") + 'ends with a quote"',
        "inputSchema": {
            "type": "object",
            "$defs": {
                'Box"""\nopen("PWNED-def", "w")\n#': {
                    "type": "object",
                    "description": hostile("def-description"),
                    "properties": {"size": {"type": "integer", "description": hostile("def-field")}},
                },
            },
            "properties": {
                "to_builtins": {"type": "string", "description": "a name the module's code uses"},
                "convert": {"type": "integer", "default": 2},
                "structured": {"type": "boolean"},
                "self": {"type": "string"},
                "arguments": {"type": "string"},
                "text": {
                    "type": "string",
                    "description": hostile("argument"),
                    "default": hostile("default"),
                    "pattern": '^[^"]*"""\\\\$',
                },
                "level": {"enum": ['a"""\nopen("PWNED-enum", "w")\n#', "b\\", "c\x00"]},
                "box": {"$ref": '#/$defs/Box"""\nopen("PWNED-def", "w")\n#'},
                "shape": {
                    "oneOf": [
                        {
                            "type": "object",
                            "properties": {"kind": {"const": 'round"\n'}, "r": {"type": "number"}},
                            "required": ["kind", "r"],
                        },
                        {
                            "type": "object",
                            "properties": {"kind": {"const": "square\\"}, "side": {"type": "number"}},
                            "required": ["kind", "side"],
                        },
                    ]
                },
            },
            "required": ["text"],
        },
        "outputSchema": {
            "type": "object",
            "description": hostile("output"),
            "properties": {"echo": {"type": "object", "description": hostile("output-field")}},
            "required": ["echo"],
        },
    },
    {
        # A property name a struct field cannot carry (a quote, a line break): the method
        # takes a plain dict of arguments instead.
        "name": "raw",
        "description": "Takes what the types cannot hold.",
        "inputSchema": {"type": "object", "properties": {'q"\nopen("PWNED-property", "w")\n#': {"type": "string"}}},
    },
]
PROMPTS = [
    {
        "name": 'ask"""\nopen("PWNED-prompt", "w")\n#',
        "description": hostile("prompt"),
        "arguments": [
            {"name": 'topic"\n', "description": hostile("prompt-argument"), "required": True},
            {"name": "uri", "required": False},
        ],
    }
]
TEMPLATES = [
    {
        "name": 'file"""\nopen("PWNED-template", "w")\n#',
        "uriTemplate": 'hostile://{path}/"""\nopen("PWNED-uri", "w")\n#',
        "description": hostile("template"),
    }
]


def answer(request: dict[str, Any], version: str) -> dict[str, Any] | None:
    method, params = request.get("method"), request.get("params") or {}
    if method == "initialize":
        return {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}, "prompts": {}, "resources": {}},
            "serverInfo": {"name": NAME, "version": version},
        }
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "prompts/list":
        return {"prompts": PROMPTS}
    if method == "resources/templates/list":
        return {"resourceTemplates": TEMPLATES}
    if method == "tools/call":
        called = {"name": params.get("name"), "arguments": params.get("arguments")}
        result: dict[str, Any] = {"content": [{"type": "text", "text": json.dumps(called)}]}
        if params.get("name") == TOOLS[0]["name"]:
            result["structuredContent"] = {"echo": called}
        return result
    if method == "prompts/get":
        called = {"name": params.get("name"), "arguments": params.get("arguments")}
        return {"messages": [{"role": "user", "content": {"type": "text", "text": json.dumps(called)}}]}
    if method == "resources/read":
        return {"contents": [{"uri": params.get("uri"), "text": "read"}]}
    if method == "ping":
        return {}
    return None


def main() -> None:
    version = sys.argv[1] if len(sys.argv) > 1 else VERSION
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        if "id" not in request or "method" not in request:
            continue  # a notification or a response: nothing to say
        result = answer(request, version)
        if result is None:
            reply: dict[str, Any] = {"code": -32601, "message": f"Method not found: {request['method']}"}
            message = {"jsonrpc": "2.0", "id": request["id"], "error": reply}
        else:
            message = {"jsonrpc": "2.0", "id": request["id"], "result": result}
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
