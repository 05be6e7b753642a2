"""Which protocol era a client's connection speaks: the one place that decides it.

Before anything is sent, :func:`plan` reads what the user asked for (``era=``: "auto",
"handshake", "stateless" or a version, which pins that version and its era) and what is
known of the endpoint (the era it was found to speak before, or the only one its transport
has). "auto" probes with ``server/discover``; what the probe answers is read by
:func:`after_probe`, and, when the probe was only slow, what ``initialize`` then answers by
:func:`after_slow_probe`. :func:`remember` keeps the verdict of an answered probe per HTTP
endpoint for the life of the process; :func:`known` gives it back."""

from __future__ import annotations

from typing import Literal, NamedTuple

from mcpgen.runtime.client.stateless import UnsupportedVersions, modern_evidence
from mcpgen.runtime.errors import McpError, RequestTimeout
from mcpgen.runtime.versions import Era, era_of

AUTO = "auto"


class Plan(NamedTuple):
    """How to open: in ``era``, at the ``pinned`` version if any, probing first or not."""

    era: Era
    pinned: str | None
    probe: bool


def plan(requested: str, known_era: str | None = None) -> Plan:
    """The opening plan for ``era=requested`` on an endpoint whose era is ``known_era``
    (only a handshake-era verdict saves the probe: a modern server is probed each time, its
    answer opens the session). Raises ValueError for a version mcpgen does not speak."""
    if requested == AUTO:
        if known_era == "handshake":
            return Plan("handshake", None, probe=False)
        return Plan("stateless", None, probe=True)
    if requested in ("handshake", "stateless"):
        return Plan(requested, None, probe=False)  # type: ignore[arg-type]
    era = era_of(requested)
    if era is None:
        raise ValueError(f"mcpgen does not speak protocol version {requested!r}")
    return Plan(era, requested, probe=False)


class NoCommonVersion(UnsupportedVersions):
    """A ``server/discover`` result that names no stateless-era version of ours: for "auto"
    this is no proof of a modern server we can speak to (an older server's reply can look the
    same), so the connection falls back to ``initialize``."""


class StatelessRefused(McpError):
    """The era was pinned to the stateless one and the server answered ``server/discover``
    with -32601: it speaks only the handshake era. The server's code and data, with a
    message that says what happened and what to do."""

    def __init__(self, refused: McpError) -> None:
        super().__init__(
            refused.code,
            f"the server speaks only the handshake era: it answered server/discover with "
            f'"{refused.message}" ({refused.code}); connect with era "auto" or "handshake"',
            refused.data,
        )


# How long ``server/discover`` may stay unanswered before the client opens with
# ``initialize`` instead. Over a stream (stdio) an older server may ignore a request it does
# not know until it is initialized: silence is an answer there. Over HTTP every server
# answers at once, an older one with an HTTP status or a JSON-RPC error, so silence only
# means a busy server (40 clients starting at once on 2 cores took over 3 s here): waiting
# longer costs nothing, and giving up early would send a modern server ``initialize``.
STREAM_PROBE_PATIENCE = 3.0
HTTP_PROBE_PATIENCE = 30.0


def probe_patience(chosen: float | None, url: str | None) -> float:
    """The probe's timeout: the user's, else the transport's usual (an ``url``: HTTP)."""
    if chosen is not None:
        return chosen
    return HTTP_PROBE_PATIENCE if url is not None else STREAM_PROBE_PATIENCE


def after_probe(probing: bool, failure: BaseException) -> Literal["raise", "handshake"]:
    """What a failed ``server/discover`` means. A pinned era never falls back ("raise").
    For "auto", an error only the stateless era answers proves a modern server ("raise"
    it); anything else (a -32601 or -32602, an HTTP error, a timeout, no common version) is
    no such proof: open with ``initialize`` instead ("handshake")."""
    if not probing:
        return "raise"
    if isinstance(failure, NoCommonVersion) or not modern_evidence(failure):
        return "handshake"
    return "raise"


def after_slow_probe(probe_failure: BaseException, refused: BaseException) -> bool:
    """Whether to speak the stateless era after all: the probe only timed out (a slow
    answer is no verdict), and the server then refused ``initialize`` as only a modern one
    does: with one of the stateless era's own errors, by naming only stateless-era versions
    it supports, or by choosing a stateless-era version in its answer."""
    if not isinstance(probe_failure, RequestTimeout):
        return False
    if modern_evidence(refused):
        return True
    chosen = getattr(refused, "version", None)  # an initialize answer naming such a version
    if isinstance(chosen, str) and era_of(chosen) == "stateless":
        return True
    data = getattr(refused, "data", None)
    supported = data.get("supported") if isinstance(data, dict) else None
    if not isinstance(supported, list) or not supported:
        return False
    eras = {era_of(v) for v in supported if isinstance(v, str)}
    return "stateless" in eras and "handshake" not in eras


# The era each HTTP endpoint was found to speak, for the life of the process.
_VERDICTS: dict[str, str] = {}


def known(endpoint: object) -> str | None:
    """The era ``endpoint`` (an HTTP URL) was found to speak, if it was probed before."""
    return _VERDICTS.get(endpoint) if isinstance(endpoint, str) else None


def remember(endpoint: object, requested: str, era: str | None, timed_out: bool) -> None:
    """Keep the era an "auto" connection found ``endpoint`` to speak. Only a probe's answer
    is a verdict on the server: a pinned era says what the user chose, and a probe that timed
    out may have met a busy modern server."""
    if requested == AUTO and isinstance(endpoint, str) and era is not None and not timed_out:
        _VERDICTS[endpoint] = era


def forget(endpoint: str) -> None:
    """Drop what is known of ``endpoint`` (it will be probed again)."""
    _VERDICTS.pop(endpoint, None)
