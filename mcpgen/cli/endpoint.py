"""Whether a URL ``mcpgen call`` was given is an MCP endpoint at all.

A web page answers a POST with ``200 text/html``, which the client takes for no answer: the
user waited for the era probe and the request's whole timeout, then read "no response".
When a connection has not opened within :data:`LOOK_AFTER` seconds, one plain POST (a
JSON-RPC ``ping``, no credentials beyond the user's own ``-H`` headers, no redirects followed)
asks the URL what it is: a successful answer that is neither JSON-RPC nor an event stream
ends the wait at once, naming what came back. Anything else (an error status, a 401, a
redirect, a JSON-RPC answer, no answer) says nothing, and the connection goes on as before.
"""

from __future__ import annotations

import json
import re
from typing import Any

from mcpgen.cli.sanitize import clean_line

LOOK_AFTER = 1.0  # seconds a connection may take before the URL is asked what it is
BODY_LIMIT = 64 * 1024  # bytes of the answer read to tell what it is
_PING = b'{"jsonrpc": "2.0", "id": "mcpgen-endpoint-check", "method": "ping"}'
_TITLE = re.compile(rb"<title[^>]*>(.*?)</title", re.I | re.S)


def _is_jsonrpc(body: bytes) -> bool:
    try:
        doc: Any = json.loads(body)
    except ValueError:
        return False
    docs = doc if isinstance(doc, list) else [doc]
    return bool(docs) and all(isinstance(d, dict) and d.get("jsonrpc") == "2.0" for d in docs)


def verdict(status: int, content_type: str, body: bytes | None) -> str | None:
    """What an answer to the check says, when it shows the URL is not an MCP endpoint
    (``body`` None: from its head alone, whether the body is worth reading)."""
    if not 200 <= status < 300 or status in (202, 204):
        return None  # errors and "accepted" are the server's to explain, when the client asks
    kind = content_type.split(";")[0].strip().lower()
    if kind == "text/event-stream":
        return None
    if body is None:
        return "maybe"
    if kind in ("application/json", "") and (not body.strip() or _is_jsonrpc(body)):
        return None
    shown = f"{status} {clean_line(kind) or 'with no content type'}"
    title = _TITLE.search(body)
    if title is not None:
        text = " ".join(clean_line(title[1].decode("utf-8", "replace")).split())[:80]
        return f'it answered {shown}, a page titled "{text}"'
    if kind == "application/json":
        return f"it answered {shown} that is not JSON-RPC: {clean_line(body[:80].decode('utf-8', 'replace'))}"
    return f"it answered {shown}"


async def not_an_endpoint(url: str, headers: dict[str, str], timeout: float) -> str | None:
    """Why ``url`` is not an MCP endpoint, from one POST; None when it may well be one."""
    import httpx

    sent = {**headers, "accept": "application/json, text/event-stream", "content-type": "application/json"}
    try:
        async with httpx.AsyncClient(timeout=timeout, follow_redirects=False) as http:
            async with http.stream("POST", url, content=_PING, headers=sent) as response:
                if verdict(response.status_code, response.headers.get("content-type", ""), None) is None:
                    return None  # its head says enough (an error, a stream that may never end)
                body = b""
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) >= BODY_LIMIT:
                        break
                return verdict(response.status_code, response.headers.get("content-type", ""), body[:BODY_LIMIT])
    except httpx.HTTPError:
        return None


__all__ = ["BODY_LIMIT", "LOOK_AFTER", "not_an_endpoint", "verdict"]
