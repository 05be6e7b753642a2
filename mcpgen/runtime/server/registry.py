"""What the decorators of :class:`~mcpgen.runtime.server.server.Server` register: a record
per tool, resource, template, prompt and completer, the checks a decorator makes of the
function it is given, and the cursors of paginated lists."""

from __future__ import annotations

import base64
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from mcpgen.protocol.v2025_11_25 import Prompt, Resource, ResourceTemplate, Tool
from mcpgen.runtime.errors import INTERNAL_ERROR, INVALID_PARAMS, McpError
from mcpgen.runtime.server.caching import CacheHint
from mcpgen.runtime.server.content import to_contents
from mcpgen.runtime.server.signature import Signature, signature_of
from mcpgen.runtime.shared.files import guess_mime, read_file, resolve_within

if TYPE_CHECKING:
    from mcpgen.runtime.server.tasks import TaskStart, TaskSupport
    from mcpgen.runtime.shared.uri_template import UriTemplate

log = logging.getLogger("mcpgen")


class ToolError(Exception):
    """Raise in a tool to report a failure to the model (``isError: true``) with this text."""


def text_or_unset(value: str | None) -> Any:
    """A definition's optional text: left out when empty."""
    return value if value else msgspec.UNSET


def default_mime(sig: Signature) -> str | None:
    """The MIME type a resource's return annotation implies: ``-> str`` is text."""
    if sig.returns is str:
        return "text/plain"
    if sig.returns is bytes:
        return "application/octet-stream"
    return None


# The registry's records are msgspec Structs, not dataclasses: a dataclass costs ~0.4 ms
# to create (it compiles its methods), paid at import before every server's first answer.
class ToolEntry:
    """A registered tool. What serving it takes (its signature, its definition with the
    input and output schemas, the checker of an explicit input schema) is made when it is
    first listed or called, not when it is registered: a server of thousands of tools
    answers its first request without making them all. ``build`` turns the options into
    them (given by the catalog); a tool that cannot be built raises there, naming itself.
    Once built, they are plain attributes (nothing is looked up per call)."""

    __slots__ = (
        "fn",
        "name",
        "in_thread",
        "task",
        "now",
        "_build",
        "signature",
        "definition",
        "returns",
        "check_input",
    )

    # Made by build(): the signature; the definition; the return annotation, for checking
    # structured output (None: not checked); the checker of an explicit input schema.
    signature: Signature
    definition: Tool
    returns: Any
    check_input: Callable[[Any], None] | None

    def __init__(
        self,
        fn: Callable[..., Any],
        name: str,
        in_thread: bool,
        task: tuple[TaskSupport, TaskStart] | None,
        build: Callable[[], tuple[Signature, Tool, Any, Callable[[Any], None] | None]],
    ) -> None:
        self.fn = fn
        self.name = name
        self.in_thread = in_thread  # a plain def not declared blocking=False
        self.task = task  # tasks extension: support, how the task starts
        # Answered on the spot (call_tool_now): a plain def declared blocking=False that takes
        # no Context and is no task. Worked out when built (every call builds first).
        self.now = False
        self._build = build

    def built(self) -> bool:
        """Make what serving the tool takes, once (what it raises: why it cannot be served)."""
        try:
            object.__getattribute__(self, "signature")  # not through __getattr__ (which calls here)
        except AttributeError:
            pass
        else:
            return True
        sig, self.definition, self.returns, self.check_input = self._build()
        self.now = not (self.in_thread or sig.is_async or sig.context_param is not None or self.task is not None)
        self.signature = sig  # last: its presence says the rest is there
        return True

    def __getattr__(self, name: str) -> Any:
        # Only for the slots build() fills, before it has (a slot not set reads as missing).
        if name in ("signature", "definition", "returns", "check_input") and self.built():
            return object.__getattribute__(self, name)
        raise AttributeError(name)


class ResourceEntry(msgspec.Struct):
    fn: Callable[..., Any]
    signature: Signature
    in_thread: bool
    definition: Resource
    cache: CacheHint | None = None  # for resources/read in the stateless era


class TemplateEntry(msgspec.Struct):
    fn: Callable[..., Any]
    signature: Signature
    in_thread: bool
    template: UriTemplate
    definition: ResourceTemplate
    # Whether a variable may decode to a path leaving its root (``..``, absolute): off by
    # default, so a handler that joins a value to a folder cannot be walked out of it.
    allow_traversal: bool = False


class PromptEntry(msgspec.Struct):
    fn: Callable[..., Any]
    signature: Signature
    in_thread: bool
    definition: Prompt


Completer = Callable[..., Awaitable[Iterable[str]] | Iterable[str]]


class CompleterEntry(msgspec.Struct):
    fn: Completer
    in_thread: bool


ASYNC_BLOCKING = (
    "`{name}` is async def: blocking=True cannot apply (a coroutine runs on the event loop); "
    "make it a plain def to run it in the thread pool"
)


def split_first(first: Any, decorator: str, what: str, *, optional: bool = True) -> tuple[Any, str | None]:
    """Split a decorator's first argument: the function itself (used bare, as
    ``@server.tool``) or ``what`` it names (a str, or None when ``optional``)."""
    if isinstance(first, str) or (first is None and optional):
        return None, first
    if callable(first):
        return first, None
    raise TypeError(
        f"@server.{decorator}: the first argument is {what} (a str), not {type(first).__name__}; "
        f"use @server.{decorator} or @server.{decorator}(...)"
    )


def compile_template(text: str) -> UriTemplate:
    # Imported on first use: compiling the template matcher's tables is a noticeable part of
    # a cold start, and a server without resource templates never needs them.
    from mcpgen.runtime.shared.uri_template import UriTemplate

    return UriTemplate(text)


def check_template_variables(uri: str, variables: Sequence[str], sig: Signature) -> None:
    """Refuse a template whose variables and the function's parameters do not match: a
    variable no parameter takes, or a required parameter no variable fills, would make
    every read of it fail (as "not found") instead of failing once, here."""
    schema = sig.input_schema
    parameters = list(schema.get("properties", {}))
    required = schema.get("required", [])
    unknown = [v for v in variables if v not in parameters]
    unfilled = [p for p in required if p not in variables]
    if unknown or unfilled:
        takes = ", ".join(parameters) or "no parameters"
        raise TypeError(
            f"resource template {uri!r} has the variables {{{', '.join(variables)}}} but `{sig.name}` takes "
            f"({takes}): "
            + "; ".join(
                part
                for part in (
                    f"no parameter for {', '.join(unknown)}" if unknown else "",
                    f"no variable for the required {', '.join(unfilled)}" if unfilled else "",
                )
                if part
            )
            + ". Name them alike (a parameter with a default may be left out of the template)."
        )


def as_callable(fn: Any, decorator: str) -> Callable[..., Any]:
    if not callable(fn):
        raise TypeError(f"@server.{decorator}(...) decorates a function, not {type(fn).__name__}")
    return fn  # type: ignore[no-any-return]


def runs_in_thread(sig: Signature, blocking: bool | None) -> bool:
    """Whether a handler runs in the thread pool: a plain def unless ``blocking=False``."""
    return in_thread(sig.is_async, sig.name, blocking)


def in_thread(is_async: bool, name: str, blocking: bool | None) -> bool:
    if is_async:
        if blocking:
            raise TypeError(ASYNC_BLOCKING.format(name=name))
        return False
    return blocking is not False


def positional(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A completer takes its two arguments by position (their names are the author's)."""

    def call(value: str, arguments: dict[str, str]) -> Any:
        return fn(value, arguments)

    return call


def check_resource_value(uri: str, sig: Signature, value: Any) -> None:
    """Refuse what no resource can hold (``None``), and a plain ``str``/``bytes`` return
    annotation broken, as an error the author sees rather than ``null`` on the wire."""
    declared = sig.returns
    broken = (declared is str and not isinstance(value, str)) or (
        declared is bytes and not isinstance(value, (bytes, bytearray))
    )
    if value is not None and not broken:
        return
    note = f", but it is annotated -> {getattr(declared, '__name__', declared)}" if declared is not None else ""
    message = f"resource {uri} (function {sig.name}) returned {type(value).__name__}{note}"
    log.error("mcpgen: %s", message)
    raise McpError(INTERNAL_ERROR, f"Internal error: {message}")


def file_reader(base: Path, relative: str, uri: str) -> Callable[[], Any]:
    def read() -> Any:  # file I/O: runs in the thread pool
        found = resolve_within(base, relative, uri)
        return to_contents(uri, read_file(found), guess_mime(found))

    return read


def encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"o:{offset}".encode()).decode()


def decode_cursor(cursor: str) -> int:
    try:
        text = base64.urlsafe_b64decode(cursor.encode()).decode()
        kind, _, number = text.partition(":")
        if kind != "o" or not number.isdigit():
            raise ValueError(cursor)
        return int(number)
    except (ValueError, UnicodeError):
        raise McpError(INVALID_PARAMS, "Invalid params: unknown cursor") from None


def directory_entries(
    root: Path, uri_prefix: str, name: str, listed: bool
) -> tuple[TemplateEntry, dict[str, ResourceEntry]]:
    """What ``Server.directory`` registers: the template that reads any file under
    ``root`` (in the thread pool: file I/O), and each file as a listed resource."""
    base = root.resolve()
    template = compile_template(uri_prefix + "{+path}")

    def read(path: str) -> Any:
        found = resolve_within(base, path, uri_prefix + path)
        return to_contents(uri_prefix + path, read_file(found), guess_mime(found))

    definition = ResourceTemplate(uri_template=template.template, name=name)
    entry = TemplateEntry(read, signature_of(read), True, template, definition)
    files: dict[str, ResourceEntry] = {}
    if listed:
        for file in sorted(p for p in base.rglob("*") if p.is_file()):
            relative = file.relative_to(base).as_posix()
            uri = uri_prefix + relative
            reader = file_reader(base, relative, uri)
            resource = Resource(uri=uri, name=relative, mime_type=guess_mime(file))
            files[uri] = ResourceEntry(reader, signature_of(reader), True, resource)
    return entry, files
