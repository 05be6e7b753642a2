"""``mcpgen.scaffold``: name validation, the files of a new project, and end to end: the
generated project's own tests pass, and the official SDK's client talks to its server."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import uuid
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from mcpgen import __version__
from mcpgen.scaffold import (
    ScaffoldError,
    Transport,
    create_project,
    mcpgen_checkout,
    mcpgen_requirement,
    validate_name,
)
from tests.conftest import ROOT
from tests.http_server import free_port, running

NAME = "word-notes"
PACKAGE = "word_notes"
COMMON_FILES = {
    ".gitignore",
    ".vscode/mcp.json",
    "README.md",
    "claude_desktop_config.json",
    "pyproject.toml",
    "server.json",
    f"{PACKAGE}/__init__.py",
    f"{PACKAGE}/server.py",
    "tests/conftest.py",
    "tests/test_server.py",
}


@pytest.fixture(scope="module")
def projects(tmp_path_factory: pytest.TempPathFactory) -> dict[Transport, Path]:
    """One generated project per transport, shared by the tests that only read them."""
    made: dict[Transport, Path] = {}
    for transport in ("stdio", "http"):
        made[transport] = tmp_path_factory.mktemp("projects") / transport
        create_project(NAME, made[transport], transport=transport)
    return made


def relative_files(root: Path) -> set[str]:
    return {path.relative_to(root).as_posix() for path in root.rglob("*") if path.is_file()}


# ---------------------------------------------------------------- names


@pytest.mark.parametrize(
    ("name", "package"),
    [
        ("weather", "weather"),
        ("notes2", "notes2"),
        ("my-server", "my_server"),
        ("a_b-c", "a_b_c"),
        ("json-tools", "json_tools"),
    ],
)
def test_valid_names_give_their_package_name(name: str, package: str) -> None:
    assert validate_name(name) == package


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("class", "keyword"),
        ("json", "standard library"),
        ("asyncio", "standard library"),
        ("MyServer", "uppercase"),
        ("2fast", "starts with a digit"),
        ("", "empty"),
        ("mcpgen", "reserved"),
        ("mcp", "reserved"),
        ("tests", "reserved"),
        ("test", "reserved"),
        ("my server", "not a valid project name"),
        ("double--dash", "not a valid project name"),
        ("trailing-", "not a valid project name"),
        ("_private", "not a valid project name"),
        ("café", "not a valid project name"),
    ],
)
def test_invalid_names_are_refused_with_a_reason(name: str, reason: str) -> None:
    with pytest.raises(ScaffoldError, match=reason) as error:
        validate_name(name)
    assert "\n" not in str(error.value)


def test_create_project_validates_the_name_before_writing(tmp_path: Path) -> None:
    with pytest.raises(ScaffoldError, match="keyword"):
        create_project("import", tmp_path / "import")
    assert not (tmp_path / "import").exists()


# ---------------------------------------------------------------- target directory


def test_a_non_empty_directory_is_refused_unless_forced(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "README.md").write_text("old")
    with pytest.raises(ScaffoldError) as error:
        create_project(NAME, tmp_path)
    assert str(error.value) == f"{tmp_path} is not empty; use --force to write into it"
    assert relative_files(tmp_path) == {"notes.txt", "README.md"}

    written = create_project(NAME, tmp_path, force=True)
    assert (tmp_path / "notes.txt").read_text() == "mine"  # other files are left alone
    assert (tmp_path / "README.md").read_text().startswith(f"# {NAME}\n")
    assert written == sorted(tmp_path / name for name in COMMON_FILES)


def test_an_empty_or_missing_directory_is_fine(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert create_project(NAME, tmp_path / "empty")
    assert create_project(NAME, tmp_path / "new" / "nested")


def test_a_file_in_the_way_is_refused(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("")
    with pytest.raises(ScaffoldError, match="is not a directory"):
        create_project(NAME, tmp_path / "taken", force=True)


def test_unknown_transport(tmp_path: Path) -> None:
    with pytest.raises(ScaffoldError, match="unknown transport 'sse'"):
        create_project(NAME, tmp_path, transport="sse")  # type: ignore[arg-type]


# ---------------------------------------------------------------- generated files


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_project_files(projects: dict[Transport, Path], transport: Transport) -> None:
    root = projects[transport]
    assert relative_files(root) == COMMON_FILES
    assert "$" not in (root / "README.md").read_text().replace("${workspaceFolder}", "")
    for path in root.rglob("*.py"):
        compile(path.read_text(), str(path), "exec")  # raises SyntaxError if broken
    server = (root / PACKAGE / "server.py").read_text()
    assert f'DEFAULT_TRANSPORT: Literal["stdio", "http"] = "{transport}"' in server
    conftest = (root / "tests" / "conftest.py").read_text()
    assert ("Client.http(url)" in conftest) == (transport == "http")


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_pyproject(projects: dict[Transport, Path], transport: Transport) -> None:
    pyproject = tomllib.loads((projects[transport] / "pyproject.toml").read_text())
    assert pyproject["build-system"]["build-backend"] == "hatchling.build"
    assert pyproject["project"]["name"] == NAME
    assert pyproject["project"]["dependencies"] == ["mcpgen[http]"]
    assert pyproject["project"]["scripts"] == {NAME: f"{PACKAGE}.server:main"}
    assert pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == [PACKAGE]
    assert pyproject["tool"]["hatch"]["metadata"]["allow-direct-references"] is True
    assert pyproject["tool"]["pytest"]["ini_options"]["testpaths"] == ["tests"]


def test_the_mcpgen_requirement_is_quoted_for_toml(tmp_path: Path) -> None:
    requirement = 'mcpgen[http] @ file:///C:/dev/"mcpgen"'
    create_project(NAME, tmp_path, mcpgen_requirement=requirement)
    assert tomllib.loads((tmp_path / "pyproject.toml").read_text())["project"]["dependencies"] == [requirement]


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_host_configurations(projects: dict[Transport, Path], transport: Transport) -> None:
    root = projects[transport]
    args = ["-m", f"{PACKAGE}.server", *(["--stdio"] if transport == "http" else [])]
    claude = json.loads((root / "claude_desktop_config.json").read_text())
    assert claude["mcpServers"][NAME]["args"] == args
    assert Path(claude["mcpServers"][NAME]["command"]).is_absolute()
    assert claude["mcpServers"][NAME]["command"].startswith(str(root.resolve()))
    vscode = json.loads((root / ".vscode" / "mcp.json").read_text())
    assert vscode["servers"][NAME]["type"] == "stdio" and vscode["servers"][NAME]["args"] == args
    if transport == "http":
        assert vscode["servers"][f"{NAME}-http"] == {"type": "http", "url": "http://127.0.0.1:8000/mcp"}
    else:
        assert list(vscode["servers"]) == [NAME]
    # The README quotes both files; every JSON block in it parses.
    readme = (root / "README.md").read_text()
    blocks = [json.loads(block) for block in re.findall(r"```json\n(.*?)```", readme, re.S)]
    assert blocks == [claude, vscode]


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_readme(projects: dict[Transport, Path], transport: Transport) -> None:
    readme = (projects[transport] / "README.md").read_text()
    assert "pip install -e '.[test]'" in readme and "pytest" in readme
    assert f"{NAME} --http" in readme
    assert (f"{NAME} --stdio" in readme) == (transport == "http")


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_server_default_transport(projects: dict[Transport, Path], transport: Transport) -> None:
    usage = subprocess.run(
        [sys.executable, "-m", f"{PACKAGE}.server", "--help"],
        cwd=projects[transport],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert f"(default: {transport})" in usage and "--http PORT" in usage and "--stdio" in usage


# ---------------------------------------------------------------- end to end


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_generated_tests_pass(tmp_path: Path, transport: Transport) -> None:
    """The project's own tests, in this venv (mcpgen is installed here; the project is not)."""
    project = tmp_path / NAME
    create_project(NAME, project, transport=transport)
    env = {**os.environ, "PYTHONPATH": str(project)}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(project / "tests")],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    expected = 6 if transport == "stdio" else 12  # http: each test over stdio and over HTTP
    assert f"{expected} passed" in run.stdout


@pytest.mark.anyio
async def test_the_official_sdk_client_uses_the_generated_server(
    projects: dict[Transport, Path], tmp_path: Path
) -> None:
    params = StdioServerParameters(command=sys.executable, args=["-m", f"{PACKAGE}.server"], cwd=projects["stdio"])
    with anyio.fail_after(30), (tmp_path / "stderr.log").open("w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                assert init.server_info.name == NAME
                tools = {tool.name: tool for tool in (await session.list_tools()).tools}
                assert tools["count_words"].output_schema is not None
                # The SDK checks structuredContent against the listed output schema itself.
                result = await session.call_tool("count_words", {"text": "hello MCP world"})
                assert result.is_error is False
                assert result.structured_content == {"words": 3, "characters": 15, "longest": "hello"}


@pytest.mark.slow
def test_every_kind_of_project_passes_mypy_strict(tmp_path: Path) -> None:
    """The projects promise mypy --strict clean code, their tests included (the --auth
    tests once indexed a structured result that may be msgspec.UNSET)."""
    for kind, options in {
        "stdio": {},
        "http": {"transport": "http"},
        "auth": {"transport": "http", "auth": True},
    }.items():
        project = tmp_path / kind
        create_project(NAME, project, **options)  # type: ignore[arg-type]
        checked = subprocess.run(
            [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"), PACKAGE, "tests"],
            cwd=project,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert checked.returncode == 0, (kind, checked.stdout + checked.stderr)


# ---------------------------------------------------------------- the dependency on mcpgen


@pytest.mark.parametrize(
    ("checkout", "target", "requirement"),
    [
        ("/src/mcpgen", "/src/weather", "mcpgen[http] @ {root:parent:uri}/mcpgen"),
        ("/home/me/src/mcpgen", "/home/me/projects/weather", "mcpgen[http] @ {root:parent:parent:uri}/src/mcpgen"),
        # Sharing only `/`: a relative URL would read file:////src/mcpgen, which pip 23.2 refuses.
        ("/src/mcpgen", "/home/me/projects/weather", "mcpgen[http] @ file:///src/mcpgen"),
        ("/work/mcpgen", "/tmp/weather", "mcpgen[http] @ file:///work/mcpgen"),
        ("/src/mcpgen", "/src/mcpgen/examples/weather", "mcpgen[http] @ {root:parent:parent:uri}"),
        ("/src/my {tools}/mc pgen", "/src/weather", "mcpgen[http] @ {root:parent:uri}/my%20%7Btools%7D/mc%20pgen"),
    ],
)
def test_a_checkout_is_named_by_its_path_relative_to_the_project(checkout: str, target: str, requirement: str) -> None:
    assert mcpgen_requirement(Path(target), Path(checkout)) == requirement


def test_without_a_checkout_the_project_depends_on_this_version() -> None:
    assert mcpgen_requirement(Path("/src/weather")) == f"mcpgen[http]>={__version__}"


def test_mcpgen_new_from_this_checkout_writes_no_path_of_this_machine() -> None:
    """A project that shares a folder with the checkout names it relatively (here: under the
    checkout's git-ignored build/, the only place beside it this test may write)."""
    target = ROOT / "build" / f"scaffold-{uuid.uuid4().hex[:8]}" / "demo"
    try:
        command = [sys.executable, "-m", "mcpgen.cli", "new", "demo", "--dir", str(target)]
        created = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=60)
        assert created.returncode == 0, created.stderr
        assert mcpgen_checkout() == ROOT
        pyproject = (target / "pyproject.toml").read_text()
        (dependency,) = tomllib.loads(pyproject)["project"]["dependencies"]
        assert dependency == mcpgen_requirement(target, ROOT) == "mcpgen[http] @ {root:parent:parent:parent:uri}"
        assert "file:" not in pyproject and str(ROOT) not in pyproject  # nothing absolute
        readme = (target / "README.md").read_text()
        assert "mcpgen is not on PyPI" in readme and os.path.relpath(ROOT, target) in readme
    finally:
        shutil.rmtree(target.parent, ignore_errors=True)


def test_mcpgen_new_far_from_the_checkout_names_it_absolutely(tmp_path: Path) -> None:
    """Sharing only `/` with the checkout: its absolute file: URL (the relative form would
    climb to `/`, which pip 23.2 refuses as "Invalid URL given")."""
    if Path(os.path.commonpath([tmp_path, ROOT])) != Path("/"):
        pytest.fail(f"this test needs a temporary folder that shares only / with the checkout: {tmp_path}")
    target = tmp_path / "demo"
    command = [sys.executable, "-m", "mcpgen.cli", "new", "demo", "--dir", str(target)]
    created = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert created.returncode == 0, created.stderr
    (dependency,) = tomllib.loads((target / "pyproject.toml").read_text())["project"]["dependencies"]
    assert dependency == f"mcpgen[http] @ {ROOT.as_uri()}"


@pytest.mark.slow
def test_a_project_moved_to_another_machine_installs_and_its_tests_pass(tmp_path: Path) -> None:
    """``mcpgen new`` beside a clone of mcpgen, then both moved elsewhere (another machine,
    where the same layout has another absolute path): a clean venv installs the project,
    mcpgen included, and the project's own tests pass. The clone is of the committed
    checkout, as another machine would get it."""
    first = tmp_path / "first-machine" / "src"
    first.mkdir(parents=True)
    subprocess.run(["git", "clone", "-q", str(ROOT), str(first / "mcpgen")], check=True, timeout=120)
    create_project("demo", first / "demo", mcpgen_requirement=mcpgen_requirement(first / "demo", first / "mcpgen"))

    moved = tmp_path / "second-machine" / "home" / "me" / "src"
    moved.parent.mkdir(parents=True)
    shutil.move(first, moved)
    project = moved / "demo"
    assert "first-machine" not in (project / "pyproject.toml").read_text()
    script = (
        "python3 -m venv .venv && . .venv/bin/activate && pip install -q -e '.[test]' && pytest -q -p no:cacheprovider"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=project, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "6 passed" in proc.stdout
    # The first machine's paths are gone: the relative path was resolved on the second.
    assert not first.exists()
    requires = "import importlib.metadata as m, json; print(json.dumps(m.distribution('demo').requires))"
    python = project / ".venv" / "bin" / "python"
    shown = subprocess.run([str(python), "-c", requires], capture_output=True, text=True, timeout=60)
    assert f"mcpgen[http] @ {(moved / 'mcpgen').as_uri()}" in json.loads(shown.stdout), shown.stdout + shown.stderr


# ---------------------------------------------------------------- serving beyond this machine


def test_binding_beyond_loopback_needs_allowed_hosts(projects: dict[Transport, Path]) -> None:
    command = [sys.executable, "-m", f"{PACKAGE}.server", "--http", "0", "--host", "0.0.0.0"]
    run = subprocess.run(command, cwd=projects["stdio"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2  # refused before binding anything
    assert "--allowed-host NAME" in run.stderr and "--host 0.0.0.0 opens the server" in run.stderr


@pytest.mark.parametrize("allowed", [[], ["my-box.example"]])
def test_allowed_hosts_reach_the_server_and_a_refusal_is_logged(
    projects: dict[Transport, Path], allowed: list[str]
) -> None:
    """Over loopback, with requests naming the host clients on other machines would use."""
    port = free_port()
    command = [sys.executable, "-m", f"{PACKAGE}.server", "--http", str(port)]
    command += [arg for name in allowed for arg in ("--allowed-host", name)]
    params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
    headers = {"Accept": "application/json, text/event-stream"}
    with running(command, f"http://127.0.0.1:{port}/mcp", cwd=projects["http"]) as process:

        def status(host: str) -> int:
            url = f"http://127.0.0.1:{port}/mcp"
            return httpx.post(
                url, json=initialize, headers={**headers, "Host": f"{host}:{port}"}, timeout=10
            ).status_code

        assert status("localhost") == 200
        assert status("my-box.example") == (200 if allowed else 403)
        assert status("elsewhere.example") == 403
    assert process.stderr is not None
    log = process.stderr.read().decode()
    refusals = [line for line in log.splitlines() if line.startswith("403 for Host")]
    expected = ["elsewhere.example"] if allowed else ["my-box.example", "elsewhere.example"]
    assert len(refusals) == len(expected), log
    for line, host in zip(refusals, expected, strict=True):
        assert f"'{host}'" in line and "allowed_hosts" in line
