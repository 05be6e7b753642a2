"""The client side of the stateless era (2026-07-28 on): what every request carries, how a
result is read, and how the server's questions (an InputRequiredResult) are answered.

A stateless-era request names its protocol version, the client's capabilities and the
client's identity in its own ``params._meta``; nothing is negotiated up front. A result
carries ``resultType``: missing means "complete" (an older server), "input_required"
means the server needs answers first (only for ``tools/call``, ``prompts/get`` and
``resources/read``), and any other value is an invalid result. The era of a server is
found by probing with ``server/discover`` (:func:`modern_evidence` says which answers
prove a modern server).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any, Literal, TypeVar

import msgspec
from msgspec import UNSET, UnsetType, field

from mcpgen.protocol.v2025_11_25 import CallToolResult
from mcpgen.runtime.errors import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    MISSING_CAPABILITY,
    UNSUPPORTED_VERSION,
    McpError,
)
from mcpgen.runtime.shared.meta import (
    META_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_SERVER_INFO,
    META_VERSION,
    TASKS_EXTENSION,
)
from mcpgen.runtime.versions import HANDSHAKE, STATELESS

log = logging.getLogger("mcpgen")
T = TypeVar("T")

# Only these requests may be answered with an InputRequiredResult.
ASKING_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
# Rounds of questions one request may go through before the client gives up (a server
# that keeps asking is stuck or hostile; the spec sets no number).
MAX_ROUNDS = 10
# Questions a server may ask, and the client capability each needs.
QUESTIONS = {"elicitation/create": "elicitation", "sampling/createMessage": "sampling", "roots/list": "roots"}
# The tasks extension (SEP-2663): a request that declares it in its own capabilities may be
# answered with a task (resultType "task"), only for these methods.
TASK_METHODS = frozenset({"tools/call"})


class ResultHead(msgspec.Struct):
    """The members of a stateless-era result the client acts on before decoding the rest
    (unknown members are skipped, so this is a cheap look at a large result)."""

    result_type: Any = field(default=UNSET, name="resultType")
    ttl_ms: Any = field(default=UNSET, name="ttlMs")
    input_requests: Any = field(default=UNSET, name="inputRequests")
    request_state: Any = field(default=UNSET, name="requestState")


class DiscoverInfo(msgspec.Struct):
    """A ``server/discover`` result, read leniently: what the client needs from it."""

    supported_versions: list[str] = field(default_factory=list, name="supportedVersions")
    capabilities: dict[str, Any] = field(default_factory=dict)
    instructions: str | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = field(default=UNSET, name="_meta")
    server_info: dict[str, Any] | UnsetType = field(default=UNSET, name="serverInfo")  # older drafts' place

    def identity(self) -> dict[str, Any] | None:
        found = self.meta.get(META_SERVER_INFO) if isinstance(self.meta, dict) else None
        if isinstance(found, dict):
            return found
        return self.server_info if isinstance(self.server_info, dict) else None


head_decoder = msgspec.json.Decoder(ResultHead)


class StatelessCallToolResult(CallToolResult, omit_defaults=True):
    """A ``tools/call`` result of the stateless era. From 2026-07-28 on ``structuredContent``
    may be any JSON value (an array, a number, ...), not only the object the handshake era
    allows, so decoding it as a handshake-era :class:`CallToolResult` refused valid results.
    Still a ``CallToolResult`` (a subclass): only that field's type is wider, and it reads
    the era's ``resultType``."""

    structured_content: Any | UnsetType = field(default=UNSET, name="structuredContent")
    result_type: Literal["complete", "input_required", "task"] = field(default="complete", name="resultType")
    """"complete" for every result a caller gets (a result without one, from an older
    server, is complete too). Read with the rest, so that the client decodes a tools/call
    result once instead of first looking at its kind (see :data:`KINDED`); left out of
    ``repr`` and when encoded, as the default it always is by then (a Literal decodes to
    the very default object, which is what omit_defaults compares)."""


# Result types that decode the result's resultType themselves: the client decodes such a
# result at once and looks at its head only when it is not complete.
KINDED: frozenset[type[Any]] = frozenset({StatelessCallToolResult})


class InvalidResult(McpError):
    """A result this client cannot accept (an unknown ``resultType``, an InputRequiredResult
    where none may come, too many rounds of questions). Raised locally, not by the peer."""

    def __init__(self, message: str) -> None:
        super().__init__(INTERNAL_ERROR, message)


class MissingInputHandler(McpError):
    """The server asked a question this client has no handler for."""

    def __init__(self, method: str, key: str) -> None:
        option = {"elicitation/create": "elicitation=", "sampling/createMessage": "sampling=", "roots/list": "roots="}
        hint = option.get(method)
        how = f": give the Client {hint}..." if hint else ""
        super().__init__(
            INTERNAL_ERROR, f"the server asked {method} (input {key!r}), which this client cannot answer{how}"
        )
        self.method = method


class UnsupportedVersions(McpError):
    """The server speaks none of the stateless-era versions this client speaks."""

    def __init__(self, ours: list[str], theirs: list[str]) -> None:
        super().__init__(
            UNSUPPORTED_VERSION,
            f"no protocol version in common: this client speaks {', '.join(ours) or 'none'}; "
            f"the server supports {', '.join(theirs) or 'none'}",
        )
        self.ours = ours
        self.theirs = theirs

    @property
    def handshake_possible(self) -> bool:
        """Whether the server named a handshake-era version this client speaks."""
        return any(version in HANDSHAKE for version in self.theirs)


@dataclass
class Envelope:
    """What every stateless-era request of one client carries in ``_meta``."""

    version: str
    capabilities: dict[str, Any]
    client_info: dict[str, Any]
    log_level: str | None = None
    pinned: bool = False  # a version the user chose: never switched on -32022
    # The _meta of a request without one of its own, after what it was made from: most
    # requests send this one (see meta()).
    _plain: tuple[Any, Any, Any, Any, dict[str, Any]] | None = dataclass_field(
        default=None, init=False, repr=False, compare=False
    )

    def meta(self, own: Any) -> dict[str, Any]:
        """The ``_meta`` of a request whose params carry ``own`` (merged in). One dict is
        shared by the requests without their own while the fields stay the same objects:
        the engine copies it before adding a progress token, and nothing writes to the
        ``_meta`` of a request once built (it is encoded as it is sent)."""
        if own and isinstance(own, dict):
            return self._build(dict(own))
        plain = self._plain
        if (
            plain is None
            or plain[0] is not self.version
            or plain[1] is not self.capabilities
            or plain[2] is not self.client_info
            or plain[3] is not self.log_level
        ):
            plain = self._plain = (self.version, self.capabilities, self.client_info, self.log_level, self._build({}))
        return plain[4]

    def _build(self, meta: dict[str, Any]) -> dict[str, Any]:
        meta[META_VERSION] = self.version
        extra = meta.get(META_CAPABILITIES)
        # A request may declare more than the client's own capabilities (an extension it
        # opts into for that request only, e.g. tasks): merged, one level deep.
        meta[META_CAPABILITIES] = merge_capabilities(self.capabilities, extra) if extra else self.capabilities
        meta[META_CLIENT_INFO] = self.client_info
        if self.log_level is not None:
            meta[META_LOG_LEVEL] = self.log_level
        return meta

    def switch(self, data: Any) -> None:
        """Move to a version the server named in a -32022 answer, or raise
        :class:`UnsupportedVersions` naming both lists."""
        supported = data.get("supported") if isinstance(data, dict) else None
        theirs = [v for v in supported if isinstance(v, str)] if isinstance(supported, list) else []
        ours = [self.version] if self.pinned else list(STATELESS)
        common = [v for v in ours if v in theirs]
        if not common:
            raise UnsupportedVersions(ours, theirs)
        self.version = common[0]  # ours are newest first


def merge_capabilities(base: dict[str, Any], extra: Any) -> dict[str, Any]:
    """``base`` with ``extra``'s members added (an object member of both merged)."""
    if not isinstance(extra, dict):
        return base
    merged = dict(base)
    for name, value in extra.items():
        mine = merged.get(name)
        merged[name] = {**mine, **value} if isinstance(mine, dict) and isinstance(value, dict) else value
    return merged


def without_core_tasks(table: dict[str, T]) -> dict[str, T]:
    """A client's method table for the stateless era: ``tasks/*`` there are the tasks
    extension's (declared per request), not the 2025-11-25 core tasks that need the
    server's ``tasks`` capability."""
    return {method: spec for method, spec in table.items() if not method.startswith("tasks/")}


def accepts_task(method: str, meta: dict[str, Any]) -> bool:
    """Whether a request (its ``method`` and the ``_meta`` it was sent with) may be
    answered with a task: it declared the tasks extension, and its method may make one."""
    if method not in TASK_METHODS:
        return False
    caps = meta.get(META_CAPABILITIES)
    extensions = caps.get("extensions") if isinstance(caps, dict) else None
    return isinstance(extensions, dict) and TASKS_EXTENSION in extensions


def pick_version(supported: list[str], pinned: str | None) -> str | None:
    """The version to speak with a server that supports ``supported`` (newest we share)."""
    ours = [pinned] if pinned is not None else list(STATELESS)
    return next((v for v in ours if v in supported), None)


def modern_evidence(exc: BaseException) -> bool:
    """Whether an error answering the ``server/discover`` probe proves a modern server:
    only the stateless era's own codes do. -32601 and -32602 do not (older servers answer
    requests before ``initialize`` with them), nor does an HTTP error without a JSON-RPC
    body, nor a timeout."""
    if isinstance(exc, UnsupportedVersions):
        return not exc.handshake_possible
    return type(exc) is McpError and exc.code in (HEADER_MISMATCH, MISSING_CAPABILITY, UNSUPPORTED_VERSION)


def request_body(params: Any) -> dict[str, Any]:
    """A request's params as a JSON object we can add members to."""
    if params is None or params is UNSET:
        return {}
    if isinstance(params, dict):
        return dict(params)
    built = msgspec.to_builtins(params)
    return built if isinstance(built, dict) else {}


Ask = Callable[[str, str, Any], Awaitable[Any]]
"""(method, key, params) -> the answer (a result struct or JSON data)."""


async def answer_inputs(input_requests: Any, ask: Ask) -> dict[str, Any]:
    """The ``inputResponses`` for an InputRequiredResult's ``inputRequests``: every
    question answered (by ``ask``), keyed as the server keyed them."""
    if not isinstance(input_requests, dict):
        raise InvalidResult("the server sent inputRequests that are not an object")
    answers: dict[str, Any] = {}
    for key, request in input_requests.items():
        method = request.get("method") if isinstance(request, dict) else None
        if not isinstance(method, str) or method not in QUESTIONS:
            raise InvalidResult(f"the server asked an unknown kind of input {method!r} (key {key!r})")
        answer = msgspec.to_builtins(await ask(method, key, request.get("params")))
        if isinstance(answer, dict):
            answer.pop("resultType", None)  # answers are bare results
        answers[key] = answer
    return answers
