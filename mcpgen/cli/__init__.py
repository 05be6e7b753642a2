"""The ``mcpgen`` command (typer): ``app.py`` registers the commands and holds ``main``; the
longer ones have modules of their own (``call`` with ``arguments``, ``show``, ``elicit``,
``task``, ``signin``, ``process`` and ``endpoint``; ``inspect``, ``dev``, ``apps`` with
``preview``, ``run``, ``install``, ``stubs``, ``registry``). ``sanitize`` is how any text a
server sent reaches the terminal; ``console`` the consoles and one-line errors.
``mcpgen.cli:main``, the console script's entry point, is loaded on first use (PEP 562), so
importing a submodule loads only what it names."""

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "main":
        import importlib

        return importlib.import_module("mcpgen.cli.app").main
    raise AttributeError(f"module 'mcpgen.cli' has no attribute {name!r}")
