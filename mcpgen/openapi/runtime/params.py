"""OpenAPI parameter serialization (OpenAPI 3.1, "Style Values" and "Style Examples").

Path: ``simple``, ``label`` (``.``), ``matrix`` (``;name=``); query: ``form``,
``spaceDelimited``, ``pipeDelimited``, ``deepObject``; header: ``simple``; cookie: ``form``;
each with or without ``explode``. Values are percent-encoded here (RFC 3986 unreserved
characters stay; ``allowReserved`` keeps the reserved ones in a query), so what reaches
the URL is exactly what the style says, whatever the value holds.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

_RESERVED = ":/?#[]@!$&'()*+,;="
_COOKIE_SAFE = "!#$%&'()*+-./:<=>?@[]^_`{|}~"


def scalar(value: Any) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return str(value)


def _enc(value: str, reserved: bool = False) -> str:
    return quote(value, safe=_RESERVED if reserved else "")


def path_value(name: str, value: Any, style: str, explode: bool) -> str:
    """The text that replaces ``{name}`` in the path."""
    if style == "label":
        prefix, sep = ".", ("." if explode else ",")
    elif style == "matrix":
        return _matrix(name, value, explode)
    else:
        prefix, sep = "", ","
    if isinstance(value, list):
        return prefix + sep.join(_enc(scalar(v)) for v in value)
    if isinstance(value, dict):
        if explode:
            return prefix + sep.join(f"{_enc(k)}={_enc(scalar(v))}" for k, v in value.items())
        return prefix + ",".join(f"{_enc(k)},{_enc(scalar(v))}" for k, v in value.items())
    return prefix + _enc(scalar(value))


def path_segment(name: str, value: Any, style: str, explode: bool) -> str:
    """:func:`path_value`, never a dot segment: ``..`` would climb out of the operation's
    path on the way (URLs are normalized), so its dots travel percent-encoded."""
    text = path_value(name, value, style, explode)
    return text.replace(".", "%2E") if text in (".", "..") else text


def _matrix(name: str, value: Any, explode: bool) -> str:
    key = _enc(name)
    if isinstance(value, list):
        if explode:
            return "".join(f";{key}={_enc(scalar(v))}" for v in value)
        return f";{key}=" + ",".join(_enc(scalar(v)) for v in value)
    if isinstance(value, dict):
        if explode:
            return "".join(f";{_enc(k)}={_enc(scalar(v))}" for k, v in value.items())
        return f";{key}=" + ",".join(f"{_enc(k)},{_enc(scalar(v))}" for k, v in value.items())
    return f";{key}" if value is None or value == "" else f";{key}={_enc(scalar(value))}"


def query_pairs(name: str, value: Any, style: str, explode: bool, reserved: bool = False) -> list[str]:
    """``key=value`` pieces of the query string, already encoded."""
    key = _enc(name)

    def enc(v: Any) -> str:
        return _enc(scalar(v), reserved)

    if isinstance(value, list):
        if style == "spaceDelimited" and not explode:
            return [f"{key}=" + "%20".join(enc(v) for v in value)]
        if style == "pipeDelimited" and not explode:
            return [f"{key}=" + "|".join(enc(v) for v in value)]
        if explode:
            return [f"{key}={enc(v)}" for v in value]
        return [f"{key}=" + ",".join(enc(v) for v in value)]
    if isinstance(value, dict):
        if style == "deepObject":
            return _deep(key, value, reserved)
        if explode:
            return [f"{_enc(k)}={enc(v)}" for k, v in value.items()]
        return [f"{key}=" + ",".join(f"{_enc(k)},{enc(v)}" for k, v in value.items())]
    return [f"{key}={enc(value)}"]


def _deep(prefix: str, value: dict[str, Any], reserved: bool) -> list[str]:
    out: list[str] = []
    for k, v in value.items():
        here = f"{prefix}%5B{_enc(k)}%5D"
        if isinstance(v, dict):
            out += _deep(here, v, reserved)
        elif isinstance(v, list):
            out += [f"{here}={_enc(scalar(item), reserved)}" for item in v]
        else:
            out.append(f"{here}={_enc(scalar(v), reserved)}")
    return out


def header_value(value: Any, explode: bool) -> str:
    """A header's value (``simple`` style). Line breaks are refused: they would end the header."""
    if isinstance(value, list):
        text = ",".join(scalar(v) for v in value)
    elif isinstance(value, dict):
        text = ",".join(f"{k}={scalar(v)}" if explode else f"{k},{scalar(v)}" for k, v in value.items())
    else:
        text = scalar(value)
    if "\r" in text or "\n" in text or "\x00" in text:
        raise ValueError("a header value cannot hold a line break or NUL")
    return text


def _cookie(value: str) -> str:
    """RFC 6265 cookie-octets as they are; anything else (space, quote, comma, semicolon,
    backslash, control, non-ASCII) percent-encoded, the only way it can travel."""
    return quote(value, safe=_COOKIE_SAFE)


def cookie_pair(name: str, value: Any, explode: bool) -> str:
    if isinstance(value, list):
        text = ",".join(_cookie(scalar(v)) for v in value)
    elif isinstance(value, dict):
        text = ",".join(f"{_cookie(k)},{_cookie(scalar(v))}" for k, v in value.items())
    else:
        text = _cookie(scalar(value))
    return f"{_cookie(name)}={text}"


__all__ = ["cookie_pair", "header_value", "path_segment", "path_value", "query_pairs", "scalar"]
