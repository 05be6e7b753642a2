"""OAuth 2.1 for MCP. The client's side: ``oauth`` (flows, discovery, refresh), ``dpop``,
``challenge`` (WWW-Authenticate), ``token_files``. The resource server's side: ``bearer``
(``BearerAuth``), ``token_verify``, ``dpop_verify``, ``info`` (the verified token of the
request being served)."""
