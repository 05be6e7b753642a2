"""Cold start (issue 12, point 8): what a server imports before its first answer.

Start-up time is measured side by side in bench/ (stdio.py and http.py, "cold start"), not
here: these tests hold the cause instead of timing it. A real server subprocess answers one
request over stdio, in each era, and reports the modules it loaded; the modules below are
each loaded on first use by the one feature that needs it, so none may be loaded by then.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from mcpgen import schema as shipped
from mcpgen.protocol import availability, revision_facts
from mcpgen.runtime import versions
from tests.paths import ROOT

ECHO = ROOT / "bench" / "servers" / "mcpgen_echo.py"

# Runs a server script as __main__ and, when stdin ends and the server exits, writes the
# names of the modules it imported to the file named by argv[2].
RUNNER = """
import atexit, runpy, sys
script, out = sys.argv[1], sys.argv[2]
atexit.register(lambda: open(out, "w").write("\\n".join(sorted(sys.modules))))
sys.argv = [script]
runpy.run_path(script, run_name="__main__")
"""

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


def call(tool: str, request_id: int = 1, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": tool, "arguments": {"text": "hi"}}
    if meta is not None:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


# Loaded on first use only: the sealer of the stateless era's requestState (hashlib, hmac),
# the thread pool (concurrent.futures.thread, queue), served files (mimetypes), JSON text
# for odd results and failing frames (the stdlib json), the client's command line (shlex);
# the revision facts are generated Python, so no TOML parser at all.
NOT_BEFORE_FIRST_ANSWER = (
    "hashlib",
    "_hashlib",
    "hmac",
    "concurrent.futures.thread",
    "queue",
    "mimetypes",
    "json",
    "shlex",
    "tomllib",
    "mcpgen.schema",
)


# The runtime's modules a stdio server loads before its first answer, by layer: what the
# layers issue's restructure kept (the same code as before it, split into packages). A module
# joining this list is a choice to make here, not an accident of an import.
FIRST_ANSWER_RUNTIME = {
    "mcpgen.runtime": ("errors", "extras", "versions"),
    "mcpgen.runtime.jsonrpc": ("capabilities", "context", "eager", "framing", "kernel", "session", "transport"),
    # caller: the per-caller key of listen's limits (a context variable, nothing imported).
    "mcpgen.runtime.shared": ("caller", "extension", "files", "handshake", "headers", "jsonschema", "meta"),
    "mcpgen.runtime.transports": ("stdio",),
    "mcpgen.runtime.auth": ("info",),
    "mcpgen.runtime.server": (
        "caching",
        "catalog",
        "collector",  # server.run("stdio") tunes the garbage collector (imports gc only)
        "content",
        "context",
        "era",
        "features",
        "handlers",
        "input_required",
        "lifespan",
        "listen",
        "registry",
        "running",
        "server",
        "session",
        "signature",
        "threads",
    ),
}
STATELESS_FIRST_ANSWER = (
    "mcpgen.runtime.server.params_merge",
    "mcpgen.runtime.server.stamp",
    "mcpgen.runtime.server.stateless",
)


def first_answer_runtime(era: str) -> set[str]:
    names = {f"{package}.{module}" for package, modules in FIRST_ANSWER_RUNTIME.items() for module in modules}
    names |= set(FIRST_ANSWER_RUNTIME)  # the packages themselves (docstrings only)
    return names | (set(STATELESS_FIRST_ANSWER) if era == "2026-07-28" else set())


def serve(tmp_path: Path, *frames: dict[str, Any]) -> tuple[list[dict[str, Any]], set[str]]:
    """The answers of the echo server to ``frames`` over stdio, and the modules it loaded."""
    out = tmp_path / "modules.txt"
    proc = subprocess.run(
        [sys.executable, "-c", RUNNER, str(ECHO), str(out)],
        input="".join(json.dumps(f) + "\n" for f in frames).encode(),
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    answers = [json.loads(line) for line in proc.stdout.splitlines()]
    return answers, set(out.read_text().split())


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
def test_the_first_answer_imports_only_what_it_needs(tmp_path: Path, era: str) -> None:
    first = INITIALIZE if era == "2025-11-25" else call("echo", meta=META)
    answers, modules = serve(tmp_path, first)
    assert len(answers) == 1 and "result" in answers[0], answers
    assert sorted(m for m in NOT_BEFORE_FIRST_ANSWER if m in modules) == []
    assert {m for m in modules if m.startswith("mcpgen.runtime")} == first_answer_runtime(era)
    if era == "2025-11-25":  # a handshake-era server never loads the stateless era's code
        stateless_only = ("mcpgen.protocol.v2026", "mcpgen.runtime.server.stateless", "mcpgen.runtime.server.stamp")
        assert not [m for m in modules if m.startswith(stateless_only)]


def test_the_thread_pool_loads_with_the_first_threaded_call(tmp_path: Path) -> None:
    """The lazy import happens, and the plain def still runs in a worker thread."""
    answers, modules = serve(tmp_path, call("echo_threaded", meta=META))
    assert answers[0]["result"]["content"] == [{"type": "text", "text": "hi"}], answers
    assert "concurrent.futures.thread" in modules
    assert "hashlib" not in modules


def test_revision_facts_are_the_table_rendered() -> None:
    """versions.py reads the generated facts; they say what revisions.toml says (the
    committed-files check keeps the file itself in step with the generator)."""
    table = tomllib.loads((shipped.HERE / "revisions.toml").read_text(encoding="utf-8"))
    rows = table["revisions"]
    assert revision_facts.REVISIONS == availability.REVISIONS == tuple(shipped.revisions())
    assert versions.HTTP_DEFAULT == table["defaults"]["http_without_header"]
    for name, row in rows.items():
        assert versions.era_of(name) == row["era"]
        assert versions.primes_streams(name) is bool(row.get("priming", False))
        assert versions.bindings(name).__name__ == "mcpgen.protocol.v" + row["bindings"].replace("-", "_")
    assert versions.HANDSHAKE == tuple(sorted((n for n, r in rows.items() if r["era"] == "handshake"), reverse=True))
    assert versions.STATELESS == tuple(sorted((n for n, r in rows.items() if r["era"] == "stateless"), reverse=True))
    assert versions.era_of("2099-01-01") is None and not versions.primes_streams(None)


def test_the_generator_refuses_a_table_the_runtime_could_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcpgen.codegen import committed
    from mcpgen.codegen.loader import SchemaError

    for schema in shipped.HERE.glob("????-??-??.json"):
        (tmp_path / schema.name).symlink_to(schema)
    text = (shipped.HERE / "revisions.toml").read_text(encoding="utf-8")
    monkeypatch.setattr(shipped, "HERE", tmp_path)
    (tmp_path / "revisions.toml").write_text(text, encoding="utf-8")
    assert committed.revision_table()[1] == versions.HTTP_DEFAULT
    (tmp_path / "revisions.toml").write_text(text.replace('era = "stateless"', 'era = "modern"'), encoding="utf-8")
    with pytest.raises(SchemaError, match="era must be one of"):
        committed.revision_table()
    bad_default = text.replace('http_without_header = "2025-03-26"', 'http_without_header = "2020-01-01"')
    (tmp_path / "revisions.toml").write_text(bad_default, encoding="utf-8")
    with pytest.raises(SchemaError, match="names no shipped revision"):
        committed.revision_table()
