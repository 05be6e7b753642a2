"""The OAuth client's token file on a full disk (issue 37, point 10): a client process whose
token file is on a 64 KiB tmpfs filled to the last byte (tests/full_disk.py: a mount
namespace of its own) signs in to a real authorization server and a protected MCP server
on loopback (tests/oauth_parties.py) and calls a tool twice. The token it gets is kept in
memory with one warning (the calls succeed, the second without a new token), and reading
the DPoP key the file already holds writes nothing (the token is bound to that key)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from mcpgen.runtime.auth.dpop import DPoPKey
from tests.full_disk import on_a_full_filesystem
from tests.oauth_parties import Parties
from tests.paths import ROOT

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # a client process in a namespace of its own


async def test_a_token_that_cannot_be_saved_is_kept_in_memory(tmp_path: Path) -> None:
    key = DPoPKey()
    seed = tmp_path / "oauth.json"
    seed.write_text(json.dumps({"dpop_key": key.to_pem().decode()}))
    folder = tmp_path / "full"
    folder.mkdir()
    async with Parties().running() as parties:
        command = [sys.executable, "-m", "tests.full_disk", "oauth", parties.mcp_url, str(folder / "oauth.json")]
        process = await asyncio.create_subprocess_exec(
            *on_a_full_filesystem(command, folder, [seed]),
            cwd=ROOT,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            out, err = await asyncio.wait_for(process.communicate(), 120)
        except TimeoutError:
            process.kill()
            await process.wait()
            pytest.fail("the client did not finish within 120 s")
    assert process.returncode == 0, err.decode()[-3000:]
    report = json.loads(out.decode().strip().splitlines()[-1])
    assert report["disk_full"], report  # writes there really fail
    assert report["answers"] == ["one", "two"], report  # not a bare OSError
    assert len(report["warnings"]) == 1 and "No space left on device" in report["warnings"][0], report
    assert "kept in memory for this run only" in report["warnings"][0]
    # One token for both calls, bound to the key the file held (read without a write).
    assert [r["status"] for r in parties.token_requests] == [200]
    assert parties.token_requests[0]["proof"]["jkt"] == key.thumbprint
    assert list(folder.iterdir()) == []  # the tmpfs was the namespace's alone
