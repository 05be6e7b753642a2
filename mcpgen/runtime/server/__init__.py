"""The server side: ``server`` (``Server``: registration, decorators, the handlers, and
``Server.dispatch``, the one path to a handler), ``content`` (a handler's value as
protocol content), ``running`` (stdio, ASGI, uvicorn), ``era`` (which era a request is in),
``session`` (a handshake-era connection), ``context`` and ``threads`` (what a handler sees
and where a plain ``def`` runs), ``stateless`` (the 2026-07-28 front) with ``tasks``,
``listen``, ``input_required`` and ``params_merge``; ``http_server`` (with ``http_options``,
``http_sessions``, ``http_streams``), ``http_exchange`` and
``legacy_sse`` (the HTTP endpoints, through ``host.Host``); ``signature``, ``uri_template``,
``skills``, ``caching``."""
