"""The hand-written runtime: the JSON-RPC engine, both protocol eras, the transports, auth,
and the ``Server`` / ``Client`` users hold. Users import from :mod:`mcpgen`, never from here.

Layers, bottom first; every import (module level, ``TYPE_CHECKING`` or inside a function)
points down or stays in its package, nothing forms a cycle, and ``tests/project/test_layers.py``
holds all of it::

    server/      client/        the two sides: never import each other
        middleware/             what wraps requests on either side: the chain, the
                                built-ins, OpenTelemetry (imported only when configured)
        auth/                   OAuth: the client's flows, the resource server's checks
    transports/  stores/        stdio, SSE, ASGI, HTTP/1.1, Streamable HTTP client;
                                event, task, session stores (memory, Redis): independent
        shared/                 what both sides use: _meta keys and extension ids (meta),
                                the handshake, HTTP header rules, JSON Schema, URI templates, files, skills
        jsonrpc/                the era-neutral engine: framing, Session, Transport
    errors.py  versions.py  extras.py      error codes; the one module that orders
                                           protocol versions; optional dependencies

Below them all: the generated bindings (``mcpgen.protocol``, ``mcpgen.generated``). Where a
lower module must call up it declares a ``Protocol`` of exactly what it calls
(``server.host.Host``, ``server.stateless.FrontHost``, ``auth.bearer.ScopeSource``,
``jsonrpc.transport.Servable``), which the upper class satisfies structurally.

The one path every request takes, for what wraps requests (middleware, tracing):

* server: :meth:`mcpgen.runtime.server.server.Server.dispatch` -- every request of either
  era, over every transport, reaches its handler through it (the handshake era's
  ``ServerSession.call_handler``, the stateless front's ``StatelessServer.dispatch``, a
  task's tool call), with ``current_request`` set. Tools answered on the spot are found
  through ``Server.immediate_handler``, which offers none once ``dispatch`` is overridden.
  Which era a request is in is decided once, by :func:`mcpgen.runtime.server.era.request_era`.
* client: :meth:`mcpgen.runtime.client.session.ClientSession.send_request` -- every
  outgoing request of either era; the era of a connection is planned by
  :mod:`mcpgen.runtime.client.era`.
"""
