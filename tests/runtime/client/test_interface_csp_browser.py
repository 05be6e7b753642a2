"""The MCP Apps host page of the tests (tests/apps/host.js) applies the interface's Content
Security Policy whatever its markup (issue 36.21): an interface written with ``<HEAD>``, or
with no head at all, still runs under the policy, and declared values that are not origins
(``*``, ``'unsafe-eval'``) never widen it. Headless Chromium renders each interface through
the page; the interface's script tries to reach a beacon on another loopback port by
``fetch`` and by an image, and the beacon counts what reached it."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpgen import Client, Server
from tests.apps_peers import APPS, ensure_installed
from tests.cdp import Browser
from tests.http_server import serving_in_thread

pytestmark = pytest.mark.slow

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
# Each tries both ways out as soon as it runs, then keeps telling its host page it ran (the
# frame is sandboxed without same-origin: a message is the only way to its host page).
PROBE = (
    "<script>fetch('{beacon}?fetch').catch(() => 0);"
    "new Image().src = '{beacon}?img';"
    "setInterval(() => parent.postMessage('probe ran', '*'), 100);</script><p>probe</p>"
)
HEARD = (
    "window.addEventListener('message', (e) => { if (e.data === 'probe ran') document.body.dataset.probe = 'ran'; })"
)
MARKUPS = {
    "upper-case head": "<!doctype html><HTML><HEAD><title>t</title></HEAD><BODY>{probe}</BODY></HTML>",
    "no head at all": "{probe}",
    "head with attributes": '<html><head lang="en"><title>t</title></head><body>{probe}</body></html>',
}


class Beacon:
    """A loopback HTTP server that only counts the requests reaching it."""

    def __init__(self) -> None:
        self.hits: list[str] = []
        self.lock = threading.Lock()

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        with self.lock:
            self.hits.append(scope.get("query_string", b"").decode())
        await send({"type": "http.response.start", "status": 200, "headers": [(b"access-control-allow-origin", b"*")]})
        await send({"type": "http.response.body", "body": b"ok"})


def build_host() -> str:
    """The host page's script bundled with the official app-bridge (esbuild, as test_apps_browser)."""
    import subprocess
    import tempfile

    ensure_installed(APPS)
    with tempfile.TemporaryDirectory() as where:
        target = Path(where) / "host.js"
        esbuild = APPS / "node_modules" / ".bin" / "esbuild"
        options = ["--bundle", "--format=iife", "--target=es2022", "--minify", f"--outfile={target}"]
        done = subprocess.run(
            [str(esbuild), str(APPS / "host.js"), *options], cwd=APPS, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        return target.read_text()


class Host:
    """The host's server side: the page, its script, and ``/api/start`` (the interface read
    with mcpgen's Client, as a host would)."""

    def __init__(self, server: Server, host_js: str) -> None:
        self.server = server
        self.host_js = host_js

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        path = scope["path"]
        if path == "/":
            status, kind, body = 200, b"text/html; charset=utf-8", (APPS / "host.html").read_bytes()
        elif path == "/host.js":
            status, kind, body = 200, b"text/javascript", self.host_js.encode()
        elif path == "/api/start":
            async with Client(self.server, apps=True) as client:
                interface = await client.read_interface("show")
                result = await client.call_tool("show", {})
            result_data = result.structured_content
            answer = {"html": interface.html, "csp": interface.csp, "arguments": {}, "result": result_data}
            status, kind, body = 200, b"application/json", json.dumps(answer).encode()
        else:
            status, kind, body = 404, b"text/plain", b"not found"
        await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", kind)]})
        await send({"type": "http.response.body", "body": body})


@pytest.fixture(scope="module")
def host_js() -> str:
    return build_host()


@pytest.fixture
def beacon() -> Iterator[tuple[Beacon, str]]:
    found = Beacon()
    with serving_in_thread(found) as port:
        yield found, f"http://127.0.0.1:{port}/beacon"


def render(host_js: str, html: str, csp: dict[str, Any]) -> str:
    """Render ``html`` (declaring ``csp``) through the host page; "ran" once its script ran."""
    server = Server("probe")
    server.ui_resource("ui://probe/page.html", html, csp=csp)

    @server.tool(ui="ui://probe/page.html")
    def show() -> dict[str, str]:
        return {"shown": "yes"}

    with serving_in_thread(Host(server, host_js)) as port:
        browser = Browser(width=800, height=600)
        try:
            browser.open(f"http://127.0.0.1:{port}/")
            state = browser.wait_for(
                "['rendering', 'initialized', 'failed'].includes(document.body.dataset.state)"
                " && document.body.dataset.state"
            )
            assert state != "failed", browser.evaluate("document.getElementById('log').textContent")
            browser.evaluate(HEARD)
            heard: str = browser.wait_for("document.body.dataset.probe || ''")
            time.sleep(0.5)  # what the probe sent has reached the beacon by now, if anything did
            return heard
        finally:
            browser.close()


@pytest.mark.parametrize("markup", list(MARKUPS))
def test_the_policy_applies_whatever_the_markup(host_js: str, beacon: tuple[Beacon, str], markup: str) -> None:
    found, url = beacon
    html = MARKUPS[markup].format(probe=PROBE.format(beacon=url))
    assert render(host_js, html, {}) == "ran"  # the interface's own script ran (inline is allowed)...
    assert found.hits == [], f"{markup}: the interface reached another origin: {found.hits}"  # ...and got nowhere


def test_declared_values_that_are_not_origins_never_widen_the_policy(host_js: str, beacon: tuple[Beacon, str]) -> None:
    found, url = beacon
    html = "<html><head></head><body>" + PROBE.format(beacon=url) + "</body></html>"
    assert render(host_js, html, {"connectDomains": ["*"], "resourceDomains": ["*", "'unsafe-eval'"]}) == "ran"
    assert found.hits == []
    origin = url.rsplit("/", 1)[0]
    assert render(host_js, html, {"connectDomains": [origin]}) == "ran"  # a declared origin is allowed...
    assert found.hits == ["fetch"]  # ...for what it was declared for, and only that
