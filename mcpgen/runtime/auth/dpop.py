"""DPoP (RFC 9449) for the OAuth client: a key pair per client, one fresh proof per request.

A DPoP-bound access token is useless without the private key it is bound to, so a stolen
token cannot be replayed from elsewhere. The client signs a short JWT (the proof) for each
HTTP request: the method (``htm``), the URL without query or fragment (``htu``), the time
(``iat``), a unique id (``jti``), at a resource server the access token's hash (``ath``),
and the latest nonce the server handed out (``nonce``), if it asked for one.

Signing and the JWK thumbprint are joserfc's: only the claim set and the nonce
bookkeeping are written here. ES256 (P-256) is the one algorithm: every authorization
server that speaks DPoP accepts it, and it is the MCP DPoP extension's baseline.
"""

from __future__ import annotations

import base64
import hashlib
import time
import uuid
from urllib.parse import urlsplit, urlunsplit

import httpx
from joserfc import jwt
from joserfc.jwk import ECKey

from mcpgen.runtime.auth.challenge import challenge_params

ALGORITHM = "ES256"
NONCE_ERROR = "use_dpop_nonce"


class DPoPKey:
    """The client's proof-of-possession key pair (EC P-256). Keep the same key for as long
    as tokens bound to it are kept: :meth:`to_pem` / :meth:`from_pem` persist it."""

    def __init__(self, key: ECKey | None = None) -> None:
        self._key = key if key is not None else ECKey.generate_key("P-256")
        self.public_jwk: dict[str, str] = {k: str(v) for k, v in self._key.as_dict(private=False).items()}
        self.thumbprint: str = self._key.thumbprint()  # RFC 7638, SHA-256: the token's cnf.jkt

    @classmethod
    def from_pem(cls, pem: bytes | str) -> DPoPKey:
        key = ECKey.import_key(pem.encode() if isinstance(pem, str) else pem)
        if key.as_dict(private=False).get("crv") != "P-256":
            raise ValueError("a DPoP key must be an EC P-256 key (ES256)")
        return cls(key)

    def to_pem(self) -> bytes:
        """The private key, PKCS#8 PEM: store it where only the user can read it."""
        return self._key.as_pem(private=True)

    def sign(self, claims: dict[str, object]) -> str:
        header = {"typ": "dpop+jwt", "alg": ALGORITHM, "jwk": self.public_jwk}
        return jwt.encode(header, claims, self._key, algorithms=[ALGORITHM])


def htu(url: str | httpx.URL) -> str:
    """RFC 9449 section 4.2: the target URI without its query and fragment."""
    parts = urlsplit(str(url))
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def ath(access_token: str) -> str:
    """The access token's hash, as a proof sent to a resource server carries it."""
    digest = hashlib.sha256(access_token.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _origin(url: str | httpx.URL) -> str:
    parts = urlsplit(str(url))
    return f"{parts.scheme}://{parts.netloc}".lower()


class DPoP:
    """Proofs for one client: its key, and the nonces servers have asked for (per origin:
    the authorization server's and each resource server's are separate, RFC 9449 sections
    8 and 9)."""

    def __init__(self, key: DPoPKey | None = None) -> None:
        self.key = key if key is not None else DPoPKey()
        self._nonces: dict[str, str] = {}

    def proof(self, method: str, url: str | httpx.URL, access_token: str | None = None) -> str:
        """A fresh proof for one request (a new ``jti`` every time, never reused)."""
        claims: dict[str, object] = {
            "jti": uuid.uuid4().hex,
            "htm": method.upper(),
            "htu": htu(url),
            "iat": int(time.time()),
        }
        if access_token is not None:
            claims["ath"] = ath(access_token)
        nonce = self._nonces.get(_origin(url))
        if nonce is not None:
            claims["nonce"] = nonce
        return self.key.sign(claims)

    def note(self, response: httpx.Response) -> bool:
        """Keep the nonce a response hands out (any response may rotate it); True when it
        is one this client did not have yet."""
        nonce: str | None = response.headers.get("dpop-nonce")
        if not nonce:
            return False
        origin = _origin(response.request.url)
        fresh = self._nonces.get(origin) != nonce
        self._nonces[origin] = nonce
        return fresh


def nonce_challenge(response: httpx.Response) -> bool:
    """Does the response ask for the request again with a nonce? The authorization server
    answers 400 ``use_dpop_nonce`` in its JSON body (section 8); a resource server answers
    401 with a ``DPoP error="use_dpop_nonce"`` challenge (section 9). Either way the nonce
    itself comes in the ``DPoP-Nonce`` header, without which there is nothing to retry with."""
    if not response.headers.get("dpop-nonce"):
        return False
    if response.status_code == 401:
        return challenge_params(response.headers.get("www-authenticate", ""), "dpop").get("error") == NONCE_ERROR
    if response.status_code == 400:
        try:
            body = response.json()
        except ValueError:
            return False
        return isinstance(body, dict) and bool(body.get("error") == NONCE_ERROR)
    return False


__all__ = ["ALGORITHM", "DPoP", "DPoPKey", "ath", "htu", "nonce_challenge"]
