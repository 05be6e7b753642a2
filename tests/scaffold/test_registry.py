"""`mcpgen registry init / validate` and the server.json `mcpgen new` writes, checked against
our copy of the MCP Registry's server.json schema (2025-12-11) with jsonschema-rs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcpgen.scaffold import create_project
from mcpgen.scaffold import registry as entry
from mcpgen.schema import HERE
from tests.paths import ROOT


def mcpgen(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcpgen", *args], capture_output=True, text=True, cwd=cwd, timeout=60)


def valid_entry() -> dict[str, Any]:
    return {
        "$schema": entry.SCHEMA_URL,
        "name": "io.github.alice/weather",
        "description": "Weather forecasts",
        "version": "1.0.2",
        "packages": [
            {"registryType": "pypi", "identifier": "weather", "version": "1.0.2", "transport": {"type": "stdio"}}
        ],
        "remotes": [{"type": "streamable-http", "url": "https://weather.example.com/mcp"}],
    }


def test_the_shipped_schema_is_the_registry_version_the_entries_cite() -> None:
    schema = json.loads((HERE / "registry-server-2025-12-11.json").read_text())
    assert schema["$id"] == entry.SCHEMA_URL
    assert schema["$ref"] == "#/definitions/ServerDetail"
    # Our copy of the structure: no description (or example) text of the registry's.
    annotations: list[str] = []

    def walk(node: Any, parent: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("description", "example", "examples", "title") and parent != "properties":
                    annotations.append(key)
                walk(value, key)
        elif isinstance(node, list):
            for item in node:
                walk(item, parent)

    walk(schema, "")
    assert annotations == []


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda d: d.pop("name"), '$: "name" is a required property'),
        (lambda d: d.update(name="weather"), '$.name: "weather" does not match'),
        (lambda d: d.update(description="x" * 101), "$.description: "),
        (lambda d: d["packages"][0].update(version="latest"), "$.packages[0].version: "),
        (lambda d: d["packages"][0].update(transport={"type": "streamable-http"}), "$.packages[0].transport: "),
        (lambda d: d["remotes"][0].update(url="ftp://x"), "$.remotes[0]: "),
        (
            lambda d: d["packages"][0].update(packageArguments=[{"type": "positional"}]),
            "$.packages[0].packageArguments[0]: ",
        ),
        (lambda d: d["packages"][0].update(fileSha256="XYZ"), '$.packages[0].fileSha256: "XYZ" does not match'),
    ],
)
def test_validate_names_each_problem(change: Any, problem: str) -> None:
    assert entry.validate(valid_entry()) == []
    document = valid_entry()
    change(document)
    problems = entry.validate(document)
    assert any(p.startswith(problem) for p in problems), problems


@pytest.mark.parametrize(("transport", "auth"), [("stdio", False), ("http", False), ("http", True)])
def test_a_new_project_has_a_valid_server_json_and_the_mcp_name_line(
    tmp_path: Path, transport: Any, auth: bool
) -> None:
    create_project("weather-tools", tmp_path, transport=transport, auth=auth)
    document = json.loads((tmp_path / "server.json").read_text())
    assert entry.validate(document) == []
    assert document["name"] == "io.github.YOUR-GITHUB-USER/weather-tools"
    assert document["version"] == "0.1.0" and document["description"] == "An MCP server built with mcpgen"
    (package,) = document["packages"]
    assert (package["registryType"], package["identifier"], package["version"]) == ("pypi", "weather-tools", "0.1.0")
    expected = (
        {"type": "stdio"} if transport == "stdio" else {"type": "streamable-http", "url": "http://127.0.0.1:8000/mcp"}
    )
    assert package["transport"] == expected
    names = [v["name"] for v in package.get("environmentVariables", [])]
    assert names == (["MCP_ISSUER", "MCP_RESOURCE", "MCP_SCOPES"] if auth else [])
    readme = (tmp_path / "README.md").read_text()
    assert readme.count("mcp-name:") == 1
    assert readme.startswith("# weather-tools\n\n<!-- mcp-name: io.github.YOUR-GITHUB-USER/weather-tools -->\n\n")
    # The CLI agrees that the file fits the schema, and says it is not ready to publish:
    # its name is still the placeholder.
    done = mcpgen("registry", "validate", str(tmp_path / "server.json"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines() == [
        "$.name: 'io.github.YOUR-GITHUB-USER/weather-tools' is the placeholder namespace mcpgen new writes: "
        "use yours (mcpgen registry init --name io.github.<you>/weather-tools)"
    ]


def test_registry_init_from_pyproject_then_after_a_version_bump(tmp_path: Path) -> None:
    create_project("weather", tmp_path)
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text()
        .replace('version = "0.1.0"', 'version = "0.2.0"')
        .replace('description = "An MCP server built with mcpgen"', 'description = "Forecasts for any city"')
    )
    done = mcpgen("registry", "init", str(tmp_path), "--name", "io.github.alice/weather")
    assert done.returncode == 0, done.stderr
    assert "wrote" in done.stdout and "io.github.alice/weather 0.2.0 (stdio)" in done.stdout
    document = json.loads((tmp_path / "server.json").read_text())
    assert (document["name"], document["version"], document["description"]) == (
        "io.github.alice/weather",
        "0.2.0",
        "Forecasts for any city",
    )
    assert document["packages"][0]["version"] == "0.2.0"
    readme = (tmp_path / "README.md").read_text()
    assert readme.count("mcp-name:") == 1 and "<!-- mcp-name: io.github.alice/weather -->" in readme
    # Run again without --name: the name in server.json stays.
    again = mcpgen("registry", "init", str(tmp_path))
    assert (
        again.returncode == 0
        and json.loads((tmp_path / "server.json").read_text())["name"] == "io.github.alice/weather"
    )
    assert "placeholder" not in again.stderr
    # --name went into pyproject.toml too (comments and the rest kept), so it sticks.
    text = pyproject.read_text()
    assert 'name = "io.github.alice/weather"' in text and "YOUR-GITHUB-USER" not in text
    assert "# `mcpgen registry init` writes server.json" in text
    assert mcpgen("registry", "validate", str(tmp_path / "server.json")).returncode == 0
    (tmp_path / "server.json").unlink()
    third = mcpgen("registry", "init", str(tmp_path))
    assert (
        third.returncode == 0
        and json.loads((tmp_path / "server.json").read_text())["name"] == "io.github.alice/weather"
    )


@pytest.mark.parametrize(
    "pyproject",
    [
        '[project]\nname = "w"\n',  # no table
        '[project]\nname = "w"\n\n[tool.mcpgen.registry]\ntransport = "stdio"\n',  # a table without a name
        '[tool.mcpgen.registry]\n  name = "io.github.old/w"  # mine\n[other]\nname = "kept"\n',
    ],
)
def test_the_registry_name_is_set_in_pyproject_whatever_its_shape(pyproject: str) -> None:
    import tomllib

    text = entry.with_registry_name(pyproject, 'io.github.new/w"q')
    data = tomllib.loads(text)
    assert data["tool"]["mcpgen"]["registry"]["name"] == 'io.github.new/w"q'
    assert data.get("other", {}).get("name", "kept") == "kept"
    assert data.get("project", {}).get("name", "w") == "w"


def test_registry_errors_are_one_line(tmp_path: Path) -> None:
    missing = mcpgen("registry", "init", str(tmp_path))
    assert missing.returncode == 2 and "cannot read" in missing.stderr and "Traceback" not in missing.stderr
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "1"\n')
    bad_name = mcpgen("registry", "init", str(tmp_path), "--name", "no-slash")
    assert bad_name.returncode == 2 and "is not a registry name" in bad_name.stderr
    broken = tmp_path / "server.json"
    broken.write_text(json.dumps({**valid_entry(), "name": "nope"}))
    invalid = mcpgen("registry", "validate", str(broken))
    assert invalid.returncode == 1
    assert invalid.stdout.startswith('$.name: "nope" does not match') and "1 problem(s)" in invalid.stderr
    broken.write_text("{")
    assert mcpgen("registry", "validate", str(broken)).returncode == 2
