"""Generated packages: importable, typed, deterministic, and the committed one up to date."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import mcpgen
from mcpgen.codegen import committed
from mcpgen.codegen.generate import generate
from tests.conftest import REVISIONS, ROOT, official_schema, package_name

PROTOCOL = ROOT / "mcpgen" / "protocol"


def test_committed_bindings_are_up_to_date() -> None:
    fresh = committed.generate_committed()
    assert sorted(p.name for p in fresh.packages) == ["ext_apps", "v2025_11_25", "v2026_07_28"]
    stale = committed.stale(fresh)
    assert stale == {}, "mcpgen/protocol is stale; run `mcpgen generate`:\n" + "".join(stale.values())


def test_availability_table_names_each_method_in_its_revisions() -> None:
    from mcpgen.protocol import availability

    assert availability.REVISIONS == tuple(REVISIONS)
    assert availability.revisions_with("c2s", "initialize") == ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
    assert availability.revisions_with("c2s", "server/discover") == ("2026-07-28",)
    assert availability.exists("c2s", "tools/call", "2026-07-28")
    assert not availability.exists("c2s", "ping", "2026-07-28")
    assert availability.exists("s2c", "elicitation/create", "2026-07-28")  # an input request
    assert not availability.exists("s2c", "elicitation/create", "2024-11-05")
    assert not availability.exists("c2s", "no/such", "2025-11-25")


def test_headers_give_the_command_that_regenerates_them(tmp_path: Path) -> None:
    for path in (PROTOCOL / "v2026_07_28").glob("*.py"):
        assert "Regenerate with `mcpgen generate`." in path.read_text().splitlines()[2], path
    generation = generate("2025-06-18", command="mcpgen generate --schema 2025-06-18 --out x/mcp")
    assert "Regenerate with `mcpgen generate --schema 2025-06-18 --out x/mcp`." in generation.rendered.files["types.py"]


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
    targets = [str(generated_root / package_name(rev)) for rev in REVISIONS]
    targets += [str(PROTOCOL / p) for p in ("v2025_11_25", "v2026_07_28", "ext_apps", "availability.py")]
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", *targets],
        capture_output=True,
        text=True,
        cwd=generated_root,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_runtime_imports_no_codegen_dependency() -> None:
    code = (
        "import sys, mcpgen.generated, mcpgen.protocol.v2026_07_28, mcpgen.protocol.availability;"
        "bad = [m for m in ('jinja2', 'black', 'ruff', 'jsonschema', 'datamodel_code_generator') if m in sys.modules];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_runtime_imports_no_bindings_it_does_not_speak() -> None:
    """Importing the public API loads no bindings package: each costs tens of ms at start-up."""
    code = (
        "import sys; from mcpgen import Server, Client, Context;"
        "bad = [m for m in sys.modules if m.startswith('mcpgen.protocol.v2026')];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
