"""Byte carriers: stdio (both sides), SSE framing, ASGI helpers, the HTTP/1.1 client and
uvicorn's one-write protocol, the Streamable HTTP client and the legacy HTTP+SSE client. No
module here knows the server or the client above it."""
