"""A stateless-era client's call through to a handshake-era backend, across its rounds of
questions.

The backend asks in the middle of the call (``elicitation/create``, ``sampling/createMessage``,
``roots/list``, requests on its connection); the client can only be asked by an
InputRequiredResult that ends its request. So the call goes on in a task of its own, on a
connection it holds alone (:mod:`.link`), and a :class:`Round` stands between the two:
each of the backend's questions waits in it; the client's request is answered with every
question pending (keyed as the backend keyed it, ``dev.mcpgen/inputKey``, else
``elicitation-1``, ...) and a ``requestState`` the proxy seals (the front server's own
seal: tampering, another request's or another caller's state are refused before the proxy
sees it) naming the round and the worker holding it. The client's retry answers the
waiting questions; the backend goes on, to its result or its next question.

A round waits ``round_timeout`` seconds for the retry, then the backend's call is cancelled
and its connection freed; at most ``max_rounds`` wait at once (more calls that ask are
refused with -32000).

Several workers (:class:`SharedRounds`): the backend's connection and its waiting request
live in the worker that started the call. A retry landing on another worker writes its
answers into the round's record in the shared task store (Redis); the owner, watching the
record, answers the backend and writes the outcome (the result, the next questions, or
the error) back, which the other worker sends to its client.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

import msgspec

from mcpgen.runtime.errors import INTERNAL_ERROR, INVALID_PARAMS, McpError
from mcpgen.runtime.gateway.link import Busy, RequestOwner, short_key
from mcpgen.runtime.gateway.relay import Front
from mcpgen.runtime.jsonrpc.kernel import Ready
from mcpgen.runtime.server.input_required import answer_as_result, wire_params

if TYPE_CHECKING:
    from mcpgen.runtime.gateway.link import Conn, Link
    from mcpgen.runtime.stores.task_store import TaskStore

log = logging.getLogger("mcpgen")

ROUND_KEY = "dev.mcpgen/round"
"""Under this key, the sealed ``requestState`` names the round a retry continues."""
WORKER_KEY = "dev.mcpgen/worker"
GRACE = 0.025  # seconds to let questions asked together (asyncio.gather) join one round
_RESULT_NAMES = {
    "elicitation/create": "ElicitResult",
    "sampling/createMessage": "CreateMessageResult",
    "roots/list": "ListRootsResult",
}


class RoundEnded(McpError):
    def __init__(self) -> None:
        super().__init__(INVALID_PARAMS, "Invalid params: this call's round has ended (answered, or too late)")


class Outcome(msgspec.Struct, frozen=True):
    """Where a call stands: ``result`` (relayed), ``questions`` (key -> {method, params}) or
    ``error``."""

    result: Any = None
    questions: dict[str, Any] | None = None
    error: McpError | None = None


class Question:
    __slots__ = ("method", "params", "answer")

    def __init__(self, method: str, params: Any, answer: asyncio.Future[Any]) -> None:
        self.method = method
        self.params = params
        self.answer = answer


class Round(RequestOwner):
    """One call held open across rounds (see the module's docstring); the owner of its
    connection while it lasts."""

    def __init__(self, rounds: Rounds, link: Link, conn: Conn, front: Front) -> None:
        super().__init__(front)
        self.rounds = rounds
        self.link = link
        self.conn = conn
        self.id = secrets.token_urlsafe(18)
        self.pending: dict[str, Question] = {}
        self.given: dict[str, Any] = {}  # answers this request carries for questions not yet asked
        self.refusal: McpError | None = None
        self.counts: dict[str, int] = {}
        self.task: asyncio.Task[Any] | None = None
        self.wake = asyncio.Event()
        self.waiting: asyncio.TimerHandle | None = None  # the retry's deadline, while it waits for one
        self.closed = False

    def start(self, call: Coroutine[Any, Any, Any]) -> None:
        self.task = asyncio.ensure_future(call)
        self.task.add_done_callback(lambda _: self.wake.set())

    # ------------------------------------------------------------ the backend's side

    async def ask(self, method: str, key: str | None, params: Any) -> Any:
        if key is None or key in self.pending:
            count = self.counts[method] = self.counts.get(method, 0) + 1
            key = short_key(method, count)
            while key in self.pending:
                count = self.counts[method] = count + 1
                key = short_key(method, count)
        if key in self.given:  # the request carried the answer already
            try:
                return answer_as_result(_RESULT_NAMES[method], self.given.pop(key), key)
            except McpError as exc:
                self.refusal = exc  # the client's answer is malformed: its request is refused
                self.wake.set()
                raise
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.pending[key] = Question(method, wire_params(params), answer)
        self.wake.set()
        return await answer

    # ------------------------------------------------------------ the client's side

    def give(self, responses: dict[str, Any]) -> None:
        """A retry's answers: each waiting question it answers goes to the backend (all
        checked first: one malformed answer refuses the retry, nothing is sent)."""
        checked: dict[str, Any] = {}
        for key, question in self.pending.items():
            if key in responses:
                checked[key] = answer_as_result(_RESULT_NAMES[question.method], responses[key], key)
        for key, answer in checked.items():
            question = self.pending.pop(key)
            if not question.answer.done():
                question.answer.set_result(answer)
        self.given = {k: v for k, v in responses.items() if k not in checked}
        self.park(False)

    async def next(self) -> Outcome:
        """The call's next outcome: its result or error, or the questions it waits on."""
        while True:
            if self.refusal is not None:
                return Outcome(error=self.refusal)
            task = self.task
            if task is not None and task.done():
                return _ended(task)
            if self.pending:
                await asyncio.sleep(GRACE)  # questions asked together arrive together
                if task is not None and task.done():
                    return _ended(task)
                return Outcome(questions={k: {"method": q.method, "params": q.params} for k, q in self.pending.items()})
            self.wake.clear()
            await self.wake.wait()

    def park(self, waiting: bool) -> None:
        """Wait for the client's retry (``waiting``) at most ``round_timeout`` seconds, or
        stop waiting for it (it came)."""
        if self.waiting is not None:
            self.waiting.cancel()
            self.waiting = None
        if waiting:
            self.waiting = asyncio.get_running_loop().call_later(self.rounds.round_timeout, self.expire)

    def expire(self) -> None:
        log.info("mcpgen gateway: a round of %s was never answered: its call is cancelled", self.link.describe())
        asyncio.ensure_future(self.close())

    async def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.park(False)
        self.rounds.forget(self)
        for question in self.pending.values():
            question.answer.cancel()
        task = self.task
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        self.link.release(self.conn)


def _ended(task: asyncio.Task[Any]) -> Outcome:
    if task.cancelled():
        return Outcome(error=McpError(INTERNAL_ERROR, "the call was cancelled"))
    exc = task.exception()
    if exc is None:
        return Outcome(result=task.result())
    if isinstance(exc, McpError):
        return Outcome(error=exc)
    log.error("mcpgen gateway: a relayed call failed", exc_info=exc)
    return Outcome(error=McpError(INTERNAL_ERROR, "Internal error"))


class Rounds:
    """The rounds waiting in this process (and, with a shared store, how a retry reaches
    the worker holding its round)."""

    def __init__(self, *, round_timeout: float = 300.0, max_rounds: int = 256, store: TaskStore | None = None) -> None:
        self.round_timeout = round_timeout
        self.max_rounds = max_rounds
        self.worker = secrets.token_urlsafe(12)
        self.live: dict[str, Round] = {}
        self.shared = SharedRounds(self, store) if store is not None else None

    def open(self, link: Link, conn: Conn, front: Front) -> Round:
        found = Round(self, link, conn, front)
        conn.owner = found
        self.live[found.id] = found
        return found

    def forget(self, found: Round) -> None:
        self.live.pop(found.id, None)
        if self.shared is not None:
            self.shared.forget(found)

    async def outcome(self, found: Round) -> Outcome:
        """The round's next outcome; a round left waiting is parked (and shared), one that
        ended is closed."""
        try:
            outcome = await found.next()
        except BaseException:
            await found.close()  # the client went away in the middle: the call goes too
            raise
        if outcome.questions is not None:
            if found.waiting is None and self.waiting() >= self.max_rounds:
                # Refused, not evicting a round that waits already: this call ends here.
                await found.close()
                return Outcome(error=Busy(f"{self.max_rounds} calls are waiting for their clients' answers"))
            found.park(True)
            if self.shared is not None:
                await self.shared.publish(found, outcome)
        else:
            await found.close()
        return outcome

    def waiting(self) -> int:
        """How many rounds wait for their client's retry."""
        return sum(1 for found in self.live.values() if found.waiting is not None)

    async def resume(self, round_id: str, worker: str, responses: dict[str, Any]) -> Outcome:
        """A retry's answers to round ``round_id``, wherever it waits; its next outcome."""
        found = self.live.get(round_id)
        if found is not None:
            found.give(responses)
            return await self.outcome(found)
        if worker != self.worker and self.shared is not None:
            return await self.shared.resume(round_id, responses)
        raise RoundEnded()


class SharedRounds:
    """Rounds reachable from every worker through a shared task store (see the module's
    docstring). The record, JSON: ``s`` the state ("asking", "answered", "done"), ``n`` a
    counter every write raises, ``w`` the worker holding the round, and ``q`` (questions),
    ``r`` (a retry's answers) or ``o`` (the outcome: a relayed result or an error)."""

    def __init__(self, rounds: Rounds, store: TaskStore) -> None:
        self.rounds = rounds
        self.store = store
        self.watchers: dict[str, asyncio.Task[None]] = {}

    def _key(self, round_id: str) -> str:
        return f"gateway-round:{round_id}"

    def _ttl(self) -> int:
        return int((self.rounds.round_timeout + 60) * 1000)

    async def publish(self, found: Round, outcome: Outcome) -> None:
        record = {"s": "asking", "n": 0, "w": self.rounds.worker, "q": outcome.questions}
        data = msgspec.json.encode(record)
        key = self._key(found.id)
        current = await self.store.get(key)
        if current is None:
            await self.store.create(key, data, self._ttl())
        else:
            seen = msgspec.json.decode(current)
            record["n"] = int(seen.get("n", 0)) + 1
            data = msgspec.json.encode(record)
            await self.store.replace(key, current, data, self._ttl())
        if found.id not in self.watchers:
            self.watchers[found.id] = asyncio.ensure_future(self._watch(found, data))

    def forget(self, found: Round) -> None:
        watcher = self.watchers.pop(found.id, None)
        if watcher is not None and watcher is not asyncio.current_task():
            watcher.cancel()
        # Later, not now: a worker waiting for the outcome just written reads it first.
        asyncio.get_running_loop().call_later(10.0, self._delete, self._key(found.id))

    def _delete(self, key: str) -> None:
        asyncio.ensure_future(self.store.delete(key)).add_done_callback(_quiet)

    async def _watch(self, found: Round, seen: bytes) -> None:
        """The owner's side: answers written by another worker reach the backend, and the
        call's next outcome is written back."""
        key = self._key(found.id)
        try:
            while not found.closed:
                current = await self.store.watch(key, seen, 5.0)
                if current is None:
                    return
                seen = current
                record = msgspec.json.decode(current)
                if record.get("s") != "answered":
                    continue
                responses = record.get("r") if isinstance(record.get("r"), dict) else {}
                try:
                    found.give(responses)
                    outcome = await found.next()
                except McpError as exc:
                    outcome = Outcome(error=exc)
                done = outcome.questions is None
                answer: dict[str, Any] = {"s": "done" if done else "asking", "n": int(record.get("n", 0)) + 1}
                answer["w"] = self.rounds.worker
                if outcome.questions is not None:
                    answer["q"] = outcome.questions
                    found.park(True)
                elif outcome.error is not None:
                    answer["o"] = {"error": {"code": outcome.error.code, "message": outcome.error.message}}
                    if outcome.error.data is not None:
                        answer["o"]["error"]["data"] = outcome.error.data
                else:
                    result = outcome.result
                    body = result.body if isinstance(result, Ready) else result
                    if isinstance(body, msgspec.Raw):
                        body = msgspec.json.decode(body)
                    answer["o"] = {"kind": result.kind if isinstance(result, Ready) else "complete", "body": body}
                data = msgspec.json.encode(answer)
                if await self.store.replace(key, current, data, self._ttl()):
                    seen = data
                if done:
                    self.watchers.pop(found.id, None)
                    await found.close()
                    return
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("mcpgen gateway: the shared round %s broke", found.id)
            await found.close()

    async def resume(self, round_id: str, responses: dict[str, Any]) -> Outcome:
        """Another worker holds the round: answer it through the store, wait for its outcome."""
        key = self._key(round_id)
        current = await self.store.get(key)
        record = msgspec.json.decode(current) if current is not None else None
        if not isinstance(record, dict) or record.get("s") != "asking":
            raise RoundEnded()
        counter = int(record.get("n", 0)) + 1
        mine = msgspec.json.encode({**record, "s": "answered", "n": counter, "r": responses, "q": None})
        assert current is not None
        if not await self.store.replace(key, current, mine, self._ttl()):
            raise McpError(INVALID_PARAMS, "Invalid params: this round was answered already")
        seen = mine
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.rounds.round_timeout
        while loop.time() < deadline:
            current = await self.store.watch(key, seen, 5.0)
            if current is None:
                raise McpError(INTERNAL_ERROR, "the worker holding this call went away")
            seen = current
            record = msgspec.json.decode(current)
            if int(record.get("n", 0)) <= counter:
                continue
            if record.get("s") == "asking":
                return Outcome(questions=record.get("q") or {})
            outcome = record.get("o") or {}
            if "error" in outcome:
                error = outcome["error"]
                return Outcome(error=McpError(int(error["code"]), str(error["message"]), error.get("data")))
            return Outcome(result=Ready(str(outcome.get("kind", "complete")), outcome.get("body")))
        raise McpError(INTERNAL_ERROR, "the worker holding this call did not answer in time")


def _quiet(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.debug("mcpgen gateway: a round record was not removed (it expires): %s", task.exception())
