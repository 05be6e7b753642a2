"""The client's half of the skills extension (SEP-2640): listing skills, and loading one
only after checking it against its entry.

    entries = await client.list_skills()             # skills/list, every page; reads no file
    skill = await client.read_skill(entries[0])      # SKILL.md, verified, or SkillVerificationError
    forms = await client.read_skill_file(skill, "references/FORMS.md")   # verified too

Nothing is fetched ahead of need: listing reads no file, :meth:`read_skill` reads SKILL.md
alone, and a supporting file is read only when asked for. Every file read is checked against
the entry before it is used: its byte length against ``size``, its SHA-256 against
``digest``, and SKILL.md's frontmatter, field by field, against the entry's
``frontmatter``. Any difference refuses the skill (:class:`SkillVerificationError`), and a
refused SKILL.md leaves nothing to read further files through. A file the entry does not
list is refused as a mismatch would be. An entry whose ``resources`` is ``"dynamic"``
publishes no digests: only its frontmatter can be checked.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote

import msgspec
from msgspec import UNSET, UnsetType

from mcpgen.runtime.shared.skill_format import SKILL_FILE, FrontmatterError, digest, parse_frontmatter

ReadResource = Callable[[str], Awaitable[Any]]
"""``resources/read`` of one URI (the result's ``contents`` are looked at)."""


class SkillFile(msgspec.Struct, kw_only=True):
    """One file of a skill as its entry describes it."""

    uri: str
    digest: str
    size: int | UnsetType = UNSET  # required by the extension; an entry without it is checked by digest alone


class SkillEntry(msgspec.Struct, kw_only=True):
    """A skill as ``skills/list`` or ``skills/get`` describes it."""

    uri: str
    frontmatter: dict[str, Any]
    resources: list[SkillFile] | Literal["dynamic"] | UnsetType = UNSET

    @property
    def name(self) -> str:
        return str(self.frontmatter.get("name", ""))

    @property
    def description(self) -> str:
        return str(self.frontmatter.get("description", ""))

    @property
    def root(self) -> str:
        """The skill's directory URI (its SKILL.md URI without ``/SKILL.md``)."""
        return self.uri.removesuffix("/" + SKILL_FILE)

    def file(self, uri: str) -> SkillFile | None:
        """The entry's record of the file at ``uri``, if it lists one."""
        if isinstance(self.resources, list):
            for found in self.resources:
                if found.uri == uri:
                    return found
        return None


class SkillsPage(msgspec.Struct, kw_only=True):
    skills: list[SkillEntry]
    next_cursor: str | UnsetType = msgspec.field(default=UNSET, name="nextCursor")


class SkillResult(msgspec.Struct, kw_only=True):
    skill: SkillEntry


class DirectoryPage(msgspec.Struct, kw_only=True):
    resources: list[dict[str, Any]]
    next_cursor: str | UnsetType = msgspec.field(default=UNSET, name="nextCursor")


@dataclass(frozen=True, slots=True)
class LoadedSkill:
    """A skill whose SKILL.md matched its entry: its text, and the entry it was checked
    against (which its supporting files are checked against in turn)."""

    entry: SkillEntry
    text: str

    @property
    def frontmatter(self) -> dict[str, Any]:
        return self.entry.frontmatter


class SkillVerificationError(Exception):
    """A skill file that does not match its entry: the skill must not be used."""

    def __init__(self, skill: str, reason: str) -> None:
        super().__init__(f"refusing skill {skill}: {reason}")
        self.skill = skill
        self.reason = reason


async def load(entry: SkillEntry, read: ReadResource) -> LoadedSkill:
    """Read ``entry``'s SKILL.md and check it (size, digest, frontmatter)."""
    if isinstance(entry.resources, list) and entry.file(entry.uri) is None:
        raise SkillVerificationError(entry.uri, "its entry lists no SKILL.md among its resources")
    data, _ = await _fetch(entry, entry.uri, read)
    try:
        text = data.decode("utf-8")
        frontmatter = parse_frontmatter(text)
    except (UnicodeDecodeError, FrontmatterError) as exc:
        raise SkillVerificationError(entry.uri, f"its SKILL.md has no readable frontmatter ({exc})") from None
    if frontmatter != entry.frontmatter:
        fields = sorted(
            k
            for k in frontmatter.keys() | entry.frontmatter.keys()
            if frontmatter.get(k, UNSET) != entry.frontmatter.get(k, UNSET)
        )
        raise SkillVerificationError(
            entry.uri, f"its SKILL.md frontmatter differs from the entry's in {', '.join(fields)}"
        )
    return LoadedSkill(entry, text)


async def load_file(skill: LoadedSkill, path: str, read: ReadResource) -> str | bytes:
    """Read one supporting file of a loaded skill (``path`` relative to the skill's root,
    or a full URI) and check it against the entry: text when the server sent text."""
    entry = skill.entry
    uri = path if "://" in path else _within(entry, path)
    if isinstance(entry.resources, list) and entry.file(uri) is None:
        raise SkillVerificationError(entry.uri, f"{uri} is not one of the files its entry lists")
    data, text = await _fetch(entry, uri, read)
    return text if text is not None else data


async def _fetch(entry: SkillEntry, uri: str, read: ReadResource) -> tuple[bytes, str | None]:
    """A file's bytes (and its text when sent as text), checked against the entry."""
    result = await read(uri)
    everything = list(getattr(result, "contents", []))
    contents = [c for c in everything if getattr(c, "uri", None) == uri] or everything
    if len(contents) != 1:
        raise SkillVerificationError(entry.uri, f"reading {uri} returned {len(contents)} contents, not one")
    content = contents[0]
    text = getattr(content, "text", None)
    if isinstance(text, str):
        data = text.encode("utf-8")
    else:
        try:
            data = base64.b64decode(getattr(content, "blob", ""), validate=True)
        except (binascii.Error, ValueError, TypeError):
            raise SkillVerificationError(entry.uri, f"{uri} came back as neither text nor base64") from None
        text = None
    listed = entry.file(uri)
    if listed is not None:
        # The size first: a length that differs fails whatever the digest would say.
        if listed.size is not UNSET and len(data) != listed.size:
            raise SkillVerificationError(entry.uri, f"{uri} is {len(data)} bytes, its entry says {listed.size}")
        if digest(data) != listed.digest:
            raise SkillVerificationError(entry.uri, f"{uri} does not match the digest its entry gives")
    return data, text


def _within(entry: SkillEntry, path: str) -> str:
    """The URI of ``path`` relative to the skill's root (never above it)."""
    parts = path.split("/")
    if not path or path.startswith("/") or any(p in ("", ".", "..") for p in parts) or "\\" in path:
        raise SkillVerificationError(entry.uri, f"{path!r} is not a path inside the skill")
    return entry.root + "/" + quote(path, safe="!$&'()*+,;=:@-._~/")
