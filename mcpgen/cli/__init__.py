"""The ``mcpgen`` command (typer): ``app.py`` holds the commands and ``main``; ``call``, ``task``,
``signin``, ``run`` and ``install`` the longer ones. Imports nothing, so importing a submodule
loads only what it names."""
