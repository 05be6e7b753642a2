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
        jsonrpc/                the era-neutral engine: framing, the Session (one
                                connection), the kernel (one request), Transport contracts
    errors.py  versions.py  extras.py      error codes; the one module that orders
                                           protocol versions; optional dependencies

Below them all: the generated bindings (``mcpgen.protocol``; the runtime imports them from
there, ``mcpgen.generated`` is the users' name for the handshake era's). Where a lower module
must call up it declares a ``Protocol`` of exactly what it calls (``server.host.Host``,
``server.stateless.FrontHost``, ``auth.bearer.ScopeSource``, ``jsonrpc.transport.Servable``),
which the upper class satisfies structurally.

The one path every request takes: :mod:`mcpgen.runtime.jsonrpc.kernel`. A connection (or an
HTTP POST of the stateless era) admits a request by its era's rules (the handshake era's in
``jsonrpc.session`` and ``server.session``, the stateless era's in ``server.stateless``), and
``kernel.serve`` serves it: the bound and the line, the answer on the spot, the task, the
handler timeout, the result check, the error, the answer. The handler it reaches is the
method's route, made once per method with the middleware around it
(``server.features.Features.route``; on a client, ``client.session.ClientSession.make_route``),
so what wraps requests sees every one, in both eras, on both sides. Which era a request is in
is decided once, by :func:`mcpgen.runtime.server.era.request_era`; a client's outgoing
requests all go through :meth:`mcpgen.runtime.client.session.ClientSession.send_request`.
"""
