"""Where this mcpgen was installed from, and how to install it (or one of its extras) the
same way.

mcpgen is not on a package index yet, so ``pip install 'mcpgen[http]'`` fails for most
users, and a new project that depends on ``mcpgen[http]>=0.1.0`` cannot be installed. What
pip recorded when it installed mcpgen says where it came from (PEP 610's
``direct_url.json``): a directory (a clone, editable or not), an archive (a wheel or sdist
built from one), or a version control URL; no record means an index. A copy that runs from
its own checkout without being installed (``PYTHONPATH``) counts as that checkout.

:func:`origin` reads it once; :meth:`Origin.requirement` is the PEP 508 requirement another
project can name, :meth:`Origin.pip_install` the shell command that installs an extra, both
for the way this mcpgen came. Standard library only: the runtime's install hints may use it.
"""

from __future__ import annotations

import json
import shlex
import urllib.parse
import urllib.request
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

from mcpgen.version import __version__

Kind = Literal["index", "checkout", "directory", "archive", "vcs"]


@dataclass(frozen=True)
class Origin:
    """Where mcpgen came from: ``kind`` and ``where`` (a path for a checkout, a directory
    or an archive; a ``git+https://...@commit`` URL for version control)."""

    kind: Kind
    where: str = ""
    editable: bool = False

    def requirement(self, extras: str = "") -> str:
        """A PEP 508 requirement on this mcpgen (``extras``: ``"http"``, ``"http,auth"``)."""
        name = f"mcpgen[{extras}]" if extras else "mcpgen"
        if self.kind == "index":
            return f"{name}>={__version__}"
        if self.kind == "vcs":
            return f"{name} @ {self.where}"
        return f"{name} @ {Path(self.where).resolve().as_uri()}"

    def pip_install(self, extras: str = "") -> str:
        """The command that installs this mcpgen with ``extras`` where it is installed:
        ``pip install 'mcpgen[http]'`` from an index, ``pip install -e '/src/mcpgen[http]'``
        for a checkout, the direct reference otherwise."""
        if self.kind == "index":
            return f"pip install {shlex.quote(f'mcpgen[{extras}]' if extras else 'mcpgen')}"
        if self.kind == "checkout" or (self.kind == "directory" and self.editable):
            return f"pip install -e {shlex.quote(f'{self.where}[{extras}]' if extras else self.where)}"
        return f"pip install {shlex.quote(self.requirement(extras))}"


def _checkout() -> Path | None:
    """The source checkout this copy runs from: a pyproject.toml naming mcpgen beside the package."""
    root = Path(__file__).resolve().parent.parent
    try:
        text = (root / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return None
    return root if 'name = "mcpgen"' in text else None


def _local_path(url: str) -> str | None:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "file":
        return None
    return urllib.request.url2pathname(urllib.parse.unquote(parts.path))


def from_record(record: str | None) -> Origin:
    """The origin a ``direct_url.json`` (its text, or None when there is none) records."""
    if record is None:
        return Origin("index")
    try:
        data = json.loads(record)
    except ValueError:
        return Origin("index")
    url = data.get("url") if isinstance(data, dict) else None
    if not isinstance(url, str):
        return Origin("index")
    vcs = data.get("vcs_info")
    if isinstance(vcs, dict) and isinstance(vcs.get("vcs"), str):
        commit = vcs.get("commit_id")
        return Origin("vcs", f"{vcs['vcs']}+{url}" + (f"@{commit}" if isinstance(commit, str) else ""))
    path = _local_path(url)
    if path is None or not Path(path).exists():
        return Origin("index")  # a remote archive or one since deleted: the version is what is left
    if isinstance(data.get("dir_info"), dict):
        return Origin("directory", path, editable=data["dir_info"].get("editable") is True)
    return Origin("archive", path)


@cache
def origin() -> Origin:
    """Where the running mcpgen came from (read once)."""
    checkout = _checkout()
    if checkout is not None:
        return Origin("checkout", str(checkout), editable=True)
    from importlib import metadata

    try:
        record = metadata.distribution("mcpgen").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        record = None
    return from_record(record)


def install_command(extras: str = "") -> str:
    """:meth:`Origin.pip_install` for the running mcpgen: what an install hint says."""
    return origin().pip_install(extras)


__all__ = ["Kind", "Origin", "from_record", "install_command", "origin"]
