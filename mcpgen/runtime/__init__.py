"""The hand-written runtime: sessions, transports and the server/client API."""
