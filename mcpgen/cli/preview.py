"""`mcpgen apps preview`: a host page on this machine that renders a server's MCP Apps
interfaces with the official app-bridge and relays what they ask of the host.

* **The page** (``apps_host/``): ``host.js`` uses ``AppBridge`` from the pinned npm package
  ``@modelcontextprotocol/ext-apps``. It is bundled once, with esbuild, in mcpgen's cache
  folder from the committed lockfile (``npm ci``: Node.js and npm are needed the first time),
  and kept there by the hash of its sources.
* **The server side** (:class:`PreviewHost`, an ASGI app under uvicorn): one mcpgen
  :class:`~mcpgen.Client` (declaring MCP Apps) holds the connection to the server. The page
  calls a tool as a model would, and the interface is served at a one-time address with its
  Content Security Policy as an HTTP header (whatever its markup), built from the
  interface's declared domains: anything that is not an origin (``*``, ``'unsafe-eval'``,
  ``data:``, a ``;``) is left out and named as a warning. The app's ``tools/call`` reaches
  only tools whose visibility includes ``"app"``.
* **Only this page**: the server listens on 127.0.0.1, answers only requests naming that host
  and port (DNS rebinding), and its API answers only with the random token the page carries
  (another site in the browser can neither read the page nor send the header).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable
from importlib.resources import files
from pathlib import Path
from typing import Any

import msgspec

from mcpgen.runtime.shared.plain import plain_json
from mcpgen.version import __version__

SOURCES = ("package.json", "package-lock.json", "host.js", "host.html")
MAX_BODY = 1 << 20  # bytes of a request from the page
MAX_PENDING = 16  # interfaces served at a one-time address, not yet fetched
# An origin, maybe with a wildcard subdomain, a port (or *), a path: what a CSP source may be here.
_ORIGIN = re.compile(r"(?:https?|wss?)://(?:\*\.)?[A-Za-z0-9.-]+(?::(?:\d{1,5}|\*))?(?:/[A-Za-z0-9._~%/-]*)?")
PERMISSIONS = {
    "camera": "camera",
    "microphone": "microphone",
    "geolocation": "geolocation",
    "clipboardWrite": "clipboard-write",
}

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class PreviewError(Exception):
    """The preview cannot start (no Node.js, the bundle failed): one line, exit code 2."""


# ---------------------------------------------------------------- the page, built once


def cache_folder() -> Path:
    """mcpgen's cache folder: MCPGEN_CACHE_DIR, else the platform's cache folder."""
    if os.environ.get("MCPGEN_CACHE_DIR"):
        return Path(os.environ["MCPGEN_CACHE_DIR"])
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local") / "mcpgen" / "cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "mcpgen"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mcpgen"


def _sources() -> dict[str, bytes]:
    folder = files("mcpgen.cli") / "apps_host"
    return {name: (folder / name).read_bytes() for name in SOURCES}


def host_bundle(say: Callable[[str], None]) -> tuple[Path, str]:
    """The bundled host script and the page, building the bundle on first use."""
    sources = _sources()
    key = hashlib.sha256(b"".join(sources[name] for name in SOURCES)).hexdigest()[:16]
    where = cache_folder() / "apps-host" / key
    bundle = where / "host.bundle.js"
    page = sources["host.html"].decode("utf-8")
    if bundle.is_file():
        return bundle, page
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise PreviewError(
            "the preview's host page is built once from the official app-bridge (npm "
            "@modelcontextprotocol/ext-apps): it needs Node.js (20 or later) and npm on PATH"
        )
    say(f"building the host page from the official app-bridge, once, in {where}")
    where.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f"{key}.", dir=where.parent))
    try:
        for name, data in sources.items():
            (building / name).write_bytes(data)
        _run([npm, "ci", "--no-audit", "--no-fund"], building, "npm ci")
        esbuild = building / "node_modules" / ".bin" / ("esbuild.cmd" if os.name == "nt" else "esbuild")
        options = ["--bundle", "--format=iife", "--target=es2022", "--minify", "--outfile=host.bundle.js"]
        _run([str(esbuild), "host.js", *options], building, "esbuild")
        with contextlib.suppress(OSError):  # another preview built it meanwhile: theirs is the same
            building.rename(where)
    finally:
        shutil.rmtree(building, ignore_errors=True)
    if not bundle.is_file():
        raise PreviewError(f"the host page was not built in {where}")
    return bundle, page


def _run(command: list[str], cwd: Path, what: str) -> None:
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PreviewError(f"{what} failed in {cwd}: {exc}") from None
    if done.returncode != 0:
        last = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or ["no output"]
        raise PreviewError(f"{what} failed in {cwd} (exit {done.returncode}): {last[0]}")


# ---------------------------------------------------------------- the interface's policy


def content_security_policy(csp: Any) -> tuple[str, list[str]]:
    """The Content Security Policy an interface runs under: the extension's restrictive
    default, widened only by the origins it declares (``connectDomains`` and so on); and
    what was declared but refused, one warning each."""
    declared = plain_json(csp)  # UNSET (not declared) is None
    declared = declared if isinstance(declared, dict) else {}
    warnings: list[str] = []

    def origins(key: str) -> list[str]:
        values = declared.get(key) or []
        kept = []
        for value in values if isinstance(values, list) else [values]:
            if isinstance(value, str) and _ORIGIN.fullmatch(value):
                kept.append(value)
            else:
                warnings.append(f"csp.{key}: {json.dumps(value)[:80]} is not an origin: left out")
        return kept

    resources = " ".join(origins("resourceDomains"))
    connect = " ".join(origins("connectDomains")) or "'none'"
    frames = " ".join(origins("frameDomains")) or "'none'"
    bases = " ".join(origins("baseUriDomains")) or "'none'"
    policy = "; ".join(
        [
            "default-src 'none'",
            f"script-src 'self' 'unsafe-inline' {resources}".rstrip(),
            f"style-src 'self' 'unsafe-inline' {resources}".rstrip(),
            f"img-src 'self' data: {resources}".rstrip(),
            f"font-src 'self' data: {resources}".rstrip(),
            f"media-src 'self' data: {resources}".rstrip(),
            f"connect-src {connect}",
            f"frame-src {frames}",
            f"base-uri {bases}",
            "form-action 'none'",
        ]
    )
    return policy, warnings


def allowed_features(permissions: Any) -> str:
    """The iframe's ``allow`` attribute from the interface's declared permissions."""
    declared = plain_json(permissions)
    if not isinstance(declared, dict):
        return ""
    return "; ".join(feature for key, feature in PERMISSIONS.items() if key in declared)


# ---------------------------------------------------------------- the host's server side


class PreviewHost:
    """The ASGI app behind the page (see the module's docstring), relaying to ``client``, an
    open :class:`~mcpgen.Client` that declared MCP Apps."""

    def __init__(self, client: Any, bundle: bytes, page: str, port: int) -> None:
        self.client = client
        self.token = secrets.token_urlsafe(32)
        self.bundle = bundle
        self.page = page.replace("$token", self.token).encode("utf-8")
        self.hosts = {f"127.0.0.1:{port}".encode(), f"localhost:{port}".encode()}
        self.pending: dict[str, tuple[str, str]] = {}  # one-time id -> (html, policy)
        self.app_calls: list[str] = []  # tool names the app called (for the log and tests)

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        headers = dict(scope.get("headers") or [])
        if headers.get(b"host") not in self.hosts:
            await _answer(send, 403, {"error": "this preview answers requests for 127.0.0.1 only"})
            return
        body = b""
        while True:
            event = await receive()
            body += event.get("body", b"")
            if len(body) > MAX_BODY:
                await _answer(send, 413, {"error": "too large"})
                return
            if not event.get("more_body"):
                break
        path = scope["path"]
        if path.startswith("/api/"):
            if not secrets.compare_digest(headers.get(b"x-mcpgen-preview", b""), self.token.encode()):
                await _answer(send, 403, {"error": "no preview token"})
                return
            try:
                status, data = await self.api(path, json.loads(body) if body else {})
            except (ValueError, TypeError) as exc:
                status, data = 400, {"error": str(exc)[:300]}
            except Exception as exc:  # the server's error: the page shows it
                status, data = 502, {"error": f"{type(exc).__name__}: {exc}"[:300]}
            await _answer(send, status, data)
            return
        await self.static(path, send)

    async def static(self, path: str, send: Send) -> None:
        if path == "/":
            await _raw(send, 200, b"text/html; charset=utf-8", self.page, {b"content-security-policy": _PAGE_POLICY})
        elif path == "/host.js":
            await _raw(send, 200, b"text/javascript; charset=utf-8", self.bundle)
        elif path.startswith("/ui/") and path[4:] in self.pending:
            html, policy = self.pending.pop(path[4:])  # one fetch per call
            await _raw(
                send,
                200,
                b"text/html; charset=utf-8",
                html.encode("utf-8"),
                {b"content-security-policy": policy.encode()},
            )
        else:
            await _raw(send, 404, b"text/plain", b"not found")

    async def api(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        client = self.client
        if path == "/api/interfaces":
            info = client.initialize_result
            tools = [
                {
                    "name": t.name,
                    "title": t.tool.title if isinstance(t.tool.title, str) else None,
                    "description": t.tool.description if isinstance(t.tool.description, str) else "",
                    "uri": t.resource_uri,
                    "forModel": t.for_model,
                    "forApp": t.for_app,
                }
                for t in await client.list_ui_tools()
                if t.resource_uri
            ]
            missing = "the server does not declare MCP Apps (io.modelcontextprotocol/ui)"
            notes = [] if client.server_offers_ui else [missing]
            server = f"{info.server_info.name} {info.server_info.version}" if info is not None else "the server"
            return 200, {"server": server, "tools": tools, "warnings": notes}
        if path == "/api/open":
            name, arguments = str(body.get("name")), body.get("arguments") or {}
            linked = {t.name for t in await client.list_ui_tools() if t.resource_uri}
            if name not in linked:
                return 404, {"error": f"no tool {name!r} links an interface"}
            interface = await client.read_interface(name)
            meta = interface.meta
            policy, warnings = content_security_policy(meta.csp if meta is not None else None)
            allow = allowed_features(meta.permissions if meta is not None else None)
            result = await client.call_tool(name, arguments)
            if len(self.pending) >= MAX_PENDING:
                self.pending.pop(next(iter(self.pending)))  # the page's own: it asked for a newer one
            key = secrets.token_urlsafe(16)
            self.pending[key] = (interface.html, policy)
            return 200, {
                "src": f"/ui/{key}",
                "allow": allow,
                "result": msgspec.to_builtins(result),
                "warnings": warnings,
                "version": __version__,
            }
        if path == "/api/call_tool":
            name = str(body.get("name"))
            allowed = {t.name for t in await client.list_ui_tools() if t.for_app}
            if name not in allowed:
                return 403, {"error": f'tool {name!r} is not callable by an app (its visibility lacks "app")'}
            self.app_calls.append(name)
            return 200, msgspec.to_builtins(await client.call_tool(name, body.get("arguments") or {}))
        if path == "/api/read_resource":
            return 200, msgspec.to_builtins(await client.read_resource(str(body.get("uri"))))
        if path == "/api/list_resources":
            return 200, {"resources": msgspec.to_builtins(await client.list_resources())}
        return 404, {"error": "no such call"}


# The page itself: its own script and the interfaces' frames, nothing else.
_PAGE_POLICY = (
    b"default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; connect-src 'self'; "
    b"frame-src 'self'; img-src 'self' data:"
)


async def _answer(send: Send, status: int, data: Any) -> None:
    await _raw(send, status, b"application/json", json.dumps(data).encode("utf-8"))


async def _raw(send: Send, status: int, kind: bytes, body: bytes, extra: dict[bytes, bytes] | None = None) -> None:
    headers = [
        (b"content-type", kind),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"),
        (b"x-content-type-options", b"nosniff"),
        (b"referrer-policy", b"no-referrer"),
        *(extra or {}).items(),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def listening_socket(port: int) -> socket.socket:
    """A socket listening on 127.0.0.1 (``port`` 0: a free one)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as exc:
        sock.close()
        raise PreviewError(f"port {port} on 127.0.0.1 is in use ({exc.strerror}): give another --port") from None
    sock.listen(128)
    return sock


__all__ = [
    "PreviewError",
    "PreviewHost",
    "allowed_features",
    "cache_folder",
    "content_security_policy",
    "host_bundle",
    "listening_socket",
]
