"""The committed bindings packages load their non-type modules on first use (PEP 562).

Importing a package gives its schema types; the client and server stubs, the method table
and the codec load when one of their names is first used, so a server never imports the
client's stubs (and the reverse). What ``from package import X`` gives is unchanged.
Each check runs in a fresh interpreter, where nothing has imported the bindings yet.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

PACKAGES = ["mcpgen.protocol.v2025_11_25", "mcpgen.protocol.v2026_07_28"]
SUBMODULES = ("client", "codec", "methods", "server")


def loaded_after(code: str, package: str) -> set[str]:
    """The submodules of ``package`` loaded once ``code`` has run in a fresh interpreter."""
    probe = f"{code}\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    modules = json.loads(done.stdout.splitlines()[-1])
    return {m.rsplit(".", 1)[1] for m in modules if m.startswith(package + ".")} & set(SUBMODULES)


@pytest.mark.parametrize("package", PACKAGES)
def test_importing_a_package_loads_only_its_types(package: str) -> None:
    assert loaded_after(f"import {package}; {package}.CallToolResult", package) == set()


@pytest.mark.parametrize("package", PACKAGES)
def test_a_name_loads_the_module_that_defines_it(package: str) -> None:
    assert loaded_after(f"from {package} import ServerHandlers", package) == {"server"}
    assert loaded_after(f"from {package} import decoder, CLIENT_TO_SERVER", package) == {"codec", "methods"}


def test_a_server_does_not_load_the_client_stubs() -> None:
    # mcpgen.generated (the handshake era's old name) hands names over one by one too.
    assert "client" not in loaded_after("import mcpgen.runtime.server.server", PACKAGES[0])


@pytest.mark.parametrize("package", PACKAGES)
def test_every_exported_name_resolves_to_its_module_object(package: str) -> None:
    code = f"""
import importlib
p = importlib.import_module({package!r})
for name in p.__all__:
    value = getattr(p, name)
    for sub in {SUBMODULES!r} + ("types",):
        m = importlib.import_module({package!r} + "." + sub)
        if name in vars(m):
            assert vars(m)[name] is value, name
    assert name in dir(p), name
try:
    p.NoSuchName
except AttributeError as exc:
    assert "NoSuchName" in str(exc)
else:
    raise AssertionError("an unknown name resolved")
ns = {{}}
exec("from {package} import *", ns)
assert set(p.__all__) <= set(ns), set(p.__all__) - set(ns)
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "ok", done.stderr
