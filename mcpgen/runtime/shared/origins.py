"""Origins of URLs (RFC 6454: scheme, host, port), for the rules that keep a client's
credentials where the user sent them: a redirect or a legacy server's ``endpoint`` event
may name the same origin only, and every OAuth endpoint a server names must be https
(http only on this machine's loopback)."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin(url: str) -> tuple[str, str, int | None]:
    """``(scheme, host, port)``, lower-cased, the scheme's default port filled in. A URL
    that does not parse (a bad port) has the empty origin, the same as no other's."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return ("", "", None)
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), port if port is not None else _DEFAULT_PORTS.get(scheme)


def same_origin(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` have one origin (and it is an http(s) one)."""
    first = origin(a)
    return bool(first[0] in _DEFAULT_PORTS and first[1]) and first == origin(b)


def is_loopback(host: str) -> bool:
    """``localhost``, or an address of the loopback network (127.0.0.0/8, ::1)."""
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def secure_endpoint(url: str) -> str | None:
    """Why ``url`` may not be an OAuth endpoint (None: it may): it must be an absolute
    https URL, or http on loopback, with no user information (``https://a.example@b.example``
    shows one host and goes to another) and no fragment (RFC 6749 section 3.1)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises ValueError for a malformed port)
    except ValueError:
        return "it is not a URL"
    scheme, host = parts.scheme.lower(), parts.hostname or ""
    if scheme not in _DEFAULT_PORTS or not host:
        return f"its scheme is {parts.scheme or 'missing'}, not https" if scheme != "http" else "it names no host"
    if scheme == "http" and not is_loopback(host):
        return "it is plain http to a host that is not this machine (https is required)"
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        return "it carries user information before its host"
    if parts.fragment or url.endswith("#"):
        return "it has a fragment"
    return None


__all__ = ["is_loopback", "origin", "same_origin", "secure_endpoint"]
