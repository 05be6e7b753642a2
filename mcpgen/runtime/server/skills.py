"""Serving a directory of Agent Skills (the skills extension, SEP-2640): ``skills/list``,
``skills/get``, ``resources/directory/read``, and every skill file as a ``skill://``
resource.

    server.skills("skills/")      # skills/<name>/SKILL.md, skills/acme/billing/<name>/SKILL.md, ...

A skill is a directory holding a ``SKILL.md``; its skill path is the directory's path under
the root (behind an optional ``prefix``), its last segment the skill's name. Its files are
every file beneath it, nested skills' files included (the extension lets skills nest).
Served as ``skill://<skill path>/<file path>``.

What is served is what is on disk at each request: every request walks the tree again
(names and ``stat`` only) and reads a file again only when its size, mtime or inode
changed, so an edited, added or removed skill shows at the next request without a
restart and an unchanged tree costs no reading. Left out, each with one warning in the
log (never an error to the client): a SKILL.md whose frontmatter is missing, not YAML, has
no name or description, or names the skill differently from its directory; a skill past
the extension's limits (512 files, 16 MiB). Never served: dot-files and dot-directories,
symlinked directories, and symlinks leading out of the root (checked again when a file is
read, as :meth:`Server.directory <mcpgen.runtime.server.server.Server.directory>` does).

The walking and hashing are blocking I/O: the server runs these methods in its thread pool.
"""

from __future__ import annotations

import base64
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

import msgspec
from msgspec import UNSET, UnsetType

from mcpgen.runtime.errors import INVALID_PARAMS, McpError, ResourceNotFound
from mcpgen.runtime.shared.extension import Extension, ExtensionMethod
from mcpgen.runtime.shared.files import guess_mime, resolve_within
from mcpgen.runtime.shared.meta import SKILLS_EXTENSION
from mcpgen.runtime.shared.skill_format import (
    DIRECTORY_MIME,
    MAX_BYTES,
    MAX_FILES,
    META_PREFIX,
    SCHEME,
    SKILL_FILE,
    FrontmatterError,
    check_frontmatter,
    digest,
    parse_frontmatter,
)

if TYPE_CHECKING:
    from mcpgen.protocol.v2025_11_25 import MethodSpec
    from mcpgen.runtime.server.registry import TemplateEntry

log = logging.getLogger("mcpgen")
# A URI's path characters that need no escaping (RFC 3986 pchar, less the percent sign).
_SAFE = "!$&'()*+,;=:@-._~/"


# ---------------------------------------------------------------- request params


class ListSkillsParams(msgspec.Struct, kw_only=True, omit_defaults=True):
    cursor: str | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class GetSkillParams(msgspec.Struct, kw_only=True, omit_defaults=True):
    uri: str
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


class ReadDirectoryParams(msgspec.Struct, kw_only=True, omit_defaults=True):
    uri: str
    cursor: str | UnsetType = UNSET
    meta: dict[str, Any] | UnsetType = msgspec.field(default=UNSET, name="_meta")


# ---------------------------------------------------------------- the catalog


@dataclass(frozen=True, slots=True)
class _File:
    path: str  # under the namespace (prefix included), "/"-separated, not escaped
    relative: str  # under the root, for reading
    digest: str
    size: int


@dataclass(slots=True)
class _Skill:
    path: str  # the skill path under the namespace
    frontmatter: dict[str, Any]
    files: list[_File]

    @property
    def uri(self) -> str:
        return uri_of(f"{self.path}/{SKILL_FILE}")

    def entry(self) -> dict[str, Any]:
        return {
            "uri": self.uri,
            "frontmatter": self.frontmatter,
            "resources": [{"uri": uri_of(f.path), "digest": f.digest, "size": f.size} for f in self.files],
        }

    def resource(self) -> dict[str, Any]:
        """SKILL.md as a listed resource: named and described by its frontmatter; the
        frontmatter's other fields under the extension's ``_meta`` prefix."""
        own = next(f for f in self.files if f.path == f"{self.path}/{SKILL_FILE}")
        found: dict[str, Any] = {
            "uri": self.uri,
            "name": self.frontmatter["name"],
            "description": self.frontmatter["description"],
            "mimeType": "text/markdown",
            "size": own.size,
        }
        extra = {META_PREFIX + k: v for k, v in self.frontmatter.items() if k not in ("name", "description")}
        if extra:
            found["_meta"] = extra
        return found


@dataclass(slots=True)
class _Catalog:
    skills: dict[str, _Skill] = field(default_factory=dict)  # skill path -> skill, sorted by URI
    files: dict[str, _File] = field(default_factory=dict)  # namespace path -> file of a served skill
    directories: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # path -> children


def uri_of(path: str) -> str:
    return SCHEME + quote(path, safe=_SAFE)


def path_of(uri: str) -> str | None:
    """The namespace path a ``skill://`` URI names (None for another scheme or a path that
    could never be served: empty segments, ``.``/``..``, NUL, backslashes)."""
    if not uri.startswith(SCHEME):
        return None
    path = unquote(uri[len(SCHEME) :])
    parts = path.split("/")
    if "\x00" in path or "\\" in path or any(p in ("", ".", "..") for p in parts):
        return None
    return path


class SkillSet:
    """The skills under one directory, as the extension's methods see them."""

    def __init__(self, root: str | os.PathLike[str], *, prefix: str = "", page_size: int = 100) -> None:
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise ValueError(f"skills root {root!s} is not a directory")
        prefix = prefix.strip("/")
        if prefix and path_of(SCHEME + prefix) != prefix:
            raise ValueError(f"skills prefix {prefix!r} is not a plain /-separated path")
        self.prefix = prefix
        if page_size < 1:
            raise ValueError("page_size must be at least 1")
        self.page_size = page_size
        self._lock = threading.Lock()
        self._hashes: dict[str, tuple[tuple[int, int, int, int], str, int]] = {}  # relative -> (stat, digest, size)
        self._frontmatter: dict[str, dict[str, Any] | str] = {}  # SKILL.md digest -> frontmatter or the problem
        self._warned: set[tuple[str, str]] = set()

    # ------------------------------------------------------------ methods

    def list_page(self, cursor: str | UnsetType) -> dict[str, Any]:
        """A ``skills/list`` result: whole entries, in URI order, ``page_size`` a page."""
        skills = list(self.scan().skills.values())
        start = 0
        if cursor is not UNSET:
            after = _decode_cursor(cursor, "s")
            start = next((i for i, s in enumerate(skills) if s.uri > after), len(skills))
        page = skills[start : start + self.page_size]
        result: dict[str, Any] = {"skills": [s.entry() for s in page]}
        if start + self.page_size < len(skills):
            result["nextCursor"] = _encode_cursor("s", page[-1].uri)
        return result

    def get(self, uri: str) -> dict[str, Any]:
        """A ``skills/get`` result: the entry of the skill whose SKILL.md ``uri`` names."""
        path = path_of(uri)
        skill = None
        if path is not None and path.endswith("/" + SKILL_FILE):
            skill = self.scan().skills.get(path[: -len(SKILL_FILE) - 1])
        if skill is None:
            raise McpError(INVALID_PARAMS, f"Invalid params: no skill is served at {uri}", {"uri": uri})
        return {"skill": skill.entry()}

    def read_directory(self, uri: str, cursor: str | UnsetType) -> dict[str, Any]:
        """A ``resources/directory/read`` result: the direct children of a directory of a
        served skill (its root or any subdirectory), in name order, ``page_size`` a page."""
        path = path_of(uri)
        children = self.scan().directories.get(path) if path is not None else None
        if children is None:
            raise McpError(INVALID_PARAMS, f"Invalid params: {uri} is not a directory resource", {"uri": uri})
        start = 0
        if cursor is not UNSET:
            after = _decode_cursor(cursor, "d")
            start = next((i for i, c in enumerate(children) if c["uri"] > after), len(children))
        page = children[start : start + self.page_size]
        result: dict[str, Any] = {"resources": page}
        if start + self.page_size < len(children):
            result["nextCursor"] = _encode_cursor("d", page[-1]["uri"])
        return result

    def read(self, path: str) -> tuple[str, bytes, str]:
        """A served file's URI, bytes and MIME type (``path`` under the namespace, as the
        ``skill://{+path}`` template decoded it)."""
        uri = uri_of(path)
        served = self.scan().files.get(path) if path_of(uri) == path else None
        if served is None:
            raise ResourceNotFound(uri)
        found = resolve_within(self.root, served.relative, uri)  # a symlink may have moved since
        mime = "text/markdown" if path.endswith("/" + SKILL_FILE) else guess_mime(found)
        return uri, found.read_bytes(), mime

    def resources(self) -> list[dict[str, Any]]:
        """Each skill's SKILL.md as a resource, for ``resources/list``."""
        return [skill.resource() for skill in self.scan().skills.values()]

    # ------------------------------------------------------------ scanning

    def scan(self) -> _Catalog:
        """The skills as they are on disk now."""
        with self._lock:  # worker threads share the hash cache
            return self._scan()

    def _scan(self) -> _Catalog:
        files: dict[str, tuple[str, int]] = {}  # relative -> (digest, size)
        directories: dict[str, list[str]] = {}  # relative dir ("" for the root) -> subdirectories
        listing: dict[str, list[str]] = {}  # relative dir -> files
        seen: set[str] = set()
        for top, dirs, names in os.walk(self.root):
            here = Path(top)
            rel_dir = here.relative_to(self.root).as_posix()
            rel_dir = "" if rel_dir == "." else rel_dir
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not (here / d).is_symlink())
            directories[rel_dir] = list(dirs)
            kept: list[str] = []
            for name in sorted(names):
                if name.startswith("."):
                    continue
                relative = f"{rel_dir}/{name}" if rel_dir else name
                hashed = self._hash(here / name, relative)
                if hashed is not None:
                    files[relative] = hashed
                    kept.append(name)
                    seen.add(relative)
            listing[rel_dir] = kept
        for gone in self._hashes.keys() - seen:
            del self._hashes[gone]
        catalog = _Catalog()
        skill_dirs = sorted(d for d, names in listing.items() if SKILL_FILE in names)
        found: list[_Skill] = []
        for rel_dir in skill_dirs:
            skill = self._skill(rel_dir, files)
            if skill is not None:
                found.append(skill)
        for skill in sorted(found, key=lambda s: s.uri):
            catalog.skills[skill.path] = skill
            for f in skill.files:
                catalog.files[f.path] = f
        for skill in catalog.skills.values():
            self._index_directories(skill, catalog, directories, listing)
        return catalog

    def _hash(self, file: Path, relative: str) -> tuple[str, int] | None:
        """The digest and size of a file to serve (None for a symlink leading out of the
        root or to something other than a regular file), read again only when changed."""
        try:
            if file.is_symlink():
                target = file.resolve()
                if not target.is_relative_to(self.root) or not target.is_file():
                    return None
            info = file.stat()
        except (OSError, RuntimeError):  # vanished mid-walk, or a symlink loop
            return None
        if not file.is_file():
            return None
        key = (info.st_size, info.st_mtime_ns, info.st_ino, info.st_dev)
        cached = self._hashes.get(relative)
        if cached is not None and cached[0] == key:
            return cached[1], cached[2]
        try:
            data = file.read_bytes()
        except OSError:
            return None
        found = digest(data), len(data)
        self._hashes[relative] = (key, *found)
        return found

    def _skill(self, rel_dir: str, files: dict[str, tuple[str, int]]) -> _Skill | None:
        path = f"{self.prefix}/{rel_dir}" if self.prefix else rel_dir
        if not rel_dir:
            self._warn(
                SKILL_FILE, "a SKILL.md at the root of the skills directory is not a skill: skills are directories"
            )
            return None
        own = files[f"{rel_dir}/{SKILL_FILE}"]
        frontmatter = self._frontmatter_of(rel_dir, own[0])
        if isinstance(frontmatter, str):
            self._warn(rel_dir, frontmatter)
            return None
        name = rel_dir.rsplit("/", 1)[-1]
        if frontmatter["name"] != name:
            self._warn(rel_dir, f"its frontmatter names it {frontmatter['name']!r}, its directory {name!r}")
            return None
        within = [
            _File(f"{self.prefix}/{rel}" if self.prefix else rel, rel, d, s)
            for rel, (d, s) in files.items()
            if rel.startswith(rel_dir + "/")
        ]
        total = sum(f.size for f in within)
        if len(within) > MAX_FILES or total > MAX_BYTES:
            self._warn(rel_dir, f"it has {len(within)} files of {total} bytes (limits: {MAX_FILES}, {MAX_BYTES})")
            return None
        within.sort(key=lambda f: f.path)
        return _Skill(path, frontmatter, within)

    def _frontmatter_of(self, rel_dir: str, skill_digest: str) -> dict[str, Any] | str:
        cached = self._frontmatter.get(skill_digest)
        if cached is None:
            try:
                text = (self.root / rel_dir / SKILL_FILE).read_bytes().decode("utf-8")
                frontmatter = parse_frontmatter(text)
                cached = check_frontmatter(frontmatter) or frontmatter
            except (OSError, UnicodeDecodeError, FrontmatterError) as exc:
                cached = f"its SKILL.md cannot be read: {exc}"
            self._frontmatter[skill_digest] = cached
        return cached

    def _index_directories(
        self, skill: _Skill, catalog: _Catalog, directories: dict[str, list[str]], listing: dict[str, list[str]]
    ) -> None:
        """Every directory of a skill (its root included) as a directory resource."""
        rel_root = skill.path[len(self.prefix) + 1 :] if self.prefix else skill.path
        pending = [rel_root]
        while pending:
            rel_dir = pending.pop()
            path = f"{self.prefix}/{rel_dir}" if self.prefix else rel_dir
            if path in catalog.directories:
                continue  # a nested skill's directory, already indexed
            children: list[dict[str, Any]] = []
            for name in directories.get(rel_dir, []):
                pending.append(f"{rel_dir}/{name}")
                children.append({"uri": uri_of(f"{path}/{name}"), "name": name, "mimeType": DIRECTORY_MIME})
            for name in listing.get(rel_dir, []):
                child = f"{path}/{name}"
                nested = catalog.skills.get(path) if name == SKILL_FILE else None
                if nested is not None:
                    children.append(nested.resource())
                elif child in catalog.files:
                    resource = {"uri": uri_of(child), "name": name, "size": catalog.files[child].size}
                    resource["mimeType"] = guess_mime(Path(name))
                    children.append(resource)
            children.sort(key=lambda c: c["uri"])
            catalog.directories[path] = children

    def _warn(self, where: str, problem: str) -> None:
        if (where, problem) not in self._warned:
            self._warned.add((where, problem))
            log.warning("mcpgen: skills: leaving out %s: %s", where, problem)


class Skills(Extension):
    """The skills extension (SEP-2640) serving one :class:`SkillSet`: its requests
    (``skills/list``, ``skills/get``, and ``resources/directory/read`` when
    ``directory_read``), the template that reads every skill's files, and each SKILL.md
    listed by ``resources/list`` as the files are now. Its catalog is read from disk, in the
    server's thread pool."""

    identifier = SKILLS_EXTENSION
    meta_keys = frozenset({META_PREFIX})

    def __init__(self, root: str | os.PathLike[str], prefix: str, directory_read: bool, page_size: int) -> None:
        super().__init__()
        self.skill_set = SkillSet(root, prefix=prefix, page_size=page_size)
        self.directory_read = directory_read
        self._threads: Any = None

    def settings(self) -> dict[str, Any]:
        return {"directoryRead": True} if self.directory_read else {}

    def methods(self) -> list[ExtensionMethod]:
        found = [
            ExtensionMethod("skills/list", ListSkillsParams, self.list_skills, cacheable=True),
            ExtensionMethod("skills/get", GetSkillParams, self.get_skill, params_required=True, cacheable=True),
        ]
        if self.directory_read:
            found.append(
                ExtensionMethod(
                    "resources/directory/read",
                    ReadDirectoryParams,
                    self.read_directory,
                    params_required=True,
                    cacheable=True,
                )  # fmt: skip
            )
        return found

    def attach(self, server: Any) -> None:
        features = server.features
        self._threads = features.threads
        template, _ = skill_entries(self.skill_set, self.directory_read)
        features.catalog.templates.append(template)
        features.handlers.listings.append(self.listed)
        features.catalog.changed("resources")

    async def _run(self, fn: Callable[..., Any], kwargs: dict[str, Any], label: str) -> Any:
        from mcpgen.runtime.server.context import Context

        return await self._threads.run(fn, kwargs, Context.current(), label)

    async def listed(self) -> list[Any]:
        from mcpgen.protocol.v2025_11_25 import Resource

        found = await self._run(self.skill_set.resources, {}, "skills")
        return msgspec.convert(found, list[Resource])

    async def list_skills(self, params: ListSkillsParams) -> dict[str, Any]:
        found: dict[str, Any] = await self._run(self.skill_set.list_page, {"cursor": params.cursor}, "skills")
        return found

    async def get_skill(self, params: GetSkillParams) -> dict[str, Any]:
        found: dict[str, Any] = await self._run(self.skill_set.get, {"uri": params.uri}, "skills")
        return found

    async def read_directory(self, params: ReadDirectoryParams) -> dict[str, Any]:
        kwargs = {"uri": params.uri, "cursor": params.cursor}
        found: dict[str, Any] = await self._run(self.skill_set.read_directory, kwargs, "resources/directory/read")
        return found


def skill_entries(skill_set: SkillSet, directory_read: bool) -> tuple[TemplateEntry, list[MethodSpec]]:
    """What ``Server.skills`` registers: the template that reads every skill's files (in
    the thread pool: file I/O), and the extension's requests (``skills/list``,
    ``skills/get``, and ``resources/directory/read`` when ``directory_read``)."""
    from mcpgen.protocol.v2025_11_25 import MethodSpec, ResourceTemplate
    from mcpgen.runtime.server.content import text_or_bytes, to_contents
    from mcpgen.runtime.server.registry import TemplateEntry, compile_template
    from mcpgen.runtime.server.signature import signature_of

    template = compile_template(SCHEME + (f"{skill_set.prefix}/" if skill_set.prefix else "") + "{+path}")

    def read(path: str) -> Any:
        full = f"{skill_set.prefix}/{path}" if skill_set.prefix else path
        uri, data, mime = skill_set.read(full)
        return to_contents(uri, text_or_bytes(data), mime)

    definition = ResourceTemplate(uri_template=template.template, name="skills")
    entry = TemplateEntry(read, signature_of(read), True, template, definition)
    methods: list[tuple[str, type, bool, str]] = [
        ("skills/list", ListSkillsParams, False, "list_skills"),
        ("skills/get", GetSkillParams, True, "get_skill"),
    ]
    if directory_read:
        methods.append(("resources/directory/read", ReadDirectoryParams, True, "read_directory"))
    specs = [
        MethodSpec(method, "request", "c2s", params_type, required, dict[str, Any], None, handler, cacheable=True)
        for method, params_type, required, handler in methods
    ]
    return entry, specs


def _encode_cursor(kind: str, after: str) -> str:
    return base64.urlsafe_b64encode(f"{kind}:{after}".encode()).decode()


def _decode_cursor(cursor: str, kind: str) -> str:
    try:
        text = base64.urlsafe_b64decode(cursor.encode()).decode()
    except (ValueError, UnicodeError):
        text = ""
    found, _, after = text.partition(":")
    if found != kind or not after:
        raise McpError(INVALID_PARAMS, "Invalid params: unknown cursor")
    return after
