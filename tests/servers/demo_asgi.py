"""The demo server as an importable stateless ASGI app, for multi-worker uvicorn."""

from tests.servers.demo import server

app = server.http_app(sessionless=True)
