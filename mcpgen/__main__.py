"""``python -m mcpgen``: the ``mcpgen`` command (host configs written by ``mcpgen install``
start servers this way, with the Python that has mcpgen installed)."""

from mcpgen.cli.app import main

main()
