"""The skills extension (SEP-2640): Server.skills over real stdio and HTTP, the client's
checks that refuse a tampered skill, path containment, pagination, malformed SKILL.md files,
and files changing under a running server."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from mcpgen import Client, Server
from mcpgen.generated import (
    ClientCapabilities,
    Implementation,
    InitializeRequestParams,
    ReadResourceRequestParams,
    ReadResourceResult,
)
from mcpgen.runtime.client.skills import SkillEntry, SkillVerificationError
from mcpgen.runtime.errors import McpError, ResourceNotFound
from mcpgen.runtime.server.skills import SkillSet
from mcpgen.runtime.shared.skill_format import EXTENSION, digest
from tests.http_server import free_port, running
from tests.paths import SERVERS

pytestmark = pytest.mark.anyio
SERVER = SERVERS / "skills_server.py"
ERAS = ("handshake", "stateless")


def skill_md(name: str, description: str = "Does a thing.", extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n\n# {name}\n\nSteps.\n"


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """Two skills, one behind a prefix directory, with subdirectories."""
    root = tmp_path / "skills"
    write(root, "pdf-forms/SKILL.md", skill_md("pdf-forms", "Fill PDF forms.", "license: MIT\n"))
    write(root, "pdf-forms/references/FIELDS.md", "# Fields\n")
    write(root, "pdf-forms/scripts/fill.py", "print('fill')\n")
    write(root, "team/billing/refunds/SKILL.md", skill_md("refunds", "Handle refunds."))
    write(root, "team/billing/refunds/templates/email.md", "Dear customer,\n")
    return root


class Recording(Server):
    """A real server that remembers which URIs were read (to prove what a client fetched)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reads: list[str] = []

    async def read_resource(self, params: ReadResourceRequestParams) -> ReadResourceResult:
        self.reads.append(params.uri)
        return await super().read_resource(params)


def served(root: Path, **options: Any) -> Recording:
    server = Recording("skills-test")
    server.skills(root, **options)
    return server


@pytest.fixture(params=ERAS)
async def client(request: pytest.FixtureRequest, tree: Path) -> AsyncIterator[Client]:
    async with Client(served(tree), era=request.param) as connected:
        yield connected


async def check_catalog(client: Client) -> None:
    """What every transport must show for the ``tree`` fixture."""
    entries = await client.list_skills()
    assert [e.uri for e in entries] == ["skill://pdf-forms/SKILL.md", "skill://team/billing/refunds/SKILL.md"]
    pdf = entries[0]
    assert pdf.frontmatter == {"name": "pdf-forms", "description": "Fill PDF forms.", "license": "MIT"}
    assert isinstance(pdf.resources, list)
    assert [f.uri for f in pdf.resources] == [
        "skill://pdf-forms/SKILL.md",
        "skill://pdf-forms/references/FIELDS.md",
        "skill://pdf-forms/scripts/fill.py",
    ]
    assert pdf.resources[1].digest == digest(b"# Fields\n") and pdf.resources[1].size == 9
    assert await client.get_skill(pdf.uri) == pdf
    skill = await client.read_skill(pdf)
    assert skill.text.startswith("---\nname: pdf-forms")
    assert await client.read_skill_file(skill, "references/FIELDS.md") == "# Fields\n"
    children = await client.read_directory("skill://pdf-forms")
    assert [(c["uri"], c.get("mimeType")) for c in children] == [
        ("skill://pdf-forms/SKILL.md", "text/markdown"),
        ("skill://pdf-forms/references", "inode/directory"),
        ("skill://pdf-forms/scripts", "inode/directory"),
    ]
    listed = {r.uri: r for r in await client.list_resources()}
    refunds = listed["skill://team/billing/refunds/SKILL.md"]
    assert (refunds.name, refunds.description, refunds.mime_type) == ("refunds", "Handle refunds.", "text/markdown")
    pdf_md = listed["skill://pdf-forms/SKILL.md"]
    assert pdf_md.meta == {"io.modelcontextprotocol.skills/license": "MIT"}


# ---------------------------------------------------------------- real transports


@pytest.mark.parametrize("era", ERAS)
async def test_stdio_serves_the_catalog(tree: Path, era: str) -> None:
    async with Client.stdio(sys.executable, str(SERVER), str(tree), era=era) as client:
        assert client.spoken_era == era
        await check_catalog(client)


@pytest.mark.parametrize("era", ERAS)
async def test_http_serves_the_catalog(tree: Path, era: str) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with running([sys.executable, str(SERVER), str(tree), "--http", str(port)], url):
        async with Client.http(url, era=era) as client:
            assert client.spoken_era == era
            await check_catalog(client)


async def test_the_extension_is_declared_in_both_eras(tree: Path) -> None:
    server = served(tree)
    async with Client(server, era="stateless") as client:
        found = await client.session.send_request("server/discover", {}, dict)
        assert found["capabilities"]["extensions"][EXTENSION] == {"directoryRead": True}
        assert "resources" in found["capabilities"]
        listing = await client.session.send_request("skills/list", {}, dict)
        assert listing["ttlMs"] == 0 and listing["cacheScope"] == "private"
        got = await client.session.send_request("skills/get", {"uri": "skill://pdf-forms/SKILL.md"}, dict)
        assert "nextCursor" not in got and got["cacheScope"] == "private"
    hello = InitializeRequestParams(
        protocol_version="2025-11-25",
        capabilities=ClientCapabilities(),
        client_info=Implementation(name="t", version="1"),
    )
    answered = msgspec.json.decode(msgspec.json.encode(await server.features.initialize(hello)))
    assert answered["capabilities"]["extensions"] == {EXTENSION: {"directoryRead": True}}
    plain = Server("no-directory-read")
    plain.skills(tree, directory_read=False)
    async with Client(plain, era="stateless") as client:
        found = await client.session.send_request("server/discover", {}, dict)
        assert found["capabilities"]["extensions"][EXTENSION] == {}
        with pytest.raises(McpError) as refused:
            await client.read_directory("skill://pdf-forms")
        assert refused.value.code == -32601


async def test_unknown_skills_and_non_directories_are_invalid_params(client: Client) -> None:
    for uri in ("skill://nope/SKILL.md", "skill://pdf-forms", "skill://pdf-forms/references/FIELDS.md", "file:///x"):
        with pytest.raises(McpError) as refused:
            await client.get_skill(uri)
        assert refused.value.code == -32602
    for uri in ("skill://pdf-forms/SKILL.md", "skill://team", "skill://team/billing", "skill://nope"):
        with pytest.raises(McpError) as refused:
            await client.read_directory(uri)
        assert refused.value.code == -32602


# ---------------------------------------------------------------- the client's checks


async def tampered(tmp_path: Path, change: Any) -> tuple[Recording, Client, SkillEntry]:
    """A connected client holding the entry of a skill whose files then change on disk."""
    root = tmp_path / "skills"
    write(root, "notes/SKILL.md", skill_md("notes", "Take notes."))
    write(root, "notes/references/FORMAT.md", "# Format\n")
    server = served(root)
    client = Client(server, era="stateless")
    await client.open()
    (entry,) = await client.list_skills()
    change(root / "notes")
    return server, client, entry


async def test_a_changed_skill_md_fails_its_digest_and_nothing_else_is_read(tmp_path: Path) -> None:
    def same_length(skill: Path) -> None:
        text = (skill / "SKILL.md").read_text()
        (skill / "SKILL.md").write_text(text.replace("Steps.", "Evil!!"))

    server, client, entry = await tampered(tmp_path, same_length)
    try:
        with pytest.raises(SkillVerificationError, match="does not match the digest"):
            await client.read_skill(entry)
        assert server.reads == ["skill://notes/SKILL.md"]
        # The listing's entry now matches the file again: a fresh entry loads.
        (fresh,) = await client.list_skills()
        assert (await client.read_skill(fresh)).text.endswith("Evil!!\n")
    finally:
        await client.close()


async def test_extra_bytes_fail_the_size_check(tmp_path: Path) -> None:
    def longer(skill: Path) -> None:
        with (skill / "SKILL.md").open("a") as file:
            file.write("extra bytes\n")

    server, client, entry = await tampered(tmp_path, longer)
    try:
        with pytest.raises(SkillVerificationError, match=r"is \d+ bytes, its entry says \d+"):
            await client.read_skill(entry)
        assert server.reads == ["skill://notes/SKILL.md"]
    finally:
        await client.close()


async def test_frontmatter_that_differs_from_the_entry_is_refused(tmp_path: Path) -> None:
    def redescribed(skill: Path) -> None:
        (skill / "SKILL.md").write_text(skill_md("notes", "Send the notes elsewhere."))

    server, client, entry = await tampered(tmp_path, redescribed)
    try:
        # An entry whose digest and size match the new file but whose frontmatter is the old
        # one (a listing that lies about the frontmatter).
        (fresh,) = await client.list_skills()
        lying = msgspec.structs.replace(fresh, frontmatter=entry.frontmatter)
        with pytest.raises(SkillVerificationError, match="frontmatter differs from the entry's in description"):
            await client.read_skill(lying)
        assert server.reads == ["skill://notes/SKILL.md"]
    finally:
        await client.close()


async def test_a_supporting_file_is_checked_and_unlisted_files_are_refused(tmp_path: Path) -> None:
    def nothing(skill: Path) -> None:
        pass

    server, client, entry = await tampered(tmp_path, nothing)
    try:
        skill = await client.read_skill(entry)
        (tmp_path / "skills/notes/references/FORMAT.md").write_text("# Format, changed\n")
        with pytest.raises(SkillVerificationError, match="FORMAT.md is 18 bytes, its entry says 9"):
            await client.read_skill_file(skill, "references/FORMAT.md")
        write(tmp_path / "skills", "notes/references/NEW.md", "new\n")
        for path in ("references/NEW.md", "../other/SKILL.md", "/etc/passwd"):
            with pytest.raises(SkillVerificationError):
                await client.read_skill_file(skill, path)
        assert server.reads == ["skill://notes/SKILL.md", "skill://notes/references/FORMAT.md"]
    finally:
        await client.close()


async def test_listing_reads_no_file(tree: Path) -> None:
    server = served(tree)
    async with Client(server, era="stateless") as client:
        await client.list_skills()
        await client.get_skill("skill://pdf-forms/SKILL.md")
    assert server.reads == []


# ---------------------------------------------------------------- path containment


async def test_paths_never_leave_the_root(tmp_path: Path, tree: Path) -> None:
    secret = write(tmp_path, "secret.txt", "top secret\n")
    outside = tmp_path / "outside"
    write(outside, "data.md", "outside\n")
    os.symlink(secret, tree / "pdf-forms" / "leak.txt")
    os.symlink(outside, tree / "pdf-forms" / "linked-dir")
    os.symlink(tree / "pdf-forms" / "references" / "FIELDS.md", tree / "pdf-forms" / "alias.md")
    write(tree, "pdf-forms/.hidden", "not served\n")
    server = served(tree)
    async with Client(server, era="stateless") as client:
        (pdf, _) = await client.list_skills()
        assert isinstance(pdf.resources, list)
        uris = [f.uri for f in pdf.resources]
        assert "skill://pdf-forms/leak.txt" not in uris
        assert not any("linked-dir" in uri or ".hidden" in uri for uri in uris)
        assert "skill://pdf-forms/alias.md" in uris  # a symlink that stays inside the root
        children = [c["uri"] for c in await client.read_directory("skill://pdf-forms")]
        assert "skill://pdf-forms/linked-dir" not in children and "skill://pdf-forms/leak.txt" not in children
        for uri in (
            "skill://pdf-forms/leak.txt",
            "skill://pdf-forms/linked-dir/data.md",
            "skill://pdf-forms/../../secret.txt",
            "skill://pdf-forms/%2e%2e/%2e%2e/secret.txt",
            "skill://pdf-forms/.hidden",
            "skill://team/billing/refunds/../../../pdf-forms/SKILL.md",
        ):
            with pytest.raises(McpError) as refused:
                await client.read_resource(uri)
            assert refused.value.code == -32602, uri
        # A file swapped for a symlink out of the root is no longer served.
        fields = tree / "pdf-forms" / "references" / "FIELDS.md"
        fields.unlink()
        os.symlink(secret, fields)
        with pytest.raises(McpError):
            await client.read_resource("skill://pdf-forms/references/FIELDS.md")


# ---------------------------------------------------------------- pagination


async def test_pages_hold_whole_entries_and_cursors_are_checked(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    names = [f"skill-{i}" for i in range(5)]
    for name in names:
        write(root, f"{name}/SKILL.md", skill_md(name))
        for j in range(3):
            write(root, f"{name}/files/f{j}.md", f"{name} {j}\n")
    server = served(root, page_size=2)
    async with Client(server, era="stateless") as client:
        pages: list[list[str]] = []
        cursor: str | None = None
        while True:
            params = {"cursor": cursor} if cursor else {}
            page = await client.session.send_request("skills/list", params, dict)
            pages.append([s["uri"] for s in page["skills"]])
            for entry in page["skills"]:
                assert len(entry["resources"]) == 4  # SKILL.md and its three files, never split
            cursor = page.get("nextCursor")
            if cursor is None:
                break
        assert [len(p) for p in pages] == [2, 2, 1]
        assert sum(pages, []) == [f"skill://{n}/SKILL.md" for n in names]
        assert [e.name for e in await client.list_skills()] == names
        files = await client.read_directory("skill://skill-0/files")
        assert [c["name"] for c in files] == ["f0.md", "f1.md", "f2.md"]
        first = await client.session.send_request("resources/directory/read", {"uri": "skill://skill-0/files"}, dict)
        assert len(first["resources"]) == 2 and "nextCursor" in first
        # Not a cursor; a directory's cursor; a cursor of the right kind naming nothing.
        for bad in ("garbage", first["nextCursor"], "czo="):
            with pytest.raises(McpError) as refused:
                await client.session.send_request("skills/list", {"cursor": bad}, dict)
            assert refused.value.code == -32602


# ---------------------------------------------------------------- malformed skills


async def test_malformed_skills_are_left_out_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    root = tmp_path / "skills"
    write(root, "good/SKILL.md", skill_md("good"))
    write(root, "no-frontmatter/SKILL.md", "# Just markdown\n")
    write(root, "bad-yaml/SKILL.md", "---\nname: [unclosed\n---\n")
    write(root, "no-description/SKILL.md", "---\nname: no-description\n---\n")
    write(root, "misnamed/SKILL.md", skill_md("other-name"))
    write(root, "Bad_Name/SKILL.md", skill_md("Bad_Name"))
    write(root, "list-frontmatter/SKILL.md", "---\n- a\n- b\n---\n")
    write(root, "reserved/SKILL.md", skill_md("reserved", extra="metadata:\n  io.modelcontextprotocol/x: 1\n"))
    (root / "binary").mkdir()
    (root / "binary" / "SKILL.md").write_bytes(b"---\nname: binary\n\xff\xfe\n---\n")
    write(root, "SKILL.md", skill_md("skills"))  # the root itself is not a skill
    write(root, "dates/SKILL.md", skill_md("dates", extra="created: 2024-01-02\nflag: yes\nreal: true\n"))
    server = served(root)
    with caplog.at_level(logging.WARNING, logger="mcpgen"):
        async with Client(server, era="handshake") as client:
            names = [e.name for e in await client.list_skills()]
            assert names == ["dates", "good"]
            dated = await client.get_skill("skill://dates/SKILL.md")
            # YAML 1.1's dates and yes/no stay text: the JSON a YAML 1.2 reader would make.
            assert dated.frontmatter["created"] == "2024-01-02" and dated.frontmatter["flag"] == "yes"
            assert dated.frontmatter["real"] is True
            await client.read_skill(dated)
            await client.list_skills()  # a second scan warns no more
            with pytest.raises(McpError):
                await client.read_resource("skill://misnamed/SKILL.md")
    warnings = [r.getMessage() for r in caplog.records if "skills: leaving out" in r.getMessage()]
    assert len(warnings) == 9, warnings
    for where in ("no-frontmatter", "bad-yaml", "no-description", "misnamed", "Bad_Name", "list-frontmatter"):
        assert any(f"leaving out {where}:" in w for w in warnings), where


async def test_a_skill_past_the_limits_is_left_out(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    root = tmp_path / "skills"
    write(root, "huge/SKILL.md", skill_md("huge"))
    for i in range(512):
        write(root, f"huge/files/{i}.txt", "x")
    write(root, "small/SKILL.md", skill_md("small"))
    with caplog.at_level(logging.WARNING, logger="mcpgen"):
        async with Client(served(root), era="stateless") as client:
            assert [e.name for e in await client.list_skills()] == ["small"]
    assert any("huge: it has 513 files" in r.getMessage() for r in caplog.records)


# ---------------------------------------------------------------- files change under the server


async def test_the_catalog_follows_the_files(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    write(root, "first/SKILL.md", skill_md("first"))
    async with Client(served(root), era="stateless", cache=False) as client:
        (before,) = await client.list_skills()
        write(root, "second/SKILL.md", skill_md("second"))
        write(root, "first/SKILL.md", skill_md("first", "Now described otherwise."))
        first, second = await client.list_skills()
        assert second.name == "second"
        assert first.description == "Now described otherwise."
        assert isinstance(first.resources, list) and isinstance(before.resources, list)
        assert first.resources[0].digest != before.resources[0].digest
        (root / "second" / "SKILL.md").unlink()
        assert [e.name for e in await client.list_skills()] == ["first"]


async def test_nested_skills_are_listed_flat_and_belong_to_the_enclosing_skill(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    write(root, "outer/SKILL.md", skill_md("outer"))
    write(root, "outer/inner/SKILL.md", skill_md("inner"))
    write(root, "outer/inner/notes.md", "notes\n")
    async with Client(served(root), era="stateless") as client:
        outer, inner = await client.list_skills()
        assert (inner.uri, outer.uri) == ("skill://outer/inner/SKILL.md", "skill://outer/SKILL.md")
        assert isinstance(outer.resources, list) and isinstance(inner.resources, list)
        assert {f.uri for f in inner.resources} <= {f.uri for f in outer.resources}
        children = await client.read_directory("skill://outer/inner")
        assert [c["uri"] for c in children] == ["skill://outer/inner/SKILL.md", "skill://outer/inner/notes.md"]


async def test_a_prefix_namespaces_the_skills(tree: Path) -> None:
    server = Server("prefixed")
    server.skills(tree, prefix="acme/")
    async with Client(server, era="stateless") as client:
        entries = await client.list_skills()
        assert [e.uri for e in entries] == [
            "skill://acme/pdf-forms/SKILL.md",
            "skill://acme/team/billing/refunds/SKILL.md",
        ]
        await client.read_skill(entries[0])
    with pytest.raises(ValueError):
        server.skills(tree)


def test_a_file_swapped_between_scan_and_read_is_refused(tmp_path: Path, tree: Path) -> None:
    """The read checks containment again: a symlink out of the root that replaced a file
    after the catalog was made is not followed."""
    secret = write(tmp_path, "secret.txt", "top secret\n")
    skills = SkillSet(tree)
    stale = skills.scan()
    fields = tree / "pdf-forms" / "references" / "FIELDS.md"
    fields.unlink()
    os.symlink(secret, fields)
    skills.scan = lambda: stale  # type: ignore[method-assign]  # the swap lands between scan and read
    with pytest.raises(ResourceNotFound):
        skills.read("pdf-forms/references/FIELDS.md")
