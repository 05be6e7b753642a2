"""Text a server sent, made safe to show in a terminal.

A server mcpgen talks to is not trusted, and what it sends (names, descriptions, results,
log lines, progress messages, elicitation questions, its stderr) ends up on the user's
terminal. A terminal acts on some characters instead of showing them: ESC starts sequences
that write the clipboard (OSC 52), set the window title (OSC 0/2), make a link whose text and
target differ (OSC 8), erase or move over lines already printed (CSI); BEL, backspace and a
lone carriage return overwrite what is shown; the 8-bit C1 codes (U+0080-U+009F) are read as
ESC sequences by some terminals; the bidirectional overrides and isolates (U+202A-U+202E,
U+2066-U+2069) show text in another order than it is. Each such character is replaced by its
escaped spelling (``\\x1b``, ``\\u202e``): what remains is plain text that shows what was sent,
and nothing acts. Every server-sourced string goes through :func:`clean` (or
:func:`clean_line` where one line is expected) before any CLI command prints it;
:func:`markup` also escapes rich's markup, for the few lines printed with ``markup=True``;
:func:`json_text` is JSON whose strings are escaped the same way (still the same JSON).
"""

from __future__ import annotations

import json
from typing import Any

from rich.markup import escape

# Code points a terminal may act on, or that reorder what is shown.
_C0 = [c for c in range(0x20) if chr(c) not in "\t\n"]
_C1 = list(range(0x7F, 0xA0))  # DEL and the 8-bit controls
_BIDI = [0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_SEPARATORS = [0x2028, 0x2029]  # line and paragraph separators: a line break in disguise
_UNSAFE = [*_C0, *_C1, *_BIDI, *_SEPARATORS]


def _spelled(code: int) -> str:
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


_TEXT = str.maketrans({code: _spelled(code) for code in _UNSAFE})
_LINE = str.maketrans({**{code: _spelled(code) for code in _UNSAFE}, ord("\n"): "\\n", ord("\t"): " "})
# Inside a JSON string the same characters are spelled as JSON escapes, which decode back to
# the very same text (outside strings, json.dumps writes none of them).
_JSON = str.maketrans({code: f"\\u{code:04x}" for code in _UNSAFE})


def clean(text: object) -> str:
    """``text`` (anything: it is made a str) with every character a terminal could act on
    replaced by its escaped spelling; line breaks and tabs kept (``\\r\\n`` counts as one)."""
    value = text if isinstance(text, str) else str(text)
    if "\r\n" in value:
        value = value.replace("\r\n", "\n")
    return value.translate(_TEXT)


def clean_line(text: object) -> str:
    """:func:`clean`, on one line: a line break shows as ``\\n``, a tab as a space (for names,
    URIs, log lines and messages printed where one line is expected)."""
    value = text if isinstance(text, str) else str(text)
    if "\r\n" in value:
        value = value.replace("\r\n", "\n")
    return value.translate(_LINE)


def markup(text: object) -> str:
    """:func:`clean_line`, then with rich's markup escaped: for server text inside a line
    printed with ``markup=True`` (``[bold]...[/]`` of ours around a name of theirs)."""
    return escape(clean_line(text))


def json_text(data: Any, indent: int | None = 2) -> str:
    """``data`` as JSON text (UTF-8 kept readable, not ``\\u``-escaped), with the characters
    :func:`clean` replaces written as JSON escapes: the same JSON to a reader, inert on a
    terminal."""
    return json.dumps(data, indent=indent, ensure_ascii=False).translate(_JSON)


__all__ = ["clean", "clean_line", "json_text", "markup"]
