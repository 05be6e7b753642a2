"""The upstream call behind every generated tool: arguments in, one HTTP request out through
one shared ``httpx.AsyncClient``, the answer back as the tool's result.

* JSON answers: the upstream's own bytes are the text content; a JSON object answer of an
  operation with an ``outputSchema`` is its structured content too (as sent, no field
  dropped or added).
* Text answers are text; images are image content; other bytes an embedded resource.
* An HTTP error is an ``isError`` result naming the status, with the start of the answer.
* Pagination is never followed: the answer names the next page (text and ``_meta``) and the
  model asks for it with an argument.

Limits: answers over ``<PREFIX>_MAX_RESPONSE_BYTES`` (default 10 MiB) are refused, requests
time out after ``<PREFIX>_TIMEOUT`` seconds (default 30), redirects are not followed
(credentials never travel to another origin), and the API's base URL is
``<PREFIX>_BASE_URL`` when set.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, quote, urljoin, urlsplit

import msgspec

from mcpgen.generated import (
    BlobResourceContents,
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    TextContent,
)
from mcpgen.openapi.runtime import params as styles
from mcpgen.openapi.runtime.auth import Credentials, MissingCredentials
from mcpgen.openapi.runtime.spec import Operation, Tables, read_tables

if TYPE_CHECKING:
    import httpx

NEXT_META = "io.mcpgen.openapi/next"
ERROR_EXCERPT = 2000
_LINK_NEXT = re.compile(r'<([^>]*)>\s*;[^,]*\brel="?next"?', re.I)
RequestHook = Callable[[Operation, "httpx.Request"], Awaitable[None]]
ResponseHook = Callable[[Operation, "httpx.Response"], Awaitable[None]]


def _read_response(response: httpx.Response, body: bytes) -> httpx.Response:
    """``response`` with its body read (``body``, decoded already), as a hook reads it:
    ``.content``, ``.text`` and ``.json()`` work, without reading the stream a second time.
    The content coding is gone from it, as from ``body``."""
    import httpx  # loaded already: the response came through it

    skip = ("content-encoding", "content-length", "transfer-encoding")
    headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in skip]
    return httpx.Response(response.status_code, headers=headers, content=body, request=response.request)


class Api:
    """The generated server's view of the API: its tables, credentials and HTTP client.

    ``on_request(operation, request)`` and ``on_response(operation, response)`` (the
    project's hooks) see every request before it is sent, and every answer (its body read,
    within the size limit) before the tool's result is made from it.
    """

    def __init__(
        self,
        tables: Tables,
        *,
        environ: Mapping[str, str] | None = None,
        on_request: RequestHook | None = None,
        on_response: ResponseHook | None = None,
    ) -> None:
        self.tables = tables
        env = environ if environ is not None else os.environ
        prefix = tables.env_prefix
        self.base_url_set = bool(env.get(f"{prefix}_BASE_URL"))
        self.base_url = (env.get(f"{prefix}_BASE_URL") or tables.base_url).rstrip("/")
        self.timeout = float(env.get(f"{prefix}_TIMEOUT") or 30)
        self.max_bytes = int(env.get(f"{prefix}_MAX_RESPONSE_BYTES") or 10 * 1024 * 1024)
        self.credentials = Credentials(tables.security, prefix, env)
        self.on_request = on_request
        self.on_response = on_response
        self._http: httpx.AsyncClient | None = None

    @classmethod
    def load(cls, module_file: str, **options: Any) -> Api:
        """The tables in ``operations.json`` beside the generated module ``module_file``."""
        return cls(read_tables((Path(module_file).parent / "operations.json").read_bytes()), **options)

    @property
    def http(self) -> httpx.AsyncClient:
        if self._http is None:
            import httpx

            self._http = httpx.AsyncClient(
                timeout=self.timeout,
                follow_redirects=False,
                limits=httpx.Limits(max_connections=100, max_keepalive_connections=20),
            )
        return self._http

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    # ------------------------------------------------------------ one call

    async def call(self, tool: str, arguments: Mapping[str, Any]) -> CallToolResult:
        """Call the operation behind ``tool`` with the tool's arguments (``UNSET`` ones left out)."""
        op = self.tables.operations[tool]
        given = {k: v for k, v in arguments.items() if v is not msgspec.UNSET}
        try:
            return await self._call(op, given, refresh=False)
        except MissingCredentials as exc:
            return _error(str(exc))
        except ValueError as exc:  # an argument no style can send (a line break in a header, bad base64)
            return _error(f"cannot send this request: {exc}")

    async def _call(self, op: Operation, given: dict[str, Any], refresh: bool) -> CallToolResult:
        import httpx

        request = self.build(op, given)
        alternative = self.credentials.choose(op.security)
        if alternative is not None:
            headers: dict[str, str] = {}
            query: list[str] = []
            cookies: list[str] = []
            await self.credentials.apply(alternative, headers, query, cookies, self.http, refresh)
            request.headers.update(headers)
            if query:
                url = str(request.url)
                request.url = httpx.URL(url + ("&" if "?" in url else "?") + "&".join(query))
            if cookies:
                joined = "; ".join(filter(None, [request.headers.get("cookie"), *cookies]))
                request.headers["cookie"] = joined
        if self.on_request is not None:
            await self.on_request(op, request)
        try:
            response = await self.http.send(request, stream=True)
        except httpx.TimeoutException:
            return _error(f"{op.method} {op.path}: the API did not answer within {self.timeout:g} s")
        except httpx.HTTPError as exc:
            return _error(f"{op.method} {op.path}: cannot reach the API ({type(exc).__name__})")
        try:
            if (
                response.status_code == 401
                and alternative is not None
                and not refresh
                and self._refreshable(alternative)
            ):
                await response.aclose()
                return await self._call(op, given, refresh=True)  # once: a cached token may have been revoked
            body = await self._read(response)
        finally:
            await response.aclose()
        if body is None:
            return _error(f"{op.method} {op.path}: the answer is over the limit of {self.max_bytes} bytes")
        if self.on_response is not None:
            await self.on_response(op, _read_response(response, body))
        return self.answer(op, given, response, body)

    def _refreshable(self, alternative: dict[str, list[str]]) -> bool:
        return any(self.tables.security[n].kind == "oauth2" for n in alternative if n in self.tables.security)

    async def _read(self, response: httpx.Response) -> bytes | None:
        declared = response.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > self.max_bytes:
            return None
        chunks = bytearray()
        async for chunk in response.aiter_bytes():
            chunks += chunk
            if len(chunks) > self.max_bytes:
                return None
        return bytes(chunks)

    def build(self, op: Operation, given: dict[str, Any]) -> httpx.Request:

        path = op.path.split("#", 1)[0]  # a fragment some documents use to tell operations apart
        query: list[str] = []
        headers: dict[str, str] = {}
        cookies: list[str] = []
        for p in op.params:
            if p.arg not in given:
                continue
            value = given[p.arg]
            if p.json:
                value = msgspec.json.encode(value).decode()
            if p.location == "path":
                path = path.replace("{" + p.name + "}", styles.path_segment(p.name, value, p.style, p.explode))
            elif p.location == "query":
                if value is not None:
                    query += styles.query_pairs(p.name, value, p.style, p.explode, p.allow_reserved)
            elif p.location == "header":
                headers[p.name] = styles.header_value(value, p.explode)
            else:
                cookies.append(styles.cookie_pair(p.name, value, p.explode))
        pagination = op.pagination
        if pagination is not None and pagination.style == "link" and pagination.param in given:
            query = _merge_cursor(query, str(given[pagination.param]))
        base = self.base_url
        if op.server and not self.base_url_set:  # the operation's own server, unless the operator says
            base = op.server if op.server.startswith(("http://", "https://")) else urljoin(base + "/", op.server)
            base = base.rstrip("/")
        if not base.startswith(("http://", "https://")):
            raise MissingCredentials(
                f"the API's base URL is not known ({base or 'none'}): set {self.tables.env_prefix}_BASE_URL"
            )
        url = base + path + ("?" + "&".join(query) if query else "")
        if cookies:
            headers["cookie"] = "; ".join(cookies)
        content: bytes | None = None
        data: dict[str, Any] | None = None
        files: list[tuple[str, tuple[str, bytes, str]]] | None = None
        body = op.body
        if body is not None and body.arg in given:
            value = given[body.arg]
            if body.kind == "json":
                content = msgspec.json.encode(value)
                headers["content-type"] = body.media_type
            elif body.kind == "text":
                content = str(value).encode()
                headers["content-type"] = body.media_type
            elif body.kind == "binary":
                content = _b64(value, body.arg)
                headers["content-type"] = body.media_type
            elif body.kind == "form":
                content = "&".join(
                    f"{quote(str(k), safe='')}={quote(styles.scalar(v), safe='')}"
                    for k, v in (value or {}).items()
                    if v is not None
                ).encode()
                headers["content-type"] = "application/x-www-form-urlencoded"
            else:
                data, files = {}, []
                for k, v in (value or {}).items():
                    if k in body.binary_fields and isinstance(v, str):
                        files.append((k, (k, _b64(v, k), "application/octet-stream")))
                    elif isinstance(v, (dict, list)):
                        files.append((k, (k, msgspec.json.encode(v), "application/json")))
                    else:
                        data[k] = styles.scalar(v)
        return self.http.build_request(op.method, url, headers=headers, content=content, data=data, files=files or None)

    def answer(self, op: Operation, given: dict[str, Any], response: httpx.Response, body: bytes) -> CallToolResult:
        status = response.status_code
        if status >= 300:
            excerpt = body[:ERROR_EXCERPT].decode("utf-8", "replace")
            return _error(f"{op.method} {op.path}: HTTP {status} {response.reason_phrase}: {excerpt}".rstrip(": "))
        media = response.headers.get("content-type", op.output_media or "").split(";")[0].strip().lower()
        content: list[ContentBlock]
        structured: Any = msgspec.UNSET
        if not body:
            content = [TextContent(text=f"HTTP {status} {response.reason_phrase}".strip())]
        elif "json" in media or (not media and op.output == "json"):
            text = body.decode("utf-8", "replace")
            content = [TextContent(text=text)]
            if op.structured:
                try:
                    data = msgspec.json.decode(body)
                except msgspec.DecodeError:
                    return _error(f"{op.method} {op.path}: the API's answer is not valid JSON")
                if not isinstance(data, dict):
                    return _error(
                        f"{op.method} {op.path}: the API answered a JSON {type(data).__name__}, not an object"
                    )
                structured = data
        elif media.startswith("text/") or media in ("application/xml", "application/yaml"):
            content = [TextContent(text=body.decode(response.encoding or "utf-8", "replace"))]
        elif media.startswith("image/"):
            content = [ImageContent(data=base64.b64encode(body).decode(), mime_type=media)]
        else:
            parts = urlsplit(str(response.request.url))
            uri = f"{parts.scheme}://{parts.netloc}{parts.path}"  # no query: it may hold an API key
            blob = BlobResourceContents(
                uri=uri, blob=base64.b64encode(body).decode(), mime_type=media or "application/octet-stream"
            )
            content = [EmbeddedResource(resource=blob)]
        nxt = self.next_page(op, response, structured if structured is not msgspec.UNSET else None, body, media)
        meta: Any = msgspec.UNSET
        if nxt is not None:
            meta = {NEXT_META: nxt}
            content.append(TextContent(text="next page: " + ", ".join(f"{k}={v}" for k, v in nxt.items())))
        return CallToolResult(content=content, structured_content=structured, meta=meta)

    def next_page(
        self, op: Operation, response: httpx.Response, data: Any, body: bytes, media: str
    ) -> dict[str, Any] | None:
        """The argument that asks for the next page, when the answer names one."""
        pagination = op.pagination
        if pagination is None or pagination.param is None:
            return None
        if pagination.style == "link":
            found = _LINK_NEXT.search(response.headers.get("link", ""))
            if found is None:
                return None
            target, current = urlsplit(found[1]), urlsplit(str(response.request.url))
            if (target.netloc and target.netloc != current.netloc) or (target.path and target.path != current.path):
                return None  # elsewhere: never offered as this operation's next page
            return {pagination.param: target.query}
        if pagination.style == "cursor" and pagination.next:
            if data is None and "json" in media:
                try:
                    data = msgspec.json.decode(body)
                except msgspec.DecodeError:
                    return None
            value = _pointer(data, pagination.next)
            return {pagination.param: value} if isinstance(value, (str, int)) and value != "" else None
        return None


def _merge_cursor(query: list[str], cursor: str) -> list[str]:
    """The query with the next page's parameters (from a ``Link`` header) in place of its own."""
    pairs = parse_qsl(cursor, keep_blank_values=True)
    names = {quote(k, safe="") for k, _ in pairs}
    kept = [q for q in query if q.split("=", 1)[0] not in names]
    return kept + [f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in pairs]


def _pointer(data: Any, pointer: str) -> Any:
    for token in pointer.strip("/").split("/"):
        key = token.replace("~1", "/").replace("~0", "~")
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _b64(value: Any, what: str) -> bytes:
    try:
        return base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"`{what}` must be base64 text") from None


def _error(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(text=text)], is_error=True)


__all__ = ["Api", "NEXT_META"]
