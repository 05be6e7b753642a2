"""Shared fixtures: the official schemas in ../shared and packages generated from them."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
OFFICIAL = SHARED / "mcp-schema"
SEEDS = SHARED / "seeds"
REVISIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]


def official_schema(revision: str) -> Path:
    path = OFFICIAL / revision / "schema.json"
    if not path.is_file():
        pytest.fail(f"reference schema missing: {path} (tests need ../shared beside the checkout)")
    return path


def package_name(revision: str) -> str:
    return "mcp_" + revision.replace("-", "_")


@pytest.fixture(scope="session")
def generated_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding one package generated from each official revision."""
    from mcpgen.codegen.generate import generate, write

    root = tmp_path_factory.mktemp("generated")
    for revision in REVISIONS:
        write(generate(official_schema(revision)), root / package_name(revision))
    sys.path.insert(0, str(root))
    return root


@pytest.fixture(scope="session")
def packages(generated_root: Path) -> dict[str, ModuleType]:
    return {rev: importlib.import_module(package_name(rev)) for rev in REVISIONS}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
