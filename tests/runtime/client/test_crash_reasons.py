"""A stdio server that dies says why: Client.stdio raises ServerExited with its exit status
and last stderr lines, and passes the server's stderr through to ours by default."""

from __future__ import annotations

import sys

import pytest

from mcpgen import Client
from mcpgen.runtime.errors import ConnectionClosed, ServerExited
from tests.paths import SERVERS

pytestmark = pytest.mark.anyio
CRASHING = SERVERS / "crashing.py"


async def start(*args: str, **options: object) -> ServerExited:
    with pytest.raises(ServerExited) as caught:
        async with Client.stdio(sys.executable, *args, request_timeout=20, **options):  # type: ignore[arg-type]
            pass
    return caught.value


async def test_exit_status_and_last_stderr_line() -> None:
    exited = await start(str(CRASHING), "exit3", on_stderr=lambda line: None)
    assert isinstance(exited, ConnectionClosed)  # callers catching the old error still do
    assert exited.returncode == 3
    assert exited.stderr_tail == ["starting up", "fatal: missing API_KEY"]
    assert exited.summary() == "the server exited with status 3 before answering: fatal: missing API_KEY"
    assert str(exited).endswith("\n  starting up\n  fatal: missing API_KEY")


async def test_import_error_on_start() -> None:
    exited = await start(str(CRASHING), "import", on_stderr=lambda line: None)
    assert exited.returncode == 1
    assert exited.stderr_tail[0] == "Traceback (most recent call last):"
    assert exited.summary().endswith(": ModuleNotFoundError: No module named 'mcpgen_no_such_module'")


async def test_missing_script_and_signal() -> None:
    missing = await start(str(CRASHING.with_name("no_such_server.py")), on_stderr=lambda line: None)
    assert missing.returncode == 2 and "no_such_server.py" in missing.summary()
    killed = await start(str(CRASHING), "killed", on_stderr=lambda line: None)
    assert killed.returncode == -9
    assert killed.summary() == "the server was killed by SIGKILL before answering (it wrote nothing to stderr)"


async def test_stderr_passes_through_by_default(capfd: pytest.CaptureFixture[str]) -> None:
    await start(str(CRASHING), "exit3")
    assert "starting up\nfatal: missing API_KEY\n" in capfd.readouterr().err


async def test_on_stderr_takes_the_lines_instead(capfd: pytest.CaptureFixture[str]) -> None:
    lines: list[str] = []
    exited = await start(str(CRASHING), "exit3", on_stderr=lines.append)
    assert lines == ["starting up", "fatal: missing API_KEY"] == exited.stderr_tail
    assert "fatal" not in capfd.readouterr().err


async def test_a_healthy_server_is_unaffected() -> None:
    async with Client.stdio(sys.executable, str(CRASHING), "on-call", on_stderr=lambda line: None) as client:
        assert (await client.call_tool("ok")).content[0].text == "fine"  # type: ignore[union-attr]
