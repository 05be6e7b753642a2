"""Read an OpenAPI document: a file (JSON or YAML) or an http(s) URL, with the documents its
``$ref`` s point into.

References into other files are bundled into the one document the rest of the generator
reads: a schema found in another file becomes a ``components/schemas`` entry (so a cycle
through files stays a cycle of local references), anything else (a parameter, a response,
a path item) is copied in where it is referenced. Local references are left as they are.
A reference to an http(s) document is fetched only when asked (``remote_refs``): nothing
is downloaded by default, and a document given by URL still has its relative references
refused unless asked, since those are downloads too.

Every problem is an :class:`OpenApiError` naming the file, the JSON pointer and what is
wrong there; sizes are bounded (bytes read, nodes walked) so that a hostile document fails
with a message instead of filling memory.
"""

from __future__ import annotations

import copy
import hashlib
import json
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit

MAX_BYTES = 64 * 1024 * 1024  # one file or download
MAX_NODES = 20_000_000  # objects and arrays walked while bundling, all files together
MAX_FILES = 500


class OpenApiError(Exception):
    """A document that cannot be generated from; ``str()`` is one line: where, and what."""

    def __init__(self, source: str, pointer: str, problem: str) -> None:
        super().__init__(f"{source}: {pointer or '/'}: {problem}")
        self.source = source
        self.pointer = pointer
        self.problem = problem


@dataclass
class Loaded:
    source: str  # the path or URL as given
    document: dict[str, Any]
    sha256: str  # of every file read, in the order read
    files: list[str] = field(default_factory=list)


def load_document(spec: str | Path, *, remote_refs: bool = False) -> Loaded:
    """Load ``spec`` and bundle the files its references name (see the module docstring)."""
    text = str(spec)
    uri = text if _is_url(text) else Path(text).resolve().as_uri()
    raw = _read(uri, text, allow_remote=True)
    document = parse_document(raw, text)
    bundler = _Bundler(uri, text, document, remote_refs)
    bundler.digest.update(raw)
    bundler.run()
    return Loaded(text, document, bundler.digest.hexdigest(), [text, *bundler.order])


def parse_document(raw: bytes, source: str) -> dict[str, Any]:
    """JSON, else YAML (1.1 via PyYAML's safe loader: no tags that build objects)."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise OpenApiError(source, "", f"not UTF-8 text ({exc.reason})") from None
    stripped = text.lstrip()
    data: Any
    if stripped.startswith(("{", "[")):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise OpenApiError(source, "", f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    else:
        data = _yaml(text, source)
    if not isinstance(data, dict):
        raise OpenApiError(source, "", "the document is not an object (JSON) or a mapping (YAML)")
    return data


def _yaml(text: str, source: str) -> Any:
    try:
        import importlib

        yaml: Any = importlib.import_module("yaml")  # PyYAML ships no type hints
    except ModuleNotFoundError:
        raise OpenApiError(source, "", "YAML needs PyYAML: pip install 'mcpgen[openapi]'") from None
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(text, Loader=loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
        raise OpenApiError(source, "", f"invalid YAML{where}: {getattr(exc, 'problem', None) or exc}") from None


def _is_url(text: str) -> bool:
    return text.startswith(("http://", "https://"))


def _read(uri: str, label: str, *, allow_remote: bool) -> bytes:
    if uri.startswith("file:"):
        path = Path(unquote(urlsplit(uri).path))
        try:
            size = path.stat().st_size
            if size > MAX_BYTES:
                raise OpenApiError(label, "", f"the file is {size} bytes, over the limit of {MAX_BYTES}")
            return path.read_bytes()
        except OSError as exc:
            raise OpenApiError(label, "", f"cannot read file: {exc.strerror or exc}") from None
    if not _is_url(uri):
        raise OpenApiError(label, "", f"unsupported reference scheme in {uri!r}")
    if not allow_remote:
        raise OpenApiError(label, "", f"a remote reference ({uri}); pass --remote-refs to fetch it")
    try:
        with urllib.request.urlopen(uri, timeout=30) as response:  # noqa: S310 - http(s) only, checked above
            data: bytes = response.read(MAX_BYTES + 1)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise OpenApiError(label, "", f"cannot download {uri}: {reason}") from None
    if len(data) > MAX_BYTES:
        raise OpenApiError(label, "", f"{uri} is over the limit of {MAX_BYTES} bytes")
    return data


def pointer_escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def resolve_pointer(document: Any, fragment: str, source: str) -> Any:
    """The node at a JSON pointer fragment (``/components/schemas/Pet``; ``""`` is the root)."""
    node = document
    if fragment in ("", "/"):
        return node
    if not fragment.startswith("/"):
        raise OpenApiError(source, fragment, "only JSON pointer fragments (#/...) are supported in $ref")
    for token in fragment[1:].split("/"):
        key = unquote(token).replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            raise OpenApiError(source, fragment, "the reference points at nothing")
    return node


# Keys under which a schema starts, wherever they are found outside a schema.
_SCHEMA_KEYS = frozenset({"schema"})
_SCHEMA_MAPS = frozenset({"schemas", "definitions"})


class _Bundler:
    def __init__(self, root_uri: str, label: str, document: dict[str, Any], remote: bool) -> None:
        self.root_uri = root_uri
        self.label = label
        self.document = document
        self.remote = remote
        self.docs: dict[str, Any] = {root_uri: document}
        self.order: list[str] = []
        self.digest = hashlib.sha256()
        self.hoisted: dict[tuple[str, str], str] = {}
        self.inlining: list[tuple[str, str]] = []
        self.nodes = 0

    def run(self) -> None:
        self.walk(self.document, self.root_uri, False, "")

    def schemas(self) -> dict[str, Any]:
        if "swagger" in self.document:
            found = self.document.setdefault("definitions", {})
        else:
            found = self.document.setdefault("components", {}).setdefault("schemas", {})
        if not isinstance(found, dict):
            raise OpenApiError(self.label, "/components/schemas", "must be an object of named schemas")
        return found

    def load(self, uri: str, where: str) -> Any:
        if uri not in self.docs:
            if len(self.docs) >= MAX_FILES:
                raise OpenApiError(self.label, where, f"more than {MAX_FILES} referenced documents")
            from_remote = _is_url(self.root_uri) or _is_url(uri)
            raw = _read(uri, f"{self.label} -> {uri}", allow_remote=self.remote or not from_remote)
            self.digest.update(raw)
            self.order.append(uri)
            self.docs[uri] = parse_document(raw, uri)
        return self.docs[uri]

    def walk(self, node: Any, base: str, in_schema: bool, ptr: str) -> Any:
        """``node`` with its external references bundled (changed in place; a referencing
        node outside schemas is returned replaced by what it references)."""
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise OpenApiError(self.label, ptr, f"the document has more than {MAX_NODES} nodes")
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and (
                base != self.root_uri or not ref.startswith("#") or self.stray(ref, in_schema)
            ):
                return self.external(node, ref, base, in_schema, ptr)
            for key in list(node):
                child_schema = in_schema or key in _SCHEMA_KEYS or (key in _SCHEMA_MAPS and not in_schema)
                if key in _SCHEMA_MAPS and not in_schema and isinstance(node[key], dict):
                    for name in list(node[key]):
                        here = f"{ptr}/{key}/{pointer_escape(name)}"
                        node[key][name] = self.walk(node[key][name], base, True, here)
                    continue
                if key in ("example", "examples", "default", "enum", "const") and in_schema:
                    continue  # data, not schemas: a "$ref" key there is a value
                node[key] = self.walk(node[key], base, child_schema, f"{ptr}/{pointer_escape(key)}")
        elif isinstance(node, list):
            for i, item in enumerate(node):
                node[i] = self.walk(item, base, in_schema, f"{ptr}/{i}")
        return node

    def external(self, node: dict[str, Any], ref: str, base: str, in_schema: bool, ptr: str) -> Any:
        target_uri, _, fragment = urljoin(base, ref).partition("#")
        key = (target_uri, fragment)
        doc = self.load(target_uri, ptr)
        if target_uri == self.root_uri and not self.stray(f"#{fragment}", in_schema):
            return {**node, "$ref": f"#{fragment}"}  # a file referring back into the root
        if in_schema:
            name = self.hoisted.get(key)
            if name is None:
                name = self.hoist_name(target_uri, fragment)
                self.hoisted[key] = name
                schemas = self.schemas()
                schemas[name] = {}  # taken before the walk: a cycle comes back to this name
                target = copy.deepcopy(resolve_pointer(doc, fragment, target_uri))
                schemas[name] = self.walk(target, target_uri, True, f"{target_uri}#{fragment}")
            prefix = "#/definitions/" if "swagger" in self.document else "#/components/schemas/"
            return {**node, "$ref": prefix + pointer_escape(name)}
        if key in self.inlining:
            chain = " -> ".join(f"{u}#{f}" for u, f in [*self.inlining, key])
            raise OpenApiError(self.label, ptr, f"a cycle of references outside schemas: {chain}")
        self.inlining.append(key)
        try:
            target = copy.deepcopy(resolve_pointer(doc, fragment, target_uri))
            result = self.walk(target, target_uri, False, f"{target_uri}#{fragment}")
        finally:
            self.inlining.pop()
        if isinstance(result, dict):  # 3.1: a reference's summary and description win
            result = {**result, **{k: v for k, v in node.items() if k in ("summary", "description")}}
        return result

    def stray(self, ref: str, in_schema: bool) -> bool:
        """A schema reference into the document but not to one of its named schemas (into a
        path's request body, or inside a named schema): the schema it points at is hoisted
        to a named one, as an external one is."""
        prefix = "#/definitions/" if "swagger" in self.document else "#/components/schemas/"
        named = ref.startswith(prefix) and "/" not in ref[len(prefix) :]
        return in_schema and ref.startswith("#/") and not named

    def hoist_name(self, uri: str, fragment: str) -> str:
        tail = unquote(fragment.rsplit("/", 1)[-1]) if fragment.strip("/") else ""
        base = tail or Path(urlsplit(uri).path).stem or "External"
        taken = self.schemas()
        name, n = base, 2
        while name in taken:
            name, n = f"{base}{n}", n + 1
        return name


__all__ = ["Loaded", "OpenApiError", "load_document", "parse_document", "pointer_escape", "resolve_pointer"]
