"""`mcpgen install`: add a server to an MCP host's configuration file.

Each host keeps an object of servers by name, in its own file and shape (``--config``
names another file):

* ``claude-desktop``: ``claude_desktop_config.json`` in Claude's settings folder, ``mcpServers``;
* ``claude-code``: ``~/.claude.json``, ``mcpServers`` with ``"type": "stdio"`` (every project;
  ``--config .mcp.json`` for one project, shared with its repository);
* ``cursor``: ``~/.cursor/mcp.json``, ``mcpServers``;
* ``vscode``: ``.vscode/mcp.json`` in the current folder, ``servers`` with ``"type": "stdio"``;
* ``gemini-cli``: ``~/.gemini/settings.json``, ``mcpServers``;
* ``goose``: ``~/.config/goose/config.yaml``, ``extensions`` in Goose's own shape (YAML);
* ``mcp-json``: ``mcp.json`` in the current folder, ``mcpServers``: the shape most hosts read.

The entry starts ``python -m mcpgen run FILE`` with the Python running this command, so the
host finds mcpgen and the server's dependencies whatever its own PATH is. Every other key of
the file is kept; it is written beside itself and renamed over, so a host reading it
meanwhile never sees half of it. Goose keeps YAML, read and written with PyYAML (the
``goose`` extra); its comments are not kept (Goose rewrites the file itself too).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from mcpgen.cli.run import load_server, split_target


class InstallError(Exception):
    """A config that cannot be read or written, or a bad argument: one line, exit code 2."""


Style = Literal["command", "typed", "goose"]


def _config_home() -> Path:
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")


def _claude_desktop() -> Path:
    """Claude's settings folder (macOS, Windows; on Linux, where it has no official build,
    the XDG config folder)."""
    home = Path.home()
    if sys.platform == "darwin":
        base = home / "Library" / "Application Support"
    elif sys.platform == "win32":
        base = Path(os.environ.get("APPDATA") or home / "AppData" / "Roaming")
    else:
        base = _config_home()
    return base / "Claude" / "claude_desktop_config.json"


def _goose() -> Path:
    if sys.platform == "win32":
        appdata = Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")
        return appdata / "Block" / "goose" / "config" / "config.yaml"
    return _config_home() / "goose" / "config.yaml"


@dataclass(frozen=True)
class Host:
    label: str
    key: str  # the object holding the servers
    style: Style  # command: {command, args, env}; typed: the same with "type": "stdio"; goose: Goose's
    where: Callable[[], Path]  # the default config file
    yaml: bool = False


HOSTS: dict[str, Host] = {
    "claude-desktop": Host("Claude Desktop", "mcpServers", "command", _claude_desktop),
    "claude-code": Host("Claude Code", "mcpServers", "typed", lambda: Path.home() / ".claude.json"),
    "cursor": Host("Cursor", "mcpServers", "command", lambda: Path.home() / ".cursor" / "mcp.json"),
    "vscode": Host("VS Code", "servers", "typed", lambda: Path.cwd() / ".vscode" / "mcp.json"),
    "gemini-cli": Host("Gemini CLI", "mcpServers", "command", lambda: Path.home() / ".gemini" / "settings.json"),
    "goose": Host("Goose", "extensions", "goose", _goose, yaml=True),
    "mcp-json": Host("your MCP host", "mcpServers", "command", lambda: Path.cwd() / "mcp.json"),
}
GOOSE_TIMEOUT = 300  # seconds Goose waits on a call to the extension (its own default)


def default_config(host: str) -> Path:
    """Where the host reads its servers from (see the module's table)."""
    return HOSTS[host].where()


def server_entry(target: str, env: dict[str, str], style: Style, name: str = "") -> dict[str, Any]:
    """The host's entry that runs ``target`` (``name``: the entry's, for Goose's copy of it)."""
    where, attr = split_target(target)
    path = Path(where)
    if where.endswith(".py") or path.exists():
        if not path.is_file():
            raise InstallError(f"no such file: {where}")
        where = str(path.resolve())  # the host starts the server from its own folder
    args = ["-m", "mcpgen", "run", f"{where}:{attr}" if attr else where]
    if style == "goose":
        return {
            "enabled": True,
            "type": "stdio",
            "name": name,
            "description": f"MCP server {name} (mcpgen run)",
            "cmd": sys.executable,
            "args": args,
            "envs": env,
            "timeout": GOOSE_TIMEOUT,
        }
    entry: dict[str, Any] = {"type": "stdio"} if style == "typed" else {}
    entry["command"] = sys.executable
    entry["args"] = args
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


def _yaml() -> Any:
    """PyYAML (imported by name: it ships no type stubs, and only Goose needs it)."""
    import importlib

    try:
        return importlib.import_module("yaml")
    except ModuleNotFoundError:
        from mcpgen.origin import install_command

        raise InstallError(
            f"Goose keeps its settings in YAML, which needs the goose extra (PyYAML): {install_command('goose')}"
        ) from None


def read_config(path: Path, yaml: bool = False) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InstallError(f"cannot read {path}: {exc.strerror}") from None
    if not text.strip():
        return {}
    if yaml:
        reader = _yaml()
        try:
            data = reader.safe_load(text)
        except reader.YAMLError as exc:
            raise InstallError(f"{path} is not YAML ({str(exc).splitlines()[0]}); fix it first") from None
        kind = "YAML"
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InstallError(
                f"{path} is not plain JSON ({exc.msg}, line {exc.lineno}); fix it, or add the entry "
                "that --dry-run prints by hand"
            ) from None
        kind = "JSON"
    if not isinstance(data, dict):
        raise InstallError(f"{path} holds a {kind} {type(data).__name__}, not a mapping")
    return data


def dumps(data: dict[str, Any], yaml: bool = False) -> str:
    """The config's text: JSON indented as hosts write it, or YAML in the file's own order."""
    if yaml:
        text: str = _yaml().safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False)
        return text
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


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
    entry = server_entry(target, variables, spec.style, server_name)
    data = read_config(path, spec.yaml)
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
    text = dumps(data, spec.yaml)
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
