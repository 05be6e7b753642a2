"""Slow and numerous connections against ``server.run("http")``'s protocol (security issue,
point 9): a request whose head or body trickles in is cut off after its timeout, and past
``max_connections`` a new connection is closed at once, so half-sent requests cannot hold
the server's file descriptors while legitimate clients are refused. uvicorn over loopback,
with real sockets.

The timeouts are deadlines, not idle timers: a client that sends a byte now and then, well
past the deadline, is still cut off by it (issue 36, point 23: a test that stopped
trickling before the deadline could not tell a deadline from a timer that restarts on
every byte)."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

import httpx

from mcpgen.runtime.transports.http_protocol import protocol_class
from tests.http_server import echo_server, serving_in_thread

HEAD = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"


def closed_within(sock: socket.socket, seconds: float) -> float | None:
    """How long until the server closed ``sock`` (None if it did not within ``seconds``)."""
    sock.settimeout(seconds)
    started = time.monotonic()
    try:
        while sock.recv(4096):
            pass
    except TimeoutError:
        return None
    except ConnectionResetError:
        pass
    return time.monotonic() - started


def trickled_until_closed(
    sock: socket.socket, more: Callable[[int], bytes], every: float = 0.1, for_at_most: float = 5.0
) -> float | None:
    """Send ``more(n)`` every ``every`` seconds, for ``for_at_most`` seconds at most: how long
    until the server closed the connection (None if it was open all that time)."""
    started = time.monotonic()
    sock.settimeout(every)
    n = 0
    while time.monotonic() - started < for_at_most:
        try:
            if sock.recv(4096) == b"":
                return time.monotonic() - started
        except TimeoutError:
            pass
        except ConnectionResetError:
            return time.monotonic() - started
        try:
            sock.sendall(more(n))
        except (BrokenPipeError, ConnectionResetError):
            return time.monotonic() - started
        n += 1
    return None


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=5)


def ping(port: int) -> int:
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"accept": "application/json, text/event-stream"}
    return httpx.post(f"http://127.0.0.1:{port}/mcp", json=body, headers=headers, timeout=5).status_code


def test_a_head_that_trickles_in_is_cut_off() -> None:
    guarded = protocol_class(header_timeout=0.5, body_timeout=5)
    with serving_in_thread(echo_server().http_app(), http=guarded) as port:
        slow = connect(port)
        slow.sendall(HEAD)
        # A header line every 0.1 s for up to 5 s: never the end of the head, and never a
        # pause the timer could see. The deadline (0.5 s, checked every 0.25 s) ends it.
        waited = trickled_until_closed(slow, lambda n: b"X-Slow-%d: 1\r\n" % n)
        assert waited is not None and waited < 2.0, waited
        assert ping(port) in (200, 400)  # the server serves others (400: a ping before initialize is fine)


def test_a_body_that_never_arrives_is_cut_off() -> None:
    guarded = protocol_class(header_timeout=5, body_timeout=0.5)
    with serving_in_thread(echo_server().http_app(), http=guarded) as port:
        slow = connect(port)
        slow.sendall(HEAD + b"Content-Length: 100\r\n\r\n" + b'{"jsonrpc":')
        waited = closed_within(slow, 5)
        assert waited is not None and waited < 3


def test_a_body_that_trickles_in_is_cut_off() -> None:
    guarded = protocol_class(header_timeout=5, body_timeout=0.5)
    with serving_in_thread(echo_server().http_app(), http=guarded) as port:
        slow = connect(port)
        slow.sendall(HEAD + b"Content-Length: 100000\r\n\r\n" + b'{"jsonrpc":')
        waited = trickled_until_closed(slow, lambda n: b" ")  # one byte every 0.1 s
        assert waited is not None and waited < 2.0, waited


def test_past_max_connections_a_new_connection_is_closed_at_once() -> None:
    guarded = protocol_class(header_timeout=30, body_timeout=30, max_connections=5)
    with serving_in_thread(echo_server().http_app(), http=guarded) as port:
        held = [connect(port) for _ in range(5)]
        for sock in held:
            sock.sendall(HEAD)  # half-sent requests
        time.sleep(0.2)
        extra = connect(port)
        waited = closed_within(extra, 3)
        assert waited is not None and waited < 1
        for sock in held:
            sock.close()
        time.sleep(0.2)
        assert ping(port) in (200, 400)  # room again


def test_a_kept_alive_connection_is_guarded_on_its_next_request() -> None:
    guarded = protocol_class(header_timeout=0.3, body_timeout=0.3)
    with serving_in_thread(echo_server().http_app(), http=guarded) as port:
        sock = connect(port)
        request = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
        sock.sendall(HEAD + b"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n" % len(request))
        sock.sendall(request)
        sock.settimeout(3)
        assert sock.recv(4096).startswith(b"HTTP/1.1")  # the first request is answered
        sock.sendall(HEAD)  # the next one starts, and trickles
        waited = trickled_until_closed(sock, lambda n: b"X-Slow-%d: 1\r\n" % n)
        assert waited is not None and waited < 2.0, waited


def test_a_head_longer_than_max_head_is_refused_431_and_closed() -> None:
    """Issue 36.11: httptools keeps an unfinished head whole; past 64 KiB it is refused."""
    with serving_in_thread(echo_server().http_app(), http=protocol_class()) as port:
        big = connect(port)
        big.sendall(HEAD)
        line = b"X-Filler: " + b"a" * 1000 + b"\r\n"
        try:
            big.sendall(line * 128)  # 128 KB of a head that has not ended (and will not)
        except (BrokenPipeError, ConnectionResetError):
            pass  # closed on us mid-send: the refusal came first
        big.settimeout(5)  # well inside the 10 s head timeout: refused for its size, not its pace
        answer = b""
        try:
            while chunk := big.recv(4096):
                answer += chunk
        except ConnectionResetError:
            pass
        assert answer.startswith(b"HTTP/1.1 431"), answer[:100]
        # A head just under the limit is served as any other, and so is everyone else.
        near = HEAD + b"X-Filler: " + b"a" * (60 * 1024) + b"\r\nContent-Length: 2\r\n\r\n{}"
        ok = connect(port)
        ok.sendall(near)
        ok.settimeout(5)
        assert ok.recv(4096).startswith(b"HTTP/1.1 4")  # read: 400/406 for a body that is no request
        assert ping(port) in (200, 400)
