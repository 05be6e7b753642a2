"""OAuth tokens kept between runs: a :class:`~mcpgen.runtime.auth.oauth.TokenStorage` in a file.

One JSON file in the user's config directory (``platformdirs``: ``~/.config/mcpgen/oauth.json``
on Linux, the platform's equivalent elsewhere), readable by the user alone (0600, in a 0700
directory), holding per authorization server ``issuer`` the client registered there and the
tokens it issued, one per MCP server, plus the DPoP key the tokens may be bound to:

    {"issuers": {ISSUER: {"client": {...}, "tokens": {SERVER_URL: {...}}}}, "dpop_key": PEM}

Every change rewrites the whole file through a temporary file and a rename, so a reader
never sees half a file; on POSIX an advisory lock keeps two processes (two ``mcpgen call``
at once) from losing each other's update. Reading never writes. When the file cannot be
written (a full disk, a read-only home), what was to be saved (a token just obtained, a
registration, a new DPoP key) is kept in memory for the life of the process, with one
warning, instead of being thrown away: the calls go on, and the next run signs in again.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from mcpgen.runtime.auth.discovery import canonical_resource
from mcpgen.runtime.auth.dpop import DPoPKey
from mcpgen.runtime.auth.oauth import ClientInfo, Token

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; the rename still keeps the file whole
    fcntl = None  # type: ignore[assignment]

FILE_NAME = "oauth.json"
T = TypeVar("T")
log = logging.getLogger("mcpgen.auth")


def default_path() -> Path:
    """The token file in the user's config directory (XDG_CONFIG_HOME is honoured)."""
    import platformdirs

    return platformdirs.user_config_path("mcpgen") / FILE_NAME


class FileTokenStorage:
    """Tokens for one MCP server (``server_url``), and every issuer's client registration,
    in a file shared by all servers (one registration per issuer serves them all)."""

    def __init__(self, server_url: str, path: Path | None = None) -> None:
        self.server = canonical_resource(server_url)
        self.path = path if path is not None else default_path()
        # What could not be written, kept for this process (see the module docstring).
        self._unsaved_token: Token | None = None
        self._unsaved_clients: dict[str, ClientInfo] = {}
        self._unsaved_key: DPoPKey | None = None
        self._warned = False

    # ------------------------------------------------------------ TokenStorage

    async def load_token(self) -> Token | None:
        if self._unsaved_token is not None:
            return self._unsaved_token
        for entry in self._read().get("issuers", {}).values():
            found = entry.get("tokens", {}).get(self.server)
            if found is not None:
                return _convert(found, Token)
        return None

    async def save_token(self, token: Token) -> None:
        def change(data: dict[str, Any]) -> None:
            issuers = data.setdefault("issuers", {})
            for entry in issuers.values():  # a server has one token, from its current issuer
                entry.get("tokens", {}).pop(self.server, None)
            entry = issuers.setdefault(token.issuer or "", {})
            entry.setdefault("tokens", {})[self.server] = msgspec.to_builtins(token)

        self._unsaved_token = None if self._saved(change, "the access token") else token

    async def load_client(self, issuer: str) -> ClientInfo | None:
        if issuer in self._unsaved_clients:
            return self._unsaved_clients[issuer]
        found = self._read().get("issuers", {}).get(issuer, {}).get("client")
        return _convert(found, ClientInfo) if found is not None else None

    async def save_client(self, issuer: str, client: ClientInfo) -> None:
        def change(data: dict[str, Any]) -> None:
            data.setdefault("issuers", {}).setdefault(issuer, {})["client"] = msgspec.to_builtins(client)

        if self._saved(change, "the client registration"):
            self._unsaved_clients.pop(issuer, None)
        else:
            self._unsaved_clients[issuer] = client

    # ------------------------------------------------------------ the DPoP key

    def dpop_key(self) -> DPoPKey:
        """The key DPoP-bound tokens in this file are bound to: made on first use, then kept
        (a bound token, and its refresh token, is useless without it). Reading the key the
        file holds writes nothing."""
        if self._unsaved_key is not None:
            return self._unsaved_key
        pem = self._read().get("dpop_key")
        if isinstance(pem, str):
            return DPoPKey.from_pem(pem)
        made: list[DPoPKey] = []

        def change(data: dict[str, Any]) -> None:
            kept = data.get("dpop_key")  # another process may have made one meanwhile
            made.append(DPoPKey.from_pem(kept) if isinstance(kept, str) else DPoPKey())
            data["dpop_key"] = made[0].to_pem().decode()

        if not self._saved(change, "the DPoP key"):
            self._unsaved_key = made[0] if made else DPoPKey()
            return self._unsaved_key
        return made[0]

    def loopback_port(self) -> int | None:
        """The port of the loopback redirect used last (``mcpgen call``'s sign-in)."""
        port = self._read().get("loopback_port")
        return port if isinstance(port, int) and 0 < port < 65536 else None

    def remember_loopback_port(self, port: int) -> None:
        if self.loopback_port() != port:
            self._saved(lambda data: data.update(loopback_port=port), "the sign-in port")

    def forget(self) -> None:
        """Drop this server's token (sign out of it); registrations stay. A file that
        cannot be written raises: the token would stay in it."""
        self._unsaved_token = None
        with self._update() as data:
            for entry in data.get("issuers", {}).values():
                entry.get("tokens", {}).pop(self.server, None)

    # ------------------------------------------------------------ the file

    def _saved(self, change: Callable[[dict[str, Any]], None], what: str) -> bool:
        """Apply ``change`` to the file; False (with a warning, once) when it cannot be
        written: the caller keeps the value in memory instead."""
        try:
            with self._update() as data:
                change(data)
        except OSError as exc:
            if not self._warned:
                self._warned = True
                log.warning(
                    "mcpgen: cannot write %s to %s (%s): it is kept in memory for this run only",
                    what,
                    self.path,
                    exc.strerror or exc,
                )
            return False
        return True

    def _read(self) -> dict[str, Any]:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        try:
            data = msgspec.json.decode(raw)
        except msgspec.DecodeError:
            return {}  # a damaged file: signing in again rewrites it
        return data if isinstance(data, dict) else {}

    @contextlib.contextmanager
    def _update(self) -> Iterator[dict[str, Any]]:
        """Read, let the caller change, write back atomically; under the lock."""
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with self._locked():
            data = self._read()
            yield data
            self._write(data)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        if fcntl is None:
            yield
            return
        descriptor = os.open(self.path.with_name(self.path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            yield
        finally:
            os.close(descriptor)  # closing releases the lock

    def _write(self, data: dict[str, Any]) -> None:
        # mkstemp creates the file 0600 from the start: no moment where others may read it.
        descriptor, temporary = tempfile.mkstemp(prefix=".oauth-", dir=self.path.parent)
        try:
            with os.fdopen(descriptor, "wb") as file:
                file.write(msgspec.json.format(msgspec.json.encode(data)))
                file.flush()
                os.fsync(file.fileno())
            os.chmod(temporary, 0o600)
            os.replace(temporary, self.path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
            raise


def _convert(value: Any, kind: type[T]) -> T | None:
    """A stored record as ``kind``, or None when it no longer fits (an older file)."""
    try:
        return msgspec.convert(value, kind)
    except msgspec.ValidationError:
        return None


__all__ = ["FileTokenStorage", "default_path"]
