"""The proof on public documents, installed from npm at the versions tests/openapi/corpora
pins (``npm ci``): ``@readme/oas-examples`` (OpenAPI 3.0, 3.1 and Swagger 2.0 documents of
every feature, JSON and YAML) and ``@octokit/openapi`` (GitHub's REST API).

Every document generates a project, or is refused with a message naming what it lacks;
every project imports, lists its tools, and each tool, called once with arguments made
from its input schema, sends a request whose method, path, query, headers and body a
recording upstream checks (tests/openapi/corpus_check.py). A sample passes mypy --strict.
Counts and times are printed (pytest -s shows them): measured, not asserted."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from mcpgen.openapi.loader import OpenApiError
from mcpgen.openapi.project import Options, generate, write
from tests.openapi.upstream import recording_app, serving
from tests.paths import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.anyio]
CORPORA = ROOT / "tests" / "openapi" / "corpora"
README = CORPORA / "node_modules" / "@readme" / "oas-examples"
GITHUB = CORPORA / "node_modules" / "@octokit" / "openapi" / "generated" / "api.github.com.json"
CHECKER = Path(__file__).parent / "corpus_check.py"


def _installed() -> dict[str, str]:
    found = {}
    for name in ("@readme/oas-examples", "@octokit/openapi"):
        manifest = CORPORA / "node_modules" / name / "package.json"
        found[name] = json.loads(manifest.read_text())["version"] if manifest.exists() else ""
    return found


def _locked() -> dict[str, str]:
    lock = json.loads((CORPORA / "package-lock.json").read_text())
    return {
        name: lock["packages"][f"node_modules/{name}"]["version"]
        for name in ("@readme/oas-examples", "@octokit/openapi")
    }


@pytest.fixture(scope="session")
def corpora() -> Path:
    """The corpora, installed by ``npm ci`` when missing or not the locked versions."""
    if _installed() != _locked():
        npm = shutil.which("npm")
        if npm is None:
            pytest.fail("npm is not on PATH: cannot install tests/openapi/corpora (npm ci)")
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"],
            cwd=CORPORA,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0 or _installed() != _locked():
            pytest.fail(f"npm ci in {CORPORA} failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr}")
    return CORPORA


def credentials(root: Path, package: str, recorder: str) -> dict[str, str]:
    """The recorder as the API of every operation, and a value for every credential
    variable the project reads (a static token for OAuth)."""
    tables = json.loads((root / package / "operations.json").read_text(encoding="utf-8"))
    env = {f"{tables['env_prefix']}_BASE_URL": recorder}
    for scheme in tables["security"].values():
        for role, variable in scheme["env"].items():
            if role not in ("client_id", "client_secret", "token_url"):
                env[variable] = f"test-{role}"
    return env


def check_projects(projects: list[dict[str, str]], recorder: str, env: dict[str, str], tmp: Path) -> dict[str, Any]:
    listing = tmp / "projects.json"
    listing.write_text(json.dumps(projects))
    done = subprocess.run(
        [sys.executable, str(CHECKER), str(listing), recorder],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, **env},
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def summarize(label: str, results: dict[str, Any]) -> Counter[str]:
    outcomes: Counter[str] = Counter()
    for project in results.values():
        for outcome in project["calls"].values():
            outcomes[outcome if outcome in ("ok", "unsampled") else "wrong"] += 1
    print(f"\n{label}: {dict(outcomes)}")
    return outcomes


def wrong_calls(results: dict[str, Any]) -> dict[str, str]:
    """Calls with valid arguments that did not send what the operation says (or were refused)."""
    return {f"{p} {t}": o for p, r in results.items() for t, o in r["calls"].items() if o not in ("ok", "unsampled")}


def test_every_readme_document_generates_imports_lists_and_calls(corpora: Path, tmp_path: Path) -> None:
    documents = sorted(
        [*README.glob("*/json/*.json"), *README.glob("*/yaml/*.yaml"), *README.glob("*/json/openapi-workshop/*.yaml")]
    )
    assert len(documents) > 100
    refused: dict[str, str] = {}
    projects: list[dict[str, str]] = []
    env: dict[str, str] = {}
    seconds: dict[str, float] = {}
    with serving(recording_app()) as recorder:
        for i, path in enumerate(documents):
            name = f"corpus{i}"
            started = time.perf_counter()
            try:
                generated = generate(Options(spec=str(path), name=name, base_url=recorder))
            except OpenApiError as exc:
                refused[str(path.relative_to(README))] = str(exc)
                continue
            seconds[str(path.relative_to(README))] = time.perf_counter() - started
            assert generated.built.skipped == [], (path, generated.built.skipped)
            root = tmp_path / name
            write(generated, root)
            projects.append({"name": str(path.relative_to(README)), "root": str(root), "package": name})
            env.update(credentials(root, name, recorder))
        results = check_projects(projects, recorder, env, tmp_path)
    print(f"\nreadme corpus: {len(projects)} generated, {len(refused)} refused: {refused}")
    print(f"generation: {sum(seconds.values()):.1f} s in all, slowest {max(seconds.values()):.2f} s")
    # Only documents with nothing to call (webhooks alone) are refused, and they say so.
    assert all("nothing to generate" in why for why in refused.values()), refused
    assert {Path(k).stem for k in refused} <= {"webhooks"}
    for project in projects:
        tables = json.loads((Path(project["root"]) / project["package"] / "operations.json").read_text())
        assert results[project["name"]]["listed"] == len(tables["tools"]), project["name"]
    outcomes = summarize("readme corpus calls", results)
    assert not wrong_calls(results), json.dumps(wrong_calls(results), indent=1)
    assert outcomes["ok"] >= 0.85 * sum(outcomes.values()), outcomes


def test_github_generates_lists_and_calls_every_operation(corpora: Path, tmp_path: Path) -> None:
    root = tmp_path / "github"
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "mcpgen", "openapi", str(GITHUB), "-o", str(root), "--name", "github"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    took = time.perf_counter() - started
    assert done.returncode == 0, done.stderr
    tables = json.loads((root / "github" / "operations.json").read_text(encoding="utf-8"))
    print(f"\nGitHub: {len(tables['tools'])} tools generated in {took:.1f} s (the command, start to end)")
    assert len(tables["tools"]) > 1000
    with serving(recording_app()) as recorder:
        env = credentials(root, "github", recorder)
        results = check_projects([{"name": "github", "root": str(root), "package": "github"}], recorder, env, tmp_path)
    assert results["github"]["listed"] == len(tables["tools"])
    outcomes = summarize("GitHub calls", results)
    assert not wrong_calls(results), json.dumps(wrong_calls(results), indent=1)
    assert outcomes["ok"] >= 0.85 * sum(outcomes.values()), outcomes


def test_a_sample_of_generated_projects_passes_mypy_strict_and_ruff(corpora: Path, tmp_path: Path) -> None:
    packages = []
    for i, document in enumerate(
        ["3.0/json/petstore.json", "3.1/json/schema-types.json", "3.0/json/polymorphism.json", "2.0/json/petstore.json"]
    ):
        name = f"sample{i}"
        write(generate(Options(spec=str(README / document), name=name)), tmp_path)
        packages.append(name)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / ".mypy_cache"), *packages],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": str(ROOT)},  # mcpgen from this checkout (an editable install hides it)
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for check in (
        ["check", "--isolated", *packages],
        ["format", "--isolated", "--line-length", "100", "--check", *packages],
    ):
        linted = subprocess.run([sys.executable, "-m", "ruff", *check], capture_output=True, text=True, cwd=tmp_path)
        assert linted.returncode == 0, linted.stdout + linted.stderr


async def test_github_in_code_mode_finds_describes_and_checks(corpora: Path, tmp_path: Path) -> None:
    from mcpgen import Client

    root = tmp_path / "ghcode"
    write(generate(Options(spec=str(GITHUB), name="ghcode", mode="code", base_url="http://127.0.0.1:9")), root)
    sys.path.insert(0, str(root))
    try:
        from ghcode.server import server  # type: ignore[import-not-found]

        async with Client(server=server) as client:
            assert {t.name for t in await client.list_tools()} == {
                "search_operations",
                "describe_operation",
                "call_operation",
            }
            found = await client.call_tool(
                "search_operations", {"query": "create an issue in a repository", "limit": 5}
            )
            names = [op["name"] for op in (found.structured_content or {})["operations"]]
            assert "issues_create" in names, names
            described = await client.call_tool("describe_operation", {"name": "issues_create"})
            arguments = (described.structured_content or {})["arguments"]
            assert arguments["required"] == ["owner", "repo", "body"]
            refused = await client.call_tool("call_operation", {"name": "issues_create", "arguments": {"owner": "o"}})
            assert refused.is_error  # checked before any request: nothing listens at the base URL
    finally:
        sys.path.remove(str(root))
