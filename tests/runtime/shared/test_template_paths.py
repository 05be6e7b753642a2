"""A resource template's variables are percent-decoded before a handler sees them, so a
naive ``file:///{path}`` handler could be walked out of its folder with
``file:///..%2Foutside%2Fsecret.txt`` (security issue, point 16). Such URIs are not served by
default, in both eras, over a real server on loopback; ``allow_traversal=True`` opts out."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpgen import Client, McpError, Server
from mcpgen.runtime.shared.files import leaves_root
from tests.http_server import serving_in_thread

pytestmark = pytest.mark.anyio


def naive_server(root: Path, seen: list[str]) -> Server:
    server = Server("files")

    @server.resource_template("file:///{path}")
    def read(path: str) -> str:
        seen.append(path)
        return (root / path).read_text()  # what a hurried author writes

    @server.resource_template("checked:///{path}", allow_traversal=True)
    def checked(path: str) -> str:
        seen.append(path)
        return f"the handler saw {path}"

    @server.resource_template("joined://{/parts*}")
    def joined(parts: list[str]) -> str:
        seen.append("/".join(parts))
        return (root / "/".join(parts)).read_text()  # the items joined as a path

    @server.resource_template("search://{query}")
    def search(query: str) -> str:
        return f"results for {query}"

    return server


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "public"
    root.mkdir()
    (root / "notes.txt").write_text("public notes")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("the secret")
    return root


@pytest.mark.parametrize("era", ["handshake", "stateless"])
@pytest.mark.parametrize(
    "uri",
    [
        "file:///..%2Foutside%2Fsecret.txt",
        "file:///..",
        "file:///%2E%2E%2Foutside%2Fsecret.txt",
        "file:///..%5Coutside%5Csecret.txt",
        "file:///%2Fetc%2Fpasswd",
        "file:///C%3A%5Cwindows",
        # Each item stays in (an empty one, then plain names), but joined they are absolute.
        "joined:////{secret}",
        "joined:///%2F{secret}",
        "joined:///a/%2E%2E/%2E%2E/outside/secret.txt",
    ],
)
async def test_a_value_leaving_its_root_is_not_served(tree: Path, era: str, uri: str) -> None:
    uri = uri.replace("{secret}", str(tree.parent / "outside" / "secret.txt").lstrip("/"))
    seen: list[str] = []
    with serving_in_thread(naive_server(tree, seen).http_app()) as port:
        async with Client.http(f"http://127.0.0.1:{port}/mcp", era=era) as client:
            with pytest.raises(McpError) as refused:
                await client.read_resource(uri)
            assert refused.value.code in (-32002, -32602)  # not found (-32602 in the stateless era)
            assert "the secret" not in refused.value.message  # the file's content
            assert seen == []  # the handler never ran
            # The same server still serves what is inside, and plain values elsewhere.
            inside = await client.read_resource("file:///notes.txt")
            assert inside.contents[0].text == "public notes"  # type: ignore[union-attr]
            joined = await client.read_resource("joined:///notes.txt")
            assert joined.contents[0].text == "public notes"  # type: ignore[union-attr]
            found = await client.read_resource("search://a%3Ab%20c")
            assert found.contents[0].text == "results for a:b c"  # type: ignore[union-attr]


async def test_a_template_can_opt_out_and_check_values_itself(tree: Path) -> None:
    seen: list[str] = []
    with serving_in_thread(naive_server(tree, seen).http_app()) as port:
        async with Client.http(f"http://127.0.0.1:{port}/mcp") as client:
            result = await client.read_resource("checked:///..%2Foutside")
            assert result.contents[0].text == "the handler saw ../outside"  # type: ignore[union-attr]
    assert seen == ["../outside"]


@pytest.mark.parametrize(
    ("value", "leaves"),
    [
        ("notes.txt", False),
        ("a/b/c.txt", False),
        ("a..b", False),
        ("...", False),
        ("a:b", False),
        ("", False),
        ("..", True),
        ("../x", True),
        ("a/../../x", True),
        ("a\\..\\x", True),
        ("/etc/passwd", True),
        ("\\\\server\\share", True),
        ("C:\\windows", True),
        ("c:/windows", True),
        ("nul\x00byte", True),
    ],
)
def test_which_values_leave_their_root(value: str, leaves: bool) -> None:
    assert leaves_root(value) is leaves
