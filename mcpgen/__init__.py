"""mcpgen: typed, fast Python bindings and runtime for the Model Context Protocol."""

__version__ = "0.1.0"
