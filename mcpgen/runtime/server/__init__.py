"""The server side: ``server`` (``Server``: decorators, configuration, ``run``), ``catalog``
(what a server offers), ``handlers`` (the protocol's handlers, which ``Server`` inherits),
``features`` (what serves a server sees: routes with their middleware, capabilities,
extensions, the stateless front, tasks), ``lifespan``; ``session`` (a connection: the
handshake era's admission), ``stateless`` (the 2026-07-28 era's admission and finishing) with
``tasks``, ``listen``, ``input_required`` and ``params_merge``; ``running`` (stdio, ASGI,
uvicorn over TCP or a Unix socket), ``http_server``, ``http_exchange`` and ``legacy_sse`` (the
HTTP endpoints, through ``host.Host``); ``content``, ``context``, ``threads``, ``era``,
``signature``, ``registry``, ``skills``, ``apps``, ``caching``. The kernel every request goes
through is :mod:`mcpgen.runtime.jsonrpc.kernel`."""
