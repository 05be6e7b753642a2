"""Generated packages: importable, typed, deterministic, and the committed one up to date."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import mcpgen
from mcpgen.codegen.generate import generate, stale_files
from tests.conftest import REVISIONS, ROOT, official_schema, package_name

GENERATED = ROOT / "mcpgen" / "generated"


def test_committed_bindings_are_up_to_date() -> None:
    stale = stale_files(generate("2025-11-25"), GENERATED)
    assert stale == {}, "mcpgen/generated is stale; run `mcpgen generate`:\n" + "".join(stale.values())


def test_generation_is_deterministic() -> None:
    first = generate(official_schema("2025-06-18")).rendered.files
    second = generate(official_schema("2025-06-18")).rendered.files
    assert first == second


@pytest.mark.parametrize("revision", REVISIONS)
def test_every_definition_is_importable_by_schema_name(packages: dict[str, ModuleType], revision: str) -> None:
    package = packages[revision]
    doc = json.loads(official_schema(revision).read_text())
    for name in doc.get("$defs") or doc["definitions"]:
        assert hasattr(package, name), name
        assert name in package.__all__
    assert package.REVISION == revision


def test_files_are_headed_as_generated(generated_root: Path) -> None:
    for path in (generated_root / package_name("2025-11-25")).glob("*.py"):
        head = path.read_text().splitlines()[:3]
        text = "\n".join(head)
        assert f"mcpgen {mcpgen.__version__}" in text, path
        assert "revision 2025-11-25" in text
        assert "do not edit" in text
        assert "sha256 " in text


def test_docstrings_link_the_spec(packages: dict[str, ModuleType]) -> None:
    package = packages["2025-11-25"]
    assert "https://modelcontextprotocol.io/specification/2025-11-25/server/tools" in package.Tool.__doc__


def test_generated_code_passes_mypy_strict(generated_root: Path) -> None:
    """Zero errors from a strict type checker on every generated package and mcpgen's own."""
    targets = [str(generated_root / package_name(rev)) for rev in REVISIONS] + [str(GENERATED)]
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", *targets],
        capture_output=True,
        text=True,
        cwd=generated_root,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_runtime_imports_no_codegen_dependency() -> None:
    code = (
        "import sys, mcpgen.generated, mcpgen.generated.codec;"
        "bad = [m for m in ('jinja2', 'black', 'jsonschema', 'datamodel_code_generator') if m in sys.modules];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
