"""The generated project: document in, files out, and what ``--check`` reports.

Two kinds of files. **Generated** ones (``NAME/tools.py``, ``NAME/models.py``,
``NAME/operations.json``) are marked as such and rewritten on every generation. The
**project's own** (``server.py``, ``hooks.py``, ``auth.py``, tests, README, pyproject,
``server.json``) are written when missing and never again, so hooks and overrides survive
regeneration.

Every Python file rendered from the document is parsed back before it is written, and
refused unless its top-level statements are exactly the ones its template makes: text of
the document that escaped its string literal would show up there.
"""

from __future__ import annotations

import ast
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import jinja2
import msgspec

from mcpgen.codegen import render
from mcpgen.openapi.loader import OpenApiError, load_document
from mcpgen.openapi.models import Models, build_models
from mcpgen.openapi.normalize import normalize
from mcpgen.openapi.operations import Built, Curation, ToolCode, base_url_of, build_operations, clean_text
from mcpgen.openapi.overlay import apply_overlay_file
from mcpgen.openapi.runtime.spec import Tables
from mcpgen.version import __version__

TEMPLATES = Path(__file__).parent / "templates"
GENERATED = ("tools.py", "models.py", "operations.json")
# Module-level names of tools.py: no generated function may take one.
TOOLS_MODULE_NAMES = frozenset({"API", "TOOLS", "Api", "tool", "UNSET", "UnsetType", "Any", "CallToolResult"})
TOOLS_MODULE_NAMES |= {"annotations"}


class GenerationRefused(Exception):
    """A rendered module whose statements are not its template's (see the module docstring)."""


@dataclass
class Options:
    spec: str
    name: str
    base_url: str | None = None
    mode: str = "tools"
    curation: Curation = field(default_factory=Curation)
    overlays: list[str] = field(default_factory=list)
    remote_refs: bool = False
    command: str = ""
    requirement: str = f"mcpgen[http,auth]>={__version__}"


@dataclass
class Generated:
    package: str
    tables: Tables
    built: Built
    models: Models
    files: dict[PurePosixPath, str]  # rewritten every time
    own: dict[PurePosixPath, str]  # written when missing
    notes: list[str]
    seconds: dict[str, float]


def generate(options: Options) -> Generated:
    """Load, normalize, curate, build and render (nothing is written: see :func:`write`)."""
    try:
        return _generate(options)
    except RecursionError:  # a document nested deeper than any real one (or built to be)
        raise OpenApiError(options.spec, "", "the document is nested too deeply to generate from") from None


def _generate(options: Options) -> Generated:
    timings: dict[str, float] = {}
    started = time.perf_counter()
    loaded = load_document(options.spec, remote_refs=options.remote_refs)
    notes: list[str] = []
    for overlay in options.overlays:
        notes += apply_overlay_file(loaded.document, overlay)
    document = normalize(loaded.document, loaded.source)
    timings["load"] = time.perf_counter() - started
    package = options.name.replace("-", "_")
    prefix = package.upper()
    base_url = options.base_url if options.base_url is not None else base_url_of(document)
    built = build_operations(
        document,
        loaded.source,
        loaded.sha256,
        env_prefix=prefix,
        base_url=base_url,
        curation=options.curation,
        mode=options.mode,
    )
    if not built.tables.operations:
        why = "; ".join(built.skipped[:5]) or "no operations (or curation left none)"
        raise OpenApiError(loaded.source, "/paths", f"nothing to generate: {why}")
    timings["operations"] = time.perf_counter() - started - timings["load"]
    schemas = document.get("components", {}).get("schemas") or {}
    models = build_models(schemas if isinstance(schemas, dict) else {})
    timings["models"] = time.perf_counter() - started - sum(timings.values())
    command = options.command or f"mcpgen openapi {options.spec} -o DIR --name {options.name}"
    code = built.code if built.tables.mode == "tools" else []
    _avoid_module_names(code)
    env = _environment()
    context = {"t": built.tables, "command": command, "version": __version__, "package": package, "name": options.name}
    render.use_symbols(set(models.types))
    raw = {
        "tools.py": env.get_template("tools.py.j2").render(code=code, **context),
        "models.py": env.get_template("models.py.j2").render(
            structs=models.structs(),
            typedefs=render.ordered_aliases(models.model),
            names=sorted(models.types),
            notes=models.notes[:200],
            **context,
        ),
    }
    formatted = render.format_files(_without_unused_imports(raw))
    _verify_tools(formatted["tools.py"], code)
    _verify_models(formatted["models.py"], set(models.types))
    tables_json = msgspec.json.format(msgspec.json.encode(built.tables, order="sorted"), indent=1).decode() + "\n"
    files = {
        PurePosixPath(package, "tools.py"): formatted["tools.py"],
        PurePosixPath(package, "models.py"): formatted["models.py"],
        PurePosixPath(package, "operations.json"): tables_json,
    }
    own = _own_files(options, package, prefix, built, command, env, context)
    timings["render"] = time.perf_counter() - started - sum(timings.values())
    return Generated(package, built.tables, built, models, files, own, notes + built.notes, timings)


def write(generated: Generated, target: Path) -> list[Path]:
    written = []
    for relative, text in {**generated.files, **generated.own}.items():
        path = target.joinpath(*relative.parts)
        if relative in generated.own and path.exists():
            continue  # the project's own: never rewritten
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        written.append(path)
    return sorted(written)


@dataclass
class Drift:
    added: list[str]
    removed: list[str]
    changed: list[str]
    stale: list[str]  # generated files that differ

    @property
    def clean(self) -> bool:
        return not (self.added or self.removed or self.changed or self.stale)

    def lines(self) -> list[str]:
        return (
            [f"operation added: {n}" for n in self.added]
            + [f"operation removed: {n}" for n in self.removed]
            + [f"operation changed: {n}" for n in self.changed]
            + [f"stale: {n}" for n in self.stale]
        )


def check(generated: Generated, target: Path) -> Drift:
    """What a fresh generation would change in the project at ``target``."""
    old_path = target / generated.package / "operations.json"
    try:
        old = json.loads(old_path.read_text(encoding="utf-8")).get("operations", {})
    except (OSError, ValueError):
        old = {}
    new = generated.tables.operations
    added = sorted(set(new) - set(old))
    removed = sorted(set(old) - set(new))
    changed = sorted(
        n for n in set(new) & set(old) if not isinstance(old[n], dict) or old[n].get("digest") != new[n].digest
    )
    stale = []
    for relative, text in generated.files.items():
        path = target.joinpath(*relative.parts)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            stale.append(str(relative))
    return Drift(added, removed, changed, stale)


# ------------------------------------------------------------------ rendering


def py_literal(value: Any) -> str:
    """A Python literal of any JSON scalar: ``repr`` (always valid source, whatever the text)."""
    return repr(value)


def _pytext(value: str) -> str:
    """Text inside a docstring of a project file: no quotes run, no backslash escape, no line break."""
    return " ".join(clean_text(value).replace("\\", "/").replace('"""', "'''").split())


def _md(value: str) -> str:
    return re.sub(r"([\\`*_{}\[\]<>|#])", r"\\\1", " ".join(clean_text(value).split()))


def _toml(value: str) -> str:
    return json.dumps(clean_text(value), ensure_ascii=False)


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([TEMPLATES, render.TEMPLATES]),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
    )
    env.filters.update(
        py=py_literal,
        literal=render.py_literal,
        py_type=render.py_type,
        docstring=render.docstring,
        doc=lambda text: render.docstring(clean_text(text)),
        field_line=render.field_line,
        union_expr=render.union_expr,
        signature=_signature,
        cleaned=_pytext,
        pytext=_pytext,
        md=_md,
        toml=_toml,
        oneline=lambda text: " ".join(clean_text(text).split()),  # the command, in a comment
    )
    env.globals.update(sym=render.sym, imports=render.imports)
    return env


def _without_unused_imports(raw: dict[str, str]) -> dict[str, str]:
    """The modules with the imports they do not use taken out, and sorted, by ruff's own
    fix (models.py imports every typing name a model may need; a small document uses few)."""
    import subprocess
    import tempfile

    fixed = dict(raw)
    with tempfile.TemporaryDirectory(prefix="mcpgen-openapi-") as tmp:
        paths = {name: Path(tmp) / name for name in raw}
        for name, path in paths.items():
            path.write_text(raw[name], encoding="utf-8")
        args = ["check", "--isolated", "--fix", "--select", "F401,I", "--target-version", "py311", "--quiet"]
        # In the temporary folder: what counts as first-party must not depend on where we run.
        subprocess.run([render.ruff_binary(), *args, *paths], capture_output=True, text=True, cwd=tmp)
        for name, path in paths.items():
            fixed[name] = path.read_text(encoding="utf-8")
    return fixed


def _signature(code: ToolCode) -> str:
    parts = []
    for arg in code.args:
        if arg.required:
            parts.append(f"{arg.name}: {arg.annotation}")
        else:
            parts.append(f"{arg.name}: {arg.annotation} | UnsetType = UNSET")
    return ", ".join(parts)


def _avoid_module_names(code: list[ToolCode]) -> None:
    taken = set(TOOLS_MODULE_NAMES)
    for c in code:
        name, n = c.function, 2
        while name in taken:
            name, n = f"{c.function}_{n}", n + 1
        c.function = name
        taken.add(name)


def _own_files(
    options: Options,
    package: str,
    prefix: str,
    built: Built,
    command: str,
    env: jinja2.Environment,
    context: dict[str, Any],
) -> dict[PurePosixPath, str]:
    from mcpgen.scaffold import registry

    variables = environment_variables(built.tables, prefix)
    values = {**context, "env": variables, "prefix": prefix, "requirement": options.requirement}
    values["count"] = len(built.tables.operations)
    own: dict[PurePosixPath, str] = {}
    for template, target in (
        ("project/server.py.j2", f"{package}/server.py"),
        ("project/hooks.py.j2", f"{package}/hooks.py"),
        ("project/auth.py.j2", f"{package}/auth.py"),
        ("project/__init__.py.j2", f"{package}/__init__.py"),
        ("project/pyproject.toml.j2", "pyproject.toml"),
        ("project/README.md.j2", "README.md"),
        ("project/tests/conftest.py.j2", "tests/conftest.py"),
        ("project/tests/test_server.py.j2", "tests/test_server.py"),
    ):
        own[PurePosixPath(target)] = env.get_template(template).render(**values)
    for path in (f"{package}/server.py", f"{package}/hooks.py", f"{package}/auth.py"):
        _verify_parses(own[PurePosixPath(path)], path)
    # Laid out as the generated modules are (the project's pyproject says line-length 100).
    python = {str(p): text for p, text in own.items() if p.suffix == ".py"}
    formatted = render.format_files({name.replace("/", "__"): text for name, text in python.items()})
    for name in python:
        own[PurePosixPath(name)] = formatted[name.replace("/", "__")]
    listing = registry.parse_project(own[PurePosixPath("pyproject.toml")], "pyproject.toml")
    own[PurePosixPath("server.json")] = registry.dumps(registry.server_json(listing))
    own[PurePosixPath("README.md")] = registry.with_mcp_name(own[PurePosixPath("README.md")], listing.name)
    own[PurePosixPath(".gitignore")] = ".venv/\n__pycache__/\n*.pyc\n.pytest_cache/\n"
    return own


def environment_variables(tables: Tables, prefix: str) -> list[dict[str, Any]]:
    """Every variable the server reads, with what it is for (README and server.json)."""
    out: list[dict[str, Any]] = [
        {"name": f"{prefix}_BASE_URL", "description": f"The API's base URL (default: {tables.base_url or 'none'})"},
        {"name": f"{prefix}_TIMEOUT", "description": "Seconds to wait for the API (default 30)"},
        {"name": f"{prefix}_MAX_RESPONSE_BYTES", "description": "Largest answer read from the API (default 10 MiB)"},
    ]
    bearer = False
    for name, scheme in tables.security.items():
        for role, var in scheme.env.items():
            what = {
                "value": f"The API key of the {name} scheme ({scheme.location} {scheme.name})",
                "token": f"A bearer token for the {name} scheme",
                "username": f"The user name of the {name} scheme (HTTP basic)",
                "password": f"The password of the {name} scheme (HTTP basic)",
                "client_id": f"The OAuth client id of the {name} scheme (client credentials)",
                "client_secret": f"The OAuth client secret of the {name} scheme (client credentials)",
                "token_url": f"The token endpoint of the {name} scheme (default: the document's)",
            }[role]
            out.append({"name": var, "description": clean_text(what), "secret": role not in ("username", "token_url")})
        bearer = bearer or scheme.kind in ("oauth2", "openIdConnect") or scheme.scheme == "bearer"
    out.append({"name": "MCP_ISSUER", "description": "Protects the HTTP server: the issuer whose tokens it accepts"})
    if bearer:
        out.append(
            {"name": f"{prefix}_USER_AUTH", "description": "off, passthrough or exchange: call the API as each caller"}
        )
        for var, what in (
            ("TOKEN_URL", "The RFC 8693 token endpoint (exchange)"),
            ("CLIENT_ID", "This server's client id at it"),
            ("CLIENT_SECRET", "This server's client secret at it"),
            ("AUDIENCE", "The audience to ask for"),
        ):
            out.append({"name": f"{prefix}_EXCHANGE_{var}", "description": what, "secret": var == "CLIENT_SECRET"})
    return out


# ------------------------------------------------------------------ the statements check


def _verify_parses(source: str, path: str) -> ast.Module:
    try:
        return ast.parse(source)
    except SyntaxError as exc:
        raise GenerationRefused(f"{path}: the rendered module does not parse ({exc.msg}, line {exc.lineno})") from None


def _verify_tools(source: str, code: list[ToolCode]) -> None:
    tree = _verify_parses(source, "tools.py")
    body = list(tree.body)
    allowed = ["__future__", "typing", "mcpgen.generated", "mcpgen.openapi.runtime.serve", "msgspec"]
    imports = 0
    while 1 + imports < len(body) and isinstance(body[1 + imports], ast.ImportFrom):
        imports += 1
    shape = [type(n).__name__ for n in body]
    want = ["Expr", *["ImportFrom"] * imports, "Assign", *["AsyncFunctionDef"] * len(code), "AnnAssign"]
    if shape != want:
        raise GenerationRefused(f"tools.py: top-level statements {shape[:12]} are not the template's")
    # The template's imports, in its order; ruff may have taken out one a small API does not use.
    modules = [n.module for n in body[1 : 1 + imports] if isinstance(n, ast.ImportFrom)]
    if modules != [m for m in allowed if m in modules] or len(set(modules)) != len(modules):
        raise GenerationRefused(f"tools.py: imports {modules} are not the template's")
    for node, c in zip(body[2 + imports : -1], code, strict=True):
        assert isinstance(node, ast.AsyncFunctionDef)
        decorator = node.decorator_list[0] if len(node.decorator_list) == 1 else None
        if (
            node.name != c.function
            or not isinstance(decorator, ast.Call)
            or not isinstance(decorator.func, ast.Name)
            or decorator.func.id != "tool"
            or [ast.literal_eval(a) for a in decorator.args] != [c.tool]
            or [type(s).__name__ for s in node.body] != ["Expr", "Return"]
            or [a.arg for a in node.args.args] != [a.name for a in c.args]
        ):
            raise GenerationRefused(f"tools.py: the function for tool {c.tool!r} is not the template's")
    first, last = body[1 + imports], body[-1]
    targets = [
        first.targets[0].id if isinstance(first, ast.Assign) and isinstance(first.targets[0], ast.Name) else None,
        last.target.id if isinstance(last, ast.AnnAssign) and isinstance(last.target, ast.Name) else None,
    ]
    if targets != ["API", "TOOLS"]:
        raise GenerationRefused(f"tools.py: module assignments {targets} are not the template's")


def _verify_models(source: str, names: set[str]) -> None:
    tree = _verify_parses(source, "models.py")
    for node in tree.body:
        if isinstance(node, ast.Expr) and node is tree.body[0] and isinstance(node.value, ast.Constant):
            continue
        if isinstance(node, ast.ImportFrom) and node.module in ("__future__", "typing", "msgspec"):
            continue
        if isinstance(node, ast.ClassDef) and node.name in names:
            if all(isinstance(s, (ast.AnnAssign, ast.Expr)) for s in node.body):
                continue
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id in names:
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            continue  # an alias's docstring
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["__all__"]:
            continue
        raise GenerationRefused(f"models.py: a top-level statement the template does not make (line {node.lineno})")


__all__ = ["Drift", "Generated", "GenerationRefused", "Options", "check", "environment_variables", "generate", "write"]
