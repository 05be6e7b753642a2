"""`mcpgen install`: add a server to an MCP host's configuration file.

Each host keeps a JSON object of servers by name: Claude Desktop and Cursor under
``mcpServers``, VS Code under ``servers`` (with ``"type": "stdio"``). The entry starts
``python -m mcpgen run FILE`` with the Python running this command, so the host finds
mcpgen and the server's dependencies whatever its own PATH is.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcpgen.cli.run import load_server, split_target


class InstallError(Exception):
    """A config that cannot be read or written, or a bad argument: one line, exit code 2."""


@dataclass(frozen=True)
class Host:
    label: str
    key: str  # the object holding the servers
    typed: bool  # entries carry "type": "stdio"


HOSTS: dict[str, Host] = {
    "claude-desktop": Host("Claude Desktop", "mcpServers", typed=False),
    "vscode": Host("VS Code", "servers", typed=True),
    "cursor": Host("Cursor", "mcpServers", typed=False),
}


def default_config(host: str) -> Path:
    """Where the host reads its servers from. Claude Desktop: its settings folder
    (macOS, Windows; on Linux, where it has no official build, the XDG config folder);
    VS Code: the workspace file in the current folder; Cursor: the global file."""
    home = Path.home()
    if host == "claude-desktop":
        if sys.platform == "darwin":
            base = home / "Library" / "Application Support"
        elif sys.platform == "win32":
            base = Path(os.environ.get("APPDATA") or home / "AppData" / "Roaming")
        else:
            base = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
        return base / "Claude" / "claude_desktop_config.json"
    if host == "vscode":
        return Path.cwd() / ".vscode" / "mcp.json"
    return home / ".cursor" / "mcp.json"


def server_entry(target: str, env: dict[str, str], typed: bool) -> dict[str, Any]:
    where, name = split_target(target)
    path = Path(where)
    if where.endswith(".py") or path.exists():
        if not path.is_file():
            raise InstallError(f"no such file: {where}")
        where = str(path.resolve())  # the host starts the server from its own folder
    entry: dict[str, Any] = {"type": "stdio"} if typed else {}
    entry["command"] = sys.executable
    entry["args"] = ["-m", "mcpgen", "run", f"{where}:{name}" if name else where]
    if env:
        entry["env"] = env
    return entry


def parse_env(pairs: list[str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InstallError(f"--env takes KEY=VALUE, got {pair!r}")
        env[key] = value
    return env


def read_config(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InstallError(f"cannot read {path}: {exc.strerror}") from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InstallError(
            f"{path} is not plain JSON ({exc.msg}, line {exc.lineno}); fix it, or add the entry "
            "that --dry-run prints by hand"
        ) from None
    if not isinstance(data, dict):
        raise InstallError(f"{path} holds a JSON {type(data).__name__}, not an object")
    return data


@dataclass(frozen=True)
class Written:
    path: Path
    name: str
    text: str
    replaced: bool
    host_label: str


def served_name(target: str, env: dict[str, str]) -> str | None:
    """The name the target's Server gives itself (``Server("weather")``), loaded with the
    entry's environment; None when it cannot be loaded here (the host may still run it)."""
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            return load_server(target).info.name or None
    except Exception:  # a LoadError, or the module failing here (the host may have what it lacks)
        return None
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def install_server(
    host: str,
    target: str,
    *,
    name: str | None,
    env: list[str],
    config: Path | None,
    dry_run: bool,
    force: bool = False,
) -> Written:
    """Merge the server's entry into the host's config (other servers and keys kept);
    write it atomically unless ``dry_run``. Returns what was (or would be) written.

    The entry is named ``name``, else after the Server's own name, else after the file.
    An entry of that name that runs something else (another project's server) is not
    replaced unless ``force``: the same name is easy to reach (every project has a
    ``server.py``) and the other entry would be lost without a word."""
    spec = HOSTS[host]
    path = config if config is not None else default_config(host)
    where, attr = split_target(target)
    variables = parse_env(env)
    server_name = name or served_name(target, variables) or attr or Path(where).stem.split(".")[-1] or where
    entry = server_entry(target, variables, spec.typed)
    data = read_config(path)
    servers = data.setdefault(spec.key, {})
    if not isinstance(servers, dict):
        raise InstallError(f"{path}: {spec.key!r} is a JSON {type(servers).__name__}, not an object")
    replaced = server_name in servers
    existing = servers.get(server_name)
    if replaced and not force and not _same_server(existing, entry):
        runs = " ".join(existing.get("args", [])) if isinstance(existing, dict) else repr(existing)
        raise InstallError(
            f"{path} already has a server {server_name!r} that runs something else ({runs or 'no args'}): "
            "pick another --name, or --force to replace it"
        )
    servers[server_name] = entry
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if not dry_run:
        _write_atomically(path, text)
    return Written(path, server_name, text, replaced, spec.label)


def _same_server(existing: Any, entry: dict[str, Any]) -> bool:
    """Whether an entry runs the same thing (same command and arguments): then it is this
    project's own, installed before, and updating it is what the user asked for."""
    return isinstance(existing, dict) and existing.get("args") == entry["args"]


def _write_atomically(path: Path, text: str) -> None:
    """Write beside the file and rename over it: a host reading it meanwhile, or a full
    disk, never sees half a config."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                file.write(text)
            if path.exists():
                os.chmod(temporary, path.stat().st_mode & 0o777)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise InstallError(f"cannot write {path}: {exc.strerror or exc}") from None
