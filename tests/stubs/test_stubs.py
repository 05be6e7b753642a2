"""`mcpgen stubs`: typed client modules generated from real servers, used against them,
type-checked, and held to the server by ``--check``.

Real peers only: a server written with the official Python SDK's ``MCPServer``
(tests/interop/sdk_server.py, over stdio) and ``@modelcontextprotocol/server-everything``
(pinned in tests/interop, installed by test_interop's ``everything_command`` fixture).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import msgspec
import pytest
from typer.testing import CliRunner, Result

from mcpgen import Client
from mcpgen.cli.app import app
from mcpgen.generated import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    ImageContent,
    Root,
    TextContent,
    TextResourceContents,
)
from mcpgen.stubs.model import Description, DescriptionError, build_stubs, description_from_json
from mcpgen.stubs.render import drift, render_stubs
from tests.http_server import demo_http
from tests.interop.test_interop import (
    everything_command,  # noqa: F401  (the session fixture)
    everything_elicitor,
)
from tests.paths import ROOT

pytestmark = pytest.mark.anyio

SDK_SERVER = ROOT / "tests" / "interop" / "sdk_server.py"
TIMEOUT = 30.0


def mcpgen(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcpgen", *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def cli(*args: str) -> Result:
    """The CLI in-process (no interpreter start), for what needs no server."""
    return CliRunner().invoke(app, list(args))


def load(path: Path, name: str) -> ModuleType:
    """Import a generated module from its file (registered, so msgspec finds its types)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# A description exercising the constructs: $defs and $ref, a recursive tree, nested
# objects, arrays, enums, a tagged oneOf, an untagged anyOf, and what cannot be typed.
CONSTRUCTS: dict[str, Any] = {
    "server": {"name": "io.example/shapes", "version": "2.0.0"},
    "tools": [
        {
            "name": "draw",
            "description": "Draw a shape.",
            "inputSchema": {
                "type": "object",
                "$defs": {
                    "Point": {
                        "type": "object",
                        "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                        "required": ["x", "y"],
                    },
                    "Node": {
                        "type": "object",
                        "properties": {
                            "label": {"type": "string"},
                            "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                        },
                        "required": ["label"],
                    },
                },
                "properties": {
                    "origin": {"$ref": "#/$defs/Point", "description": "Where to start"},
                    "shape": {
                        "oneOf": [
                            {
                                "type": "object",
                                "properties": {"kind": {"const": "circle"}, "r": {"type": "number", "minimum": 0}},
                                "required": ["kind", "r"],
                            },
                            {
                                "type": "object",
                                "properties": {"kind": {"const": "square"}, "side": {"type": "number"}},
                                "required": ["kind", "side"],
                            },
                        ]
                    },
                    "color": {"enum": ["red", "green"], "default": "red"},
                    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
                    "tree": {"$ref": "#/$defs/Node"},
                    "style": {"type": "object", "properties": {"width": {"type": "integer", "default": 1}}},
                    "either": {"anyOf": [{"$ref": "#/$defs/Point"}, {"$ref": "#/$defs/Node"}]},
                    "never": False,
                    "elsewhere": {"$ref": "https://example.com/other.json"},
                    "objects": {"enum": [{"a": 1}, {"b": 2}]},
                    "pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
                    "odd": {"type": "string", "pattern": "(?<name>x)"},
                    "class": {"type": "string"},
                },
                "required": ["origin", "shape"],
            },
            "outputSchema": {
                "type": "object",
                "properties": {"area": {"type": "number"}, "points": {"type": "array", "items": {"type": "object"}}},
                "required": ["area"],
            },
        },
        {"name": "reset", "inputSchema": {"type": "object", "properties": {}}},
        # Results that are not one struct: a tagged union, a map, an untagged union.
        {
            "name": "measure",
            "inputSchema": {"type": "object"},
            "outputSchema": {
                "oneOf": [
                    {
                        "type": "object",
                        "properties": {"unit": {"const": "cm"}, "cm": {"type": "number"}},
                        "required": ["unit"],
                    },
                    {
                        "type": "object",
                        "properties": {"unit": {"const": "in"}, "inches": {"type": "number"}},
                        "required": ["unit"],
                    },
                ]
            },
        },
        {
            "name": "counts",
            "inputSchema": {"type": "object"},
            "outputSchema": {"type": "object", "additionalProperties": {"type": "integer"}},
        },
        {
            "name": "pick",
            "inputSchema": {"type": "object"},
            "outputSchema": {
                "anyOf": [
                    {"type": "object", "properties": {"a": {"type": "string"}}},
                    {"type": "object", "properties": {"b": {"type": "integer"}}},
                ]
            },
        },
        {"name": "raw", "inputSchema": {"type": "object", "additionalProperties": True}},
    ],
    "prompts": [{"name": "explain", "arguments": [{"name": "topic", "required": True}, {"name": "depth"}]}],
    "resourceTemplates": [{"name": "shape", "uriTemplate": "shapes://{id}{?format}"}],
}


_LOCAL = {"type": "string"}
_TOOL_RESULT = {"ToolResult": {"type": "object", "properties": {"a": {"type": "string"}}}}
# Tool, prompt and argument names that are not Python names, or clash with the module's own.
NAMES: dict[str, Any] = {
    "server": {"name": "3d/0-x", "version": "1"},
    "tools": [
        {
            "name": "get-weather",
            "inputSchema": {
                "type": "object",
                "properties": {"arguments": _LOCAL, "result": {"type": "integer"}, "self": _LOCAL, "uri": _LOCAL},
                "required": ["arguments"],
            },
        },
        {"name": "get_weather", "inputSchema": {"type": "object", "properties": {"x": _LOCAL}}},
        {"name": "class", "inputSchema": {"type": "object", "properties": {"import": _LOCAL}}},
        {
            "name": "call",
            "inputSchema": {"$defs": _TOOL_RESULT, "properties": {"x": {"$ref": "#/$defs/ToolResult"}}},
        },
        {"name": "3d", "inputSchema": {"type": "object"}},
    ],
    "prompts": [{"name": "class", "arguments": [{"name": "self"}, {"name": "for", "required": True}]}],
    "resourceTemplates": [{"name": "import", "uriTemplate": "x://{arguments}/{self}"}],
}


# ---------------------------------------------------------------- descriptions


def test_every_description_form_reads() -> None:
    tools = [{"name": "echo", "inputSchema": {"type": "object"}}]
    listed = description_from_json({"tools": tools})
    assert (listed.name, [t["name"] for t in listed.tools]) == ("server", ["echo"])
    envelope = description_from_json({"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}})
    assert envelope.tools == tools
    discover = description_from_json(
        {
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}},
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "weather", "version": "3.1"}},
        }
    )
    assert (discover.name, discover.version, discover.tools) == ("weather", "3.1", [])
    saved = description_from_json(CONSTRUCTS)
    again = description_from_json(json.loads(saved.dumps()))
    assert again.to_json() == saved.to_json() and again.sha256 == saved.sha256
    with pytest.raises(DescriptionError, match="not a server description"):
        description_from_json({"hello": 1})
    with pytest.raises(DescriptionError, match="`tools` must be a list"):
        description_from_json({"tools": {"echo": {}}})


def test_the_module_is_deterministic_and_headed() -> None:
    description = description_from_json(CONSTRUCTS)
    text = render_stubs(build_stubs(description), "mcpgen stubs shapes.json -o shapes.py")
    shuffled = Description(**{**description.__dict__, "tools": description.tools[::-1]})
    assert render_stubs(build_stubs(shuffled), "mcpgen stubs shapes.json -o shapes.py") == text
    head = text.splitlines()[:3]
    assert '"io.example/shapes" version "2.0.0"' in head[0]
    assert description.sha256 in head[1] and "mcpgen stubs shapes.json -o shapes.py" in head[2]


def test_constructs_are_typed_and_the_rest_is_any_with_a_comment(tmp_path: Path) -> None:
    path = tmp_path / "shapes_client.py"
    path.write_text(render_stubs(build_stubs(description_from_json(CONSTRUCTS)), "mcpgen stubs"), encoding="utf-8")
    text = path.read_text()
    # Every construct the generator cannot type is named in a comment.
    for pointer in ("/properties/never", "/properties/elsewhere", "/properties/objects/enum", "/properties/pair/items"):
        assert f"#   tool draw inputSchema {pointer}: " in text, pointer
    assert "# untyped: DrawPoint | DrawNode cannot be told apart by a tag" in text
    shapes = load(path, "shapes_client")
    # Typed: nested structs from $defs, the tagged union, defaults from the schema.
    args = shapes.DrawInput(
        origin=shapes.DrawPoint(x=1, y=2),
        shape=shapes.DrawInputShapeCircle(r=3),
        tree=shapes.DrawNode(label="a", children=[shapes.DrawNode(label="b")]),
        class_="big",
        never={"anything": True},
    )
    assert msgspec.to_builtins(args) == {
        "origin": {"x": 1, "y": 2},
        "shape": {"kind": "circle", "r": 3},
        "tree": {"label": "a", "children": [{"label": "b"}]},
        "never": {"anything": True},
        "class": "big",
    }
    assert shapes.TOOLS == {
        "counts": "counts",
        "draw": "draw",
        "measure": "measure",
        "pick": "pick",
        "raw": "raw",
        "reset": "reset",
    }
    assert "async def measure(self) -> MeasureOutput:" in text and "async def pick(self) -> PickOutput:" in text
    assert isinstance(msgspec.convert({"unit": "in", "inches": 2}, shapes.MeasureOutput), shapes.MeasureOutputIn)
    assert msgspec.convert({"a": 1}, shapes.CountsOutput) == {"a": 1}
    assert "PickOutput: TypeAlias = Any" in text
    assert shapes.PROMPTS == {"explain": "prompt_explain"}
    assert shapes.RESOURCE_TEMPLATES == {"shapes://{id}{?format}": "read_shape"}
    assert 'color: Literal["red", "green"] = "red"' in text  # the schema's default
    assert "async def reset(self) -> CallToolResult:" in text
    assert "async def raw(self, arguments: dict[str, Any] | None = None) -> CallToolResult:" in text
    assert "async def read_shape(self, *, id: str, format: str | None = None) -> ReadResourceResult:" in text
    output = msgspec.convert({"area": 2.5, "points": [{"x": 1}]}, shapes.DrawOutput)
    assert (output.area, output.points) == (2.5, [{"x": 1}])


def test_names_from_any_tool_name_are_python_and_never_clash(tmp_path: Path) -> None:
    description = description_from_json(NAMES)
    path = tmp_path / "weird_client.py"
    path.write_text(render_stubs(build_stubs(description), "x"))
    weird = load(path, "weird_client")
    assert weird.TOOLS == {
        "3d": "call_3d",
        "call": "call",
        "class": "call_class",
        "get-weather": "get_weather",
        "get_weather": "get_weather_2",
    }
    assert weird.PROMPTS == {"class": "prompt_class"} and weird.RESOURCE_TEMPLATES == {
        "x://{arguments}/{self}": "read_import"
    }
    text = path.read_text()
    assert "class CallToolResult2(Struct" in text  # a $defs name never hides an import
    assert "async def read_import(self, *, arguments_: str, self_: str) -> ReadResourceResult:" in text
    assert "async def prompt_class(self, *, for_: str, self_: str | None = None) -> GetPromptResult:" in text
    # The wire keeps its names.
    args = weird.GetWeatherInput(arguments_="a", result_=1, self_="s", uri_="u")
    assert msgspec.to_builtins(args) == {"arguments": "a", "result": 1, "self": "s", "uri": "u"}
    assert hasattr(weird, "Server0XClient")


def test_drift_names_what_a_caller_meets() -> None:
    before = json.loads(json.dumps(CONSTRUCTS))
    after = json.loads(json.dumps(CONSTRUCTS))
    draw = after["tools"][0]["inputSchema"]["properties"]
    draw["tags"] = {"type": "string"}
    del draw["color"]
    draw["scale"] = {"type": "number"}
    after["tools"] = [t for t in after["tools"] if t["name"] != "raw"]
    after["tools"].append(
        {"name": "undo", "inputSchema": {"type": "object", "properties": {"steps": {"type": "integer"}}}}
    )
    old, new = (render_stubs(build_stubs(description_from_json(d)), "x") for d in (before, after))
    changes = drift(old, new)
    assert "tool removed: raw (method raw)" in changes
    assert "tool added: undo (steps: int | UnsetType)" in changes
    assert "tool draw: argument removed: color" in changes
    assert "tool draw: argument added: scale: int | float | UnsetType" in changes
    assert (
        "tool draw: argument retyped: tags: Annotated[list[str], Meta(max_length=3)] | UnsetType -> str | UnsetType"
        in changes
    )
    assert drift(old, old) == []


# ---------------------------------------------------------------- an official SDK server


async def sampler(params: CreateMessageRequestParams) -> CreateMessageResult:
    question = params.messages[0].content
    assert isinstance(question, TextContent)
    return CreateMessageResult(role="assistant", content=TextContent(text=f"<{question.text}>"), model="fake")


async def elicitor(params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "Ada", "age": 36})


def sdk_stubs(tmp_path: Path, server: Path = SDK_SERVER) -> subprocess.CompletedProcess[str]:
    return mcpgen(
        "stubs",
        f"{sys.executable} {server}",
        "-o",
        str(tmp_path / "sdk_client.py"),
        "--save",
        str(tmp_path / "sdk.json"),
    )


async def test_stubs_of_an_sdk_server_call_every_tool_prompt_and_template(tmp_path: Path) -> None:
    done = sdk_stubs(tmp_path)
    assert done.returncode == 0, done.stderr
    assert "wrote" in done.stdout and "7 tools, 1 prompts, 1 resource templates" in done.stdout
    sdk = load(tmp_path / "sdk_client.py", "sdk_client")
    assert sdk.SERVER_NAME == "sdk-peer" and sdk.SERVER_VERSION == "9.9.9"
    assert set(sdk.TOOLS) == {"ask_model", "ask_user", "count", "forecast", "list_roots", "shout", "sleep"}
    client = Client.stdio(
        sys.executable,
        str(SDK_SERVER),
        sampling=sampler,
        elicitation=elicitor,
        roots=[Root(uri="file:///work", name="work")],
        on_stderr=lambda line: None,
        era="handshake",  # sampling, elicitation and roots need the handshake era's back-channel
    )
    with anyio.fail_after(TIMEOUT):
        async with sdk.SdkPeerClient(client) as server:
            forecast = await server.forecast(city="Oslo", days=2)
            assert isinstance(forecast, sdk.ForecastOutput)
            assert (forecast.city, forecast.celsius, forecast.tags) == ("Oslo", 22.0, ["sunny"])
            assert (await server.forecast(city="Oslo")).celsius == 21.0  # days: the schema's default
            shouted = await server.shout(text="hi")
            assert shouted.content == [TextContent(text="HI")]
            assert (await server.count(to=2)).result == "counted to 2"
            assert (await server.ask_model(question="why")).content == [TextContent(text="fake: <why>")]
            assert (await server.ask_user()).content == [TextContent(text="accept: Ada (36)")]
            assert (await server.list_roots()).content == [TextContent(text="file:///work")]
            assert (await server.sleep(seconds=0.01)).content == [TextContent(text="slept 0.01")]
            prompt = await server.prompt_summarize(text="a book", style="long")
            assert prompt.messages[0].content == TextContent(text="Summarize (long): a book")
            book = await server.read_book(title="dune")
            assert isinstance(book.contents[0], TextResourceContents) and book.contents[0].text == "Frank Herbert"
    saved = json.loads((tmp_path / "sdk.json").read_text())
    assert saved["server"] == {"name": "sdk-peer", "version": "9.9.9"}
    # The saved description gives the same module, byte for byte.
    again = mcpgen("stubs", str(tmp_path / "sdk.json"))  # a subprocess: the CLI runs its own event loop
    assert (
        again.returncode == 0
        and again.stdout.split("\n", 3)[3] == (tmp_path / "sdk_client.py").read_text().split("\n", 3)[3]
    )


def test_check_on_saved_descriptions(tmp_path: Path) -> None:
    saved = tmp_path / "shapes.json"
    saved.write_text(json.dumps(CONSTRUCTS))
    module = tmp_path / "shapes_client.py"
    assert cli("stubs", str(saved), "-o", str(module)).exit_code == 0
    same = cli("stubs", str(saved), "-o", str(module), "--check")
    assert same.exit_code == 0 and "up to date with io.example/shapes 2.0.0" in same.stdout
    changed = json.loads(json.dumps(CONSTRUCTS))
    changed["tools"][0]["description"] = "Draw a shape, faster."
    saved.write_text(json.dumps(changed))
    stale = cli("stubs", str(saved), "-o", str(module), "--check")
    # No signature changed, only the text: the diff shows it.
    assert stale.exit_code == 1 and stale.stdout.startswith("no signature changed; the text did:")
    assert '-        """Draw a shape.' in stale.stdout and '+        """Draw a shape, faster.' in stale.stdout


@pytest.mark.slow  # three servers started, over five seconds
def test_check_passes_on_the_same_server_and_names_a_change(tmp_path: Path) -> None:
    assert sdk_stubs(tmp_path).returncode == 0
    module = str(tmp_path / "sdk_client.py")
    same = mcpgen("stubs", f"{sys.executable} {SDK_SERVER}", "-o", module, "--check")
    assert same.returncode == 0, same.stdout + same.stderr
    assert "up to date with sdk-peer 9.9.9" in same.stdout
    # The server revises: forecast's days becomes text and it gains an argument; shout goes.
    source = SDK_SERVER.read_text()
    revised = source.replace(
        "def forecast(city: str, days: int = 1)", "def forecast(city: str, days: str, hourly: bool = False)"
    )
    revised = revised.replace(
        "return Forecast(city=city, celsius=20.0 + days", "return Forecast(city=city, celsius=20.0"
    )
    revised = revised.replace("@server.tool(structured_output=False)\ndef shout", "def shout")
    assert revised.count("def forecast(city: str, days: str, hourly") == 1 and "\ndef shout" in revised
    (tmp_path / "revised_server.py").write_text(revised)
    stale = mcpgen("stubs", f"{sys.executable} {tmp_path / 'revised_server.py'}", "-o", module, "--check")
    assert stale.returncode == 1, stale.stdout + stale.stderr
    assert stale.stdout.splitlines() == [
        "tool forecast: argument retyped: days: int -> str",
        "tool forecast: argument added: hourly: bool",
        "tool removed: shout (method shout)",
        "type ForecastInput: field retyped: days: int | UnsetType -> str",
        "type ForecastInput: field added: hourly: bool | UnsetType",
        "type removed: ShoutInput",
    ]
    assert f"{module} does not match sdk-peer 9.9.9: 6 change(s)" in " ".join(stale.stderr.split())
    assert (tmp_path / "sdk_client.py").read_text() == Path(module).read_text()  # --check wrote nothing


@pytest.mark.slow  # an HTTP server and two generations: over four seconds
async def test_stubs_over_http_in_both_eras_give_one_module(tmp_path: Path) -> None:
    with demo_http() as url:
        stateless = mcpgen("stubs", url, "-o", str(tmp_path / "demo_client.py"))
        assert stateless.returncode == 0, stateless.stderr
        handshake = mcpgen("stubs", url, "--era", "handshake", "-o", str(tmp_path / "demo_client.py"), "--check")
        assert handshake.returncode == 0, handshake.stdout + handshake.stderr  # the same description
        demo = load(tmp_path / "demo_client.py", "demo_client")
        with anyio.fail_after(TIMEOUT):
            async with demo.DemoClient(Client.http(url)) as server:
                total = await server.add(a=2, b=3)
                assert isinstance(total, demo.AddOutput) and msgspec.to_builtins(total) == {"result": 5}
                assert (await server.echo(text="hi")).content == [TextContent(text="hi")]


def test_stubs_cli_reports_bad_input_on_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"hello": 1}')
    done = cli("stubs", str(bad))
    assert done.exit_code == 2 and "not a server description" in done.stderr and "Traceback" not in done.stderr
    done = cli("stubs", str(bad), "--check")
    assert done.exit_code == 2 and "--check needs the module to check" in done.stderr
    gone = mcpgen("stubs", f"{sys.executable} -c 'import sys; sys.exit(3)'", "-o", str(tmp_path / "x.py"))
    assert gone.returncode == 2 and "cannot connect" in gone.stderr
    assert not (tmp_path / "x.py").exists()


# ---------------------------------------------------------------- slow: server-everything, mypy


@pytest.mark.slow
async def test_stubs_of_server_everything(tmp_path: Path, everything_command: list[str]) -> None:  # noqa: F811
    target = " ".join(everything_command)
    done = mcpgen("stubs", target, "-o", str(tmp_path / "everything_client.py"))
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "everything_client.py").read_text()
    assert text.startswith("# Generated by mcpgen") and '"mcp-servers/everything"' in text.splitlines()[0]
    every = load(tmp_path / "everything_client.py", "everything_client")
    data = "data:text/plain;base64,aGVsbG8gd29ybGQ="  # no network: the file to gzip is inline
    client = Client.stdio(
        everything_command[0], *everything_command[1:], elicitation=everything_elicitor, on_stderr=lambda line: None
    )
    called: set[str] = set()
    with anyio.fail_after(TIMEOUT):
        async with every.EverythingClient(client) as server:

            async def call(tool: str, **arguments: Any) -> Any:
                called.add(tool)
                return await getattr(server, every.TOOLS[tool])(**arguments)

            assert (await call("echo", message="hé")).content == [TextContent(text="Echo: hé")]
            annotated = await call("get-annotated-message", message_type="success", include_image=True)
            assert isinstance(annotated.content[-1], ImageContent)
            assert (await call("get-env")).content
            links = await call("get-resource-links", count=2)
            assert len(links.content) >= 2
            assert (await call("get-resource-reference", resource_type="Text", resource_id=2)).content
            weather = await call("get-structured-content", location="Chicago")
            assert isinstance(weather, every.GetStructuredContentOutput)
            assert (weather.temperature, weather.conditions, weather.humidity) == (36, "Light rain / drizzle", 82)
            summed = await call("get-sum", a=2, b=3)
            assert summed.content == [TextContent(text="The sum of 2 and 3 is 5.")]
            assert any(isinstance(block, ImageContent) for block in (await call("get-tiny-image")).content)
            gz = await call("gzip-file-as-resource", data=data, name="hello.txt.gz")
            assert gz.is_error is not True and gz.content
            # The task-only tool: the typed method asks for a task (task=True), which the
            # client runs as a 2025-11-25 task.
            assert client.tasks_offered
            report = await call("simulate-research-query", topic="mcp")
            assert "Research Report: mcp" in " ".join(b.text for b in report.content if hasattr(b, "text"))
            assert "Started" in " ".join(b.text for b in (await call("toggle-simulated-logging")).content)
            assert "Stopped" in " ".join(b.text for b in (await call("toggle-simulated-logging")).content)
            assert "Started" in " ".join(b.text for b in (await call("toggle-subscriber-updates")).content)
            assert "Stopped" in " ".join(b.text for b in (await call("toggle-subscriber-updates")).content)
            long = await call("trigger-long-running-operation", duration=0.2, steps=2)
            assert "completed" in long.content[0].text.lower()
            # Tools the server lists to a client that answers elicitation (as `mcpgen call`'s
            # client does on main since 6e63cd5): the module has them when its client did.
            if "trigger-elicitation-request" in every.TOOLS:
                form = await call("trigger-elicitation-request")
                assert "- Name: Ada" in " ".join(b.text for b in form.content if hasattr(b, "text"))
            if "trigger-url-elicitation" in every.TOOLS:
                url = await call("trigger-url-elicitation", url="https://example.com/login")
                assert "User completed the URL elicitation flow" in " ".join(
                    b.text for b in url.content if hasattr(b, "text")
                )
            assert called == set(every.TOOLS)
            for method in every.PROMPTS.values():
                kwargs = {"args-prompt": {"city": "Oslo"}, "completable-prompt": {"department": "Sales", "name": "Al"}}
                name = next(k for k, v in every.PROMPTS.items() if v == method)
                extra = {"resource_type": "Text", "resource_id": "1"} if name == "resource-prompt" else {}
                prompt = await getattr(server, method)(**kwargs.get(name, {}), **extra)
                assert prompt.messages
            text_resource = await server.read_dynamic_text_resource(resource_id="3")
            assert text_resource.contents[0].text.startswith("Resource 3:")
            assert (await server.read_dynamic_blob_resource(resource_id="3")).contents
    same = mcpgen("stubs", target, "-o", str(tmp_path / "everything_client.py"), "--check")
    assert same.returncode == 0, same.stdout + same.stderr


@pytest.mark.slow
def test_generated_modules_pass_mypy_strict(tmp_path: Path, everything_command: list[str]) -> None:  # noqa: F811
    (tmp_path / "constructs.py").write_text(render_stubs(build_stubs(description_from_json(CONSTRUCTS)), "x"))
    (tmp_path / "names.py").write_text(render_stubs(build_stubs(description_from_json(NAMES)), "x"))
    everything = mcpgen("stubs", " ".join(everything_command), "-o", str(tmp_path / "everything_client.py"))
    assert everything.returncode == 0, everything.stderr
    assert sdk_stubs(tmp_path).returncode == 0
    (tmp_path / "use.py").write_text(
        "from sdk_client import ForecastOutput, SdkPeerClient\n\n\n"
        "async def use(server: SdkPeerClient) -> float:\n"
        "    forecast: ForecastOutput = await server.forecast(city='Oslo', days=2)\n"
        "    return forecast.celsius\n"
    )
    files = ["constructs.py", "names.py", "everything_client.py", "sdk_client.py", "use.py"]
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", *files],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"MYPYPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        timeout=300,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # And a wrong use is caught: the types are real.
    (tmp_path / "use.py").write_text(
        "from sdk_client import SdkPeerClient\n\n\n"
        "async def use(server: SdkPeerClient) -> None:\n"
        "    await server.forecast(city=3)\n"
    )
    wrong = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "use.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"MYPYPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        timeout=300,
    )
    assert wrong.returncode == 1 and 'Argument "city" to "forecast"' in wrong.stdout
