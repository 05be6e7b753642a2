"""`mcpgen call` answers a server's elicitation in the terminal, as the Inspector does in
its window: the form's fields one by one (with their types, choices and defaults), or the
URL to open. Questions and hints go to stderr (stdout carries the result); answers are read
from stdin, so a script can pipe them in. An empty answer takes the default (or leaves an
optional field out); ``:decline`` declines, ``:cancel`` or end of input cancels.

Everything shown is the server's text, so it goes through :mod:`mcpgen.cli.sanitize`, the
message on one line (it cannot draw lines that look like ours). A URL is shown with its host
on a line of its own, and flagged when that host may not be what it looks like (a user name
before it, as in ``https://accounts.example.com@evil.example/``; non-ASCII or ``xn--``
letters); it must be https (http only on this machine), and only an explicit ``yes`` accepts.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import sys
import urllib.parse
from collections.abc import Callable
from typing import Any

import msgspec

from mcpgen.cli.sanitize import clean_line
from mcpgen.generated import ElicitRequestParams, ElicitRequestURLParams, ElicitResult

Say = Callable[[str], None]
TRIES = 3  # a field answered wrongly this many times cancels the whole form
# How a failed ``format`` reads (the formats the elicitation schema names).
FORMATS = {
    "email": "an email address",
    "uri": "a URI, such as https://example.com/",
    "date": "a date, YYYY-MM-DD",
    "date-time": "a date and time, such as 2025-01-31T12:00:00Z",
}
YES = ("yes", "y")


class Stop(Exception):
    """The user declined or cancelled (``action``)."""

    def __init__(self, action: str) -> None:
        super().__init__(action)
        self.action = action


def _read(prompt: str, say: Say) -> str:
    say(prompt)
    line = sys.stdin.readline()
    if not line:
        raise Stop("cancel")  # end of input: nobody is there to answer
    answer = line.rstrip("\n")
    if answer.strip() in (":decline", ":cancel"):
        raise Stop(answer.strip()[1:])
    return answer


def choices(field: dict[str, Any]) -> list[tuple[Any, str]]:
    """A field's choices as (value, label): ``enum`` (with ``enumNames``), or ``oneOf``/
    ``anyOf`` of ``const`` + ``title``; for a multi-select array, those of its items. The
    value is kept as the server gave it; the label is what a person reads (sanitized)."""
    source = field.get("items", field) if field.get("type") == "array" else field
    if not isinstance(source, dict):
        return []
    if isinstance(source.get("enum"), list):
        names: list[Any] = source["enumNames"] if isinstance(source.get("enumNames"), list) else []
        values = source["enum"]
        return [(v, clean_line(names[i] if i < len(names) else v)) for i, v in enumerate(values)]
    options = source.get("oneOf") or source.get("anyOf") or []
    return [
        (o["const"], clean_line(o.get("title", o["const"]))) for o in options if isinstance(o, dict) and "const" in o
    ]


def _label(field: dict[str, Any], value: Any) -> str:
    """How a value reads: its choice's label, else its JSON."""
    labels = {json.dumps(v): text for v, text in choices(field)}
    if isinstance(value, list) and labels:
        return ", ".join(labels.get(json.dumps(v), clean_line(json.dumps(v))) for v in value)
    return labels.get(json.dumps(value)) or clean_line(json.dumps(value, ensure_ascii=False))


def describe(name: str, field: dict[str, Any], required: bool) -> str:
    """The question for one field: ``title (type, required): description``, its choices
    numbered, ``[default: ...]`` (a choice's label, not its raw value)."""
    kind = field.get("type", "string")
    options = choices(field)
    shown = "choose several, comma-separated" if kind == "array" else clean_line(kind)
    if kind == "boolean":
        shown = "yes/no"
    extra = f", {clean_line(field['format'])}" if isinstance(field.get("format"), str) else ""
    need = ", required" if required else ""
    label = clean_line(field.get("title") or name)
    line = f"  {label} ({shown}{extra}{need})"
    if isinstance(field.get("description"), str) and field["description"]:
        line += f": {clean_line(field['description'])}"
    if options:
        line += "\n" + "\n".join(f"    {i}. {text}" for i, (_, text) in enumerate(options, 1))
    if "default" in field:
        line += f"\n  [default: {_label(field, field['default'])}]"
    return line + "\n  > "


def convert(field: dict[str, Any], answer: str) -> Any:
    """The typed value of an answer, or ValueError saying what is expected."""
    kind = field.get("type", "string")
    options = choices(field)

    def pick(text: str) -> Any:
        text = text.strip()
        if text.isdigit() and 1 <= int(text) <= len(options):
            return options[int(text) - 1][0]
        for value, label in options:
            if text in (str(value), label):
                return value
        raise ValueError(f"one of: {', '.join(label for _, label in options)} (or its number)")

    value: Any
    if kind == "array":
        value = [pick(part) for part in answer.split(",") if part.strip()]
    elif options:
        value = pick(answer)
    elif kind == "boolean":
        lowered = answer.strip().lower()
        if lowered in ("y", "yes", "true", "1"):
            return True
        if lowered in ("n", "no", "false", "0"):
            return False
        raise ValueError("yes or no")
    elif kind == "integer":
        try:
            value = int(answer.strip())
        except ValueError:
            raise ValueError("a whole number") from None
    elif kind == "number":
        try:
            value = float(answer.strip())
        except ValueError:
            raise ValueError("a number") from None
    else:
        value = answer
    _check(field, value)
    return value


def _check(field: dict[str, Any], value: Any) -> None:
    """The field's own constraints (range, length, pattern, number of choices, ``format``):
    ValueError saying what is expected."""
    low, high = field.get("minimum"), field.get("maximum")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if (isinstance(low, int | float) and value < low) or (isinstance(high, int | float) and value > high):
            shown_low = low if low is not None else "-inf"
            raise ValueError(f"a number from {shown_low} to {high if high is not None else 'inf'}")
    from mcpgen.runtime.shared.jsonschema import SchemaValidationError, errors

    try:
        found = errors(value, field, limit=1, format_assertion=True)
    except SchemaValidationError:
        return  # a field schema that cannot be compiled: the server checks the answer
    if not found or found[0].path.startswith("#"):
        return
    kind = field.get("format")
    if isinstance(kind, str) and "is not a" in found[0].message:
        raise ValueError(FORMATS.get(kind, f"a {clean_line(kind)}"))
    raise ValueError(clean_line(found[0].message))


def fill_form(message: str, schema: dict[str, Any], say: Say) -> dict[str, Any]:
    """Ask every field of a form (blocking: runs in a thread); the answers by name."""
    say(f"\nThe server asks: {clean_line(message)}\n(empty: the default or nothing; :decline or :cancel to refuse)\n")
    properties: dict[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    content: dict[str, Any] = {}
    for name, field in properties.items():
        if not isinstance(field, dict):
            continue
        for _ in range(TRIES):
            answer = _read(describe(name, field, name in required), say)
            if not answer.strip():
                if "default" in field:
                    content[name] = field["default"]
                    break
                if name not in required:
                    break
                say("  an answer is required\n")
                continue
            try:
                content[name] = convert(field, answer)
                break
            except ValueError as exc:
                say(f"  expected {exc}\n")
        else:
            raise Stop("cancel")
    return content


_LOOPBACK_NAMES = ("localhost", "localhost.")


def _loopback(host: str) -> bool:
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def url_facts(url: str) -> tuple[str | None, list[str]]:
    """The host a URL leads to (None when it must not be opened: the reason is then the
    only warning) and what about it deserves the user's attention."""
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname
        port = parts.port
    except ValueError:
        return None, ["it is not a valid URL"]
    if not host:
        return None, ["it names no host"]
    scheme = parts.scheme.lower()
    if scheme != "https" and not (scheme == "http" and _loopback(host)):
        return None, [f"it is {clean_line(scheme) or 'not'} http(s): only https is opened (http on this machine)"]
    shown = host + (f":{port}" if port is not None else "")
    warnings = []
    if "@" in parts.netloc:
        userinfo = parts.netloc.rpartition("@")[0]
        warnings.append(
            f"the URL puts {clean_line(userinfo)!r} before an @: that is a user name, not the site; "
            f"the site is {clean_line(shown)}"
        )
    if not host.isascii():
        try:
            ascii_name = host.encode("idna").decode("ascii")
        except UnicodeError:
            ascii_name = "not a valid name"
        warnings.append(f"the host has non-ASCII letters, which can look like others (its real name: {ascii_name})")
    elif any(label.startswith("xn--") for label in host.split(".")):
        try:
            unicode_name = host.encode("ascii").decode("idna")
        except UnicodeError:
            unicode_name = "not a valid name"
        warnings.append(f"the host is an internationalized name (it reads as {clean_line(unicode_name)})")
    return shown, warnings


def open_url(message: str, url: str, say: Say) -> None:
    """Show the URL, its host on a line of its own and what is suspicious about it; accept
    only on an explicit yes (``Stop("decline")`` otherwise)."""
    host, warnings = url_facts(url)
    say(f"\nThe server asks you to open a URL: {clean_line(message)}\n")
    say(f"  URL:  {clean_line(url)}\n")
    if host is None:
        say(f"  refused: {warnings[0]}\n")
        raise Stop("decline")
    say(f"  host: {clean_line(host)}\n")
    for warning in warnings:
        say(f"  warning: {warning}\n")
    answer = _read("Open it in your browser, then type yes (anything else declines; :cancel cancels): ", say)
    if answer.strip().lower() not in YES:
        raise Stop("decline")


def terminal_elicitation(say: Say) -> Callable[[ElicitRequestParams], Any]:
    """An elicitation handler for ``Client(elicitation=...)`` that asks in the terminal."""
    lock = asyncio.Lock()  # one question at a time, even if several calls ask at once

    async def ask(params: ElicitRequestParams) -> ElicitResult:
        async with lock:
            try:
                if isinstance(params, ElicitRequestURLParams):
                    await asyncio.to_thread(open_url, params.message, params.url, say)
                    return ElicitResult(action="accept")
                schema = msgspec.to_builtins(params.requested_schema)
                content = await asyncio.to_thread(fill_form, params.message, schema, say)
                return ElicitResult(action="accept", content=content)
            except Stop as stop:
                say(f"  ({stop.action}d)\n" if stop.action == "decline" else "  (cancelled)\n")
                return ElicitResult(action="decline" if stop.action == "decline" else "cancel")

    return ask


__all__ = ["FORMATS", "choices", "convert", "describe", "fill_form", "open_url", "terminal_elicitation", "url_facts"]
