"""`mcpgen call URL` signs the user in: the authorization code flow with PKCE through a
loopback redirect, with a real browser stand-in (a program named in BROWSER, as the
``webbrowser`` module runs it) or none (the URL printed and visited by the test), against
mcpgen.testing.AuthServer (authlib) as tests/oauth_parties.py serves it; the CLI runs as a real
subprocess. Tokens go to a 0600 file under XDG_CONFIG_HOME and are refreshed when expired."""

from __future__ import annotations

import asyncio
import json
import os
import re
import stat
import sys
from pathlib import Path

import httpx
import pytest

from mcpgen.runtime.auth.oauth import ClientInfo, Token
from mcpgen.runtime.auth.token_files import FileTokenStorage
from tests.oauth_parties import Parties

pytestmark = pytest.mark.anyio
CLI_SECONDS = 60

# A browser: visit the URL and follow every redirect (the user is signed in and consents).
BROWSER = """\
import sys, httpx
httpx.get(sys.argv[1], follow_redirects=True, timeout=10)
"""


def environment(tmp_path: Path, browser: str) -> dict[str, str]:
    script = tmp_path / "browser.py"
    script.write_text(BROWSER)
    command = f"{sys.executable} {script} %s" if browser == "works" else str(tmp_path / "no-such-browser")
    return {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config"), "BROWSER": command}


def token_file(tmp_path: Path) -> Path:
    return tmp_path / "config" / "mcpgen" / "oauth.json"


async def mcpgen_call(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "mcpgen.cli",
        "call",
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), CLI_SECONDS)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_sign_in_through_the_browser_then_reuse_the_stored_token(tmp_path: Path) -> None:
    async with Parties().running() as parties:
        env = environment(tmp_path, "works")
        code, out, err = await mcpgen_call(env, parties.mcp_url, "tool", "echo", "-a", "text=hello")
        assert (code, out.strip()) == (0, "hello"), err
        assert "Sign in to continue" in err and f"{parties.issuer}/authorize?" in err
        # the redirect came back to a listener on 127.0.0.1 (RFC 8252), PKCE S256 was used
        registered = parties.clients["client-1"]
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/callback", registered.redirect_uris[0])
        assert [r["form"]["grant_type"] for r in parties.token_requests] == ["authorization_code"]
        assert parties.token_requests[0]["proof"] is not None  # the AS offers DPoP: bound token

        # user-only permissions on the file and its directory; the token filed under its issuer
        path = token_file(tmp_path)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        data = json.loads(path.read_text())
        assert data["issuers"][parties.issuer]["client"]["client_id"] == "client-1"
        assert data["issuers"][parties.issuer]["tokens"][parties.mcp_url]["token_type"] == "DPoP"
        assert "PRIVATE KEY" in data["dpop_key"]

        # again, with no browser at all: the stored token (and its DPoP key) serve
        env = environment(tmp_path, "missing")
        code, out, err = await mcpgen_call(env, parties.mcp_url, "tool", "echo", "-a", "text=again")
        assert (code, out.strip()) == (0, "again"), err
        assert "Sign in" not in err and len(parties.token_requests) == 1
        assert {r["scheme"] for r in parties.mcp_requests if r["authorization"]} == {"DPoP"}


async def test_without_a_browser_the_url_is_printed(tmp_path: Path) -> None:
    async with Parties(dpop=False).running() as parties:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "mcpgen.cli",
            "call",
            parties.mcp_url,
            "tool",
            "echo",
            "-a",
            "text=printed",
            env=environment(tmp_path, "missing"),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert process.stderr is not None
        url = None
        while url is None:
            line = (await asyncio.wait_for(process.stderr.readline(), CLI_SECONDS)).decode()
            assert line, "the CLI ended without printing a sign-in URL"
            if line.strip().startswith(f"{parties.issuer}/authorize?"):
                url = line.strip()
        # the user opens the printed URL in a browser elsewhere (here: the test, by hand)
        async with httpx.AsyncClient(follow_redirects=True) as browser:
            assert (await browser.get(url)).status_code == 200
        out, err = await asyncio.wait_for(process.communicate(), CLI_SECONDS)
        assert (process.returncode, out.decode().strip()) == (0, "printed"), err.decode()


async def test_expired_token_is_refreshed_without_the_browser(tmp_path: Path) -> None:
    async with Parties().running() as parties:
        env = environment(tmp_path, "works")
        code, _, err = await mcpgen_call(env, parties.mcp_url, "tool", "echo", "-a", "text=1")
        assert code == 0, err
        # an hour passes: the stored token has expired
        path = token_file(tmp_path)
        data = json.loads(path.read_text())
        before = data["issuers"][parties.issuer]["tokens"][parties.mcp_url]
        before["expires_at"] -= 3600
        path.write_text(json.dumps(data))
        first_run = len(parties.mcp_requests)
        code, out, err = await mcpgen_call(
            environment(tmp_path, "missing"), parties.mcp_url, "tool", "echo", "-a", "text=2"
        )
        assert (code, out.strip()) == (0, "2"), err
        assert "Sign in" not in err
        assert [r["form"]["grant_type"] for r in parties.token_requests] == ["authorization_code", "refresh_token"]
        assert parties.token_requests[1]["proof"] is not None  # the refresh is DPoP-bound too
        # refreshed before use: the expired token never reached the MCP server again
        second_run = parties.mcp_requests[first_run:]
        assert second_run and not [r for r in second_run if before["access_token"] in r["authorization"]]
        after = json.loads(path.read_text())["issuers"][parties.issuer]["tokens"][parties.mcp_url]
        assert after["access_token"] != before["access_token"]
        assert after["refresh_token"] != before["refresh_token"]  # rotated, and kept


async def test_no_auth_and_own_token_do_not_sign_in(tmp_path: Path) -> None:
    async with Parties(dpop=False).running() as parties:
        env = environment(tmp_path, "works")
        code, _, err = await mcpgen_call(env, parties.mcp_url, "--no-auth")
        assert code == 2 and "401" in err and "Sign in" not in err
        code, _, err = await mcpgen_call(env, parties.mcp_url, "-H", "Authorization: Bearer not-a-token")
        assert code == 2 and "401" in err and "Sign in" not in err
        assert parties.token_requests == [] and not token_file(tmp_path).exists()


# ---------------------------------------------------------------- the token file


async def test_token_file_keeps_tokens_per_issuer_and_server(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "oauth.json"
    one, two = FileTokenStorage("https://a.example/mcp", path), FileTokenStorage("https://b.example/mcp", path)
    await one.save_client("https://as1", ClientInfo("c1", "secret", "client_secret_basic", issuer="https://as1"))
    await one.save_token(Token("t1", "r1", 1.0, "s", "https://as1", "DPoP"))
    await two.save_token(Token("t2", issuer="https://as1"))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert await one.load_token() == Token("t1", "r1", 1.0, "s", "https://as1", "DPoP")
    assert (await two.load_token() or Token("")).access_token == "t2"
    assert await one.load_client("https://as1") == ClientInfo(
        "c1", "secret", "client_secret_basic", issuer="https://as1"
    )
    assert await one.load_client("https://as2") is None  # never another issuer's client
    # the server moves to another authorization server: its token is filed there alone
    await one.save_token(Token("t3", issuer="https://as2"))
    data = json.loads(path.read_text())
    assert "https://a.example/mcp" not in data["issuers"]["https://as1"]["tokens"]
    assert data["issuers"]["https://as2"]["tokens"]["https://a.example/mcp"]["access_token"] == "t3"
    one.forget()
    assert await one.load_token() is None and await two.load_token() is not None
    assert one.dpop_key().thumbprint == two.dpop_key().thumbprint  # one key, kept
    path.write_text("{not json")
    assert await one.load_token() is None  # a damaged file is no crash: signing in rewrites it
