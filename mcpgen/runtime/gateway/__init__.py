"""Servers in front of other servers: :class:`~mcpgen.runtime.gateway.proxy.Proxy` (one backend
served as a Server of its own, whatever its transport and protocol era) and the gateway
(:mod:`~mcpgen.runtime.gateway.gateway`: many backends behind one endpoint, ``mcpgen
gateway``). Above the server and the client, which it uses both of.
"""
