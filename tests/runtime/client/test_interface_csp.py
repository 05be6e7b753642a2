"""An interface's declared Content Security Policy is checked before a host uses it (issue
36.21): ``read_interface`` keeps the origins and flags every other value (``*``, CSP
keywords such as ``'unsafe-eval'``, schemes such as ``data:``, a ``;`` that would start
another directive), which a host then never puts in the policy. Client and server in one
process (the host page's side is tests/runtime/client/test_interface_csp_browser.py)."""

from __future__ import annotations

import logging

import pytest

from mcpgen import Client, Server
from mcpgen.runtime.client.apps import checked_origins

pytestmark = pytest.mark.anyio
DECLARED = {
    "connectDomains": ["*", "https://api.example.com", "https://c.example; script-src *"],
    "resourceDomains": ["'unsafe-eval'", "data:", "https://cdn.example.com", "'unsafe-inline'"],
    "frameDomains": ["https://*.frames.example:443"],
    "baseUriDomains": ["http:"],
}


async def test_read_interface_flags_what_is_not_an_origin(caplog: pytest.LogCaptureFixture) -> None:
    server = Server("csp")
    server.ui_resource("ui://csp/page.html", "<p>page</p>", csp=DECLARED)

    @server.tool(ui="ui://csp/page.html")
    def show() -> str:
        return "shown"

    caplog.set_level(logging.WARNING, logger="mcpgen")
    async with Client(server, apps=True) as client:
        interface = await client.read_interface("show")
    assert interface.csp == {
        "connectDomains": ["https://api.example.com"],
        "resourceDomains": ["https://cdn.example.com"],
        "frameDomains": ["https://*.frames.example:443"],
    }
    assert sorted(interface.flagged) == sorted(
        [
            'csp.connectDomains: "*" is not an origin: left out',
            'csp.connectDomains: "https://c.example; script-src *" is not an origin: left out',
            "csp.resourceDomains: \"'unsafe-eval'\" is not an origin: left out",
            'csp.resourceDomains: "data:" is not an origin: left out',
            "csp.resourceDomains: \"'unsafe-inline'\" is not an origin: left out",
            'csp.baseUriDomains: "http:" is not an origin: left out',
        ]
    )
    assert interface.meta is not None  # the declaration itself is kept as it came
    assert sum("ui://csp/page.html" in r.getMessage() for r in caplog.records) == len(interface.flagged)


@pytest.mark.parametrize(
    "value",
    ["*", "'self'", "'none'", "blob:", "https:", "https://a.example b.example", "https://a.example,https://b", 7, None],
)
def test_values_that_are_not_origins_are_left_out(value: object) -> None:
    kept, flagged = checked_origins({"connectDomains": [value, "wss://live.example"]})
    assert kept == {"connectDomains": ["wss://live.example"]} and len(flagged) == 1
