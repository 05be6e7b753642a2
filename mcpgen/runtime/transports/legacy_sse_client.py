"""The 2024-11-05 HTTP+SSE transport, client side: GET the event stream, wait for the
``endpoint`` event, POST every message there, read everything from the stream."""

from __future__ import annotations

import asyncio
from urllib.parse import urljoin

import httpx
from msgspec import UNSET, UnsetType

from mcpgen.runtime.errors import ConnectionClosed
from mcpgen.runtime.jsonrpc.framing import RequestId
from mcpgen.runtime.transports import sse
from mcpgen.runtime.transports.http_client import shared_tls


class LegacySseTransport:
    # The only era this transport has: the stateless era has no HTTP+SSE binding, so a
    # client's "auto" has nothing to probe for here (mcpgen.runtime.client.era).
    only_era = "handshake"

    def __init__(self, client: httpx.AsyncClient, response: httpx.Response, endpoint: str) -> None:
        self._client = client
        self._response = response
        self.endpoint = endpoint
        self._inbox: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._reader: asyncio.Task[None] | None = None
        self._closed = False

    @classmethod
    async def connect(
        cls, url: str, *, headers: dict[str, str] | None = None, timeout: float = 30
    ) -> LegacySseTransport:
        client = httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(timeout, read=None), verify=shared_tls())
        response = await client.send(
            client.build_request("GET", url, headers={"accept": "text/event-stream"}), stream=True
        )
        if response.status_code != 200:
            await response.aclose()
            await client.aclose()
            raise ConnectionClosed(f"GET {url}: HTTP {response.status_code}")
        lines = response.aiter_lines()
        parser = sse.Parser()
        async for line in lines:
            found = parser.line(line)
            if found is not None and found.event == "endpoint":
                transport = cls(client, response, urljoin(url, found.data.strip()))
                transport._reader = asyncio.ensure_future(transport._read(lines, parser))
                return transport
        await client.aclose()
        raise ConnectionClosed(f"{url} sent no endpoint event")

    async def _read(self, lines: object, parser: sse.Parser) -> None:
        try:
            async for line in lines:  # type: ignore[attr-defined]
                found = parser.line(line)
                if found is not None and found.event == "message" and found.data:
                    self._inbox.put_nowait(found.data.encode())
        except httpx.HTTPError:
            pass
        finally:
            self._inbox.put_nowait(None)

    async def receive(self) -> bytes | None:
        return await self._inbox.get()

    async def send(self, frame: bytes, *, related: RequestId | UnsetType = UNSET, final: bool = False) -> None:
        if self._closed:
            raise ConnectionClosed("closed")
        try:
            response = await self._client.post(
                self.endpoint, content=frame, headers={"content-type": "application/json"}
            )
        except httpx.HTTPError as exc:
            raise ConnectionClosed(f"POST {self.endpoint} failed: {exc}") from exc
        if response.status_code >= 400:
            raise ConnectionClosed(f"POST {self.endpoint}: HTTP {response.status_code}")

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._reader is not None:
            self._reader.cancel()
        await self._response.aclose()
        await self._client.aclose()
        self._inbox.put_nowait(None)
