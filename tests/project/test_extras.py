"""Without the ``http`` extra, ``server.run("http")`` prints the one-line install hint and
exits (no traceback), and ``Client.http``/``Client.sse`` raise with that hint as their
message. The missing package is simulated: a stub directory first on ``PYTHONPATH`` whose
``uvicorn`` fails to import exactly as an absent module does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcpgen import Client
from mcpgen.origin import install_command
from mcpgen.runtime.extras import MissingExtra

ABSENT = 'raise ModuleNotFoundError("No module named {name!r}", name={name!r})\n'


def without(module: str, stubs: Path) -> dict[str, str]:
    """An environment in which importing ``module`` fails as if it were not installed."""
    (stubs / module).mkdir(parents=True)
    (stubs / module / "__init__.py").write_text(ABSENT.format(name=module))
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(stubs), os.environ.get("PYTHONPATH", "")])}


def test_run_http_without_uvicorn_prints_one_line_and_exits_2(tmp_path: Path) -> None:
    script = tmp_path / "server.py"
    script.write_text(
        "from mcpgen import Server\n"
        "server = Server('s')\n"
        "@server.tool\n"
        "def hi() -> str:\n"
        "    return 'hi'\n"
        "if __name__ == '__main__':\n"
        "    server.run('http')\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)],
        env=without("uvicorn", tmp_path / "stubs"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"error: server.run('http') needs the http extra (uvicorn is missing): {install_command('http')}"
    ]
    assert done.stdout == ""


def test_client_http_without_httpx_raises_the_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "httpx", None)  # import httpx now fails as for a missing module
    for make, name in ((Client.http, "Client.http"), (Client.sse, "Client.sse")):
        with pytest.raises(MissingExtra) as missing:
            make("http://127.0.0.1:9/mcp")
        assert str(missing.value) == f"{name} needs the http extra (httpx is missing): {install_command('http')}"
        assert isinstance(missing.value, ModuleNotFoundError) and missing.value.__cause__ is None


def test_the_in_process_and_stdio_paths_need_no_extra(tmp_path: Path) -> None:
    code = "from mcpgen import Server, Client\nServer('s').http_app()\nClient(Server('s'))\nprint('ok')\n"
    stubs = tmp_path / "stubs"
    env = without("uvicorn", stubs)
    (stubs / "httpx").mkdir()
    (stubs / "httpx" / "__init__.py").write_text(ABSENT.format(name="httpx"))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == "ok\n", done.stderr
