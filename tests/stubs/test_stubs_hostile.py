"""`mcpgen stubs` against a server that is not trusted (issue 36, points 1 and 2; issue 35,
point 4): no server text reaches the generated module except through an escaper, a module
whose statements are not the template's is refused, ordinary awkward text (a description
ending in a quote, a NUL, an argument named like a function the module calls) generates a
module that imports and works, and thousands of clashing names cost linear time.

The hostile server is a real stdio subprocess (tests/servers/hostile_stubs.py) whose every
string tries to break out of where it lands and create a ``PWNED-*`` file; the generated
module is imported and each of its methods called against that server.
"""

from __future__ import annotations

import importlib.util
import json
import stat
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import pytest
from typer.testing import CliRunner

from mcpgen import Client
from mcpgen.cli.app import app
from mcpgen.codegen import naming, render
from mcpgen.generated import TextContent
from mcpgen.stubs import guard as stubs_guard
from mcpgen.stubs import render as stubs_render
from mcpgen.stubs.guard import UnsafeModule
from mcpgen.stubs.model import DescriptionError, build_stubs, description_from_json
from mcpgen.stubs.render import render_stubs
from mcpgen.stubs.schema import prepare
from tests.paths import ROOT, SERVERS
from tests.servers import hostile_stubs

pytestmark = pytest.mark.anyio

HOSTILE = SERVERS / "hostile_stubs.py"
TIMEOUT = 30.0


def mcpgen(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcpgen", *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def pwned(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("PWNED"))


# ---------------------------------------------------------------- a hostile server, live


async def test_a_hostile_server_gives_a_module_that_runs_none_of_its_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # every break-out would write PWNED-* here
    server = f"{sys.executable} {HOSTILE}"
    made = mcpgen("stubs", server, "-o", "hostile_client.py", "--save", "hostile.json", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    hostile = load(tmp_path / "hostile_client.py", "hostile_client")
    assert pwned(tmp_path) == [] and "PWNED" not in made.stdout + made.stderr.replace("PWNED-", "")
    # Every name and value comes back exactly as the server wrote it.
    assert hostile.SERVER_NAME == hostile_stubs.NAME and hostile.SERVER_VERSION == hostile_stubs.VERSION
    assert set(hostile.TOOLS) == {tool["name"] for tool in hostile_stubs.TOOLS}
    assert set(hostile.PROMPTS) == {prompt["name"] for prompt in hostile_stubs.PROMPTS}
    assert set(hostile.RESOURCE_TEMPLATES) == {t["uriTemplate"] for t in hostile_stubs.TEMPLATES}
    run = hostile.TOOLS[hostile_stubs.TOOLS[0]["name"]]
    client = Client.stdio(sys.executable, str(HOSTILE), on_stderr=lambda line: None)
    with anyio.fail_after(TIMEOUT):
        async with hostile.EvilOpenPWNEDNameWClient(client) as typed:
            # Arguments named like what a method uses itself (to_builtins, convert, self,
            # arguments, structured) get an underscore in Python and keep their wire names.
            result = await getattr(typed, run)(
                text='ok"""\\', to_builtins_="a", convert_=5, structured_=True, self_="s", arguments_="x", level="b\\"
            )
            assert result.echo == {
                "name": hostile_stubs.TOOLS[0]["name"],
                "arguments": {
                    "text": 'ok"""\\',
                    "to_builtins": "a",
                    "convert": 5,
                    "structured": True,
                    "self": "s",
                    "arguments": "x",
                    "level": "b\\",
                },
            }
            defaults = await getattr(typed, run)(text="t")  # the schema's default stays a default
            assert defaults.echo["arguments"] == {"text": "t", "convert": 2}
            # A property name no struct field can carry: the method takes the arguments dict.
            odd = next(iter(hostile_stubs.TOOLS[1]["inputSchema"]["properties"]))
            raw = await typed.raw({odd: "v"})
            assert raw.content == [TextContent(text=json.dumps({"name": "raw", "arguments": {odd: "v"}}))]
            prompt = await getattr(typed, hostile.PROMPTS[hostile_stubs.PROMPTS[0]["name"]])(topic="t", uri_="u")
            asked = json.loads(prompt.messages[0].content.text)
            assert asked == {"name": hostile_stubs.PROMPTS[0]["name"], "arguments": {'topic"\n': "t", "uri": "u"}}
            read = await getattr(typed, hostile.RESOURCE_TEMPLATES[hostile_stubs.TEMPLATES[0]["uriTemplate"]])(path="p")
            assert read.contents[0].uri.startswith("hostile://p/")
    assert pwned(tmp_path) == []
    # The saved description gives the same module (the --check of a committed module).
    same = mcpgen("stubs", "hostile.json", "-o", "hostile_client.py", "--check", cwd=tmp_path)
    assert same.returncode == 0, same.stdout + same.stderr


def test_the_saved_path_keeps_an_empty_version(tmp_path: Path) -> None:
    """Issue 35, point 4: a server whose version is "" (the official Python SDK's default):
    the module made from the live server passes --check against its saved description."""
    server = f"{sys.executable} {HOSTILE} ''"
    made = mcpgen("stubs", server, "-o", "empty_client.py", "--save", "empty.json", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert json.loads((tmp_path / "empty.json").read_text())["server"]["version"] == ""
    assert 'SERVER_VERSION = ""' in (tmp_path / "empty_client.py").read_text()
    checked = mcpgen("stubs", "empty.json", "-o", "empty_client.py", "--check", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert description_from_json({"server": {"name": "x", "version": ""}, "tools": []}).version == ""
    assert description_from_json({"server": {"name": "x"}, "tools": []}).version == "unknown"


# ---------------------------------------------------------------- awkward text, saved


AWKWARD: dict[str, Any] = {
    "server": {"name": "odd\x00server\ud800", "version": 'v"'},
    "tools": [
        {
            "name": "quote",
            "description": 'A description that ends in a quote"',
            "inputSchema": {
                "type": "object",
                "properties": {
                    "to_builtins": {"type": "string", "description": 'ends with two ""'},
                    "convert": {"type": "string"},
                    "nul": {"type": "string", "description": "a NUL\x00 inside, and \ud800 a lone surrogate"},
                    "far": {"type": "number", "default": float("inf"), "maximum": float("inf")},
                    "nan": {"type": "number", "default": float("nan")},
                    "slash": {"type": "string", "description": "ends in a backslash\\"},
                },
            },
        },
        {"name": "nul\x00name", "description": "\x00", "inputSchema": {"type": "object"}},
    ],
    "prompts": [{"name": "p\ud800", "description": '"""', "arguments": [{"name": "a\x00b"}]}],
    "resourceTemplates": [{"name": "t", "uriTemplate": "x://{a}\x00", "description": "\\"}],
}


def test_awkward_text_gives_a_module_that_imports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = render_stubs(build_stubs(description_from_json(AWKWARD)), "mcpgen stubs awkward.json\nimport os")
    assert "\x00" not in text and "\ud800" not in text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    module_file = tmp_path / "awkward_client.py"
    module_file.write_text(text, encoding="utf-8")  # every character of it encodes
    monkeypatch.chdir(tmp_path)
    awkward = load(module_file, "awkward_client")
    assert awkward.SERVER_NAME == "odd\x00server\ud800" and awkward.SERVER_VERSION == 'v"'
    assert set(awkward.TOOLS) == {"quote", "nul\x00name"} and set(awkward.PROMPTS) == {"p\ud800"}
    fields = awkward.QuoteInput.__struct_fields__
    assert {"to_builtins_", "convert_"} <= set(fields)  # the names the method body calls stay free
    signature = awkward.OddServerClient.quote.__doc__
    assert signature.startswith('A description that ends in a quote"')
    # A non-finite default has no literal: the argument is left unset instead.
    assert awkward.QuoteInput().far is awkward.UNSET and awkward.QuoteInput().nan is awkward.UNSET


def test_a_class_name_must_be_an_identifier() -> None:
    description = description_from_json(AWKWARD)
    with pytest.raises(DescriptionError, match="--class must be a Python identifier"):
        build_stubs(description, "X(os.system('id'))")
    assert build_stubs(description, "Mine").class_name == "Mine"


# ---------------------------------------------------------------- the last guard


def naive(text: str, *, every_quote: bool = True) -> str:
    return text  # an escaper that forgot to escape


def test_the_guard_refuses_what_a_broken_escaper_let_through(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    description = {
        "server": {"name": "s", "version": "1"},
        "tools": [
            {
                "name": "t",
                # Out of a method's docstring, into an expression that parses.
                "description": 'x""" + __import__("os").getcwd() + """',
                "inputSchema": {"type": "object", "properties": {"a": {"type": "string"}}},
            },
            {
                "name": "u",
                "description": 'x"""\nimport os\n"""',  # out of it, into what does not parse
                "inputSchema": {"type": "object", "properties": {"a": {"type": "string"}}},
            },
        ],
    }
    (tmp_path / "saved.json").write_text(json.dumps(description))
    assert render_stubs(build_stubs(description_from_json(description)), "x")  # escaped: fine
    monkeypatch.setattr(stubs_render, "doc_text", naive)
    one = {**description, "tools": description["tools"][:1]}
    with pytest.raises(UnsafeModule, match="its statements are not the template's"):
        render_stubs(build_stubs(description_from_json(one)), "x")
    with pytest.raises(UnsafeModule, match="it does not parse"):
        render_stubs(build_stubs(description_from_json(description)), "x")
    out = tmp_path / "refused.py"
    refused = CliRunner().invoke(app, ["stubs", str(tmp_path / "saved.json"), "-o", str(out)])
    assert refused.exit_code == 2 and "refusing to write the module" in refused.stderr
    assert not out.exists()


def test_the_guard_sees_a_comment_that_ended_early(monkeypatch: pytest.MonkeyPatch) -> None:
    # A note names where in the schema it was made: here in a definition whose name ends
    # the comment line, then runs.
    odd = {"type": "object", "not": {}, "properties": {"v": {"type": "string"}}}
    schema = {
        "type": "object",
        "$defs": {"B\nimport os\n#": odd},
        "properties": {"b": {"$ref": "#/$defs/B\nimport os\n#"}},
    }
    description = {"server": {"name": "s", "version": "1"}, "tools": [{"name": "t", "inputSchema": schema}]}
    assert "import os\n" not in render_stubs(build_stubs(description_from_json(description)), "x")
    monkeypatch.setattr(stubs_render, "comment", lambda text: text)  # notes go into comments raw
    with pytest.raises(UnsafeModule):
        render_stubs(build_stubs(description_from_json(description)), "x")


def test_the_guard_compares_every_statement_and_expression() -> None:
    template = 'X = "a"\n\n\nclass C:\n    """doc"""\n\n    def f(self, a: int = 1) -> str:\n        return "b"\n'
    stubs_guard.check(template.replace('"a"', '"other"').replace('"doc"', '"text"'), template)  # constants only
    for changed in (
        template + "import os\n",  # a statement more
        template.replace('"""doc"""', '"""doc""" + __import__("os").name'),  # an expression for a constant
        template.replace("a: int = 1", "a: int = print()"),  # a default that runs at import
        template.replace('X = "a"', "X = 1"),  # a string became something else
        template.replace("class C:", "class C(object):"),
        template.replace('return "b"', 'return "b"; import os'),
        "\x00" + template,
    ):
        with pytest.raises(UnsafeModule):
            stubs_guard.check(changed, template)


def test_a_failed_format_keeps_its_text_in_a_private_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(render, "ruff_binary", lambda: "false")  # a formatter that fails
    shared_name = Path("/tmp/mcpgen-unformatted-stubs.py")
    before = shared_name.exists()
    with pytest.raises(render.FormatError) as failed:
        render.format_files({"stubs.py": "x = 1\n"})
    kept = Path(str(failed.value).rsplit(" ", 1)[-1])
    assert kept.is_dir() and kept.name.startswith("mcpgen-unformatted-") and kept != Path("/tmp")
    assert stat.S_IMODE(kept.stat().st_mode) == 0o700 and (kept / "stubs.py").read_text() == "x = 1\n"
    assert shared_name.exists() == before  # nothing at the old fixed name
    (kept / "stubs.py").unlink()
    kept.rmdir()


# ---------------------------------------------------------------- many names


class Counting(set[str]):
    """A set that counts the lookups made in it."""

    lookups = 0

    def __contains__(self, name: object) -> bool:
        Counting.lookups += 1
        return super().__contains__(name)


def test_clashing_names_cost_a_constant_number_of_lookups_each() -> None:
    Counting.lookups = 0
    names = naming.UniqueNames()
    names.taken = Counting()
    made = [names.claim("Point") for _ in range(5000)]
    assert len(set(made)) == 5000 and made[:3] == ["Point", "Point2", "Point3"]
    assert Counting.lookups <= 3 * 5000  # each clash is one lookup or two, not a scan from 2
    # A schema's $defs whose names all clash (x, x_, x__ ... all PascalCase to X).
    Counting.lookups = 0
    reserved = Counting({"Reserved"})
    defs = {"x" + "_" * i: {"type": "object", "properties": {"v": {"type": "integer"}}} for i in range(3000)}
    prepared = prepare({"type": "object", "$defs": defs}, "Root", "Tool", reserved)
    assert len(prepared.definitions) == 3001
    assert Counting.lookups <= 3 * 3000


def module_size(count: int) -> int:
    # Property names that all make the field name "a": "a" then a binary number written
    # with "-" for 0 and "." for 1 (a-, a., a.-, a.. ...), each distinct.
    wires = ["a" + format(n, "b").replace("0", "-").replace("1", ".") for n in range(1, count + 1)]
    schema = {"type": "object", "properties": {wire: {"type": "integer"} for wire in wires}}
    description = {"server": {"name": "s", "version": "1"}, "tools": [{"name": "t", "inputSchema": schema}]}
    return len(render_stubs(build_stubs(description_from_json(description)), "x"))


def test_clashing_field_names_grow_the_module_linearly() -> None:
    """Thousands of property names that all make the same field name: each takes a number
    (a_2, a_3 ...), not one more underscore per clash (a module quadratic in size)."""
    small, large = module_size(500), module_size(2000)
    assert large < 5 * small  # 4x the names: about 4x the text, not 16x


# ---------------------------------------------------------------- mypy


@pytest.mark.slow  # mypy --strict on a generated module: about 20 s
def test_the_hostile_module_passes_mypy_strict(tmp_path: Path) -> None:
    made = mcpgen("stubs", f"{sys.executable} {HOSTILE}", "-o", "hostile_client.py", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    (tmp_path / "awkward_client.py").write_text(
        render_stubs(build_stubs(description_from_json(AWKWARD)), "x"), encoding="utf-8"
    )
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "hostile_client.py", "awkward_client.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"MYPYPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        timeout=300,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert pwned(tmp_path) == []
