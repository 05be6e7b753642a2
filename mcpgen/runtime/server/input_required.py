"""Asking the client for input in the stateless era (InputRequiredResult, "MRTR").

A handler asks as it always did (``await ctx.elicit(...)``, ``ctx.sample(...)``,
``ctx.list_roots()``). When the request carries no answer for that question yet, the
question is recorded and the handler stops with :class:`InputRequired`; the request is
answered with an InputRequiredResult listing every question asked in this round, and a
``requestState``. The client answers and retries the request; the handler runs again from
the start and this time each question finds its answer.

Nothing is kept on the server between rounds: the answers of earlier rounds travel in the
``requestState``, sealed with an HMAC under the server's key, together with the method, a
digest of the request's own params and an expiry. A retry may land on any worker that
shares the key; a state that was altered, belongs to another request or has expired is
refused with -32602 and never replayed. Because the handler runs again, what it does before
its last question runs again too: keep it idempotent.
"""

from __future__ import annotations

import base64
import os
import time
from typing import Any

import msgspec

from mcpgen.runtime.errors import INVALID_PARAMS, MISSING_CAPABILITY, McpError

# method -> (the client capability it needs, the result type it answers with)
_KINDS = {
    "elicitation/create": ("elicitation", "ElicitResult"),
    "sampling/createMessage": ("sampling", "CreateMessageResult"),
    "roots/list": ("roots", "ListRootsResult"),
}
_SHORT = {"elicitation/create": "elicitation", "sampling/createMessage": "sampling", "roots/list": "roots"}
_NOT_SIGNIFICANT = ("_meta", "inputResponses", "requestState")


MIN_STATE_KEY = 32
"""Bytes of key a requestState seal needs at least (HMAC-SHA256's own size)."""


def checked_state_key(key: bytes | str | None) -> bytes | str | None:
    """``key`` if it may seal requestState (None: a random key of this process), else a
    ValueError that says why: an empty or short key (an unset ``MCPGEN_STATE_KEY`` exported
    as "", a password) would let anyone who guesses it forge the state of a round."""
    if key is None:
        return None
    size = len(key.encode() if isinstance(key, str) else key)
    if size < MIN_STATE_KEY:
        raise ValueError(
            f"state_key (or $MCPGEN_STATE_KEY) is {size} bytes; requestState needs a key of at least "
            f"{MIN_STATE_KEY} random bytes: python -c 'import secrets; print(secrets.token_hex(32))'"
        )
    return key


class StateSealer:
    """Seals and opens ``requestState`` strings with an HMAC-SHA256 key.

    The key is the server's ``state_key`` (bytes or text); without one, a random key of this
    process: then a retry must come back to the same process (set a shared key, e.g. from
    the environment, when several workers serve one endpoint)."""

    def __init__(self, key: bytes | str | None, lifetime: float = 3600.0) -> None:
        if key is None:
            key = os.urandom(32)
        self._key = key.encode() if isinstance(key, str) else key
        self.lifetime = lifetime

    def seal(self, payload: dict[str, Any]) -> str:
        body = _b64(msgspec.json.encode({**payload, "exp": round(time.time() + self.lifetime, 3)}))
        return f"{body}.{_b64(self._mac(body))}"

    def open(self, state: str) -> dict[str, Any]:
        """The payload of a state this server sealed, or -32602."""
        import hmac  # here, not at the top: see _mac

        body, dot, mac = state.partition(".")
        try:
            valid = dot == "." and hmac.compare_digest(_unb64(mac), self._mac(body))
            payload = msgspec.json.decode(_unb64(body)) if valid else None
        except (ValueError, msgspec.DecodeError):
            payload = None
        if not isinstance(payload, dict):
            raise McpError(INVALID_PARAMS, "Invalid params: requestState was not issued by this server or was altered")
        expires = payload.get("exp")
        if not isinstance(expires, (int, float)) or isinstance(expires, bool) or expires < time.time():
            raise McpError(INVALID_PARAMS, "Invalid params: requestState has expired; call again without it")
        return payload

    def _mac(self, body: str) -> bytes:
        # hashlib and hmac (with OpenSSL's _hashlib) cost ~2 ms to import, paid by every
        # server before its first answer if imported at the top; only a request that asks
        # the client for input needs them, so they load on the first seal or open.
        import hashlib
        import hmac

        return hmac.new(self._key, body.encode(), hashlib.sha256).digest()


class InputScope:
    """The questions and answers of one request being served."""

    def __init__(
        self,
        sealer: StateSealer,
        capabilities: dict[str, Any],
        method: str,
        digest: str,
        answers: dict[str, Any],
        responses: dict[str, Any],
    ) -> None:
        self.sealer = sealer
        self.capabilities = capabilities
        self.method = method
        self.digest = digest
        self.answers = answers  # key -> answer, from earlier rounds (sealed in the state)
        self.responses = responses  # key -> answer, sent with this retry
        self.pending: dict[str, dict[str, Any]] = {}  # key -> input request asked this round
        self._counts: dict[str, int] = {}

    @classmethod
    def for_retry(
        cls, sealer: StateSealer, capabilities: dict[str, Any], method: str, params: dict[str, Any]
    ) -> InputScope:
        """The scope of a request whose params (parsed JSON) may carry answers and state."""
        digest = _digest(method, params)
        answers: dict[str, Any] = {}
        state = params.get("requestState")
        if state is not None:
            if not isinstance(state, str):
                raise McpError(INVALID_PARAMS, "Invalid params: requestState must be a string")
            payload = sealer.open(state)
            if payload.get("m") != method or payload.get("d") != digest:
                raise McpError(INVALID_PARAMS, "Invalid params: requestState belongs to another request")
            answers = payload.get("a") or {}
        responses = params.get("inputResponses")
        return cls(sealer, capabilities, method, digest, answers, responses if isinstance(responses, dict) else {})

    async def ask(self, method: str, params: Any, key: str | None = None) -> Any:
        """The client's answer to ``method(params)``; raises :class:`InputRequired` when it
        has not answered yet (after noting the question)."""
        capability, result_name = _KINDS[method]
        self._require(method, capability, params)
        short = _SHORT[method]
        count = self._counts[short] = self._counts.get(short, 0) + 1
        key = key or f"{short}-{count}"
        if key in self.answers:
            return answer_as_result(result_name, self.answers[key], key)
        if key in self.responses:
            answer = self.responses[key]
            result = answer_as_result(result_name, answer, key)
            self.answers[key] = answer
            return result
        self.pending[key] = {"method": method, "params": wire_params(params)}
        raise InputRequired(self)

    def _require(self, method: str, capability: str, params: Any) -> None:
        caps = self.capabilities
        needed: dict[str, Any] | None = None
        if capability not in caps:
            needed = {capability: {}}
        elif method == "elicitation/create":
            mode = getattr(params, "mode", None)
            declared = caps.get("elicitation") or {}
            if mode == "url" and "url" not in declared:
                needed = {"elicitation": {"url": {}}}
        elif (
            method == "sampling/createMessage"
            and getattr(params, "tools", None)
            and "tools" not in (caps.get("sampling") or {})
        ):
            needed = {"sampling": {"tools": {}}}
        if needed is not None:
            raise McpError(
                MISSING_CAPABILITY,
                f"Missing required client capability for {method}",
                {"requiredCapabilities": needed},
            )

    def state(self) -> str:
        return self.sealer.seal({"m": self.method, "d": self.digest, "a": self.answers})


class InputRequired(Exception):
    """Raised (by the runtime) inside a handler that asked the client a question the
    request carries no answer for: the request is answered with an InputRequiredResult."""

    def __init__(self, scope: InputScope) -> None:
        super().__init__("input required")
        self.scope = scope

    def result(self) -> dict[str, Any]:
        """The InputRequiredResult (without ``resultType``): every question of this round,
        and the sealed state."""
        out: dict[str, Any] = {}
        if self.scope.pending:
            out["inputRequests"] = self.scope.pending
        out["requestState"] = self.scope.state()
        return out


def _digest(method: str, params: dict[str, Any]) -> str:
    significant = {k: v for k, v in params.items() if k not in _NOT_SIGNIFICANT}
    blob = msgspec.json.encode([method, significant], order="sorted")
    import hashlib  # on first use, as in StateSealer._mac

    return _b64(hashlib.sha256(blob).digest()[:16])


def answer_as_result(result_name: str, answer: Any, key: str) -> Any:
    """The answer as the result type handlers receive (the handshake era's, which both
    eras' handlers are written against), checked against the stateless era's schema."""
    from mcpgen import generated as handshake
    from mcpgen.runtime.versions import LATEST_STATELESS, bindings

    stateless = bindings(LATEST_STATELESS)
    try:
        stateless.convert(answer, getattr(stateless, result_name))
        return handshake.convert(answer, getattr(handshake, result_name))
    except msgspec.ValidationError as exc:
        raise McpError(INVALID_PARAMS, f"Invalid params: inputResponses.{key}: {exc}") from None


def wire_params(params: Any) -> Any:
    """An input request's params as the stateless era sends them (no ``_meta``, no task)."""
    data = msgspec.to_builtins(params)
    if isinstance(data, dict):
        data.pop("_meta", None)
        data.pop("task", None)
        data.pop("elicitationId", None)
    return data


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    """Strict: a character outside the URL-safe alphabet is an error, not skipped."""
    return base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)
