"""Serving files as resources without letting a URI escape the directory they live in.

Template matching percent-decodes variables, so ``file:///%2e%2e%2fetc%2fpasswd`` arrives
as ``../etc/passwd``: every path a client names is checked here before it is opened.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from mcpgen.runtime.errors import ResourceNotFound


def resolve_within(root: Path, relative: str, uri: str | None = None) -> Path:
    """The existing file ``relative`` names inside ``root``.

    Refuses (as "resource not found", which tells an attacker nothing) absolute paths,
    ``..`` segments, backslashes, NUL bytes, and symlinks that lead out of ``root``.
    """
    shown = uri or relative
    if not relative or "\x00" in relative or "\\" in relative:
        raise ResourceNotFound(shown)
    parts = PurePosixPath(relative).parts
    if PurePosixPath(relative).is_absolute() or ".." in parts:
        raise ResourceNotFound(shown)
    base = root.resolve()
    target = (base / relative).resolve()  # follows symlinks
    if not target.is_relative_to(base) or not target.is_file():
        raise ResourceNotFound(shown)
    return target


def leaves_root(value: str) -> bool:
    """Whether a value, read as a relative path, could name something outside the folder it
    is joined to: an absolute path (``/x``, ``\\x``, ``C:\\x``), a ``..`` segment (with ``/``
    or ``\\`` between segments), or a NUL byte."""
    if not value:
        return False
    if "\x00" in value or value[0] in "/\\" or (value[1:2] == ":" and value[0].isalpha() and value[2:3] in ("/", "\\")):
        return True
    return ".." in value.replace("\\", "/").split("/")


def read_file(path: Path) -> str | bytes:
    """Text when the file is UTF-8, else bytes."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data


def guess_mime(path: Path) -> str:
    # mimetypes is imported on the first file served, not by every server at start-up
    # (its table of types is read on first use anyway).
    import mimetypes

    return mimetypes.guess_type(path.name)[0] or "application/octet-stream"


def file_uri(path: Path) -> str:
    return path.resolve().as_uri()


def check_root_uri(uri: str) -> str:
    """A client root must be a file:// URI (the spec allows no other kind for now)."""
    if not uri.startswith("file://"):
        raise ValueError(f"a root must be a file:// URI, not {uri!r}")
    return uri
