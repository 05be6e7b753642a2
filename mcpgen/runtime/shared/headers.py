"""The HTTP headers of a stateless-era request: ``MCP-Protocol-Version``, ``Mcp-Method``,
``Mcp-Name`` and the ``Mcp-Param-*`` mirrors of tool arguments annotated ``x-mcp-header``.

A server checks each against the body; any disagreement, a missing header or a malformed
value is refused with -32020 (HTTP 400). Values may be wrapped as ``=?base64?...?=`` (the
client's way to carry non-ASCII text, edge whitespace or control characters); a value
without the whole wrapper is literal text.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Mapping
from typing import Any

from mcpgen.runtime.errors import HEADER_MISMATCH, McpError

# Which param each method names in Mcp-Name.
NAME_PARAMS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
_SENTINEL = re.compile(r"=\?base64\?(.*)\?=", re.DOTALL)
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_MAX_SAFE = 2**53 - 1
# A decimal number as the header carries it: ASCII digits only, an optional sign, fraction
# and exponent (the spec compares integers numerically: "42.0" is 42).
_DECIMAL = re.compile(r"-?[0-9]{1,400}(\.[0-9]{1,400})?([eE][+-]?[0-9]{1,3})?", re.ASCII)


class HeaderMismatch(McpError):
    def __init__(self, message: str) -> None:
        super().__init__(HEADER_MISMATCH, f"Header mismatch: {message}")


def decode_value(value: str) -> str:
    """A header value as text: unwrapped from the Base64 sentinel, else stripped of the
    optional whitespace around it."""
    value = value.strip(" \t")
    if not value.startswith("=?"):
        return value  # the common case: no sentinel, no regex
    found = _SENTINEL.fullmatch(value)
    if found is None:
        return value
    try:
        return base64.b64decode(found.group(1), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        raise HeaderMismatch("malformed base64 value") from None


def check_request(
    headers: Mapping[str, str],
    method: str,
    named: Any,
    arguments: Any,
    version: Any,
    tool_headers: Any,
    field: str | None = None,
) -> None:
    """Refuse a request whose headers disagree with its body (``headers`` lower-cased).
    ``named`` is the value of the param Mcp-Name mirrors for this method (``field``, else
    :data:`NAME_PARAMS`'s; None when absent), ``arguments`` the request's ``arguments``."""
    sent = headers.get("mcp-protocol-version")
    if sent is None:
        raise HeaderMismatch("MCP-Protocol-Version is missing")
    if sent.strip(" \t") != version:
        raise HeaderMismatch("MCP-Protocol-Version differs from _meta's protocol version")
    mentioned = headers.get("mcp-method")
    if mentioned is None or mentioned.strip(" \t") != method:
        raise HeaderMismatch("Mcp-Method is missing or differs from the method")
    field = field if field is not None else NAME_PARAMS.get(method)
    if field is not None:
        name = headers.get("mcp-name")
        if name is None:
            raise HeaderMismatch("Mcp-Name is missing")
        if decode_value(name) != named:
            raise HeaderMismatch(f"Mcp-Name differs from params.{field}")
    if method == "tools/call" and isinstance(named, str):
        annotated = tool_headers(named)
        if annotated:
            _check_params(headers, annotated, arguments if isinstance(arguments, dict) else {})


def _check_params(headers: Mapping[str, str], annotated: Mapping[str, str], arguments: dict[str, Any]) -> None:
    for argument, header in annotated.items():
        raw = headers.get(f"mcp-param-{header.lower()}")
        value = arguments.get(argument)
        text = decode_value(raw) if raw is not None else None  # malformed: refused even if unused
        if value is None:
            continue  # an absent or null argument expects no header
        if text is None:
            raise HeaderMismatch(f"Mcp-Param-{header} is missing")
        if not _same(value, text):
            raise HeaderMismatch(f"Mcp-Param-{header} differs from arguments.{argument}")


def _same(value: Any, text: str) -> bool:
    if isinstance(value, bool):
        return text == ("true" if value else "false")
    if isinstance(value, (int, float)):
        # Numerically, and exactly: as rational numbers, never through floats (which make
        # 2**53 + 1 equal 2**53), and only plain ASCII decimals (float() reads "1_000",
        # non-ASCII digits, "inf" and "nan" too).
        if _DECIMAL.fullmatch(text) is None or isinstance(value, float) and not math.isfinite(value):
            return False
        from fractions import Fraction  # only for tools that mirror a number (it loads decimal)

        return Fraction(text) == Fraction(value)
    return isinstance(value, str) and text == value


def annotated_params(input_schema: Mapping[str, Any]) -> dict[str, str] | None:
    """A tool's ``x-mcp-header`` annotations (argument -> header name), or None when one
    of them is invalid (then the whole tool is: clients drop it)."""
    found: dict[str, str] = {}
    seen: set[str] = set()
    properties = input_schema.get("properties")
    if isinstance(properties, Mapping):
        for argument, schema in properties.items():
            if not isinstance(schema, Mapping) or "x-mcp-header" not in schema:
                continue
            header = schema["x-mcp-header"]
            if not isinstance(header, str) or not _TOKEN.fullmatch(header) or header.lower() in seen:
                return None
            if schema.get("type") not in ("string", "integer", "boolean"):
                return None
            seen.add(header.lower())
            found[argument] = header
    if _count_annotations(input_schema) != len(found):
        return None  # an annotation below the top-level properties (items, $ref, anyOf, ...)
    return found


def _count_annotations(node: Any) -> int:
    if isinstance(node, Mapping):
        own = 1 if "x-mcp-header" in node else 0
        return own + sum(_count_annotations(v) for k, v in node.items() if k != "x-mcp-header")
    if isinstance(node, list):
        return sum(_count_annotations(item) for item in node)
    return 0


def render(value: Any) -> str | None:
    """How a client mirrors an argument in its header (None: no header is sent)."""
    if value is None:
        return None
    text = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return encode_value(text)


def encode_value(text: str) -> str:
    """Wrap a value in the Base64 sentinel when it cannot travel as plain header text."""
    plain = text.isascii() and all(" " <= c <= "~" for c in text) and text == text.strip(" ")
    if plain and _SENTINEL.fullmatch(text) is None:
        return text
    return "=?base64?" + base64.b64encode(text.encode("utf-8")).decode() + "?="
