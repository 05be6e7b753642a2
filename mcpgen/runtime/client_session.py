"""The client side of a session: the initialize handshake."""

from __future__ import annotations

from mcpgen.generated import (
    ClientCalls,
    ClientCapabilities,
    Implementation,
    InitializeRequestParams,
    InitializeResult,
)
from mcpgen.runtime.capabilities import Declared
from mcpgen.runtime.errors import McpError
from mcpgen.runtime.session import Session
from mcpgen.runtime.versions import LATEST, era_of


class UnsupportedVersion(McpError):
    def __init__(self, version: str) -> None:
        super().__init__(-32602, f"the server chose protocol version {version!r}, which mcpgen does not speak")
        self.version = version


class ClientSession(Session, ClientCalls):
    """A connection to one server; :meth:`start` performs the handshake."""

    role = "client"
    server_info: Implementation | None = None
    instructions: str | None = None

    async def start(
        self, capabilities: ClientCapabilities, client_info: Implementation, version: str = LATEST
    ) -> InitializeResult:
        """Send ``initialize``, check the version the server picked, send ``initialized``."""
        self.own_caps = Declared(capabilities)
        params = InitializeRequestParams(protocol_version=version, capabilities=capabilities, client_info=client_info)
        result = await self.send_request("initialize", params, InitializeResult)
        if era_of(result.protocol_version) != "handshake":
            await self.close()
            raise UnsupportedVersion(result.protocol_version)
        self.protocol_version = result.protocol_version
        self.peer_caps = Declared(result.capabilities)
        self.server_info = result.server_info
        self.instructions = result.instructions or None
        self.state = "ready"
        started = getattr(self.transport, "started", None)
        if started is not None:  # e.g. HTTP: send the version header from now on
            await started(result.protocol_version)
        await self.send_notification("notifications/initialized", {})
        initialized = getattr(self.transport, "initialized", None)
        if initialized is not None:  # e.g. HTTP: open the GET stream
            await initialized()
        return result
