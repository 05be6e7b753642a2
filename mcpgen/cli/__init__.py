"""The ``mcpgen`` command (typer): ``app.py`` holds the commands and ``main``; ``call``, ``task``,
``signin``, ``run`` and ``install`` the longer ones. ``mcpgen.cli:main``, the console
script's entry point, is loaded on first use (PEP 562), so importing a submodule loads only
what it names."""

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "main":
        import importlib

        return importlib.import_module("mcpgen.cli.app").main
    raise AttributeError(f"module 'mcpgen.cli' has no attribute {name!r}")
