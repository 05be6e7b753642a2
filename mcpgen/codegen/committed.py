"""mcpgen's own committed bindings: one package per serving revision, plus the table of
which method exists in which revision.

``mcpgen/schema/revisions.toml`` says which package serves each shipped revision; every
package named there is generated from the shipped schema of that revision into
``mcpgen/protocol/v<revision>/``, ``mcpgen/protocol/availability.py`` from the models of
all shipped revisions, and ``mcpgen/protocol/revision_facts.py`` from the table itself (so
the runtime reads Python data at start-up instead of parsing TOML). Each extension in
``mcpgen/schema/extensions.toml`` gets its package the same way, from the project's copy of
the extension's published schema. ``mcpgen generate`` without ``--schema`` regenerates all
of them and ``--check`` compares all of them.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from mcpgen import schema as shipped
from mcpgen.codegen.build import build_model
from mcpgen.codegen.generate import Generation, diff_text, generate
from mcpgen.codegen.loader import SchemaError, load_schema
from mcpgen.codegen.render import render_file

PROTOCOL_DIR = Path(__file__).resolve().parent.parent / "protocol"
COMMAND = "mcpgen generate"


@dataclass
class Committed:
    packages: dict[Path, Generation]  # package directory -> its generation
    files: dict[Path, str]  # other generated files -> text


def package_dir(revision: str) -> Path:
    return PROTOCOL_DIR / f"v{revision.replace('-', '_')}"


@dataclass(frozen=True)
class RevisionRow:
    era: str
    bindings: str
    priming: bool


ERAS = ("handshake", "stateless")


def revision_table() -> tuple[dict[str, RevisionRow], str]:
    """revisions.toml, checked against the shipped schemas (a row per schema and a schema
    per row, an era the runtime knows, bindings that name a shipped revision): each
    revision's row, and the version a Streamable HTTP request without a header gets."""
    table_path = shipped.HERE / "revisions.toml"
    table = tomllib.loads(table_path.read_text(encoding="utf-8"))
    rows = table["revisions"]
    have = set(shipped.revisions())
    for rev in sorted(set(rows) - have):
        raise SchemaError(str(table_path), f"/{rev}", "a row for a revision mcpgen does not ship")
    for rev in sorted(have - set(rows)):
        raise SchemaError(str(table_path), "", f"shipped revision {rev} has no row")
    checked: dict[str, RevisionRow] = {}
    for rev, row in rows.items():
        if row.get("era") not in ERAS:
            raise SchemaError(str(table_path), f"/{rev}/era", f"era must be one of {', '.join(ERAS)}")
        if row.get("bindings") not in have:
            raise SchemaError(str(table_path), "", f"bindings {row.get('bindings')!r} name no shipped revision")
        if not isinstance(row.get("priming", False), bool):
            raise SchemaError(str(table_path), f"/{rev}/priming", "priming must be true or false")
        checked[rev] = RevisionRow(row["era"], row["bindings"], row.get("priming", False))
    default = table.get("defaults", {}).get("http_without_header")
    if default not in have:
        raise SchemaError(str(table_path), "/defaults/http_without_header", f"{default!r} names no shipped revision")
    return checked, default


@dataclass(frozen=True)
class ExtensionRow:
    id: str
    version: str
    schema: str  # relative to mcpgen/schema/
    package: str  # mcpgen.protocol.<package>
    spec: str  # the extension's specification page


def extension_table() -> dict[str, ExtensionRow]:
    """extensions.toml, checked: every field present, the package name outside the
    revisions' ``v<revision>`` namespace (a missing schema file fails where it is loaded)."""
    table_path = shipped.HERE / "extensions.toml"
    rows = tomllib.loads(table_path.read_text(encoding="utf-8")).get("extensions", {})
    checked: dict[str, ExtensionRow] = {}
    for name, row in rows.items():
        for key in ("id", "version", "schema", "package", "spec"):
            if not isinstance(row.get(key), str) or not row[key]:
                raise SchemaError(str(table_path), f"/{name}/{key}", "missing or not a string")
        if not row["package"].startswith("ext_") or not row["package"].isidentifier():
            raise SchemaError(str(table_path), f"/{name}/package", "must be an identifier starting with `ext_`")
        checked[name] = ExtensionRow(row["id"], row["version"], row["schema"], row["package"], row["spec"])
    return checked


def is_extension(directory: Path) -> bool:
    """Whether a committed package directory holds an extension's bindings."""
    return directory.name.startswith("ext_")


def serving_revisions() -> list[str]:
    """The revisions whose bindings mcpgen commits, from revisions.toml."""
    rows, _ = revision_table()
    return sorted({row.bindings for row in rows.values()})


def generate_committed() -> Committed:
    packages = {package_dir(rev): generate(rev, command=COMMAND) for rev in serving_revisions()}
    models = {g.model.revision: g.model for g in packages.values()}
    for ext in extension_table().values():
        packages[PROTOCOL_DIR / ext.package] = generate(
            shipped.HERE / ext.schema, ext.version, command=COMMAND, spec_page=ext.spec
        )
    methods: dict[str, set[str]] = {}
    for rev in shipped.revisions():
        model = models.get(rev) or build_model(load_schema(rev))
        for m in model.methods:
            methods.setdefault(m.key, set()).add(rev)
    text = render_file(
        "availability.py.j2",
        command=COMMAND,
        revisions=shipped.revisions(),
        methods={key: sorted(revs) for key, revs in sorted(methods.items())},
    )
    rows, http_default = revision_table()
    facts = render_file(
        "revision_facts.py.j2",
        command=COMMAND,
        revisions=shipped.revisions(),
        rows=rows,
        http_without_header=http_default,
    )
    return Committed(packages, {PROTOCOL_DIR / "availability.py": text, PROTOCOL_DIR / "revision_facts.py": facts})


def stale(committed: Committed) -> dict[str, str]:
    """Generated files on disk that differ from ``committed``: path -> unified diff."""
    from mcpgen.codegen.generate import stale_files

    diffs: dict[str, str] = {}
    for directory, generation in committed.packages.items():
        for name, diff in stale_files(generation, directory).items():
            diffs[str(directory / name)] = diff
    for path, text in committed.files.items():
        old = path.read_text(encoding="utf-8") if path.exists() else ""
        if old != text:
            diffs[str(path)] = diff_text(path, old, text)
    return diffs


def write_committed(committed: Committed) -> list[Path]:
    from mcpgen.codegen.generate import write

    written: list[Path] = []
    for directory, generation in committed.packages.items():
        written.extend(write(generation, directory))
    for path, text in committed.files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
