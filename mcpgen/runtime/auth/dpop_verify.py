"""DPoP (RFC 9449), resource server side: is this proof fresh, for this request, and made
with the key the access token is bound to?

PyJWT checks the proof's signature with the public key the proof carries in its header;
joserfc computes that key's RFC 7638 thumbprint. The rest is RFC 9449 §4.3 and §7.1,
written here because no kept Python library verifies DPoP proofs for a resource server:
the proof's type and algorithm, ``htm`` and ``htu`` against this request, ``iat`` within
the acceptance window, ``ath`` as the hash of the access token presented, the thumbprint
as the token's ``cnf.jkt``, and each ``jti`` seen once (a bounded replay cache covering
the window). (The client's side, making proofs, is :mod:`mcpgen.runtime.auth.dpop`.) An optional server
nonce (§8) makes a proof's freshness this server's call rather than the client's clock's.

Behind several workers, both must hold across them: with a shared store's
:class:`~mcpgen.runtime.stores.shared_store.ProofLedger` (``ledger``), a used ``jti`` is
recorded in the store (a proof one worker accepted is a replay at every other) and the
nonces are made from one secret in the store (a nonce one worker handed out is good at
all). Without one, both live in this process."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from mcpgen.runtime.auth.token_verify import DEFAULT_ALGORITHMS
from mcpgen.runtime.extras import require
from mcpgen.runtime.stores.shared_store import ProofLedger

_SECRET = "dpop-nonce"  # the name of the nonce secret in a shared store
_SECRET_KEPT = 5.0  # seconds a worker uses the shared secret before reading it again

_PRIVATE_MEMBERS = ("d", "p", "q", "dp", "dq", "qi", "k")


class InvalidProof(Exception):
    """The DPoP proof is refused; the message is a fixed sentence, safe to send."""


class NonceRequired(InvalidProof):
    """The proof lacks the server's current nonce: answer with ``use_dpop_nonce`` and a fresh one."""


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def thumbprint(jwk: dict[str, Any]) -> str:
    """The RFC 7638 SHA-256 thumbprint of a public JWK, base64url without padding."""
    from joserfc.errors import JoseError
    from joserfc.jwk import import_key

    try:
        return str(import_key(jwk).thumbprint())
    except (JoseError, ValueError, TypeError, KeyError):
        raise InvalidProof("the DPoP proof's key is not a usable public key") from None


def token_hash(access_token: str) -> str:
    """``ath``: base64url of the SHA-256 of the access token's ASCII text."""
    return b64url(hashlib.sha256(access_token.encode("ascii", "replace")).digest())


def normalize_htu(url: str) -> str:
    """The URI a proof's ``htu`` is compared on: scheme and host lowercased, default port
    dropped, no query or fragment (RFC 9449 §4.3, with RFC 3986 §6.2 normalization)."""
    parts = urlsplit(url)
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    netloc = host if port is None or (scheme, port) in (("http", 80), ("https", 443)) else f"{host}:{port}"
    return urlunsplit((scheme, netloc, parts.path or "/", "", ""))


class DpopVerifier:
    """Checks DPoP proofs of requests to a protected server.

    ``max_age``: how old a proof (its ``iat``) may be, in seconds; ``leeway``: how far in
    the future a client's clock may put it. Every ``jti`` is remembered for that window
    (``max_entries`` at most, oldest dropped first: sized so that a window's worth of
    proofs fits). ``nonces=True`` makes proofs carry a nonce this server issued (rotated
    every ``max_age`` seconds, the previous one still accepted). ``ledger``: a shared
    store's, for both across workers (see the module docstring)."""

    def __init__(
        self,
        *,
        algorithms: Iterable[str] = DEFAULT_ALGORITHMS,
        max_age: float = 60.0,
        leeway: float = 5.0,
        max_entries: int = 100_000,
        nonces: bool = False,
        ledger: ProofLedger | None = None,
    ) -> None:
        self.jwt: Any = require("jwt", "auth", "DPoP proof verification")
        self.algorithms = tuple(a for a in algorithms if a != "none" and not a.startswith("HS"))
        self.max_age = max_age
        self.leeway = leeway
        self.max_entries = max_entries
        self.nonces = nonces
        self._seen: OrderedDict[str, float] = OrderedDict()  # jti (per key) -> when it may be forgotten
        self._nonce_key = secrets.token_bytes(32)
        self.ledger = ledger
        self._shared_key: tuple[bytes, float] | None = None  # the ledger's secret, and when read

    async def verify(self, proof: str, *, method: str, url: str, access_token: str, jkt: str) -> None:
        """Accept the proof of a request (``method`` ``url``) presenting ``access_token``
        bound to ``jkt``, or raise :class:`InvalidProof` (with a ledger,
        :class:`~mcpgen.runtime.stores.shared_store.StoreUnavailable` when the store cannot
        say whether the proof was used: refused, never accepted unchecked)."""
        jwt = self.jwt
        try:
            header = jwt.get_unverified_header(proof)
        except jwt.PyJWTError:
            raise InvalidProof("the DPoP proof is not a well-formed JWT") from None
        if header.get("typ") != "dpop+jwt":
            raise InvalidProof("the DPoP proof's typ is not dpop+jwt")
        alg, jwk = header.get("alg"), header.get("jwk")
        if alg not in self.algorithms:
            raise InvalidProof("the DPoP proof is signed with an algorithm this server does not accept")
        if not isinstance(jwk, dict) or any(m in jwk for m in _PRIVATE_MEMBERS):
            raise InvalidProof("the DPoP proof does not carry a public key")
        try:
            key = jwt.PyJWK(jwk, algorithm=alg)
            claims: dict[str, Any] = jwt.decode(
                proof,
                key.key,
                algorithms=[alg],
                leeway=self.leeway,
                options={"require": ["iat", "jti", "htm", "htu"], "verify_aud": False, "verify_iss": False},
            )
        except jwt.PyJWTError:
            raise InvalidProof("the DPoP proof's signature or claims do not verify") from None
        if claims.get("htm") != method:
            raise InvalidProof("the DPoP proof is for another HTTP method")
        htu = claims.get("htu")
        if not isinstance(htu, str) or normalize_htu(htu) != normalize_htu(url):
            raise InvalidProof("the DPoP proof is for another URL")
        now = time.time()
        iat = claims["iat"]
        if not isinstance(iat, int | float) or iat < now - self.max_age or iat > now + self.leeway:
            raise InvalidProof("the DPoP proof is too old or from the future")
        ath = claims.get("ath")
        if not isinstance(ath, str) or not hmac.compare_digest(ath, token_hash(access_token)):
            raise InvalidProof("the DPoP proof is not for this access token")
        if not hmac.compare_digest(thumbprint(jwk), jkt):
            raise InvalidProof("the DPoP proof is signed with a key the token is not bound to")
        if self.nonces and not await self._nonce_ok(claims.get("nonce")):
            raise NonceRequired("the DPoP proof lacks this server's current nonce")
        jti = claims["jti"]
        if not isinstance(jti, str) or not jti or len(jti) > 256:
            raise InvalidProof("the DPoP proof's jti is not a usable string")
        if self.ledger is None:
            self._remember(f"{jkt}:{jti}", now)
        elif not await self.ledger.first_use(f"{jkt}:{jti}", self.max_age + self.leeway):
            raise InvalidProof("the DPoP proof was already used")

    def _remember(self, seen_key: str, now: float) -> None:
        while self._seen and next(iter(self._seen.values())) < now:
            self._seen.popitem(last=False)  # past the window: a replay would be too old anyway
        if seen_key in self._seen:
            raise InvalidProof("the DPoP proof was already used")
        self._seen[seen_key] = now + self.max_age + self.leeway
        if len(self._seen) > self.max_entries:
            self._seen.popitem(last=False)

    # ------------------------------------------------------------ nonces (RFC 9449 §8)

    async def nonce(self) -> str:
        """This server's current nonce (derived from the time slot and a secret: nothing
        to store per client)."""
        return self._nonce_for(await self._key(), int(time.time() // self.max_age))

    async def _key(self) -> bytes:
        """The secret nonces come from: this process's, or the shared store's (read again
        every few seconds, so that a store that lost it and made another is followed)."""
        if self.ledger is None:
            return self._nonce_key
        kept, now = self._shared_key, time.monotonic()
        if kept is None or now - kept[1] > _SECRET_KEPT:
            kept = self._shared_key = (await self.ledger.shared_secret(_SECRET), now)
        return kept[0]

    @staticmethod
    def _nonce_for(key: bytes, slot: int) -> str:
        return b64url(hmac.new(key, str(slot).encode(), hashlib.sha256).digest()[:18])

    async def _nonce_ok(self, given: Any) -> bool:
        if not isinstance(given, str):
            return False
        key, slot = await self._key(), int(time.time() // self.max_age)
        return any(hmac.compare_digest(given, self._nonce_for(key, s)) for s in (slot, slot - 1))
