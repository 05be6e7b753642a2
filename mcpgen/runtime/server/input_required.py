"""Asking the client for input in the stateless era (InputRequiredResult, "MRTR").

A handler asks as it always did (``await ctx.elicit(...)``, ``ctx.sample(...)``,
``ctx.list_roots()``). When the request carries no answer for that question yet, the
question is recorded and the handler stops with :class:`InputRequired`; the request is
answered with an InputRequiredResult listing every question asked in this round, and a
``requestState``. The client answers and retries the request; the handler runs again from
the start and this time each question finds its answer.

Nothing is kept on the server between rounds: the answers of earlier rounds travel in the
``requestState``, encrypted and authenticated (AES-256-GCM) under a key derived from the
server's, together with the method, a digest of the request's own params, the caller (on a
protected server) and an expiry. A retry may land on any worker that shares the key; a
state that was altered, belongs to another request or another caller, or has expired is
refused with -32602 and never replayed. Because the handler runs again, what it does before
its last question runs again too: keep it idempotent.
"""

from __future__ import annotations

import base64
import os
import time
from typing import Any

import msgspec

from mcpgen.runtime.auth.info import current_owner
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
"""Bytes of key a requestState seal needs at least (the AES-256 key derived from it)."""


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
    """Seals and opens ``requestState`` strings: AES-256-GCM (from ``cryptography``) under a
    key derived (HKDF-SHA256) from the server's ``state_key``, so that a state can be neither
    read (the answers in it may be what a user typed, a PIN) nor altered.

    The key is the server's ``state_key`` (bytes or text); without one, a random key of this
    process: then a retry must come back to the same process (set a shared key, e.g. from
    the environment, when several workers serve one endpoint)."""

    def __init__(self, key: bytes | str | None, lifetime: float = 3600.0) -> None:
        if key is None:
            key = os.urandom(32)
        self._key = key.encode() if isinstance(key, str) else key
        self.lifetime = lifetime
        self._aead: Any = None

    def seal(self, payload: dict[str, Any]) -> str:
        plain = msgspec.json.encode({**payload, "exp": round(time.time() + self.lifetime, 3)})
        nonce = os.urandom(_NONCE)
        return f"{_b64(nonce)}.{_b64(self._cipher().encrypt(nonce, plain, _CONTEXT))}"

    def open(self, state: str) -> dict[str, Any]:
        """The payload of a state this server sealed, or -32602."""
        from cryptography.exceptions import InvalidTag

        nonce, dot, sealed = state.partition(".")
        try:
            iv = _unb64(nonce)
            if dot != "." or len(iv) != _NONCE:
                raise ValueError(state)
            payload = msgspec.json.decode(self._cipher().decrypt(iv, _unb64(sealed), _CONTEXT))
        except (ValueError, InvalidTag, msgspec.DecodeError):
            payload = None
        if not isinstance(payload, dict):
            raise McpError(INVALID_PARAMS, "Invalid params: requestState was not issued by this server or was altered")
        expires = payload.get("exp")
        if not isinstance(expires, (int, float)) or isinstance(expires, bool) or expires < time.time():
            raise McpError(INVALID_PARAMS, "Invalid params: requestState has expired; call again without it")
        return payload

    def _cipher(self) -> Any:
        # cryptography costs ~17 ms to import, paid by every server before its first answer
        # if imported at the top; only a request that asks the client for input needs it.
        if self._aead is None:
            from cryptography.hazmat.primitives import hashes
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM
            from cryptography.hazmat.primitives.kdf.hkdf import HKDF

            derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_CONTEXT).derive(self._key)
            self._aead = AESGCM(derived)
        return self._aead


_NONCE = 12  # bytes: AES-GCM's standard nonce, random per seal
_CONTEXT = b"mcpgen requestState v2"  # the key's purpose (HKDF info) and the seal's associated data


def caller() -> str:
    """The principal of the request being served, as a state records it ("" on a server
    that checks no tokens)."""
    owner = current_owner()
    return "\n".join(owner) if owner is not None else ""


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
            if payload.get("p", "") != caller():
                raise McpError(INVALID_PARAMS, "Invalid params: requestState belongs to another caller")
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
        sealed: dict[str, Any] = {"m": self.method, "d": self.digest, "a": self.answers}
        principal = caller()
        if principal:
            sealed["p"] = principal  # on a protected server, only its caller may continue the round
        return self.sealer.seal(sealed)


class InputRequired(Exception):
    """Raised (by the runtime) inside a handler that asked the client a question the
    request carries no answer for: the request is answered with an InputRequiredResult."""

    # Not a failure: middleware (tracing, timing) told apart by this, not by the class,
    # which they cannot import (they sit below the server).
    incomplete_result = True

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
    import hashlib  # on first use: not loaded before a server's first answer

    return _b64(hashlib.sha256(blob).digest()[:16])


def answer_as_result(result_name: str, answer: Any, key: str) -> Any:
    """The answer as the result type handlers receive (the handshake era's, which both
    eras' handlers are written against), checked against the stateless era's schema."""
    from mcpgen.protocol import v2025_11_25 as handshake
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
