"""A raw JSON-RPC peer for wire tests: spawns a server over stdio and speaks bytes."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

DEMO = Path(__file__).parent / "servers" / "demo.py"


class RawPeer:
    """Talks to a server subprocess frame by frame, with no client library in between."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.stderr: list[str] = []
        self._ids = 0
        assert process.stderr is not None
        self._stderr_task = asyncio.ensure_future(self._collect(process.stderr))

    @classmethod
    async def start(cls, *args: str, script: Path = DEMO) -> RawPeer:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            str(script),
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=64 * 1024 * 1024,
        )
        return cls(process)

    async def _collect(self, stream: asyncio.StreamReader) -> None:
        async for line in stream:
            self.stderr.append(line.decode(errors="replace"))

    async def send_raw(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        await self.process.stdin.drain()

    async def send(self, message: Any) -> None:
        await self.send_raw(json.dumps(message).encode() + b"\n")

    async def recv(self, timeout: float = 5.0) -> Any:
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), timeout)
        assert line, "the server closed stdout"
        return json.loads(line)

    async def nothing_within(self, seconds: float) -> bool:
        """True if no frame arrives within ``seconds``."""
        try:
            await self.recv(seconds)
        except TimeoutError:
            return True
        return False

    def next_id(self) -> int:
        self._ids += 1
        return self._ids

    async def request(self, method: str, params: Any = None, timeout: float = 5.0) -> Any:
        rid = self.next_id()
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        reply = await self.recv(timeout)
        assert reply.get("id") == rid, reply
        return reply

    async def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)

    async def initialize(self, version: str = "2025-11-25", capabilities: Any = None) -> Any:
        reply = await self.request(
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": capabilities or {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        )
        await self.notify("notifications/initialized")
        return reply

    async def close(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            code = await asyncio.wait_for(self.process.wait(), 5)
        except TimeoutError:
            self.process.kill()
            code = await self.process.wait()
        await asyncio.wait([self._stderr_task], timeout=2)
        return code
