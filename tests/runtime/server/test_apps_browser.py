"""MCP Apps in a real browser: the example dice server (examples/apps/server.py, an mcpgen
server over Streamable HTTP) renders its chart in headless Chromium inside a minimal host
page built on the official ``app-bridge`` (tests/apps/host.js). The host reaches the server
through a small proxy that uses mcpgen's ``Client`` (this file). A click in the app makes it
call ``roll_dice`` through the bridge; the test checks the server's result reached the app
and, through the app's model-context update, the host page. The screenshot is kept under
``results/`` (git-ignored)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from mcpgen import Client
from tests.apps_peers import APPS, EXAMPLE, ensure_installed
from tests.cdp import Browser
from tests.http_server import free_port, serving_in_thread, wait_until_up
from tests.paths import ROOT

SCREENSHOT = ROOT / "results" / "apps-browser.png"
FIRST_CALL = {"count": 3, "sides": 6}

pytestmark = pytest.mark.slow

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def build(tmp_path: Path) -> tuple[Path, str]:
    """The example's interface bundle (its own npm package, `npm run build`) and the host
    page's bundle of the official app-bridge; returns (app bundle, host script)."""
    ensure_installed(APPS)
    ensure_installed(EXAMPLE)
    app = tmp_path / "app.js"
    host = tmp_path / "host.js"
    for source, target, package in ((EXAMPLE / "src" / "app.js", app, EXAMPLE), (APPS / "host.js", host, APPS)):
        esbuild = package / "node_modules" / ".bin" / "esbuild"  # each package's own, as `npm run build`
        options = ["--bundle", "--format=iife", "--target=es2022", "--minify", f"--outfile={target}"]
        done = subprocess.run(
            [str(esbuild), str(source), *options], cwd=package, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
    return app, host.read_text()


class HostProxy:
    """The host's server side: serves the host page and relays the page's requests to the
    MCP server with mcpgen's Client, as a host would (app-only tools stay out of the
    model's reach; tools without "app" visibility are refused to the app)."""

    def __init__(self, mcp_url: str, host_js: str) -> None:
        self.mcp_url = mcp_url
        self.host_js = host_js
        self.client: Client | None = None
        self.app_calls: list[tuple[dict[str, Any], dict[str, Any]]] = []  # (params, result)

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                event = await receive()
                if event["type"] == "lifespan.startup":
                    self.client = Client.http(self.mcp_url, apps=True)
                    await self.client.open()
                    await send({"type": "lifespan.startup.complete"})
                else:
                    if self.client is not None:
                        await self.client.close()
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        body = b""
        while True:
            event = await receive()
            body += event.get("body", b"")
            if not event.get("more_body"):
                break
        status, kind, payload = await self.route(scope["path"], body)
        await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", kind)]})
        await send({"type": "http.response.body", "body": payload})

    async def route(self, path: str, body: bytes) -> tuple[int, bytes, bytes]:
        assert self.client is not None
        if path == "/":
            return 200, b"text/html; charset=utf-8", (APPS / "host.html").read_bytes()
        if path == "/host.js":
            return 200, b"text/javascript", self.host_js.encode()
        if path == "/api/start":  # the "model" calls the tool; the host renders its interface
            [tool] = [t for t in await self.client.list_ui_tools() if t.name == "roll_dice" and t.for_model]
            interface = await self.client.read_interface(tool.name)
            result = await self.client.call_tool(tool.name, FIRST_CALL)
            answer = {
                "html": interface.html,
                "csp": interface.csp,  # the origins read_interface kept (never the raw declaration)
                "arguments": FIRST_CALL,
                "result": msgspec.to_builtins(result),
            }
            return 200, b"application/json", json.dumps(answer).encode()
        if path == "/api/call_tool":
            params = json.loads(body)
            allowed = {t.name for t in await self.client.list_ui_tools() if t.for_app}
            if params["name"] not in allowed:
                return 403, b"application/json", b'{"error": "not callable by the app"}'
            result = msgspec.to_builtins(await self.client.call_tool(params["name"], params.get("arguments") or {}))
            self.app_calls.append((params, result))
            return 200, b"application/json", json.dumps(result).encode()
        return 404, b"text/plain", b"not found"


@pytest.fixture
def example_url(tmp_path: Path) -> Iterator[tuple[str, HostProxy]]:
    app_bundle, host_js = build(tmp_path)
    port = free_port()
    mcp_url = f"http://127.0.0.1:{port}/mcp"
    command = [sys.executable, str(EXAMPLE / "server.py"), "http", str(port)]
    env = {**os.environ, "DICE_APP_JS": str(app_bundle)}  # the interface inlines this bundle
    server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_until_up(mcp_url, server)
        proxy = HostProxy(mcp_url, host_js)
        with serving_in_thread(proxy, lifespan="on") as host_port:
            yield f"http://127.0.0.1:{host_port}/", proxy
    finally:
        server.terminate()
        try:
            server.wait(5)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def test_the_example_app_calls_a_tool_through_the_official_bridge_in_chromium(
    example_url: tuple[str, HostProxy],
) -> None:
    url, proxy = example_url
    browser = Browser(width=900, height=700)
    try:
        browser.open(url)
        state = browser.wait_for(
            "['initialized', 'failed'].includes(document.body.dataset.state) && document.body.dataset.state"
        )
        assert state == "initialized", browser.evaluate("document.getElementById('log').textContent")
        frame = browser.evaluate("JSON.stringify(document.querySelector('iframe').getBoundingClientRect())")
        box = json.loads(frame)
        # A user's click on the app's "roll again" button, which fills the top of its page
        # (examples/apps/app.html): the app is initialized, so its handler is in place.
        browser.click(box["x"] + 60, box["y"] + 30)
        context = browser.wait_for("document.body.dataset.context || ''")
        shot = browser.screenshot(SCREENSHOT)
    finally:
        browser.close()
    print(f"\nscreenshot: {shot}")
    assert proxy.app_calls, "the app's tool call never reached the host"
    [(params, result)] = proxy.app_calls
    assert (params["name"], params["arguments"]) == ("roll_dice", {"count": 5, "sides": 6})
    total = result["structuredContent"]["total"]
    # The app drew the server's result and told the host what it shows.
    assert re.fullmatch(r"5d6: total (\d+)", context) and context == f"5d6: total {total}"
    assert shot.stat().st_size > 5_000
