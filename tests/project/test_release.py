"""mcpgen is ready to publish (issue 35.2, 35.3): the metadata (an SPDX licence, the
licence file, a changelog), a release workflow a maintainer triggers, and, in the slow suite,
``python -m build``'s wheel and sdist passing ``twine check --strict``, a fresh venv that
installs the wheel running the README's quick start and the command line (its install hints
giving commands that work for that wheel), and an editable install that mypy can see."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest
import yaml

from mcpgen import __version__
from tests.paths import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"
CHECK = ROOT / ".github" / "release_check.py"


def test_the_licence_is_an_spdx_expression_with_its_file() -> None:
    project = PYPROJECT["project"]
    assert project["license"] == "MIT"
    assert project["license-files"] == ["LICENSE"] and (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert any(req.startswith("setuptools>=77") for req in PYPROJECT["build-system"]["requires"])
    assert "Typing :: Typed" in project["classifiers"]


def test_the_changelog_has_this_version() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert re.search(rf"^## {re.escape(__version__)}\b", changelog, re.M), "CHANGELOG.md has no section for it"


def _steps(job: dict[str, object]) -> list[dict[str, object]]:
    steps = job["steps"]
    assert isinstance(steps, list)
    return steps


def test_the_release_workflow_is_run_by_hand_and_checks_before_it_publishes() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    triggers = workflow[True]  # YAML 1.1 reads the key `on` as true
    assert list(triggers) == ["workflow_dispatch"]  # a maintainer runs it; nothing else does
    assert set(triggers["workflow_dispatch"]["inputs"]) == {"version", "publish"}
    assert workflow["permissions"] == {"contents": "read"}
    jobs = workflow["jobs"]
    build = " ".join(str(step.get("run", "")) for step in _steps(jobs["build"]))
    for command in ("release_check.py", "python -m build", "twine check --strict dist/*", "mcpgen --version"):
        assert command in build, command
    publish = jobs["publish"]
    assert publish["needs"] == "build" and publish["environment"] == "pypi"
    assert publish["permissions"] == {"id-token": "write"}  # trusted publishing: no stored token
    assert "inputs.publish" in publish["if"]
    assert any(str(step.get("uses", "")).startswith("pypa/gh-action-pypi-publish") for step in _steps(publish))
    assert jobs["github-release"]["needs"] == "publish"
    # The version reaches scripts through the environment, never pasted into them.
    for job in jobs.values():
        for step in _steps(job):
            assert "${{" not in str(step.get("run", "")), step


def _release_check(version: str, root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(root / ".github" / "release_check.py"), version, str(root / "notes.md")],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_release_check_wants_the_version_and_a_dated_changelog_section(tmp_path: Path) -> None:
    (tmp_path / ".github").mkdir()
    shutil.copy(CHECK, tmp_path / ".github")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "mcpgen"\nversion = "1.2.3"\n')
    changelog = tmp_path / "CHANGELOG.md"
    changelog.write_text("# Changelog\n\n## 1.2.3 (unreleased)\n\n- new things\n\n## 1.2.2 (2026-01-02)\n\n- old\n")
    assert "give it the release date" in _release_check("1.2.3", tmp_path).stderr
    changelog.write_text(changelog.read_text().replace("(unreleased)", "(2026-03-04)"))
    done = _release_check("1.2.3", tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "notes.md").read_text() == "- new things\n"
    assert "bump it first" in _release_check("1.2.4", tmp_path).stderr
    assert "not a version" in _release_check("1.2.3; rm -rf /", tmp_path).stderr
    assert "no section" in _release_check("1.2.3", _without_section(tmp_path)).stderr


def _without_section(root: Path) -> Path:
    (root / "CHANGELOG.md").write_text("# Changelog\n\n## 1.2.2 (2026-01-02)\n\n- old\n")
    return root


# ---------------------------------------------------------------- the artefacts (slow)


def _fresh_venv(where: Path) -> Path:
    """A venv as a user makes one: ``python3.11 -m venv`` and the pip it brings (23.2 here)."""
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, timeout=300)
    return where / "bin"


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}


def _run(args: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=_env())
    assert done.returncode == 0, f"{args}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``python -m build`` of a clone of the committed checkout (as a release builds it)."""
    where = tmp_path_factory.mktemp("release")
    subprocess.run(["git", "clone", "-q", str(ROOT), str(where / "mcpgen")], check=True, timeout=120)
    _run([sys.executable, "-m", "build", "--outdir", str(where / "dist"), str(where / "mcpgen")], where)
    return where / "dist"


@pytest.mark.slow
def test_the_wheel_and_sdist_pass_twine_check_strict(dist: Path) -> None:
    wheel = dist / f"mcpgen-{__version__}-py3-none-any.whl"
    sdist = dist / f"mcpgen-{__version__}.tar.gz"
    checked = _run([sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist)], dist)
    assert checked.stdout.count("PASSED") == 2, checked.stdout
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read(f"mcpgen-{__version__}.dist-info/METADATA").decode()
    assert "License-Expression: MIT" in metadata and "Metadata-Version: 2.4" in metadata
    assert f"mcpgen-{__version__}.dist-info/licenses/LICENSE" in names
    for needed in (
        "mcpgen/py.typed",
        "mcpgen/protocol/v2025_11_25/py.typed",
        "mcpgen/schema/2025-11-25.json",
        "mcpgen/schema/facts.toml",
        "mcpgen/codegen/templates/client.py.j2",
        "mcpgen/scaffold/template/project/pyproject.toml.tmpl",
        "mcpgen/scaffold/template/snippets/auth/auth_section.md",
        "mcpgen/cli/apps_host/host.js",  # `mcpgen apps preview` builds its page from these
        "mcpgen/cli/apps_host/package-lock.json",
    ):
        assert needed in names, needed
    assert not [name for name in names if name.startswith(("tests/", "bench/", "examples/"))]
    with tarfile.open(sdist) as archive:
        members = {member.name.split("/", 1)[1] for member in archive.getmembers() if "/" in member.name}
    assert {"LICENSE", "CHANGELOG.md", "README.md", "pyproject.toml", "mcpgen/cli/app.py"} <= members
    assert not [name for name in members if name.startswith(("tests/", "fuzz/"))]


@pytest.mark.slow
def test_a_fresh_venv_with_the_wheel_runs_the_quick_start_and_the_cli(dist: Path, tmp_path: Path) -> None:
    from tests.project.test_readme import README, block_after

    wheel = dist / f"mcpgen-{__version__}-py3-none-any.whl"
    bin_ = _fresh_venv(tmp_path / "venv")
    _run([str(bin_ / "pip"), "install", "-q", f"{wheel}[http]", "-c", str(ROOT / "constraints.txt")], tmp_path)
    app = tmp_path / "app"
    app.mkdir()
    (app / "server.py").write_text(block_after("file: server.py"))
    client = README.split("in `client.py` beside it:\n\n```python\n", 1)[1].split("```", 1)[0]
    (app / "client.py").write_text(client)
    ran = _run([str(bin_ / "python"), "client.py"], app, timeout=120)
    assert ran.stdout.splitlines() == ["['add']", "{'result': 3}", "theme=dark"]
    assert _run([str(bin_ / "mcpgen"), "--version"], app).stdout.strip() == f"mcpgen {__version__}"
    called = _run(
        [str(bin_ / "mcpgen"), "call", f"{bin_ / 'python'} server.py", "tool", "add", "-a", "a=1", "-a", "b=2"], app
    )
    assert '"result": 3' in called.stdout
    # The generator's extra is missing: the hint names this wheel, and running it works.
    missing = subprocess.run(
        [str(bin_ / "mcpgen"), "generate", "--out", "mcp"],
        cwd=app,
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(),
    )
    assert missing.returncode == 2
    hint = missing.stderr.strip().rsplit("missing): ", 1)[1]
    assert hint == f"pip install 'mcpgen[codegen] @ {wheel.as_uri()}'", missing.stderr
    _run(["bash", "-c", f". {bin_ / 'activate'} && {hint} -q"], app)
    assert "wrote mcp" in _run([str(bin_ / "mcpgen"), "generate", "--out", "mcp"], app).stdout


@pytest.mark.slow
def test_an_editable_install_is_visible_to_mypy(tmp_path: Path) -> None:
    """The README's `pip install -e`: the project's own mypy --strict then sees mcpgen
    (setuptools' import hook hid it: "Cannot find implementation or library stub")."""
    clone = tmp_path / "mcpgen"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, timeout=120)
    bin_ = _fresh_venv(tmp_path / "venv")
    _run([str(bin_ / "pip"), "install", "-q", "-e", str(clone), "-c", str(ROOT / "constraints.txt")], tmp_path)
    user = tmp_path / "project"
    user.mkdir()
    (user / "app.py").write_text(
        "from mcpgen import Server\n\nserver = Server('typed')\n\n\n@server.tool()\ndef add(a: int, b: int) -> int:\n"
        "    return a + b\n\n\nreveal_type(server)\n"
    )
    checked = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--python-executable",
            str(bin_ / "python"),
            "app.py",
        ],
        cwd=user,
        capture_output=True,
        text=True,
        timeout=300,
        env=_env(),
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert 'Revealed type is "mcpgen.runtime.server.server.Server"' in checked.stdout


@pytest.mark.slow
def test_a_project_made_by_the_wheels_mcpgen_installs_it_from_the_wheel(dist: Path, tmp_path: Path) -> None:
    """`mcpgen new` from an mcpgen installed from a wheel (not an index): the project depends
    on that wheel, and the "Next:" line it prints installs the project and passes its tests."""
    wheel = dist / f"mcpgen-{__version__}-py3-none-any.whl"
    bin_ = _fresh_venv(tmp_path / "venv")
    _run([str(bin_ / "pip"), "install", "-q", str(wheel), "-c", str(ROOT / "constraints.txt")], tmp_path)
    created = _run([str(bin_ / "mcpgen"), "new", "demo"], tmp_path)
    pyproject = tomllib.loads((tmp_path / "demo" / "pyproject.toml").read_text())
    assert pyproject["project"]["dependencies"] == [f"mcpgen[http] @ {wheel.as_uri()}"]
    next_line = created.stdout.splitlines()[1].strip()
    env = {**_env(), "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}
    ran = subprocess.run(["bash", "-c", next_line], cwd=tmp_path, capture_output=True, text=True, timeout=1200, env=env)
    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-4000:]
    assert " passed" in ran.stdout and " failed" not in ran.stdout
