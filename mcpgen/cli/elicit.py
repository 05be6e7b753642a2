"""`mcpgen call` answers a server's elicitation in the terminal, as the Inspector does in
its window: the form's fields one by one (with their types, choices and defaults), or the
URL to open. Questions and hints go to stderr (stdout carries the result); answers are read
from stdin, so a script can pipe them in. An empty answer takes the default (or leaves an
optional field out); ``:decline`` declines, ``:cancel`` or end of input cancels."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from typing import Any

import msgspec

from mcpgen.generated import ElicitRequestParams, ElicitRequestURLParams, ElicitResult

Say = Callable[[str], None]
TRIES = 3  # a field answered wrongly this many times cancels the whole form


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


def choices(field: dict[str, Any]) -> list[tuple[str, str]]:
    """A field's choices as (value, label): ``enum`` (with ``enumNames``), or ``oneOf``/
    ``anyOf`` of ``const`` + ``title``; for a multi-select array, those of its items."""
    source = field.get("items", field) if field.get("type") == "array" else field
    if isinstance(source.get("enum"), list):
        names: list[Any] = source["enumNames"] if isinstance(source.get("enumNames"), list) else []
        values = [str(v) for v in source["enum"]]
        return [(v, str(names[i]) if i < len(names) else v) for i, v in enumerate(values)]
    options = source.get("oneOf") or source.get("anyOf") or []
    return [(str(o["const"]), str(o.get("title", o["const"]))) for o in options if isinstance(o, dict) and "const" in o]


def describe(name: str, field: dict[str, Any], required: bool) -> str:
    """The question for one field: ``title (type, required) [default]: ``."""
    kind = field.get("type", "string")
    options = choices(field)
    shown = "choose several, comma-separated" if kind == "array" else kind
    if kind == "boolean":
        shown = "yes/no"
    extra = f", {field['format']}" if isinstance(field.get("format"), str) else ""
    need = ", required" if required else ""
    label = str(field.get("title") or name)
    line = f"  {label} ({shown}{extra}{need})"
    if isinstance(field.get("description"), str) and field["description"]:
        line += f": {field['description']}"
    if options:
        line += "\n" + "\n".join(f"    {i}. {text}" for i, (_, text) in enumerate(options, 1))
    if "default" in field:
        line += f"\n  [default: {json.dumps(field['default'])}]"
    return line + "\n  > "


def convert(field: dict[str, Any], answer: str) -> Any:
    """The typed value of an answer, or ValueError saying what is expected."""
    kind = field.get("type", "string")
    options = choices(field)

    def pick(text: str) -> str:
        text = text.strip()
        if text.isdigit() and 1 <= int(text) <= len(options):
            return options[int(text) - 1][0]
        for value, label in options:
            if text in (value, label):
                return value
        raise ValueError(f"one of: {', '.join(value for value, _ in options)} (or its number)")

    if kind == "array":
        return [pick(part) for part in answer.split(",") if part.strip()]
    if options:
        return pick(answer)
    if kind == "boolean":
        lowered = answer.strip().lower()
        if lowered in ("y", "yes", "true", "1"):
            return True
        if lowered in ("n", "no", "false", "0"):
            return False
        raise ValueError("yes or no")
    if kind == "integer":
        try:
            number: int | float = int(answer.strip())
        except ValueError:
            raise ValueError("a whole number") from None
    elif kind == "number":
        try:
            number = float(answer.strip())
        except ValueError:
            raise ValueError("a number") from None
    else:
        return answer
    low, high = field.get("minimum"), field.get("maximum")
    if (isinstance(low, int | float) and number < low) or (isinstance(high, int | float) and number > high):
        raise ValueError(f"a number from {low if low is not None else '-inf'} to {high if high is not None else 'inf'}")
    return number


def fill_form(message: str, schema: dict[str, Any], say: Say) -> dict[str, Any]:
    """Ask every field of a form (blocking: runs in a thread); the answers by name."""
    say(f"\nThe server asks: {message}\n(empty: the default or nothing; :decline or :cancel to refuse)\n")
    properties: dict[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    content: dict[str, Any] = {}
    for name, field in properties.items():
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


def open_url(message: str, url: str, say: Say) -> None:
    say(f"\nThe server asks you to open this URL: {message}\n  {url}\nPress Enter once done (:decline to refuse): ")
    _read("", say)


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


__all__ = ["choices", "convert", "describe", "fill_form", "terminal_elicitation"]
