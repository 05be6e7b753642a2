"""mcpgen's own version: one home, read by the package, the generator's headers, the scaffold's
pins and the client's ``clientInfo``."""

__version__ = "0.1.0"
