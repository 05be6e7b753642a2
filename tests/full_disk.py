"""A command run on a small, full filesystem, for the tests of what mcpgen does when a file
cannot be written (issue 37, point 10).

:func:`on_a_full_filesystem` wraps a command so that it runs in a mount namespace of its
own (``unshare``, util-linux) where ``folder`` is a 64 KiB tmpfs, filled to the last byte
after ``seed`` files are copied into it: every write there fails with ENOSPC, as on a full
disk, and the mount disappears with the process (nothing to unmount, nothing touched
outside it). As root the namespace is a plain mount namespace; otherwise a user namespace
maps the user to root inside it (unprivileged tmpfs mounts are allowed there).

``python -m tests.full_disk oauth URL TOKEN_FILE``: the OAuth client whose token file is
``TOKEN_FILE`` calls the ``echo`` tool of the protected server at ``URL`` twice and prints
one JSON line: what each call answered (or raised), the warnings it logged, and whether a
write on the token file's filesystem really fails.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shlex
import sys
from pathlib import Path
from typing import Any


def on_a_full_filesystem(command: list[str], folder: Path, seed: list[Path] | None = None) -> list[str]:
    """``command``, run with ``folder`` a full 64 KiB tmpfs holding copies of ``seed``."""
    copies = " && ".join(f"cp {shlex.quote(str(s))} {shlex.quote(str(folder))}/" for s in seed or [])
    mount = f"mount -t tmpfs -o size=64k,mode=0700 tmpfs {shlex.quote(str(folder))}"
    fill = f"(head -c 1048576 /dev/zero > {shlex.quote(str(folder))}/filler 2>/dev/null || true)"
    script = " && ".join(part for part in (mount, copies, fill) if part) + ' && exec "$@"'
    namespace = ["unshare", "--mount"] if os.geteuid() == 0 else ["unshare", "--user", "--map-root-user", "--mount"]
    return [*namespace, "sh", "-c", script, "sh", *command]


async def oauth_calls(url: str, token_file: Path) -> dict[str, Any]:
    from mcpgen import Client
    from mcpgen.runtime.auth.oauth import OAuthClient
    from mcpgen.runtime.auth.token_files import FileTokenStorage

    warnings: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.levelno >= logging.WARNING:
                warnings.append(record.getMessage())

    logging.getLogger("mcpgen").addHandler(Keep())
    try:
        (token_file.parent / "probe").write_bytes(b"x" * 4096)
        full = False
    except OSError:
        full = True
    storage = FileTokenStorage(url, path=token_file)
    auth = OAuthClient(storage=storage, dpop_key=storage.dpop_key)
    answers: list[str] = []
    try:
        async with Client.http(url, auth=auth, era="handshake") as client:
            for text in ("one", "two"):
                try:
                    result = await client.call_tool("echo", {"text": text})
                    answers.append(getattr(result.content[0], "text", "?"))
                except Exception as exc:  # the test reads what went wrong
                    answers.append(f"{type(exc).__name__}: {exc}")
    except Exception as exc:  # the connection itself (its first request signs in)
        answers.append(f"{type(exc).__name__}: {exc}")
    return {"answers": answers, "warnings": warnings, "disk_full": full}


if __name__ == "__main__":
    if sys.argv[1:2] == ["oauth"] and len(sys.argv) == 4:
        print(json.dumps(asyncio.run(oauth_calls(sys.argv[2], Path(sys.argv[3])))), flush=True)
    else:
        raise SystemExit("usage: python -m tests.full_disk oauth URL TOKEN_FILE")
