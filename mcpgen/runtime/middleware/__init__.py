"""Middleware: code that wraps every request a server serves or a client sends.

``chain`` holds the API (:class:`~mcpgen.runtime.middleware.chain.Middleware`, the
:class:`~mcpgen.runtime.middleware.chain.Call` it sees, the chain that runs them),
``builtin`` the ones a user expects (timing and logging, a per-principal rate limit, a
response-size limit), ``otel`` OpenTelemetry tracing and metrics per the MCP semantic
conventions (``opentelemetry-api`` imported only when one is made).

The layer sits above ``auth`` and below ``server`` and ``client``: both sides build their
chain from it, and nothing here imports either side. A side with no middleware never
imports this package.
"""
