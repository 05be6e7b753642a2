"""The gateway's configuration: the mcpServers JSON of host apps (their extra keys kept),
what a gateway adds per backend and for itself, ``${NAME}`` from the environment, and every
mistake said in one line that names where it is."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from mcpgen import Gateway, Proxy, Server
from mcpgen.runtime.gateway.config import ConfigError, load, parse
from tests.paths import ROOT

BACKEND = ROOT / "tests" / "runtime" / "gateway" / "backends.py"


def command(*args: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(BACKEND), *args]}


def test_a_host_apps_file_loads_as_it_is(tmp_path: Path) -> None:
    # What Claude Desktop, Cursor, VS Code and Windsurf write, keys they add included.
    file = tmp_path / "claude_desktop_config.json"
    file.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "files": {**command(), "env": {"ROOT": "/srv"}, "alwaysAllow": ["read"]},
                    "remote": {"serverUrl": "https://example.test/mcp", "type": "http", "disabled": False},
                    "gemini": {"httpUrl": "https://example.test/other", "headers": {"X-Key": "k"}},
                    "off": {"command": "nothing", "disabled": True},
                }
            }
        )
    )
    config = load(file)
    assert set(config.backends) == {"files", "remote", "gemini"}
    assert config.backends["remote"].endpoint == "https://example.test/mcp"
    assert config.backends["gemini"].endpoint == "https://example.test/other"
    assert config.backends["files"].env == {"ROOT": "/srv"}
    assert config.gateway.name == "mcpgen-gateway" and config.gateway.store is None


def test_what_a_gateway_adds_per_backend() -> None:
    config = parse(
        {
            "mcpServers": {
                "wx": {
                    **command(),
                    "namespace": "weather",
                    "tools": {"allow": ["echo"], "deny": ["add"]},
                    "era": "2025-11-25",
                    "timeout": 5,
                    "max_concurrency": 8,
                    "max_sessions": 2,
                }
            },
            "gateway": {"name": "front", "round_timeout": 60, "max_rounds": 10, "tracing": True},
        }
    )
    wx = config.backends["wx"]
    assert (wx.namespace, wx.era, wx.timeout, wx.max_concurrency, wx.max_sessions) == ("weather", "2025-11-25", 5, 8, 2)
    assert wx.tools is not None and wx.tools.allow == ["echo"] and wx.tools.deny == ["add"]
    assert (config.gateway.name, config.gateway.round_timeout, config.gateway.tracing) == ("front", 60, True)


def test_variables_come_from_the_environment() -> None:
    data = {"mcpServers": {"r": {"url": "https://example.test/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}}}
    config = parse(data, {"TOKEN": "s3cret"})
    assert config.backends["r"].headers == {"Authorization": "Bearer s3cret"}
    with pytest.raises(ConfigError, match=r"mcpServers.r.headers.Authorization: \$\{TOKEN\} is not set"):
        parse(data, {})


@pytest.mark.parametrize(
    ("backend", "says"),
    [
        ({}, "either command or url"),
        ({"command": "x", "url": "https://e.test/mcp"}, "either command or url"),
        ({"url": "ftp://e.test/mcp"}, "http:// or https://"),
        ({"command": "x", "timeout": 0}, "must be positive"),
        ({"command": "x", "auth": {"type": "passthrough"}}, "passthrough sends the caller's token to a url"),
        ({"url": "https://e.test/mcp", "auth": {"type": "client_credentials"}}, "needs client_id"),
        ({"url": "https://e.test/mcp", "auth": {"type": "token_exchange", "client_id": "c"}}, "token_endpoint"),
        ({"url": "https://e.test/mcp", "auth": {"type": "magic"}}, "auth.type"),
        ({"command": "x", "colour": "blue"}, "colour"),
    ],
)
def test_mistakes_are_named(backend: dict[str, Any], says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        parse({"mcpServers": {"b": backend}})


def test_files_that_are_not_configurations(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ConfigError, match="is not JSON"):
        load(tmp_path / "bad.json")
    with pytest.raises(ConfigError, match="names no backend"):
        parse({"mcpServers": {}})
    with pytest.raises(ConfigError, match="a JSON object"):
        parse([1, 2])


def test_one_backend_is_served_as_it_is_several_are_namespaced() -> None:
    one = Gateway({"mcpServers": {"b": command()}}).server()
    assert isinstance(one, Proxy) and one.features.mounts is not None  # the proxy itself
    named = Gateway({"mcpServers": {"b": {**command(), "namespace": "x"}}}).server()
    assert not isinstance(named, Proxy)
    several = Gateway({"mcpServers": {"a": command(), "b": {**command(), "namespace": "bee"}}})
    front = several.server()
    assert isinstance(front, Server) and not isinstance(front, Proxy)
    assert [m.namespace for m in front.features.mounts.mounted] == ["a", "bee"]  # type: ignore[union-attr]
    assert set(several.proxies) == {"a", "b"}


def test_acting_for_the_caller_needs_a_gateway_that_checks_tokens() -> None:
    data = {"mcpServers": {"r": {"url": "https://example.test/mcp", "auth": {"type": "passthrough"}}}}
    with pytest.raises(ConfigError, match="give gateway.auth"):
        Gateway(data).server()
