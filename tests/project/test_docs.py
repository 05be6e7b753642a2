"""The documentation works: every ```python block of the guides (docs/**/*.md) and of the
README runs as written, and the site builds with ``mkdocs build --strict`` (which also fails
on a broken link, a page missing from the nav, or a docstring mkdocstrings cannot read).

A block runs in a fresh namespace whose ``__name__`` is not ``"__main__"`` (so a server's
``if __name__ == "__main__": server.run()`` does not serve), in a fresh working directory.
Two HTML comments right before a block change that, and the test counts them:

* ``<!-- fragment -->``: a piece of a larger example (it uses names it does not define); it
  is compiled, not run. At most ``MAX_FRAGMENTS`` blocks in all may say so.
* ``<!-- file: NAME -->``: the block is also written to NAME in the working directory of the
  page's later blocks (a server another block starts with ``Client.stdio``).
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT

DOCS = ROOT / "docs"
PAGES = sorted([ROOT / "README.md", *DOCS.rglob("*.md")])
MAX_FRAGMENTS = 12
# The guides promise < 2 s per example on a quiet machine; CI shares its cores.
BLOCK_SECONDS = 6.0

BLOCK = re.compile(r"(?:<!-- (?P<marker>[^>]*?) -->\n)?```(?P<lang>[\w-]*)\n(?P<code>.*?)^```", re.S | re.M)


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    code: str
    marker: str | None

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def python_blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    blocks = []
    for found in BLOCK.finditer(text):
        if found["lang"] != "python":
            continue
        line = text.count("\n", 0, found.start("code")) + 1
        blocks.append(Block(page, line, found["code"], found["marker"]))
    return blocks


BLOCKS = [block for page in PAGES for block in python_blocks(page)]


def test_the_guides_have_examples_and_few_fragments() -> None:
    """Most examples run; the fragments are few and say so."""
    fragments = [block.id for block in BLOCKS if block.marker == "fragment"]
    assert len(BLOCKS) >= 20, [block.id for block in BLOCKS]  # the pattern still finds them
    assert len(fragments) <= MAX_FRAGMENTS, fragments
    markers = {block.marker for block in BLOCKS} - {None, "fragment"}
    assert all(marker.startswith("file: ") for marker in markers), markers  # no other opt-out


def run_page_until(block: Block, workdir: Path) -> None:
    """Write the page's earlier ``file:`` blocks into ``workdir`` (a later example may use them)."""
    for earlier in python_blocks(block.page):
        if earlier.line >= block.line:
            break
        if earlier.marker and earlier.marker.startswith("file: "):
            (workdir / earlier.marker.removeprefix("file: ")).write_text(earlier.code, encoding="utf-8")


@pytest.mark.parametrize("block", BLOCKS, ids=[block.id for block in BLOCKS])
def test_the_example_runs(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT if block.marker == "fragment" else 0
    code = compile(block.code, block.id, "exec", flags=flags)
    if block.marker == "fragment":
        return  # compiled above: a fragment's names come from the example around it
    run_page_until(block, tmp_path)
    if block.marker and block.marker.startswith("file: "):
        (tmp_path / block.marker.removeprefix("file: ")).write_text(block.code, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    started = time.monotonic()
    exec(code, {"__name__": "docs_example", "__file__": str(tmp_path / "example.py")})
    assert time.monotonic() - started < BLOCK_SECONDS


@pytest.mark.slow
def test_the_site_builds_strictly(tmp_path: Path) -> None:
    """``mkdocs build --strict`` (mkdocs.yml sets strict too): a warning fails the build."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert build.returncode == 0, build.stderr[-4000:]
    reference = (tmp_path / "site" / "reference" / "serving" / "index.html").read_text(encoding="utf-8")
    assert "call_tool" in reference  # the docstrings were rendered, not just the headings
    assert ":class:" not in reference and ":meth:" not in reference  # mkdocs_hooks.py shows roles as code


def test_every_public_name_is_in_the_api_reference() -> None:
    import mcpgen

    reference = "\n".join(page.read_text(encoding="utf-8") for page in (DOCS / "reference").glob("*.md"))
    missing = [name for name in mcpgen.__all__ if not re.search(rf"\b{re.escape(name)}\b", reference)]
    assert not missing, missing


def test_every_page_is_in_the_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = [str(page.relative_to(DOCS)) for page in DOCS.rglob("*.md")]
    assert [page for page in pages if page not in nav] == []


def test_the_guides_name_the_extra_each_command_needs() -> None:
    """`mcpgen stubs` (the generator) needs the codegen extra; its guide says so, as the
    codegen guide does, and the lists of extras name the otel extra too."""
    for guide in ("stubs.md", "codegen.md"):
        assert "codegen" in (DOCS / guide).read_text(encoding="utf-8").split("```")[0], guide
    assert "`otel`" in (DOCS / "index.md").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "`otel`" in readme.split("## Quick start")[0] and "`mcpgen stubs`" in readme.split("## Quick start")[0]


def test_the_site_has_its_url_and_its_build_is_ignored() -> None:
    """`mkdocs build` writes site/ at the root: git ignores it; mkdocs.yml names site_url
    (the sitemap and canonical links need it), from SITE_URL when published."""
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert re.search(r"^site_url: !ENV \[SITE_URL, \"http://127\.0\.0\.1:8000/\"\]$", config, re.M)
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", "site/index.html"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert ignored.returncode == 0, "site/ is not ignored by git"


def _paths_hold(block: str, cwd: Path) -> list[str]:
    """Run a shell block in the head: follow its `cd`s and check that every file a command
    names (a script python runs, a package.json npm reads) is there at that point."""
    import shlex

    problems = []
    for line in block.splitlines():
        for command in line.split("#", 1)[0].split("&&"):
            words = shlex.split(command)
            if not words:
                continue
            if words[0] == "cd":
                cwd = (cwd / words[1]).resolve()
                if not cwd.is_dir():
                    problems.append(f"cd {words[1]}: no such folder")
            elif words[0] == "npm" and not (cwd / "package.json").is_file():
                problems.append(f"{command.strip()}: no package.json in {cwd}")
            elif words[0] in ("python", "python3") and not (cwd / words[1]).is_file():
                problems.append(f"{command.strip()}: no {words[1]} in {cwd}")
            elif words[:3] == ["mcpgen", "apps", "preview"] and shlex.split(words[3])[0] == "python":
                script = shlex.split(words[3])[1]
                if not (cwd / script).is_file():
                    problems.append(f"{command.strip()}: no {script} in {cwd}")
    return problems


def test_the_apps_example_commands_run_in_sequence() -> None:
    """docs/apps.md (from the root of a clone) and examples/apps/README.md (from its folder):
    each command finds what it names where the commands before it left the shell."""
    guide = (DOCS / "apps.md").read_text(encoding="utf-8").split("## The example", 1)[1]
    readme = (ROOT / "examples" / "apps" / "README.md").read_text(encoding="utf-8")
    for text, start in ((guide, ROOT), (readme, ROOT / "examples" / "apps")):
        block = text.split("```bash\n", 1)[1].split("```", 1)[0]
        assert "mcpgen apps preview" in block
        assert _paths_hold(block, start) == []
    assert _paths_hold("cd examples/apps\npython examples/apps/server.py http 8000\n", ROOT)  # the old order fails


def test_no_guide_installs_mcpgen_from_an_index() -> None:
    """mcpgen is not on an index yet (the README says so): a guide's install command is
    the one that works, from a clone (`pip install -e '.[http]'`), not `pip install 'mcpgen[http]'`."""
    assert "mcpgen is not on PyPI yet" in (ROOT / "README.md").read_text(encoding="utf-8")
    offenders = [
        f"{page.relative_to(ROOT)}:{number}"
        for page in PAGES
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"pip install ['\"]?mcpgen\b", line)
    ]
    assert offenders == []
