"""Shared fuzzing helpers: an in-process harness around the demo server, a corpus of valid
MCP frames with fast mutators, and the oracle that says, from a frame's bytes alone, what
the server must answer.

The harness (:class:`FuzzHarness`) feeds frames to a ready :class:`ServerSession` through
``Session.on_frame`` on an event loop with a *virtual clock*: when every task is waiting
on a timer, time jumps to that timer, so the demo's ``slow``/``busy``/``poll`` tools cost
no wall time. After each frame it runs the loop until no task is left (bounded in virtual
time); a request still running then (a demo tool asked to sleep for hours) is cancelled
with ``notifications/cancelled``, which the oracle accepts only for those tools.

The oracle (:func:`expect`) parses the frame with :func:`json.loads` (strict UTF-8, no
NaN/Infinity) and the official MCP schema (2025-11-25) validates the params, so it shares
no code with the decoder under test. Its rules are the JSON-RPC/MCP ones the wire tests
pin down: -32700 for unparsable text (no id), -32600 for anything that is not one request,
notification or response (id echoed when it is a valid id), -32601 for unknown methods,
-32602 for params the schema rejects, exactly one reply per request, none for
notifications and responses, never both result and error, never ``"id": null``.

Where the server may reasonably go either way the oracle lists both options, each one
explained at the place it is added: lone-surrogate escapes, out-of-range numbers, nesting
past the decoder's depth limit, raw invalid UTF-8 inside string literals (accepted where
the value is skipped).

Every frame the oracle finds wrongly answered fails the test that fed it: no list of known
failures is tolerated. The bugs found so far are fixed; :data:`FIXED_BUGS` keeps one frame
of each, which ``tests/runtime/test_fuzz.py`` replays as a regression test.
"""

from __future__ import annotations

import asyncio
import base64
import importlib.util
import itertools
import json
import math
import random
import re
import selectors
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Final

import jsonschema  # type: ignore[import-untyped]
from msgspec import UNSET

from mcpgen.runtime.server.session import ServerSession

ROOT: Final = Path(__file__).resolve().parent.parent
DEMO: Final = ROOT / "tests" / "servers" / "demo.py"
DEMO_MODULE: Final = "tests.servers.demo"
SCHEMA_REVISION: Final = "2025-11-25"

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
RESOURCE_NOT_FOUND: Final = -32002

JsonValue = Any  # what json.loads returns


# ---------------------------------------------------------------- the demo server


def load_demo() -> ModuleType:
    """``tests/servers/demo.py`` as the module ``tests.servers.demo`` (registered in
    ``sys.modules``, so every importer shares its one ``server``)."""
    module = sys.modules.get(DEMO_MODULE)
    if module is None:
        spec = importlib.util.spec_from_file_location(DEMO_MODULE, DEMO)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[DEMO_MODULE] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[DEMO_MODULE]
            raise
    return module


# ---------------------------------------------------------------- a loop with a virtual clock

TICK: Final = 0.001  # virtual seconds that pass on every turn of the loop


class VirtualClockSelector(selectors.DefaultSelector):
    """Polls without blocking; when the loop would sleep until its next timer, the clock
    jumps there instead."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout is None:  # nothing scheduled at all: really wait for I/O
            return super().select(None)
        events = super().select(0)
        if not events:
            self.now += max(timeout, 0.0)
        self.now += TICK  # a task that never sleeps still runs into its time limit
        return events


class InlineThreads:
    """Stands in for a server's thread pool: runs each handler right away, on the loop."""

    async def run(self, fn: Any, kwargs: dict[str, Any], context: Any, label: str) -> Any:
        return fn(**kwargs)

    def shutdown(self) -> None:
        pass


class VirtualClockLoop(asyncio.SelectorEventLoop):
    def __init__(self) -> None:
        self._virtual = VirtualClockSelector()
        super().__init__(self._virtual)

    def time(self) -> float:
        return self._virtual.now


# ---------------------------------------------------------------- the transport


@dataclass
class Sent:
    """One frame the session sent, with the routing hints it gave the transport."""

    frame: bytes
    related: Any
    final: bool


class CollectingTransport:
    """A transport that records what the session sends. ``send`` yields to the loop once,
    as a real transport may (so a handler that sends in a loop cannot starve others)."""

    def __init__(self) -> None:
        self.sent: list[Sent] = []
        self.inbox: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.closed = False

    async def receive(self) -> bytes | None:
        return await self.inbox.get()

    async def send(self, frame: bytes, *, related: Any = UNSET, final: bool = False) -> None:
        if self.closed:
            raise ConnectionError("transport closed")
        await asyncio.sleep(0)
        self.sent.append(Sent(bytes(frame), related, final))

    async def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.inbox.put_nowait(None)

    def take(self) -> list[Sent]:
        sent, self.sent = self.sent, []
        return sent


# ---------------------------------------------------------------- the official schema


def _schema_path() -> Path:
    official = ROOT.parent / "shared" / "mcp-schema" / SCHEMA_REVISION / "schema.json"
    return official if official.is_file() else ROOT / "mcpgen" / "schema" / f"{SCHEMA_REVISION}.json"


def _strict_integer(checker: Any, instance: Any) -> bool:
    # JSON Schema counts 1.0 as an integer; a typed decoder (and the wire tests) do not.
    return isinstance(instance, int) and not isinstance(instance, bool)


_TYPES = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("integer", _strict_integer)
_Validator = jsonschema.validators.extend(jsonschema.Draft202012Validator, type_checker=_TYPES)


@dataclass(frozen=True)
class MethodInfo:
    params: dict[str, Any]  # the params schema, with the schema's $defs
    params_required: bool
    result: str | None  # the $defs name of the result


class Spec:
    """What the official schema says about client-to-server messages."""

    def __init__(self, path: Path | None = None) -> None:
        schema = json.loads((path or _schema_path()).read_text())
        self.defs: dict[str, Any] = schema["$defs"]
        self.requests = self._methods("ClientRequest")
        self.notifications = self._methods("ClientNotification")
        self.server_notifications = self._methods("ServerNotification")
        self.server_requests = set(self._methods("ServerRequest"))
        self._validators: dict[str, Any] = {}
        self._checked: dict[tuple[str, str], list[str]] = {}  # results seen, and what was wrong

    def _methods(self, union: str) -> dict[str, MethodInfo]:
        out: dict[str, MethodInfo] = {}
        for ref in self.defs[union]["anyOf"]:
            name = ref["$ref"].rsplit("/", 1)[1]
            definition = self.defs[name]
            props = definition["properties"]
            result = name.removesuffix("Request").removesuffix("Notification") + "Result"
            out[props["method"]["const"]] = MethodInfo(
                params={**props.get("params", {"type": "object"}), "$defs": self.defs},
                params_required="params" in definition.get("required", ()),
                result=result if result in self.defs else "Result",
            )
        return out

    def validator(self, key: str, schema: dict[str, Any]) -> Any:
        found = self._validators.get(key)
        if found is None:
            found = self._validators[key] = _Validator(schema)
        return found

    def params_valid(self, method: str, params: JsonValue, table: dict[str, MethodInfo]) -> bool:
        info = table[method]
        return bool(self.validator("params:" + method, info.params).is_valid(params))

    def result_errors(self, method: str, result: JsonValue) -> list[str]:
        name = self.requests[method].result
        if name is None:
            return []
        return self._errors("result:" + name, {"$ref": f"#/$defs/{name}", "$defs": self.defs}, result)

    def notification_errors(self, method: str, params: JsonValue) -> list[str]:
        """What is wrong with a notification the server sent (its params per the schema)."""
        info = self.server_notifications.get(method)
        if info is None:
            return [f"{method!r} is no server notification"]
        if params is UNSET:
            return ["params missing"] if info.params_required else []
        return self._errors("notification:" + method, info.params, params)

    def _errors(self, key: str, schema: dict[str, Any], value: JsonValue) -> list[str]:
        memo = (key, json.dumps(value, sort_keys=True))
        found = self._checked.get(memo)
        if found is None:
            validator = self.validator(key, schema)
            found = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(value)][:3]
            if len(self._checked) > 10_000:
                self._checked.clear()
            self._checked[memo] = found
        return found


SPEC: Final = Spec()

# What the demo server does with each request it serves, when the params are valid:
# whether a result may come, and which errors its handlers may answer with instead.
SERVED: Final[dict[str, frozenset[int]]] = {
    "ping": frozenset(),
    "tools/list": frozenset({INVALID_PARAMS}),  # unknown cursor
    "resources/list": frozenset({INVALID_PARAMS}),
    "resources/templates/list": frozenset({INVALID_PARAMS}),
    "prompts/list": frozenset({INVALID_PARAMS}),
    "tools/call": frozenset({INVALID_PARAMS}),  # unknown tool
    "resources/read": frozenset({RESOURCE_NOT_FOUND, INVALID_PARAMS}),
    "resources/subscribe": frozenset(),
    "resources/unsubscribe": frozenset(),
    "prompts/get": frozenset({INVALID_PARAMS}),  # unknown prompt, bad arguments
    "completion/complete": frozenset({INVALID_PARAMS}),
    "logging/setLevel": frozenset(),
}
# Requests a ready session of the demo refuses whatever their params: a second
# initialize, and the tasks/* methods (the demo declares no tasks capability).
REFUSED: Final[dict[str, int]] = {
    "initialize": INVALID_REQUEST,
    "tasks/get": METHOD_NOT_FOUND,
    "tasks/result": METHOD_NOT_FOUND,
    "tasks/cancel": METHOD_NOT_FOUND,
    "tasks/list": METHOD_NOT_FOUND,
}
# Demo tools that run as long as they are asked to (the harness cancels them).
LONG_RUNNING_TOOLS: Final = frozenset({"slow", "busy", "poll", "count"})
COUNT_LIMIT: Final = 200  # `count` sends 2 frames per step: more steps are not fuzzed


# ---------------------------------------------------------------- expectations


class _Absent:
    def __repr__(self) -> str:
        return "<no id>"


NO_ID: Final = _Absent()


@dataclass(frozen=True)
class Option:
    """One acceptable outcome of one frame: no reply, or one reply that carries ``id``
    (or none) and is a result (if ``result``) or an error with a code in ``codes``."""

    reply: bool
    id: Any = NO_ID
    codes: frozenset[int] = frozenset()
    result: bool = False
    why: str = ""

    def describe(self) -> str:
        if not self.reply:
            return f"no reply ({self.why})"
        what = " or ".join([*(["a result"] if self.result else []), *(str(c) for c in sorted(self.codes))])
        return f"one reply: {what}, id {self.id!r} ({self.why})"


@dataclass(frozen=True)
class Expectation:
    category: str
    options: tuple[Option, ...]
    method: str | None = None
    id: Any = NO_ID
    starts: bool | None = False  # whether a handler task serves it (None: cannot tell)
    long_running: bool = False  # a demo tool that may outlive the harness's bound
    message: Any = None  # the parsed frame, when it parsed

    def alternatively(self, *more: Option) -> Expectation:
        return Expectation(
            self.category, self.options + more, self.method, self.id, None, self.long_running, self.message
        )


def _error(code: int, rid: Any, why: str) -> Option:
    return Option(True, rid, frozenset({code}), False, why)


def _single(category: str, option: Option, **kw: Any) -> Expectation:
    return Expectation(category, (option,), **kw)


def parse_error(why: str = "not JSON") -> Expectation:
    return _single("parse-error", _error(PARSE_ERROR, NO_ID, why))


def valid_id(value: Any) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, str)


class _BadConstant(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    raise _BadConstant(f"{name} is not JSON")


@dataclass
class _Oddities:
    huge_float: bool = False  # a number literal beyond the double range (1e400)
    huge_int: bool = False  # an integer beyond 64 bits


def _loads(text: str, odd: _Oddities) -> JsonValue:
    def parse_float(literal: str) -> float:
        value = float(literal)
        if math.isinf(value):
            odd.huge_float = True
        return value

    def parse_int(literal: str) -> int:
        value = int(literal)
        if not -(2**63) <= value < 2**64:
            odd.huge_int = True
        return value

    return json.loads(text, parse_constant=_reject_constant, parse_float=parse_float, parse_int=parse_int)


DEEP: Final = 200  # nesting past this may hit the decoder's (stack-dependent) depth limit


_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"?', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = {0x5B: 1, 0x7B: 1, 0x5D: -1, 0x7D: -1}


def nesting_depth(frame: bytes) -> int:
    """The deepest nesting of arrays and objects (brackets inside strings do not count)."""
    bound = frame.count(b"[") + frame.count(b"{")
    if bound <= DEEP:
        return bound  # an upper bound, good enough when small
    brackets = _STRING.sub(b"", frame).translate(None, _NOT_BRACKETS)
    return max(itertools.accumulate(map(_STEP.__getitem__, brackets)), default=0)


# Escapes of UTF-16 surrogates, in the text (a duplicate key may drop them from the value).
_SURROGATE_PAIR = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}")
_LONE_SURROGATE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def expect(frame: bytes) -> Expectation:
    """What a ready session of the demo server must answer to ``frame``."""
    try:
        text = frame.decode("utf-8")
    except UnicodeDecodeError:
        return _expect_invalid_utf8(frame)
    depth = nesting_depth(frame)
    odd = _Oddities()
    try:
        message = _loads(text, odd)
    except RecursionError:
        return _too_deep()
    except ValueError as exc:
        return parse_error(f"json.loads: {exc}"[:120])
    expectation = _classify(message, odd)
    if _LONE_SURROGATE.search(_SURROGATE_PAIR.sub("", text)):
        # "\ud800" is grammatical JSON but no Unicode text: refusing it is fine too.
        expectation = expectation.alternatively(_error(PARSE_ERROR, NO_ID, "lone surrogate escape"))
    if depth > DEEP:
        expectation = expectation.alternatively(*_too_deep().options)
        if expectation.id is not NO_ID:
            expectation = expectation.alternatively(_error(INVALID_PARAMS, expectation.id, "params nested too deeply"))
    return expectation


def _too_deep() -> Expectation:
    why = "nested past the depth limit"
    return Expectation(
        "too-deep",
        (_error(PARSE_ERROR, NO_ID, why), _error(INVALID_REQUEST, NO_ID, why), Option(False, why=why)),
        starts=None,
    )


def _expect_invalid_utf8(frame: bytes) -> Expectation:
    """Invalid UTF-8 is no JSON text: a parse error. Inside a string literal that the
    server skips (an unknown member, an ignored param) a lenient decoder may never look at
    it; then the frame means what it means with the bad bytes replaced, or, if the bad
    string is one the server reads, an invalid request/params error."""
    strict = parse_error("invalid UTF-8")
    lenient_text = frame.decode("utf-8", errors="replace")
    odd = _Oddities()
    try:
        message = _loads(lenient_text, odd)
    except (ValueError, RecursionError):
        return strict
    lenient = _classify(message, odd)
    options = list(strict.options)
    if lenient.options != strict.options:
        options.extend(lenient.options)
        if lenient.id is not NO_ID:
            options.append(
                Option(
                    True,
                    lenient.id,
                    frozenset({INVALID_REQUEST, INVALID_PARAMS}),
                    False,
                    "a string the server reads is not UTF-8",
                )
            )
        else:
            options.append(_error(INVALID_REQUEST, NO_ID, "a string the server reads is not UTF-8"))
    return Expectation("invalid-utf8", tuple(options), lenient.method, lenient.id, None, lenient.long_running, message)


def _classify(message: JsonValue, odd: _Oddities) -> Expectation:
    if not isinstance(message, dict):
        return _single("invalid-request", _error(INVALID_REQUEST, NO_ID, "not a JSON object"))
    has_id = "id" in message
    rid = message["id"] if has_id and valid_id(message["id"]) else NO_ID
    has_method = "method" in message
    has_result = "result" in message
    has_error = "error" in message
    method = message.get("method")
    kw: dict[str, Any] = {"id": rid, "message": message, "method": method if isinstance(method, str) else None}
    expectation: Expectation
    if message.get("jsonrpc") != "2.0":
        expectation = _single("invalid-request", _error(INVALID_REQUEST, rid, 'jsonrpc is not "2.0"'), **kw)
    elif has_id and rid is NO_ID and not (has_error and not has_result and not has_method and message["id"] is None):
        expectation = _single("invalid-request", _error(INVALID_REQUEST, NO_ID, "id neither string nor integer"), **kw)
    elif has_method:
        if not isinstance(method, str):
            expectation = _single("invalid-request", _error(INVALID_REQUEST, rid, "method is not a string"), **kw)
        elif has_result or has_error:
            expectation = _single("invalid-request", _error(INVALID_REQUEST, rid, "a request with result/error"), **kw)
        elif rid is NO_ID:
            expectation = _single("notification", Option(False, why="a notification"), **kw)
        else:
            expectation = _request(message, method, rid, odd)
    elif rid is NO_ID:
        if has_error and not has_result:
            # A peer's error about a message of ours it could not read: JSON-RPC gives it
            # "id": null, MCP leaves the id out. Either way it is a response: no reply.
            expectation = _single("response", Option(False, why="an error response without id"), **kw)
        else:
            expectation = _single("invalid-request", _error(INVALID_REQUEST, NO_ID, "no method and no id"), **kw)
    elif has_result == has_error:
        expectation = _single("invalid-request", _error(INVALID_REQUEST, rid, "neither or both of result, error"), **kw)
    else:
        expectation = _single("response", Option(False, why="a response to an id we never used"), **kw)
    if odd.huge_float or odd.huge_int:
        expectation = _out_of_range(expectation, message)
    return expectation


def _out_of_range(expectation: Expectation, message: JsonValue) -> Expectation:
    """Numbers a typed decoder cannot hold (1e400 is valid JSON; json.loads makes it inf):
    where the server reads them as params it may call them invalid params."""
    if expectation.category == "request" and expectation.id is not NO_ID:
        return expectation.alternatively(_error(INVALID_PARAMS, expectation.id, "a number out of range in params"))
    return expectation


def _request(message: dict[str, Any], method: str, rid: Any, odd: _Oddities) -> Expectation:
    kw: dict[str, Any] = {"id": rid, "message": message, "method": method}
    if method in REFUSED:
        code = REFUSED[method]
        return _single("refused", _error(code, rid, f"{method} is refused in a ready session"), **kw)
    if method not in SERVED or method not in SPEC.requests:
        return _single("method-not-found", _error(METHOD_NOT_FOUND, rid, f"no request {method!r}"), **kw)
    info = SPEC.requests[method]
    params = message.get("params", UNSET)
    if params is UNSET:
        if info.params_required:
            return _single("invalid-params", _error(INVALID_PARAMS, rid, f"{method} needs params"), **kw)
        params_ok = True
    else:
        params_ok = SPEC.params_valid(method, params, SPEC.requests)
    if not params_ok:
        return _single("invalid-params", _error(INVALID_PARAMS, rid, f"params of {method} break the schema"), **kw)
    long_running = method == "tools/call" and isinstance(params, dict) and params.get("name") in LONG_RUNNING_TOOLS
    option = Option(True, rid, SERVED[method], True, f"{method} with valid params")
    return Expectation("request", (option,), method, rid, True, long_running, message)


_DISPATCHED: Final = frozenset({"request", "refused", "method-not-found", "invalid-params"})


def expect_batch(frames: Sequence[bytes]) -> list[Expectation]:
    """Expectations for frames fed back to back, before any handler runs: a request
    whose id is that of an earlier request still in flight is refused (-32600)."""
    out: list[Expectation] = []
    started: dict[Any, bool | None] = {}
    for frame in frames:
        expectation = expect(frame)
        rid = expectation.id
        # The id check comes first: any request-shaped frame reusing an id in flight is refused.
        if expectation.category in _DISPATCHED or (expectation.starts is None and rid is not NO_ID):
            before = started.get((type(rid), rid), False)
            duplicate = _error(INVALID_REQUEST, rid, f"id {rid!r} is already in flight")
            if before is True:
                expectation = Expectation(
                    "duplicate", (duplicate,), expectation.method, rid, False, False, expectation.message
                )
            elif before is None:
                expectation = expectation.alternatively(duplicate)
            if before is not True and expectation.starts is not False:
                started[(type(rid), rid)] = expectation.starts if before is False else None
        out.append(expectation)
    return out


# ---------------------------------------------------------------- what came back


@dataclass
class Reply:
    message: dict[str, Any]
    related: Any
    final: bool


@dataclass
class Outcome:
    replies: list[Reply] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)  # sent by the server on its own
    raised: list[str] = field(default_factory=list)  # exceptions out of on_frame
    cancelled: list[Any] = field(default_factory=list)  # long runners the harness cancelled
    hung: list[str] = field(default_factory=list)  # tasks alive even after that
    malformed: list[str] = field(default_factory=list)  # frames the server sent that are not valid


class OracleError(AssertionError):
    pass


def _check_reply_shape(reply: Reply) -> str | None:
    message = reply.message
    if message.get("jsonrpc") != "2.0":
        return 'reply lacks "jsonrpc": "2.0"'
    if "id" in message and not valid_id(message["id"]):
        return f"reply has id {message['id']!r} (null or not a string/integer)"
    if ("result" in message) == ("error" in message):
        return "reply has both or neither of result and error"
    if "error" in message:
        error = message["error"]
        if not isinstance(error, dict) or not valid_id(error.get("code")) or not isinstance(error.get("code"), int):
            return f"error member malformed: {error!r}"
        if not isinstance(error.get("message"), str):
            return f"error without a message string: {error!r}"
    if not reply.final:
        return "reply not sent as the final frame of its request"
    if "id" in message and reply.related != message["id"]:
        return f"reply for id {message['id']!r} sent as related to {reply.related!r}"
    return None


def _option_matches(option: Option, reply: Reply, expectation: Expectation) -> str | None:
    message = reply.message
    if option.id is NO_ID:
        if "id" in message:
            return f"reply carries id {message['id']!r}, expected none"
    else:
        if "id" not in message:
            return f"reply lacks the id {option.id!r}"
        if message["id"] != option.id or type(message["id"]) is not type(option.id):
            return f"reply id {message['id']!r} ({type(message['id']).__name__}) != {option.id!r}"
    if "result" in message:
        if not option.result:
            return "a result where an error was due"
        method = expectation.method
        if method == "ping" and message["result"] != {}:
            return f"ping result {message['result']!r} is not {{}}"
        if method in SPEC.requests:
            errors = SPEC.result_errors(method, message["result"])
            if errors:
                return f"{method} result breaks the schema: {errors}"
        return None
    code = message["error"]["code"]
    if code not in option.codes:
        return f"error code {code} ({message['error'].get('message')!r}) not in {sorted(option.codes)}"
    return None


def verify(frames: Sequence[bytes], expectations: Sequence[Expectation], outcome: Outcome) -> None:
    """Raise :class:`OracleError` unless ``outcome`` is what ``expectations`` allow."""
    problems: list[str] = list(outcome.malformed)
    problems += [f"on_frame raised {r}" for r in outcome.raised]
    problems += [f"task still running after cancellation: {h}" for h in outcome.hung]
    for reply in outcome.replies:
        bad = _check_reply_shape(reply)
        if bad is not None:
            problems.append(f"{bad}: {reply.message!r}"[:300])
    for message in outcome.messages:
        method = message.get("method")
        errors = SPEC.notification_errors(str(method), message.get("params", UNSET))
        if "id" in message or message.get("jsonrpc") != "2.0" or errors:
            problems.append(f"bad message from the server ({errors}): {message!r}"[:300])
    cancelled = {(type(c), c) for c in outcome.cancelled}
    options: list[list[Option]] = []
    for expectation in expectations:
        choices = list(expectation.options)
        key = (type(expectation.id), expectation.id)
        if expectation.id is not NO_ID and key in cancelled:
            if not expectation.long_running:
                problems.append(f"request {expectation.id!r} did not finish within the bound (a hang)")
            choices.append(Option(False, why="cancelled by the harness: a long-running demo tool"))
        options.append(choices)
    if not problems:
        detail = _assign(options, outcome.replies, expectations)
        if detail is not None:
            problems.append(detail)
    if problems:
        raise OracleError(_report(frames, expectations, outcome, problems))


def _assign(options: list[list[Option]], replies: list[Reply], expectations: Sequence[Expectation]) -> str | None:
    """Match every reply to a distinct frame's option (backtracking; batches are small)."""
    used = [False] * len(replies)
    mismatch: list[str] = []

    def go(i: int) -> bool:
        if i == len(options):
            return all(used)
        for option in options[i]:
            if not option.reply:
                if go(i + 1):
                    return True
                continue
            for j, reply in enumerate(replies):
                if used[j]:
                    continue
                why = _option_matches(option, reply, expectations[i])
                if why is not None:
                    mismatch.append(why)
                    continue
                used[j] = True
                if go(i + 1):
                    return True
                used[j] = False
        return False

    if go(0):
        return None
    if len(options) == 1 and len(replies) <= 1:
        wanted = " | ".join(o.describe() for o in options[0])
        got = "no reply" if not replies else f"{replies[0].message!r}"[:300]
        return f"expected {wanted}; got {got}" + (f" [{mismatch[0]}]" if mismatch else "")
    return f"replies do not match the frames ({len(replies)} replies): {mismatch[:3]}"


def _report(frames: Sequence[bytes], expectations: Sequence[Expectation], outcome: Outcome, problems: list[str]) -> str:
    lines = ["the server's answer breaks the oracle:"]
    lines += [f"  - {p}" for p in problems]
    for frame, expectation in zip(frames, expectations, strict=True):
        shown = frame if len(frame) <= 400 else frame[:200] + b"..." + frame[-100:]
        lines.append(f"  frame ({len(frame)} bytes, {expectation.category}): {shown!r}")
    lines += [f"  reply: {r.message!r}"[:400] for r in outcome.replies]
    return "\n".join(lines)


# ---------------------------------------------------------------- bugs found and fixed

# One frame for each bug the fuzzers found (each fixed since): replayed by test_fuzz.py's
# regression test. A failure the oracle sees is a failure, whatever frame shows it: the
# fuzzers keep no list of failures to tolerate.
FIXED_BUGS: Final[dict[str, bytes]] = {
    # _meta.progressToken must be a string or an integer: 0.5 was served, then used.
    "progress-token-type-unchecked": (
        b'{"jsonrpc":"2.0","id":2,"method":"ping","params":{"_meta":{"progressToken":0.5}}}'
    ),
    # Text that is not JSON got -32600 instead of -32700 when it started like a non-object.
    "invalid-json-answered-as-invalid-request": b"[",
    # Invalid UTF-8 in a string the decoder reads escaped as UnicodeDecodeError: no answer.
    "unicode-decode-error-escapes": b'{"jsonrpc":"2.0","id":1,"method":"\xff"}',
    # A number beyond the double range in the envelope: -32600 without the readable id.
    "out-of-range-number-in-envelope": b'{"jsonrpc":"2.0","id":7,"method":1e400}',
    # An error response with "id": null was answered instead of dropped.
    "null-id-error-response-answered": b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}',
}


# ---------------------------------------------------------------- the harness


def frame_of(message: JsonValue) -> bytes:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()


INIT: Final[dict[str, Any]] = {
    "jsonrpc": "2.0",
    "id": "init",
    "method": "initialize",
    "params": {"protocolVersion": SCHEMA_REVISION, "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "0"}},
}
INITIALIZED: Final[dict[str, Any]] = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def unbounded_work(message: JsonValue) -> bool:
    """A frame asking the demo's ``count`` tool for more steps than the harness can afford
    (it never sleeps, so neither a virtual nor a real clock could stop it in time)."""
    if not isinstance(message, dict) or message.get("method") != "tools/call":
        return False
    params = message.get("params")
    if not isinstance(params, dict) or params.get("name") != "count":
        return False
    arguments = params.get("arguments")
    to = arguments.get("to") if isinstance(arguments, dict) else None
    try:
        return float(to) > COUNT_LIMIT  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return False


class FuzzHarness:
    """A ready demo-server session, fed frame by frame on a virtual-clock loop."""

    def __init__(self, *, spins: int = 8, bound: float = 60.0) -> None:
        self.demo = load_demo()
        self.server: Any = self.demo.server
        # The demo's plain def handlers run inline here: this loop's clock is virtual, so the
        # real time a worker thread takes would read as a hang (the thread pool has tests of
        # its own; the oracle is about the answers).
        self.server.threads = self.server.features.threads = InlineThreads()
        self.spins = spins
        self.bound = bound  # virtual seconds a frame's handlers may take
        self.loop = VirtualClockLoop()
        self.transport = CollectingTransport()
        options = dict(self.server.features.session_options)
        self.session = ServerSession(self.transport, self.server.features, **options)
        self.server.sessions.add(self.session)
        self.frames = 0  # frames fed
        self.skipped = 0  # frames refused by unbounded_work
        self._tools = dict(self.server.catalog.tools)
        self._files = dict(getattr(self.demo, "FILES", {}))
        self._pings = itertools.count()
        outcome = self.feed([frame_of(INIT)])
        assert len(outcome.replies) == 1 and "result" in outcome.replies[0].message, outcome
        self.feed([frame_of(INITIALIZED)])
        assert self.session.state == "ready", self.session.state

    def close(self) -> None:
        self.server.sessions.discard(self.session)
        self.loop.run_until_complete(self.session.close())
        self.loop.close()

    # -------------------------------------------------------------- feeding

    def feed(self, frames: Sequence[bytes]) -> Outcome:
        """Feed ``frames`` back to back, run the loop until all their work is done (or
        cancelled), and return what the session sent."""
        return self.loop.run_until_complete(self._feed(frames))

    async def _feed(self, frames: Sequence[bytes]) -> Outcome:
        outcome = Outcome()
        for frame in frames:
            self.frames += 1
            try:
                self.session.on_frame(frame)
            except Exception as exc:  # noqa: BLE001 - the oracle reports it
                outcome.raised.append(f"{type(exc).__name__}: {exc}"[:200])
        if not await self._settle():
            for rid in [*self.session._inflight, *getattr(self.session, "_queued", {})]:
                outcome.cancelled.append(rid)
                self.session.on_frame(
                    frame_of(
                        {
                            "jsonrpc": "2.0",
                            "method": "notifications/cancelled",
                            "params": {"requestId": rid, "reason": "fuzz bound"},
                        }
                    )
                )
            if not await self._settle():
                outcome.hung = [repr(t)[:200] for t in self._busy()]
                for task in self._busy():
                    task.cancel()
                await asyncio.wait(self._busy(), timeout=1)
        self._restore()
        await self._settle()
        self._collect(outcome)
        return outcome

    def _busy(self) -> list[asyncio.Task[Any]]:
        me = asyncio.current_task()
        return [t for t in asyncio.all_tasks() if t is not me]

    async def _settle(self) -> bool:
        """Run the loop until no task is left; False if some remain after the bound."""
        session = self.session
        for _ in range(self.spins):
            if not (session._inflight or session._background) and not self._busy():
                return True
            await asyncio.sleep(0)
        deadline = self.loop.time() + self.bound
        while (pending := self._busy()) and self.loop.time() < deadline:
            await asyncio.wait(pending, timeout=deadline - self.loop.time())
        return not self._busy()

    def _restore(self) -> None:
        """Undo what fuzzed tool calls changed in the shared demo server."""
        for name in [n for n in self.server.catalog.tools if n not in self._tools]:
            self.server.remove_tool(name)
        files = getattr(self.demo, "FILES", None)
        if files is not None and files != self._files:
            files.clear()
            files.update(self._files)

    def _collect(self, outcome: Outcome) -> None:
        for sent in self.transport.take():
            try:
                message = json.loads(sent.frame)
            except ValueError as exc:
                outcome.malformed.append(f"the server sent invalid JSON ({exc}): {sent.frame[:200]!r}")
                continue
            if not isinstance(message, dict):
                outcome.malformed.append(f"the server sent a non-object: {sent.frame[:200]!r}")
            elif "method" in message:
                outcome.messages.append(message)
            else:
                outcome.replies.append(Reply(message, sent.related, sent.final))

    # -------------------------------------------------------------- checking

    def check_frame(self, frame: bytes) -> list[dict[str, Any]] | None:
        """Feed one frame, check the replies against the oracle, return them (None when
        the frame asks for unbounded work and was not fed)."""
        return self.loop.run_until_complete(self._check(frame))

    def check_many(self, frames: Iterable[bytes]) -> int:
        """:meth:`check_frame` each frame in turn, in one run of the loop (starting the
        loop costs more than most frames); returns how many were fed."""
        return self.loop.run_until_complete(self._check_many(frames))

    async def _check_many(self, frames: Iterable[bytes]) -> int:
        before = self.frames
        for frame in frames:
            await self._check(frame)
        return self.frames - before

    async def _check(self, frame: bytes) -> list[dict[str, Any]] | None:
        expectation = expect(frame)
        if unbounded_work(expectation.message):
            self.skipped += 1
            return None
        outcome = await self._feed([frame])
        verify([frame], [expectation], outcome)
        return [r.message for r in outcome.replies]

    def check_batch(self, frames: Sequence[bytes]) -> list[dict[str, Any]] | None:
        """Feed frames back to back (ids may collide while in flight) and check them."""
        expectations = expect_batch(frames)
        if any(unbounded_work(e.message) for e in expectations):
            self.skipped += len(frames)
            return None
        outcome = self.feed(frames)
        verify(frames, expectations, outcome)
        return [r.message for r in outcome.replies]

    def assert_healthy(self) -> None:
        """The session still answers a ping, and no task or request is left behind."""
        rid = f"health-{next(self._pings)}"
        outcome = self.feed([frame_of({"jsonrpc": "2.0", "id": rid, "method": "ping"})])
        replies = [r.message for r in outcome.replies]
        assert replies == [{"jsonrpc": "2.0", "id": rid, "result": {}}], f"ping after fuzzing got {replies!r}"
        assert not outcome.raised and not outcome.hung, outcome
        assert not self.session._inflight, f"leaked in-flight requests: {list(self.session._inflight)}"
        assert not getattr(self.session, "_queued", {}), "leaked queued requests"
        assert not self.session._background, f"leaked background tasks: {self.session._background}"
        leftover = [t for t in asyncio.all_tasks(self.loop) if not t.done()]
        assert not leftover, f"leaked tasks: {leftover}"
        assert self.session.state == "ready", self.session.state


_default: FuzzHarness | None = None


def harness() -> FuzzHarness:
    """The process-wide harness (one session, reused: fuzzing is about what a long-lived
    session survives)."""
    global _default
    if _default is None:
        _default = FuzzHarness()
    return _default


def check_frame(frame: bytes) -> list[dict[str, Any]] | None:
    """Feed one frame to the shared harness and check it against the oracle."""
    return harness().check_frame(frame)


# ---------------------------------------------------------------- the corpus


def _call(rid: Any, method: str, params: Any = UNSET) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not UNSET:
        message["params"] = params
    return message


def _tool(rid: Any, name: str, arguments: Any = UNSET, **extra: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, **extra}
    if arguments is not UNSET:
        params["arguments"] = arguments
    return _call(rid, "tools/call", params)


def _note(method: str, params: Any = UNSET) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not UNSET:
        message["params"] = params
    return message


CURSOR: Final = base64.urlsafe_b64encode(b"o:1").decode()

CORPUS: Final[list[dict[str, Any]]] = [
    INIT,
    _call(1, "ping"),
    _call("p", "ping", {}),
    _call(2, "ping", {"_meta": {"progressToken": "t"}}),
    _call(3, "tools/list"),
    _call(4, "tools/list", {"cursor": CURSOR}),
    _call(5, "resources/list"),
    _call(6, "resources/templates/list", {}),
    _call(7, "prompts/list", {"cursor": "bm9wZQ=="}),
    _tool(10, "add", {"a": 1, "b": 2}),
    _tool(11, "add", {"a": "x", "b": 2}),
    _tool(12, "sum_all", {"numbers": [1, 2, 3]}),
    _tool(13, "sum_all", {"numbers": "123"}),
    _tool(14, "weather", {"city": "Paris", "days": 2}),
    _tool(15, "weather", {"city": ""}),
    _tool(16, "echo", {"text": "h\u00e9llo \u2603"}),
    _tool(17, "echo", {}),
    _tool(18, "pixel"),
    _tool(19, "noisy", {}),
    _tool(20, "fail", {"kind": "tool"}),
    _tool(21, "fail", {"kind": "crash"}),
    _tool(22, "slow", {"seconds": 0.01}),
    _tool(23, "slow", {"seconds": "soon"}),
    _tool(24, "count", {"to": 3}, _meta={"progressToken": "tok"}),
    _tool(25, "count", {"to": -1}),
    _tool(26, "ask_model", {"question": "2+2?"}),
    _tool(27, "ask_user"),
    _tool(28, "roots"),
    _tool(29, "touch", {"name": "notes.txt"}),
    _tool(30, "add_tool", {"name": "fuzzed"}),
    _tool(31, "add_tool", {"name": "no spaces allowed"}),
    _tool(32, "poll"),
    _tool(33, "pid"),
    _tool(34, "busy", {"seconds": 0.01}),
    _tool(35, "max_busy"),
    _tool(36, "no_such_tool", {}),
    _tool("s", "add", {"a": 1}, task={"ttl": 1000}),
    _call(40, "resources/read", {"uri": "config://app"}),
    _call(41, "resources/read", {"uri": "bin://logo"}),
    _call(42, "resources/read", {"uri": "file:///notes.txt"}),
    _call(43, "resources/read", {"uri": "file:///missing"}),
    _call(44, "resources/subscribe", {"uri": "file:///notes.txt"}),
    _call(45, "resources/unsubscribe", {"uri": "file:///notes.txt"}),
    _call(50, "prompts/get", {"name": "review", "arguments": {"code": "print(1)"}}),
    _call(51, "prompts/get", {"name": "review", "arguments": {}}),
    _call(52, "prompts/get", {"name": "chat", "arguments": {"topic": "fuzzing"}}),
    _call(53, "prompts/get", {"name": "nope"}),
    _call(
        60,
        "completion/complete",
        {"ref": {"type": "ref/prompt", "name": "review"}, "argument": {"name": "language", "value": "p"}},
    ),
    _call(
        61,
        "completion/complete",
        {
            "ref": {"type": "ref/resource", "uri": "file:///{name}"},
            "argument": {"name": "name", "value": "n"},
            "context": {"arguments": {}},
        },
    ),
    _call(70, "logging/setLevel", {"level": "debug"}),
    _call(71, "logging/setLevel", {"level": "loud"}),
    _call(80, "tasks/list"),
    _call(81, "tasks/get", {"taskId": "t1"}),
    _call(82, "no/such/method", {}),
    _call(83, "notifications/initialized"),
    _call(84, "sampling/createMessage", {}),
    _note("notifications/initialized"),
    _note("notifications/cancelled", {"requestId": 12345, "reason": "fuzz"}),
    _note("notifications/progress", {"progressToken": "nobody", "progress": 1, "total": 2}),
    _note("notifications/roots/list_changed"),
    _note("notifications/no-such-thing", {"x": 1}),
    _note("tools/call", {"name": "echo", "arguments": {"text": "a request without id"}}),
    {"jsonrpc": "2.0", "id": 999, "result": {}},
    {"jsonrpc": "2.0", "id": "zz", "error": {"code": -32000, "message": "unknown"}},
    {"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}},
]
CORPUS_FRAMES: Final[list[bytes]] = [frame_of(m) for m in CORPUS]


# ---------------------------------------------------------------- mutators

JSON_SAMPLES: Final[dict[str, list[JsonValue]]] = {
    "null": [None],
    "boolean": [True, False],
    "integer": [0, -1, 7, 2**31, 2**63 - 1],
    "number": [0.5, -1.25, 1e-7, 3.0e38],
    "string": ["", "x", "2.0", "ping", "\u2603", "file:///notes.txt"],
    "array": [[], [1, "a"], [{}]],
    "object": [{}, {"a": 1}, {"_meta": {}}],
}
JSON_TYPES: Final = tuple(JSON_SAMPLES)
# Forty short tokens, grouped by kind (numbers, strings, JSON keys, bad bytes, punctuation).
TOKENS: Final[list[bytes]] = [
    b"null", b"true", b"false", b"0", b"-0", b"1.5", b"1e400", b"-1e400", b"12345678901234567890",
    b"123456789012345678901234567890", b"1e-400", b'""', b'"\\ud800"', b'"\\udc00x"', b'"\\u0000"', b"[]", b"{}",
    b'"2.0"', b'"jsonrpc"', b'"id"', b'"method"', b'"params"', b'"result"', b'"error"', b"NaN", b"Infinity",
    b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00", b"\r", b"\t", b",", b":", b"{", b"}", b"[", b"]", b'"', b"\\",
]  # fmt: skip
METHODS: Final[list[str]] = sorted({*SPEC.requests, *SPEC.notifications, "no/such", "", "sampling/createMessage"})


def paths(value: JsonValue, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every key path inside a JSON value (object keys and array indices)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*prefix, key)
            yield from paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield (*prefix, index)
            yield from paths(item, (*prefix, index))


def replaced(value: JsonValue, path: tuple[Any, ...], new: JsonValue) -> JsonValue:
    """A copy of ``value`` with the member at ``path`` set to ``new``."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: replaced(value[head], rest, new)}
    copy = list(value)
    copy[head] = replaced(copy[head], rest, new)
    return copy


def without(value: dict[str, Any], path: tuple[Any, ...]) -> JsonValue:
    if len(path) == 1:
        if isinstance(value, dict):
            return {k: v for k, v in value.items() if k != path[0]}
        return [v for i, v in enumerate(value) if i != path[0]]
    return replaced(value, path[:1], without(value[path[0]], path[1:]))


def wrong_type_frames() -> Iterator[bytes]:
    """For every member of every corpus message, that member replaced by one value of
    each JSON type."""
    for message in CORPUS:
        for path in paths(message):
            for kind in JSON_TYPES:
                yield frame_of(replaced(message, path, JSON_SAMPLES[kind][0]))


class FrameFactory:
    """Fast, seeded frame generators (plain ``random``: the hypothesis tests draw the seed)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        # Mutator and weight pairs, packed so that the weights compare at a glance.
        self.kinds: list[tuple[Callable[[], bytes], int]] = [
            (self.corpus, 4), (self.truncated, 10), (self.byte_mutated, 20), (self.token_spliced, 12),
            (self.random_bytes, 5), (self.invalid_utf8, 6), (self.wrong_type, 14), (self.random_id, 6),
            (self.huge_number, 4), (self.deep, 2), (self.bad_notification, 5), (self.unknown_response, 4),
            (self.random_envelope, 8),
        ]  # fmt: skip
        self._choices = [k for k, w in self.kinds for _ in range(w)]

    def any(self) -> bytes:
        return self.rng.choice(self._choices)()

    def message(self) -> dict[str, Any]:
        return self.rng.choice(CORPUS)

    def corpus(self) -> bytes:
        return self.rng.choice(CORPUS_FRAMES)

    def truncated(self) -> bytes:
        frame = self.corpus()
        return frame[: self.rng.randrange(len(frame))]

    def byte_mutated(self) -> bytes:
        data = bytearray(self.corpus())
        for _ in range(self.rng.choice((1, 1, 1, 2, 3, 8))):
            op = self.rng.randrange(6)
            at = self.rng.randrange(len(data) + 1)
            if op == 0 and data:
                data[min(at, len(data) - 1)] = self.rng.randrange(256)
            elif op == 1 and data:
                data[min(at, len(data) - 1)] ^= 1 << self.rng.randrange(8)
            elif op == 2:
                data[at:at] = bytes(self.rng.randrange(256) for _ in range(self.rng.randint(1, 4)))
            elif op == 3 and data:
                del data[at : at + self.rng.randint(1, 8)]
            elif op == 4 and data:
                start = self.rng.randrange(len(data))
                data[at:at] = data[start : start + self.rng.randint(1, 16)]
            else:
                other = self.corpus()
                data = data[:at] + other[self.rng.randrange(len(other)) :]
        return bytes(data)

    def token_spliced(self) -> bytes:
        """A token of the frame (a scalar, a bracket, a quote) swapped for an interesting one."""
        frame = self.corpus()
        cut = [i for i, b in enumerate(frame) if b in b',:{}[]"']
        i, j = sorted(self.rng.sample(cut, 2)) if len(cut) >= 2 else (0, len(frame))
        return frame[: i + 1] + self.rng.choice(TOKENS) + frame[j:]

    def random_bytes(self) -> bytes:
        n = self.rng.choice((0, 1, 2, 8, 64, 256))
        alphabet = self.rng.choice((None, b'{}[]",:0123456789.eE-+truefalsn \\u'))
        if alphabet is None:
            return self.rng.randbytes(n)
        return bytes(self.rng.choice(alphabet) for _ in range(n))

    def invalid_utf8(self) -> bytes:
        frame = self.corpus()
        bad = self.rng.choice(
            (b"\xff", b"\xfe\xff", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\xc0\xaf", b"\x80", b"\xf4\x90\x80\x80")
        )
        strings = [i for i, b in enumerate(frame) if b == 0x22]
        at = self.rng.choice(strings) + 1 if strings and self.rng.random() < 0.8 else self.rng.randrange(len(frame) + 1)
        return frame[:at] + bad + frame[at:]

    def json_value(self, depth: int = 0) -> JsonValue:
        kind = self.rng.choice(JSON_TYPES if depth < 3 else JSON_TYPES[:5])
        if kind == "array" and self.rng.random() < 0.5:
            return [self.json_value(depth + 1) for _ in range(self.rng.randint(0, 3))]
        if kind == "object" and self.rng.random() < 0.5:
            keys = ["a", "name", "_meta", "progressToken", "uri", "cursor", "arguments", "text"]
            return {self.rng.choice(keys): self.json_value(depth + 1) for _ in range(self.rng.randint(0, 3))}
        return self.rng.choice(JSON_SAMPLES[kind])

    def wrong_type(self) -> bytes:
        message = self.message()
        all_paths = list(paths(message))
        for _ in range(self.rng.choice((1, 1, 2))):
            path = self.rng.choice(all_paths)
            if self.rng.random() < 0.15:
                message = without(message, path)
                break
            message = replaced(message, path, self.json_value())
            all_paths = list(paths(message)) or [("x",)]
        return frame_of(message)

    def random_id(self) -> bytes:
        message = dict(self.message())
        message["id"] = self.rng.choice(
            [*itertools.chain(*JSON_SAMPLES.values()), -(2**63), 2**64 - 1, 2**64, 10**20, 1.0, -0.0, "", "1", " "]
        )
        if self.rng.random() < 0.2:
            del message["id"]
        return frame_of(message)

    def huge_number(self) -> bytes:
        frame = frame_of(self.message())
        number = self.rng.choice(
            (
                b"1e400",
                b"-1e400",
                b"1e-400",
                b"12345678901234567890",
                b"-12345678901234567890",
                b"9" * 40,
                b"1" + b"0" * 400,
                b"0.0000000000000000000000000001",
                b"1E+308",
            )
        )
        spots = [i for i in range(len(frame)) if frame[i : i + 1] in (b":", b"[") and frame[i + 1 : i + 2] != b'"']
        if not spots:
            return frame
        at = self.rng.choice(spots) + 1
        end = at
        while end < len(frame) and frame[end : end + 1] not in b",}]":
            end += 1
        return frame[:at] + number + frame[end:]

    def deep(self) -> bytes:
        depth = self.rng.choice((10, 50, 150, 5_000, 100_000)) if self.rng.random() < 0.3 else self.rng.randint(2, 40)
        opener, closer = self.rng.choice(((b"[", b"]"), (b'{"a":', b"}")))
        inner = opener * depth + (b"1" if opener == b'{"a":' else b"") + closer * depth
        where = self.rng.randrange(4)
        if where == 0:
            return inner
        if where == 1:
            return b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":' + inner + b"}}"
        if where == 2:
            return (
                b'{"jsonrpc":"2.0","id":"d","method":"tools/call","params":{"name":"echo","arguments":{"text":'
                + inner
                + b"}}}"
            )
        return b'{"jsonrpc":"2.0","id":2,"method":"ping","extra":' + inner + b"}"

    def bad_notification(self) -> bytes:
        method = self.rng.choice(sorted(SPEC.notifications))
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if self.rng.random() < 0.9:
            message["params"] = self.json_value()
        return frame_of(message)

    def unknown_response(self) -> bytes:
        rid = self.rng.choice((0, 1, 10**6, "x", "", "init", 2**63 - 1))
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid}
        if self.rng.random() < 0.5:
            message["result"] = self.json_value()
        else:
            message["error"] = self.rng.choice(({"code": -1, "message": "m"}, self.json_value()))
        return frame_of(message)

    def random_envelope(self) -> bytes:
        message: dict[str, Any] = {}
        makers: list[tuple[str, Callable[[], JsonValue]]] = [
            ("jsonrpc", lambda: "2.0" if self.rng.random() < 0.8 else self.json_value()),
            ("id", lambda: self.rng.choice((1, "a", 2**40)) if self.rng.random() < 0.7 else self.json_value()),
            ("method", lambda: self.rng.choice(METHODS) if self.rng.random() < 0.8 else self.json_value()),
            ("params", lambda: self.json_value()),
            ("result", lambda: self.json_value()),
            ("error", lambda: self.json_value()),
        ]
        for key, make in makers:
            if self.rng.random() < (0.8 if key in ("jsonrpc", "id", "method") else 0.15):
                message[key] = make()
        return frame_of(message)
