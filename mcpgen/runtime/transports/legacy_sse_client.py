"""The 2024-11-05 HTTP+SSE transport, client side: GET the event stream, wait for the
``endpoint`` event, POST every message there, read everything from the stream.

The server is not trusted: the ``endpoint`` it names must be on the stream's own origin
(scheme, host and port; the headers the user gave, an API key or a token, go with every
POST), the stream's lines and events are bounded as over Streamable HTTP
(:mod:`mcpgen.runtime.transports.bounded`: 16 MiB, decoded, from the encodings offered
only), what it sends waits in a bounded inbox (the stream stops reading while the
session is behind), and a POST's answer (which carries nothing: the reply comes on the
stream) is not read."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from urllib.parse import urljoin

import httpx
from msgspec import UNSET, UnsetType

from mcpgen.runtime.errors import ConnectionClosed
from mcpgen.runtime.jsonrpc.framing import RequestId
from mcpgen.runtime.shared.origins import same_origin
from mcpgen.runtime.transports import bounded, sse
from mcpgen.runtime.transports.http_client import shared_tls, with_defaults
from mcpgen.runtime.transports.stdio import MAX_MESSAGE

# What breaks a limit, or a connection: the stream ends (the session then sees its end).
_ENDED = (httpx.HTTPError, bounded.ResponseTooLarge, bounded.EncodingRefused, bounded.BodyUndecodable)


class LegacySseTransport:
    # The only era this transport has: the stateless era has no HTTP+SSE binding, so a
    # client's "auto" has nothing to probe for here (mcpgen.runtime.client.era).
    only_era = "handshake"

    def __init__(
        self, client: httpx.AsyncClient, response: httpx.Response, endpoint: str, max_message: int = MAX_MESSAGE
    ) -> None:
        self._client = client
        self._response = response
        self.endpoint = endpoint
        self._inbox = bounded.Inbox(max_message)
        self._reader: asyncio.Task[None] | None = None
        self._closed = False

    @classmethod
    async def connect(
        cls, url: str, *, headers: dict[str, str] | None = None, timeout: float = 30, max_message: int = MAX_MESSAGE
    ) -> LegacySseTransport:
        client = httpx.AsyncClient(
            headers=with_defaults(headers), timeout=httpx.Timeout(timeout, read=None), verify=shared_tls()
        )
        try:
            response = await client.send(
                client.build_request("GET", url, headers={"accept": "text/event-stream"}), stream=True
            )
        except BaseException:
            await client.aclose()
            raise
        if response.status_code != 200:
            await response.aclose()
            await client.aclose()
            raise ConnectionClosed(f"GET {url}: HTTP {response.status_code}")
        try:
            lines = _lines(response, max_message)
            parser = sse.Parser(max_message)
            async for line in lines:
                found = parser.line(line)
                if found is not None and found.event == "endpoint":
                    endpoint = urljoin(url, found.data.strip())
                    if not same_origin(endpoint, url):
                        raise ConnectionClosed(
                            f"{url} names an endpoint on another origin ({endpoint}): refused, the "
                            "client's headers and credentials are for the stream's origin only"
                        )
                    transport = cls(client, response, endpoint, max_message)
                    transport._reader = asyncio.ensure_future(transport._read(lines, parser))
                    return transport
        except (*_ENDED, sse.EventTooLarge) as exc:
            await response.aclose()
            await client.aclose()
            raise ConnectionClosed(f"GET {url}: {exc}") from exc
        except BaseException:
            await response.aclose()
            await client.aclose()
            raise
        await response.aclose()
        await client.aclose()
        raise ConnectionClosed(f"{url} sent no endpoint event")

    async def _read(self, lines: AsyncIterator[str], parser: sse.Parser) -> None:
        try:
            async for line in lines:
                found = parser.line(line)
                if found is not None and found.event == "message" and found.data:
                    await self._inbox.put(found.data.encode())  # waits while the session is behind
        except (*_ENDED, sse.EventTooLarge):
            pass
        finally:
            self._inbox.put_nowait(None)

    async def receive(self) -> bytes | None:
        return await self._inbox.get()

    async def send(self, frame: bytes, *, related: RequestId | UnsetType = UNSET, final: bool = False) -> None:
        if self._closed:
            raise ConnectionClosed("closed")
        request = self._client.build_request(
            "POST", self.endpoint, content=frame, headers={"content-type": "application/json"}
        )
        try:
            response = await self._client.send(request, stream=True)
            await response.aclose()  # "Accepted": the answer comes on the stream
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


def _lines(response: httpx.Response, max_message: int) -> AsyncIterator[str]:
    pieces = bounded.decoded(response.aiter_raw(), response.headers.get("content-encoding"))
    return bounded.lines(pieces, max_message)
