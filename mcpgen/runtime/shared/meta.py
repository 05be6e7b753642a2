"""Wire names both sides use that the schema does not spell as types: the ``_meta`` keys of
the stateless era (2026-07-28) and the identifiers of the extensions mcpgen speaks.

One home for each, so the client never imports the server's modules for a constant and no
key is spelt twice."""

META_VERSION = "io.modelcontextprotocol/protocolVersion"
"""The protocol version a stateless-era request is made in (its presence marks the era)."""
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
META_SUBSCRIPTION = "io.modelcontextprotocol/subscriptionId"
"""The id of the ``subscriptions/listen`` request a notification belongs to."""

META_INPUT_KEY = "dev.mcpgen/inputKey"
"""The key a handler gave its question (``ctx.elicit(..., key=...)``), carried in the
``_meta`` of the handshake era's elicitation, sampling and roots requests, where there is no
InputRequiredResult to key it: a gateway turning them into one keeps the author's names."""

META_REQUIRED_CAPABILITIES = "dev.mcpgen/requiredCapabilities"
"""On a handshake-era tool's error result: the client capabilities it needed and the client
did not declare (a gateway answers a stateless-era client with -32021 naming them)."""

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
"""The tasks extension (SEP-2663), under ``capabilities.extensions``."""
SKILLS_EXTENSION = "io.modelcontextprotocol/skills"
"""The skills extension, under ``capabilities.extensions``."""
RESERVED_PREFIX = "io.modelcontextprotocol/"
"""Keys under this prefix belong to MCP and its extensions."""
UI_EXTENSION = "io.modelcontextprotocol/ui"
"""MCP Apps (SEP-1865): interactive interfaces a tool links as ``ui://`` resources."""
UI_MIME = "text/html;profile=mcp-app"
"""The MIME type of an MCP Apps interface (HTML the host renders in a sandboxed iframe)."""
UI_SCHEME = "ui://"
"""The URI scheme every MCP Apps interface resource uses."""
