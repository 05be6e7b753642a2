"""Each optional feature's extra declares every distribution the feature loads.

A dependency that the test venv happens to have through another package (python-multipart
comes with the official SDK) hides a missing one: `mcpgen.testing.AuthServer` answered its
token endpoint with a 500 in a venv made from `mcpgen[testing]` alone. So the check is
made against the extra's own closure, from the installed metadata, not against the venv.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata

from packaging.requirements import Requirement

from tests.conftest import ROOT

# The token endpoint's whole path (a form POST, client credentials), then the distributions
# of every module that got loaded.
EXERCISE = """
import sys
before = set(sys.modules)  # what the interpreter loads by itself (site hooks) is no one's dependency
import json, httpx
from importlib import metadata
from mcpgen.testing import AuthServer
with AuthServer() as auth:
    auth.add_client("svc", "secret", scope="mcp")
    answer = httpx.post(auth.issuer + "/token", data={"grant_type": "client_credentials", "scope": "mcp"},
                        auth=("svc", "secret"))
    assert answer.status_code == 200, (answer.status_code, answer.text)
names = metadata.packages_distributions()
used = {dist for module in set(sys.modules) - before for dist in names.get(module.partition(".")[0], [])}
print(json.dumps(sorted(used)))
"""


def closure(distribution: str, extras: frozenset[str]) -> set[str]:
    """``distribution`` with ``extras`` and everything it requires, by canonical name."""
    done: set[tuple[str, frozenset[str]]] = set()
    todo = [(distribution, extras)]
    while todo:
        name, wanted = todo.pop()
        if (name.lower().replace("_", "-"), wanted) in done:
            continue
        done.add((name.lower().replace("_", "-"), wanted))
        environments = [{"extra": extra} for extra in wanted] or [{"extra": ""}]
        for line in metadata.requires(name) or []:
            requirement = Requirement(line)
            if requirement.marker is None or any(requirement.marker.evaluate(env) for env in environments):
                todo.append((requirement.name, frozenset(requirement.extras)))
    return {name for name, _ in done}


# uvicorn imports these whenever they are installed (its [standard] extra: file watching for
# --reload, a WebSocket protocol), needed or not; the test extra has them through fastmcp.
UVICORN_OPPORTUNISTIC = {"watchfiles", "websockets"}


def test_the_testing_extra_declares_what_the_auth_server_loads() -> None:
    done = subprocess.run([sys.executable, "-c", EXERCISE], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    used = {name.lower().replace("_", "-") for name in json.loads(done.stdout)}
    declared = closure("mcpgen", frozenset({"testing"}))
    missing = used - declared - {"mcpgen"} - UVICORN_OPPORTUNISTIC
    assert not missing, f"mcpgen[testing] does not declare {sorted(missing)}"
    assert "python-multipart" in used  # the form parser the token endpoint needs


def test_the_auth_scaffold_declares_the_form_parser() -> None:
    snippet = (ROOT / "mcpgen" / "scaffold" / "template" / "snippets" / "auth" / "auth_test_deps.md").read_text()
    assert '"python-multipart>=' in snippet


def test_a_name_whose_extra_is_missing_says_which_extra() -> None:
    """`from mcpgen import BearerAuth` without the auth extra: the install hint, not a
    ModuleNotFoundError from deep inside (httpx hidden here as if not installed)."""
    code = (
        "import sys\n"
        "sys.modules['httpx'] = None\n"
        "try:\n"
        "    from mcpgen import BearerAuth\n"
        "except ImportError as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    # The command installs the extra the way this mcpgen came (here: its checkout, editable).
    assert done.stdout.strip() == (
        f"MissingExtra BearerAuth needs the auth extra (httpx is missing): pip install -e '{ROOT}[auth]'"
    ), done.stdout + done.stderr


def _pins() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[name.strip().lower().replace("_", "-")] = version.strip()
    return pins


def test_constraints_pin_every_test_dependency_within_the_pyproject_bounds() -> None:
    """CI installs with constraints.txt: every distribution the test extra brings is pinned
    there (else a fresh clone resolves it anew), and each pin is one the pyproject allows
    (else the lock and the requirements drifted apart). `.ci/newest --lock` refreshes it."""
    pins = _pins()
    needed = closure("mcpgen", frozenset({"test"})) - {"mcpgen"}
    unpinned = sorted(name for name in needed if name not in pins)
    assert not unpinned, f"constraints.txt pins none of {unpinned}: run .ci/newest --lock"
    for line in metadata.requires("mcpgen") or []:
        requirement = Requirement(line)
        pinned = pins.get(requirement.name.lower().replace("_", "-"))
        if pinned is not None:
            assert requirement.specifier.contains(pinned, prereleases=True), (requirement, pinned)
