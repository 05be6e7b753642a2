"""What the handshake era (2024-11-05 ... 2025-11-25) adds to the session engine, on
either side of a connection: the bindings that serve it, the ``initialize`` state, and
``ping``.

The engine (:mod:`mcpgen.runtime.jsonrpc.session`) knows no method by name; the handshake era
has two that are special to any side: ``ping`` is answered by the session itself before
everything else (a peer checks liveness with it, whatever the handlers are busy with),
and ``initialize`` is never cancelled (the spec forbids it). Both are gone from the
stateless era, whose requests the sides hand to their own front instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from mcpgen.protocol import v2025_11_25 as bindings
from mcpgen.runtime.jsonrpc.kernel import Route
from mcpgen.runtime.jsonrpc.session import Session

if TYPE_CHECKING:
    from mcpgen.protocol.v2025_11_25 import MethodSpec

HandshakeState = Literal["new", "initializing", "ready"]


def _pong(params: Any) -> dict[str, Any]:
    return {}


async def _pong_later(params: Any) -> dict[str, Any]:
    return {}


# ping is answered by the session itself, on the spot where the transport allows, past the
# concurrency bound and whatever the handlers are busy with (a peer checks liveness with it).
PING = Route(_pong_later, _pong, dict, limited=False)


class HandshakeSession(Session):
    """A connection that speaks (or starts out in) the handshake era.

    ``state`` is the handshake's progress: "new" until ``initialize`` is under way,
    "initializing" until the client confirms, then "ready". Before the handshake the
    peer's capabilities are unknown, so outgoing requests are not checked against them.
    """

    unqueued = frozenset({"ping"})  # liveness first
    uncancellable = frozenset({"initialize"})

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.state: HandshakeState = "new"
        if self.role == "server":
            self.incoming, self.outgoing = bindings.CLIENT_TO_SERVER, bindings.SERVER_TO_CLIENT
        else:
            self.incoming, self.outgoing = bindings.SERVER_TO_CLIENT, bindings.CLIENT_TO_SERVER
        self.decoder = bindings.decoder

    def capabilities_known(self) -> bool:
        return self.state != "new"

    def make_route(self, spec: MethodSpec) -> Route:
        if spec.method == "ping":
            return PING
        return super().make_route(spec)


__all__ = ["HandshakeSession", "HandshakeState"]
