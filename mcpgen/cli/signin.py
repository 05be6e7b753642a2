"""`mcpgen call URL` signs the user in when the server answers 401: the OAuth authorization
code flow with PKCE in the user's browser, the redirect caught by a listener on loopback
(RFC 8252 section 7.3), tokens kept per issuer in the user's config directory
(:class:`~mcpgen.runtime.auth.token_files.FileTokenStorage`) and refreshed when they expire.

The sign-in happens outside any MCP request: a request has a timeout (``--timeout``, and the
era probe's few seconds), and a person at a browser takes longer. So while the Client runs,
the OAuthClient may refresh a token but never sends anyone to a browser; when it would
have to, it raises :class:`SignInRequired`, the caller runs :func:`sign_in` (one POST to the
server through the same OAuthClient, which walks the whole flow, as long as it takes) and
opens the Client again, now with a token.
"""

from __future__ import annotations

import asyncio
import http.server
import threading
import webbrowser
from collections.abc import Callable
from typing import Any

import httpx

from mcpgen.runtime.auth.oauth import OAuthClient, OAuthError
from mcpgen.runtime.auth.token_files import FileTokenStorage
from mcpgen.runtime.shared.meta import META_VERSION
from mcpgen.runtime.versions import LATEST_STATELESS

CALLBACK_PATH = "/callback"
SIGN_IN_SECONDS = 300.0  # how long the listener waits for the browser to come back
_PAGE = (
    "<!doctype html><meta charset=utf-8><title>mcpgen</title>"
    "<p>{message} You can close this window and return to the terminal.</p>"
)


class SignInRequired(OAuthError):
    """The server wants a user to sign in, which needs a browser and time: see :func:`sign_in`."""


class _Server(http.server.HTTPServer):
    # Set by the waiting listener: hands the redirect URL over to the event loop.
    deliver: Callable[[str], None]


class _Listener:
    """One loopback HTTP listener on 127.0.0.1 that waits for the authorization server's
    redirect (stdlib http.server in a thread: one request to serve, nothing to tune)."""

    def __init__(self, port: int = 0) -> None:
        try:
            self.server = _Server(("127.0.0.1", port), _Handler)
        except OSError:
            if port == 0:
                raise
            self.server = _Server(("127.0.0.1", 0), _Handler)  # the usual port is taken
        self.port: int = self.server.server_port
        self.redirect_uri = f"http://127.0.0.1:{self.port}{CALLBACK_PATH}"
        self._thread: threading.Thread | None = None

    async def wait(self, timeout: float) -> str:
        """Serve until the redirect comes in; the full URL it was sent to."""
        loop = asyncio.get_running_loop()
        arrived: asyncio.Future[str] = loop.create_future()

        def arrive(url: str) -> None:
            if not arrived.done():
                arrived.set_result(url)

        def deliver(url: str) -> None:  # called in the listener's thread
            loop.call_soon_threadsafe(arrive, url)

        self.server.deliver = deliver
        self._thread = threading.Thread(target=self.server.serve_forever, args=(0.2,), daemon=True)
        self._thread.start()
        try:
            return await asyncio.wait_for(arrived, timeout)
        except TimeoutError:
            raise OAuthError(f"nobody came back from the sign-in page within {timeout:g} s") from None
        finally:
            self.server.shutdown()

    def close(self) -> None:
        self.server.server_close()


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        if self.path.split("?")[0] != CALLBACK_PATH:
            self.send_error(404)
            return
        url = f"http://127.0.0.1:{self.server.server_port}{self.path}"
        failed = "error=" in self.path.split("?", 1)[-1]
        message = "Sign-in was refused." if failed else "Signed in."
        body = _PAGE.format(message=message).encode()
        self.send_response(200)
        self.send_header("content-type", "text/html; charset=utf-8")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.server.deliver(url)

    def log_message(self, format: str, *args: Any) -> None:
        return  # the query holds the authorization code: never printed


class BrowserSignIn:
    """The authorize hook of an interactive OAuthClient: open the browser (and always print
    the URL, for a machine without one, or a terminal over SSH), wait for the redirect."""

    def __init__(self, listener: _Listener, say: Callable[[str], None], timeout: float = SIGN_IN_SECONDS) -> None:
        self.listener = listener
        self.say = say
        self.timeout = timeout

    async def __call__(self, url: str) -> str:
        waiting = asyncio.ensure_future(self.listener.wait(self.timeout))
        await asyncio.sleep(0)  # the listener's thread is serving before the browser comes
        self.say("Sign in to continue: your browser should open. If it does not, open this URL:")
        self.say(f"  {url}")
        # webbrowser.open may wait for the browser command to end: not on the event loop.
        opened = await asyncio.to_thread(_open_browser, url)
        if not opened:
            self.say("(no browser could be opened here; waiting for the URL above to be visited)")
        return await waiting


def _open_browser(url: str) -> bool:
    try:
        return webbrowser.open(url)
    except webbrowser.Error:
        return False


async def _deferred(url: str) -> str:
    raise SignInRequired("the server asks for a sign-in")


class CliAuth:
    """The OAuth side of one ``mcpgen call``: tokens and registrations in the user's token
    file, a loopback redirect on the port used before (an authorization server that matches
    redirect URIs exactly keeps accepting the registration made with it), DPoP-bound tokens
    bound to the file's key. While the Client runs, :attr:`oauth` refreshes silently and
    raises SignInRequired where a person is needed; :meth:`sign_in` is that person's turn."""

    def __init__(self, server_url: str, say: Callable[[str], None], storage: FileTokenStorage | None = None) -> None:
        self.server_url = server_url
        self.storage = storage if storage is not None else FileTokenStorage(server_url)
        self.listener = _Listener(self.storage.loopback_port() or 0)
        self.browser = BrowserSignIn(self.listener, say)
        self.oauth = OAuthClient(
            server_url,
            client_name="mcpgen",
            redirect_uri=self.listener.redirect_uri,
            authorize=_deferred,
            storage=self.storage,
            dpop_key=self.storage.dpop_key,
        )

    async def sign_in(self, timeout: float) -> None:
        """Walk the whole sign-in through one harmless request (``server/discover``): what
        answers 401 answers after the sign-in, whatever it makes of the request itself."""
        self.storage.remember_loopback_port(self.listener.port)
        self.oauth.authorize = self.browser
        body = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "server/discover",
            "params": {"_meta": {META_VERSION: LATEST_STATELESS}},
        }
        headers = {
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": LATEST_STATELESS,
            "mcp-method": "server/discover",
        }
        try:
            async with httpx.AsyncClient(auth=self.oauth, timeout=timeout) as http:
                response = await http.post(self.server_url, json=body, headers=headers)
                await response.aclose()
        except httpx.HTTPError as exc:
            raise OAuthError(f"signing in failed: {exc}") from exc
        finally:
            self.oauth.authorize = _deferred

    def close(self) -> None:
        self.listener.close()


__all__ = ["BrowserSignIn", "CliAuth", "SignInRequired"]
