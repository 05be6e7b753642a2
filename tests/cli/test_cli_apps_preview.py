"""`mcpgen apps preview` (issue 35.5): a server's MCP Apps interfaces rendered on a local host
page built on the official app-bridge, in headless Chromium: the example dice app
(examples/apps) is opened as a model would call it, a click in the app calls a tool through
the bridge and the preview, and the app's model-context update reaches the page. Then, over
plain HTTP, what keeps the page to itself: the token, the Host check, app-only calls, a
one-time interface address, and a Content Security Policy sent as a header whatever the
markup, without the unsafe values an interface may declare."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from mcpgen.cli.preview import content_security_policy
from tests.apps_peers import EXAMPLE, ensure_installed
from tests.cdp import Browser
from tests.http_server import free_port
from tests.paths import ROOT

pytestmark = pytest.mark.slow

SCREENSHOT = ROOT / "results" / "apps-preview.png"

ODD_SERVER = """
from mcpgen import Server

server = Server("odd")
# No <head>, and a CSP that declares what no interface should get.
server.ui_resource(
    "ui://odd/page.html",
    "<p id=x>no head here</p><script>document.title = 'ran'</script>",
    csp={"connectDomains": ["*", "https://api.example.com"], "resourceDomains": ["'unsafe-eval'", "data:"]},
)


@server.tool(ui="ui://odd/page.html", visibility=["model"])
def model_only() -> str:
    return "for the model"


if __name__ == "__main__":
    server.run()
"""


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache folder for the module: the host page is built once (npm ci, esbuild)."""
    return tmp_path_factory.mktemp("mcpgen-cache")


@pytest.fixture(scope="module")
def dice_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example's interface script, built as its README says (`npm run build`)."""
    ensure_installed(EXAMPLE)
    out = tmp_path_factory.mktemp("dice") / "app.js"
    esbuild = EXAMPLE / "node_modules" / ".bin" / "esbuild"
    options = ["--bundle", "--format=iife", "--target=es2022", "--minify", f"--outfile={out}"]
    done = subprocess.run(
        [str(esbuild), "src/app.js", *options], cwd=EXAMPLE, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return out


class Preview:
    """`mcpgen apps preview TARGET` running on a free port; its output collected."""

    def __init__(self, target: str, cache: Path, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mcpgen", "apps", "preview", target, "--port", str(self.port), "--no-open", "-q"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=ROOT,
            env={**os.environ, "MCPGEN_CACHE_DIR": str(cache), "NO_COLOR": "1", **(env or {})},
        )
        self.lines: list[str] = []
        assert self.process.stdout is not None
        stream = self.process.stdout
        threading.Thread(target=lambda: self.lines.extend(stream), daemon=True).start()
        deadline = time.monotonic() + 600  # the first start builds the page (npm ci)
        while not any(f"at {self.url}" in line for line in self.lines):
            assert self.process.poll() is None and time.monotonic() < deadline, "".join(self.lines)
            time.sleep(0.1)

    def token(self) -> str:
        found = re.search(r'name="mcpgen-token" content="([^"]+)"', httpx.get(self.url, timeout=30).text)
        assert found
        return found[1]

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)


@pytest.fixture
def dice(cache: Path, dice_bundle: Path) -> Iterator[Preview]:
    preview = Preview(f"{sys.executable} {EXAMPLE / 'server.py'}", cache, {"DICE_APP_JS": str(dice_bundle)})
    try:
        yield preview
    finally:
        preview.stop()


def test_the_dice_app_renders_and_calls_its_tool_through_the_preview(dice: Preview) -> None:
    browser = Browser(width=1100, height=800)
    try:
        browser.open(dice.url)
        ready = browser.wait_for(
            "['ready', 'failed'].includes(document.body.dataset.state) && document.body.dataset.state"
        )
        assert ready == "ready", browser.evaluate("document.getElementById('log').textContent")
        listed = browser.evaluate("[...document.querySelectorAll('.tool')].map((card) => card.dataset.tool)")
        assert listed == ["roll_dice", "reset_seed"]
        browser.evaluate("window.mcpgenPreview.open('roll_dice', {count: 3, sides: 6}); true")
        state = browser.wait_for(
            "['initialized', 'failed'].includes(document.body.dataset.state) && document.body.dataset.state", 60
        )
        assert state == "initialized", browser.evaluate("document.getElementById('log').textContent")
        box = json.loads(browser.evaluate("JSON.stringify(document.querySelector('iframe').getBoundingClientRect())"))
        # The app's "roll again" button fills the top of its page (examples/apps/app.html).
        browser.click(box["x"] + 60, box["y"] + 30)
        context = browser.wait_for("document.body.dataset.context || ''", 60)
        log = browser.evaluate("document.getElementById('log').textContent")
        browser.screenshot(SCREENSHOT)
    finally:
        browser.close()
    assert re.fullmatch(r"5d6: total \d+", context), context
    assert 'app -> tools/call roll_dice {"count":5,"sides":6}' in log, log
    assert "server -> " in log and "roll_dice: the app has the tool's input and result" in log


@pytest.fixture
def odd(cache: Path, tmp_path: Path, dice: Preview) -> Iterator[Preview]:
    """A second server (after `dice`, so that the page is already built)."""
    (tmp_path / "odd.py").write_text(ODD_SERVER)
    preview = Preview(f"{sys.executable} {tmp_path / 'odd.py'}", cache)
    try:
        yield preview
    finally:
        preview.stop()


def test_the_page_keeps_to_itself_and_interfaces_get_a_safe_policy(odd: Preview) -> None:
    token = odd.token()
    api = f"{odd.url}api/"
    with httpx.Client(timeout=60) as http:
        assert http.get(f"{api}interfaces").status_code == 403  # no token
        assert http.get(f"{api}interfaces", headers={"x-mcpgen-preview": "guess"}).status_code == 403
        rebound = http.get(odd.url, headers={"Host": f"attacker.example:{odd.port}"})
        assert rebound.status_code == 403  # DNS rebinding: another name for this address
        headers = {"x-mcpgen-preview": token}
        listed = http.get(f"{api}interfaces", headers=headers).json()
        assert [t["name"] for t in listed["tools"]] == ["model_only"] and listed["tools"][0]["forApp"] is False
        opened = http.post(f"{api}open", headers=headers, json={"name": "model_only", "arguments": {}}).json()
        assert opened["result"]["content"][0]["text"] == "for the model"
        assert sorted(opened["warnings"]) == [
            'csp.connectDomains: "*" is not an origin: left out',
            "csp.resourceDomains: \"'unsafe-eval'\" is not an origin: left out",
            'csp.resourceDomains: "data:" is not an origin: left out',
        ]
        page = http.get(f"{odd.url}{opened['src'].lstrip('/')}")
        assert page.status_code == 200 and page.text.startswith("<p id=x>no head here")
        policy = page.headers["content-security-policy"]
        assert "default-src 'none'" in policy and "connect-src https://api.example.com" in policy
        assert "unsafe-eval" not in policy and " * " not in f"{policy} " and "data: data:" not in policy
        assert http.get(f"{odd.url}{opened['src'].lstrip('/')}").status_code == 404  # one fetch only
        refused = http.post(f"{api}call_tool", headers=headers, json={"name": "model_only", "arguments": {}})
        assert refused.status_code == 403 and "not callable by an app" in refused.json()["error"]


def test_the_policy_keeps_only_origins() -> None:
    policy, warnings = content_security_policy(
        {"connectDomains": ["https://a.example", "wss://*.b.example:443", "https://c.example; script-src *"]}
    )
    assert "connect-src https://a.example wss://*.b.example:443;" in policy
    assert warnings == ['csp.connectDomains: "https://c.example; script-src *" is not an origin: left out']
    assert content_security_policy(None)[0].startswith("default-src 'none'; script-src 'self' 'unsafe-inline';")
