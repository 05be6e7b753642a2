"""A raw peer that speaks either protocol era to a server over stdio, for tests that must
hold in both.

Handshake era: ``initialize`` first, capabilities for the connection, the server's
questions arrive as JSON-RPC requests and are answered as responses. Stateless era: every
request carries ``_meta``; a question arrives as an InputRequiredResult and the request is
retried with the answers. Either way :meth:`EraPeer.call` returns the final result (or
raises :class:`RpcError`), and the notifications seen on the way are kept.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from tests.wire import DEMO, RawPeer

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
ERAS = ("handshake", "stateless")
CAPABILITIES = {"sampling": {}, "elicitation": {"form": {}}, "roots": {}}

Answer = Callable[[str, Any], Any]  # (method, params) -> result


class RpcError(Exception):
    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.code = error.get("code")
        self.error = error


def default_answers(method: str, params: Any) -> Any:
    if method == "elicitation/create":
        return {"action": "accept", "content": {"name": "Ada", "age": 36}}
    if method == "sampling/createMessage":
        return {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"}
    if method == "roots/list":
        return {"roots": [{"uri": "file:///work", "name": "work"}]}
    raise AssertionError(f"unexpected question {method}")


class EraPeer:
    def __init__(self, raw: RawPeer, era: str, answer: Answer = default_answers, log_level: str | None = None) -> None:
        self.raw = raw
        self.era = era
        self.answer = answer
        self.log_level = log_level
        self.notifications: list[dict[str, Any]] = []
        self.rounds = 0  # InputRequiredResults met (stateless era)

    def meta(self, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        if self.era == "handshake":
            return dict(extra or {})
        meta = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": CAPABILITIES,
            "io.modelcontextprotocol/clientInfo": {"name": "era-peer", "version": "0"},
            **(extra or {}),
        }
        if self.log_level is not None:
            meta["io.modelcontextprotocol/logLevel"] = self.log_level
        return meta

    async def call(
        self, method: str, params: dict[str, Any] | None = None, *, meta: dict[str, Any] | None = None
    ) -> Any:
        params = dict(params or {})
        full_meta = self.meta(meta)
        if full_meta:
            params["_meta"] = full_meta
        for _ in range(8):
            result = await self._exchange(method, params)
            if self.era == "stateless" and result.get("resultType") == "input_required":
                self.rounds += 1
                asked = result.get("inputRequests", {})
                params = {k: v for k, v in params.items() if k not in ("inputResponses", "requestState")}
                params["inputResponses"] = {k: self.answer(q["method"], q.get("params")) for k, q in asked.items()}
                if "requestState" in result:
                    params["requestState"] = result["requestState"]
                continue
            return result
        raise AssertionError("too many rounds")

    async def _exchange(self, method: str, params: dict[str, Any]) -> Any:
        rid = self.raw.next_id()
        await self.raw.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            frame = await self.raw.recv(10)
            if "method" in frame and "id" in frame:  # a question of the handshake era
                assert self.era == "handshake", f"a request reached a stateless-era client: {frame}"
                result = self.answer(frame["method"], frame.get("params"))
                await self.raw.send({"jsonrpc": "2.0", "id": frame["id"], "result": result})
            elif "method" in frame:
                self.notifications.append(frame)
            elif frame.get("id") == rid:
                if "error" in frame:
                    raise RpcError(frame["error"])
                return frame["result"]

    async def settle(self, seconds: float = 0.3) -> None:
        """Keep what arrives within ``seconds`` (notifications sent after a response)."""
        import asyncio

        with contextlib.suppress(asyncio.TimeoutError):
            while True:
                frame = await self.raw.recv(seconds)
                if "method" in frame and "id" not in frame:
                    self.notifications.append(frame)

    def seen(self, method: str) -> list[dict[str, Any]]:
        return [n for n in self.notifications if n["method"] == method]


@contextlib.asynccontextmanager
async def era_peer(
    era: str, *args: str, answer: Answer = default_answers, log_level: str | None = None
) -> AsyncIterator[EraPeer]:
    """The demo server over stdio, spoken to in ``era``."""
    raw = await RawPeer.start(*args, script=DEMO)
    peer = EraPeer(raw, era, answer, log_level)
    try:
        if era == "handshake":
            await raw.initialize(LEGACY, CAPABILITIES)
            if log_level is not None:
                await raw.request("logging/setLevel", {"level": log_level})
        yield peer
    finally:
        await raw.close()
