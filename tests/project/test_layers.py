"""The package's layers as a fact (the layers issue): every import points down, nothing forms
a cycle, the two sides never meet, package ``__init__`` files import nothing, no module
imports another's private names, and no hand-written module grows past 1,200 lines.

Imports are read with ``ast`` from the source, all of them: module level, under
``TYPE_CHECKING`` and inside functions (a lazy import is still a dependency). The map the
rules hold is drawn in ``mcpgen/runtime/__init__.py``'s docstring."""

from __future__ import annotations

import ast
import graphlib
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from tests.paths import ROOT

PACKAGE = ROOT / "mcpgen"

# Each unit's layer, bottom first: a module may import its own unit or a lower layer only.
# Units on one layer never import each other (server/client, transports/stores, ...).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("mcpgen.version", "mcpgen.schema", "mcpgen.protocol"),
    ("mcpgen.origin",),  # where mcpgen was installed from: the install hints of every layer above
    ("mcpgen.generated",),
    # The protocol generator stands on the schemas alone, below the runtime it generates for.
    ("mcpgen.codegen",),
    ("mcpgen.runtime",),  # errors, versions, extras (and the package's docstring)
    ("mcpgen.runtime.jsonrpc",),
    ("mcpgen.runtime.shared",),
    ("mcpgen.runtime.transports", "mcpgen.runtime.stores"),
    ("mcpgen.runtime.auth",),
    ("mcpgen.runtime.middleware",),  # request middleware and tracing: both sides build on it
    ("mcpgen.runtime.server", "mcpgen.runtime.client"),
    ("mcpgen.runtime.gateway",),  # servers in front of servers: uses both sides
    # `mcpgen stubs` (codegen's model and filters, a live server described by the Client),
    # project scaffolds and test helpers.
    ("mcpgen.stubs", "mcpgen.scaffold", "mcpgen.testing"),
    ("mcpgen.openapi",),  # `mcpgen openapi`: codegen's builder; its runtime/ serves the generated projects
    ("mcpgen.cli",),
    ("mcpgen", "mcpgen.__main__"),  # the public API (lazy) and `python -m mcpgen`
)
RANK = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}
MAX_LINES = 900  # hand-written modules; the generated ones are exempt
MAX_SERVER_LINES = 600  # mcpgen/runtime/server/server.py
MAX_RUNTIME_MODULES = 6  # directly in mcpgen/runtime/, __init__ included


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def generated(path: Path) -> bool:
    """The committed bindings (mcpgen/protocol/v* of revisions, ext_* of extensions): the
    generator's output, held by ``mcpgen generate --check``, not by these rules of
    hand-written code."""
    rel = path.relative_to(PACKAGE).parts
    return len(rel) > 1 and rel[0] == "protocol" and rel[1].startswith(("v", "ext_"))


def sources() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imported(module: str, path: Path, known: Mapping[str, Path]) -> Iterator[tuple[str, ast.ImportFrom | ast.Import]]:
    """Every mcpgen module ``module`` imports (the deepest known module each import names)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != module:
                yield name, node


def graph(known: Mapping[str, Path]) -> dict[str, set[str]]:
    return {m: {target for target, _ in imported(m, p, known)} for m, p in known.items()}


def unit_of(module: str, known: Mapping[str, Path]) -> str:
    """The unit a module belongs to: a runtime sub-package, the runtime's own modules, or a
    top-level module or package of mcpgen."""
    parts = module.split(".")
    if parts[:2] == ["mcpgen", "runtime"] and len(parts) > 2:
        sub = ".".join(parts[:3])
        return sub if (PACKAGE / "runtime" / parts[2]).is_dir() else "mcpgen.runtime"
    return ".".join(parts[:2])


def upward(edges: Mapping[str, set[str]], units: Mapping[str, str]) -> list[str]:
    """The imports that break the layering, as "a -> b (unit -> unit)"."""
    bad = []
    for source, targets in edges.items():
        for target in targets:
            a, b = units[source], units[target]
            if a != b and RANK[b] >= RANK[a]:
                bad.append(f"{source} -> {target} ({a} -> {b})")
    return sorted(bad)


def cycle(edges: Mapping[str, set[str]]) -> list[str] | None:
    try:
        graphlib.TopologicalSorter(edges).prepare()
    except graphlib.CycleError as exc:
        return list(exc.args[1])
    return None


KNOWN = sources()
EDGES = graph(KNOWN)
UNITS = {m: unit_of(m, KNOWN) for m in KNOWN}


def test_every_unit_has_a_layer() -> None:
    assert sorted(set(UNITS.values()) - set(RANK)) == [], "place the new package in LAYERS"


def test_no_import_cycle_of_any_kind() -> None:
    assert cycle(EDGES) is None


def test_every_import_points_down() -> None:
    assert upward(EDGES, UNITS) == []


def test_the_client_loads_nothing_of_the_server() -> None:
    code = "import sys, mcpgen.runtime.client.client; print(' '.join(sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert [m for m in loaded.stdout.split() if m.startswith("mcpgen.runtime.server")] == []


def eager_imports(tree: ast.Module) -> list[int]:
    """The lines of a module's imports that run when it is imported: not those of a PEP 562
    ``__getattr__`` (a lazy map), nor those under ``if TYPE_CHECKING:``, nor ``typing``'s."""
    lazy: set[int] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "__getattr__":
            lazy |= {id(n) for n in ast.walk(node)}
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            lazy |= {id(n) for n in ast.walk(node)}
    return [
        n.lineno
        for n in ast.walk(tree)
        if isinstance(n, (ast.Import, ast.ImportFrom))
        and id(n) not in lazy
        and not (isinstance(n, ast.ImportFrom) and n.module == "typing")
    ]


INIT_FILES = [PACKAGE / "__init__.py", *(p for p in PACKAGE.rglob("__init__.py") if {"runtime", "cli"} & set(p.parts))]


@pytest.mark.parametrize("path", INIT_FILES, ids=lambda p: module_name(p))
def test_package_init_files_import_nothing(path: Path) -> None:
    assert eager_imports(ast.parse(path.read_text(encoding="utf-8"))) == []


def test_an_eager_import_in_an_init_file_is_seen() -> None:
    tree = ast.parse("from typing import TYPE_CHECKING\nimport os\ndef __getattr__(n):\n    import json\n")
    assert eager_imports(tree) == [2]


def test_no_private_name_is_imported_across_modules() -> None:
    found = []
    for module, path in KNOWN.items():
        if generated(path):
            continue
        for target, node in imported(module, path, KNOWN):
            names = [a.name for a in node.names] if isinstance(node, ast.ImportFrom) else []
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            private += [p for p in target.split(".") if p.startswith("_") and not p.startswith("__")]
            found += [f"{module}: {target}.{n}" for n in private]
    assert found == []


def test_no_hand_written_module_is_over_the_limit() -> None:
    sizes = {m: len(p.read_text(encoding="utf-8").splitlines()) for m, p in KNOWN.items() if not generated(p)}
    assert {m: n for m, n in sizes.items() if n > MAX_LINES} == {}


def test_the_server_class_users_meet_stays_thin() -> None:
    """``Server`` holds the decorators, ``run`` and configuration; the registry, handlers
    and features live beside it (server/catalog.py, server/handlers.py, server/features.py)."""
    server = PACKAGE / "runtime" / "server" / "server.py"
    assert len(server.read_text(encoding="utf-8").splitlines()) <= MAX_SERVER_LINES


def test_the_runtime_folder_holds_few_modules_of_its_own() -> None:
    assert len(list((PACKAGE / "runtime").glob("*.py"))) <= MAX_RUNTIME_MODULES


# The checks themselves, on graphs made to break them: each must be able to fail.


def test_the_cycle_check_finds_a_cycle_through_a_lazy_import() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}
    found = cycle(edges)
    assert found is not None and set(found) >= {"a", "b", "c"}
    assert cycle({"a": {"b"}, "b": set()}) is None


def test_the_layer_check_refuses_upward_and_sideways_imports() -> None:
    units = {
        "s": "mcpgen.runtime.server",
        "c": "mcpgen.runtime.client",
        "j": "mcpgen.runtime.jsonrpc",
        "t": "mcpgen.runtime.transports",
        "st": "mcpgen.runtime.stores",
    }
    assert upward({"s": {"j"}, "c": {"t"}, "t": set(), "j": set(), "st": set()}, units) == []
    assert upward({"j": {"s"}}, units) == ["j -> s (mcpgen.runtime.jsonrpc -> mcpgen.runtime.server)"]
    assert upward({"c": {"s"}}, units) == ["c -> s (mcpgen.runtime.client -> mcpgen.runtime.server)"]
    assert upward({"t": {"st"}}, units) == ["t -> st (mcpgen.runtime.transports -> mcpgen.runtime.stores)"]


def test_the_reader_sees_type_checking_and_function_level_imports(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from mcpgen.runtime.server.server import Server\n"
        "def f():\n    from mcpgen.runtime.client import era\n"
        "    import mcpgen.runtime.errors\n"
    )
    found = {target for target, _ in imported("mcpgen.runtime.jsonrpc.m", source, KNOWN)}
    assert found == {"mcpgen.runtime.server.server", "mcpgen.runtime.client.era", "mcpgen.runtime.errors"}
