"""The generator's one entry point: schema in, package files out."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

from mcpgen.codegen.build import build_model
from mcpgen.codegen.ir import Model
from mcpgen.codegen.loader import load_schema
from mcpgen.codegen.render import Rendered, render_package, write_package


@dataclass
class Generation:
    model: Model
    rendered: Rendered


def generate(
    spec: str | Path, revision: str | None = None, command: str | None = None, spec_page: str | None = None
) -> Generation:
    """Load ``spec`` (path, URL or shipped revision), build the model, render the files.

    ``command`` is the regeneration hint each file's header gives (default: the
    ``mcpgen generate --schema SPEC`` that would produce this package); ``spec_page`` the
    one page every docstring links (an extension's), instead of the revision's pages."""
    model = build_model(load_schema(spec, revision))
    model.spec_page = spec_page
    return Generation(model, render_package(model, command or f"mcpgen generate --schema {spec}"))


def write(generation: Generation, out_dir: Path) -> list[Path]:
    return write_package(generation.rendered, out_dir)


def stale_files(generation: Generation, out_dir: Path) -> dict[str, str]:
    """Files under ``out_dir`` that differ from the fresh generation: name -> unified diff."""
    diffs: dict[str, str] = {}
    for name, fresh in generation.rendered.files.items():
        path = out_dir / name
        old = path.read_text(encoding="utf-8") if path.exists() else ""
        if old != fresh:
            diffs[name] = diff_text(path, old, fresh)
    return diffs


def diff_text(path: Path, old: str, fresh: str) -> str:
    """A unified diff from the file on disk to the fresh text ("missing" when absent)."""
    diff = difflib.unified_diff(
        old.splitlines(keepends=True),
        fresh.splitlines(keepends=True),
        fromfile=f"{path} (committed)",
        tofile=f"{path} (generated)",
    )
    return "".join(diff) or f"{path}: missing\n"
