"""Serving a directory as resources: no path may leave it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcpgen import Client, McpError, Server
from mcpgen.generated import BlobResourceContents, TextResourceContents
from mcpgen.runtime.errors import ResourceNotFound
from mcpgen.runtime.shared.files import check_root_uri, resolve_within

pytestmark = pytest.mark.anyio


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "a.txt").write_text("alpha")
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff")
    (tmp_path / "secret.txt").write_text("do not serve")
    os.symlink(tmp_path / "secret.txt", root / "escape.txt")
    os.symlink(root / "docs" / "a.txt", root / "inside.txt")
    return root


@pytest.mark.parametrize(
    "relative",
    [
        "../secret.txt",
        "docs/../../secret.txt",
        "/etc/passwd",
        "escape.txt",
        "docs\\a.txt",
        "docs/a.txt\x00.png",
        "",
        "docs",
        "missing.txt",
    ],
)
def test_paths_that_leave_the_root_are_not_found(tree: Path, relative: str) -> None:
    with pytest.raises(ResourceNotFound):
        resolve_within(tree, relative)


def test_paths_inside_the_root_resolve(tree: Path) -> None:
    assert resolve_within(tree, "docs/a.txt").read_text() == "alpha"
    assert resolve_within(tree, "inside.txt").read_text() == "alpha"  # a symlink that stays inside
    assert resolve_within(tree, "docs/./a.txt").read_text() == "alpha"


@pytest.mark.parametrize("era", ["handshake", "auto"])
async def test_directory_resources_over_a_session(tree: Path, era: str) -> None:
    server = Server("files")
    server.directory(tree)
    async with Client(server, era=era) as client:
        uris = {r.uri for r in await client.list_resources()}
        assert {"file:///docs/a.txt", "file:///logo.png", "file:///inside.txt"} <= uris
        assert "file:///escape.txt" in uris  # listed by name, but refused when read
        text = await client.read_resource("file:///docs/a.txt")
        assert text.contents == [TextResourceContents(uri="file:///docs/a.txt", text="alpha", mime_type="text/plain")]
        logo = await client.read_resource("file:///logo.png")
        assert isinstance(logo.contents[0], BlobResourceContents) and logo.contents[0].mime_type == "image/png"
        for uri in (
            "file:///../secret.txt",
            "file:///%2e%2e/secret.txt",
            "file:///docs%2f..%2f..%2fsecret.txt",
            "file:///escape.txt",
            "file:////etc/passwd",
        ):
            with pytest.raises(McpError) as info:
                await client.read_resource(uri)
            # Each era's code for a missing resource (2026-07-28 retired -32002 for -32602).
            assert info.value.code == (-32002 if client.spoken_era == "handshake" else -32602)
            assert "do not serve" not in info.value.message


def test_roots_must_be_file_uris() -> None:
    assert check_root_uri("file:///home/me") == "file:///home/me"
    with pytest.raises(ValueError):
        check_root_uri("https://example.com")
