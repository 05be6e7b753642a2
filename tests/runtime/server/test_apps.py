"""MCP Apps (``io.modelcontextprotocol/ui``) on both sides: the server declares the
extension, serves ``ui://`` interfaces with their ``_meta.ui`` and links them from tools;
the client declares it when asked, lists the tools with an interface and fetches one,
checked. A host without the extension still gets ordinary content (the official Python
SDK over stdio, against examples/apps/server.py)."""

from __future__ import annotations

import asyncio
import base64
import json
import sys
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from mcpgen import Client, Context, InterfaceError, Server, client_supports_ui
from mcpgen.generated import BlobResourceContents
from mcpgen.runtime.jsonrpc.transport import memory_pair
from mcpgen.runtime.server.caching import CacheHint
from tests.paths import ROOT

EXAMPLE = ROOT / "examples" / "apps" / "server.py"
ERAS = ("handshake", "stateless")
PAGE = "<!doctype html><title>t</title><p>hello</p>"
META_2026 = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def app_server() -> Server:
    server = Server("apps")
    server.ui_resource(
        "ui://apps/page.html",
        PAGE,
        title="Page",
        csp={"connectDomains": ["https://api.example.com"], "resourceDomains": ["https://cdn.example.com"]},
        permissions={"clipboardWrite": {}},
        domain="apps.example.com",
        prefers_border=False,
        cache=CacheHint(60_000, "public"),
    )

    @server.tool(ui="ui://apps/page.html")
    def show(n: int = 1) -> str:
        return f"shown {n}"

    @server.tool(ui="ui://apps/page.html", visibility=["app"])
    def refresh() -> str:
        return "refreshed"

    @server.tool(visibility=["model"])
    def plain() -> str:
        return "plain"

    @server.tool
    def asks_ui(ctx: Context) -> bool:
        return client_supports_ui(ctx.client_capabilities)

    return server


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 20))


@pytest.mark.parametrize("era", ERAS)
def test_server_declares_links_and_serves_its_interface(era: str) -> None:
    async def main() -> None:
        async with Client(app_server(), era=era, apps=True) as client:
            assert client.server_offers_ui
            assert client.session.peer_caps.tree["extensions"]["io.modelcontextprotocol/ui"] == {}
            metas = {t.name: t.meta for t in await client.list_tools()}
            assert metas["show"] == {"ui": {"resourceUri": "ui://apps/page.html"}}
            assert metas["refresh"] == {"ui": {"resourceUri": "ui://apps/page.html", "visibility": ["app"]}}
            assert metas["plain"] == {"ui": {"visibility": ["model"]}}
            [listed] = await client.list_resources()
            assert (listed.uri, listed.name, listed.mime_type) == ("ui://apps/page.html", "apps/page.html", UI_MIME)
            ui = {
                "csp": {"connectDomains": ["https://api.example.com"], "resourceDomains": ["https://cdn.example.com"]},
                "permissions": {"clipboardWrite": {}},
                "domain": "apps.example.com",
                "prefersBorder": False,
            }
            assert listed.meta == {"ui": ui}
            [contents] = (await client.read_resource("ui://apps/page.html")).contents
            assert (contents.mime_type, contents.text, contents.meta) == (UI_MIME, PAGE, {"ui": ui})

    run(main())


UI_MIME = "text/html;profile=mcp-app"


@pytest.mark.parametrize("era", ERAS)
def test_client_reports_the_extension_only_when_asked(era: str) -> None:
    async def main() -> tuple[bool, bool]:
        server = app_server()
        async with Client(server, era=era, apps=True) as host:
            declared = (await host.call_tool("asks_ui", {})).structured_content
        async with Client(server, era=era) as plain:
            undeclared = (await plain.call_tool("asks_ui", {})).structured_content
        return declared["result"], undeclared["result"]

    assert run(main()) == (True, False)


def test_a_server_without_interfaces_declares_nothing() -> None:
    server = Server("plain")

    @server.tool
    def t() -> str:
        return "x"

    assert "extensions" not in msgspec.to_builtins(server.capabilities())
    assert server.extensions == {}


@pytest.mark.parametrize("era", ERAS)
def test_client_lists_tools_with_an_interface_and_their_visibility(era: str) -> None:
    async def main() -> None:
        async with Client(app_server(), era=era, apps=True) as client:
            tools = {t.name: t for t in await client.list_ui_tools()}
            assert set(tools) == {"show", "refresh", "plain"}
            assert (tools["show"].resource_uri, tools["show"].for_model, tools["show"].for_app) == (
                "ui://apps/page.html",
                True,
                True,
            )
            assert (tools["refresh"].for_model, tools["refresh"].for_app) == (False, True)
            assert (tools["plain"].resource_uri, tools["plain"].for_app) == (None, False)
            by_tool = await client.read_interface("show")
            by_uri = await client.read_interface("ui://apps/page.html")
            assert by_tool == by_uri and by_tool.html == PAGE
            assert by_tool.meta is not None and by_tool.meta.csp.connect_domains == ["https://api.example.com"]
            assert by_tool.meta.domain == "apps.example.com" and by_tool.meta.prefers_border is False
            with pytest.raises(InterfaceError, match="larger than 10"):
                await client.read_interface("show", max_bytes=10)
            with pytest.raises(InterfaceError, match="no tool 'plain' with an MCP Apps interface"):
                await client.read_interface("plain")
            with pytest.raises(InterfaceError, match="no tool 'nope'"):
                await client.read_interface("nope")

    run(main())


def test_client_refuses_what_a_host_must_not_render() -> None:
    server = Server("bad")

    @server.resource("ui://bad/text", mime_type="text/html")
    def wrong_mime() -> str:
        return PAGE

    @server.resource("ui://bad/blob", mime_type=UI_MIME)
    def blob() -> BlobResourceContents:
        return BlobResourceContents(uri="ui://bad/blob", blob=base64.b64encode(b"\xff\xfe").decode(), mime_type=UI_MIME)

    @server.resource("ui://bad/big", mime_type=UI_MIME)
    def big() -> BlobResourceContents:
        data = base64.b64encode(b"<p>" * 1000).decode()
        return BlobResourceContents(uri="ui://bad/big", blob=data, mime_type=UI_MIME)

    @server.resource("ui://bad/meta", mime_type=UI_MIME, meta={})
    def bad_meta() -> Any:
        from mcpgen.generated import TextResourceContents

        return TextResourceContents(uri="ui://bad/meta", text=PAGE, mime_type=UI_MIME, meta={"ui": {"csp": 1}})

    async def main() -> None:
        async with Client(server, apps=True) as client:
            with pytest.raises(InterfaceError, match="is text/html, not text/html;profile=mcp-app"):
                await client.read_interface("ui://bad/text")
            with pytest.raises(InterfaceError, match="not UTF-8"):
                await client.read_interface("ui://bad/blob")
            with pytest.raises(InterfaceError, match="larger than 2000"):
                await client.read_interface("ui://bad/big", max_bytes=2000)
            assert (await client.read_interface("ui://bad/big")).html == "<p>" * 1000
            with pytest.raises(InterfaceError, match="invalid MCP Apps metadata"):
                await client.read_interface("ui://bad/meta")

    run(main())


def test_html_from_a_string_a_file_and_plain_and_async_functions(tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    page.write_text("<p>from a file</p>")
    server = Server("sources")
    calls: list[str] = []

    def made() -> str:
        calls.append("plain")
        return f"<p>made {len(calls)}</p>"

    async def made_async() -> str:
        calls.append("async")
        return "<p>made async</p>"

    server.ui_resource("ui://s/string", "<p>a string</p>")
    server.ui_resource("ui://s/file", page)
    server.ui_resource("ui://s/plain", made)
    server.ui_resource("ui://s/async", made_async)

    async def main() -> list[str]:
        async with Client(server, apps=True) as client:
            first = [(await client.read_interface(f"ui://s/{k}")).html for k in ("string", "file", "plain", "async")]
            page.write_text("<p>edited</p>")  # read again at each resources/read
            return [
                *first,
                (await client.read_interface("ui://s/file")).html,
                (await client.read_interface("ui://s/plain")).html,
            ]

    assert run(main()) == [
        "<p>a string</p>",
        "<p>from a file</p>",
        "<p>made 1</p>",
        "<p>made async</p>",
        "<p>edited</p>",
        "<p>made 3</p>",
    ]


def test_registration_refuses_what_the_extension_does_not_define(tmp_path: Path) -> None:
    server = Server("refuses")
    with pytest.raises(ValueError, match="ui:// URI"):
        server.ui_resource("https://example.com/page.html", PAGE)
    with pytest.raises(ValueError, match="ui:// URI"):
        server.tool(ui="resource://page")(lambda: "x")
    with pytest.raises(ValueError, match="visibility"):
        server.tool(visibility=[])(lambda: "x")
    with pytest.raises(ValueError, match="visibility"):
        server.tool(visibility="app")(lambda: "x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="invalid MCP Apps tool metadata"):
        server.tool(visibility=["user"])(lambda: "x")  # type: ignore[list-item]
    with pytest.raises(ValueError, match="not as a `ui` key"):
        server.tool(ui="ui://x/y", meta={"ui": {}})(lambda: "x")
    with pytest.raises(ValueError, match="invalid MCP Apps resource metadata"):
        server.ui_resource("ui://x/y", PAGE, csp={"connectDomains": "https://one.example.com"})
    with pytest.raises(ValueError, match="invalid MCP Apps resource metadata"):
        server.ui_resource("ui://x/y", PAGE, permissions={"camera": True})
    with pytest.raises(FileNotFoundError):
        server.ui_resource("ui://x/y", tmp_path / "missing.html")
    with pytest.raises(TypeError, match="html must be"):
        server.ui_resource("ui://x/y", 42)  # type: ignore[arg-type]
    assert server.extensions == {} and server.capabilities().tools is not None


def test_the_interface_carries_its_cache_hint_in_the_stateless_era() -> None:
    async def main() -> dict[str, Any]:
        a, b = memory_pair()
        task = asyncio.create_task(app_server().serve(a))
        message = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "resources/read",
            "params": {"_meta": META_2026, "uri": "ui://apps/page.html"},
        }
        await b.send(json.dumps(message).encode())
        result: dict[str, Any] = json.loads(await b.receive())["result"]  # type: ignore[arg-type]
        await b.close()
        await task
        return result

    result = run(main())
    assert (result["ttlMs"], result["cacheScope"]) == (60_000, "public")
    assert result["contents"][0]["mimeType"] == UI_MIME


@pytest.mark.anyio
async def test_a_host_without_the_extension_gets_ordinary_content(tmp_path: Path) -> None:
    """The official Python SDK, declaring no extension, over stdio to the example server:
    the tool with an interface lists and answers as any tool, text first."""
    params = StdioServerParameters(command=sys.executable, args=[str(EXAMPLE)], cwd=str(ROOT))
    with anyio.fail_after(30), (tmp_path / "stderr.log").open("w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=15) as session:
                init = await session.initialize()
                assert init.server_info.name == "dice"
                tools = {t.name: t for t in (await session.list_tools()).tools}
                assert tools["roll_dice"].meta == {"ui": {"resourceUri": "ui://dice/chart.html"}}
                result = await session.call_tool("roll_dice", {"count": 4, "sides": 8})
                assert not result.is_error
                [text] = result.content
                assert text.type == "text" and text.text.startswith("Rolled 4d8: ")
                data = result.structured_content
                assert data is not None and len(data["rolls"]) == 4 and data["total"] == sum(data["rolls"])
                assert f"(total {data['total']})" in text.text
