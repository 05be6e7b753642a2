"""The JSON-RPC 2.0 engine, knowing no MCP era: frames (``framing``), the session that
matches requests to responses and runs handlers (``session``), what it needs of a transport
(``transport``), and capability lookups by path (``capabilities``)."""
