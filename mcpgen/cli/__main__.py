"""``python -m mcpgen.cli``: the ``mcpgen`` command."""

from mcpgen.cli.app import main

main()
