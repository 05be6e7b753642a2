"""Where a request's era is decided (the layers issue, point 4): one function per side.

The transports' own tests (stdio first frames, HTTP headers, the client's probe against
real servers in test_client_eras and test_eras) prove they ask these; here each rule is
held on its own, including the cases that tell it apart from a near miss."""

from __future__ import annotations

import pytest

from mcpgen.runtime.client import era as client_era
from mcpgen.runtime.client.session import UnsupportedVersion
from mcpgen.runtime.client.stateless import UnsupportedVersions
from mcpgen.runtime.errors import HEADER_MISMATCH, METHOD_NOT_FOUND, UNSUPPORTED_VERSION, McpError, RequestTimeout
from mcpgen.runtime.server.era import request_era
from mcpgen.runtime.shared.meta import META_VERSION
from mcpgen.runtime.versions import HANDSHAKE, LATEST_STATELESS


def test_a_request_naming_a_version_in_meta_is_stateless_whatever_the_value() -> None:
    assert request_era(meta={META_VERSION: LATEST_STATELESS}) == "stateless"
    assert request_era(meta={META_VERSION: "1999-01-01"}) == "stateless"  # answered -32022 there
    assert request_era(meta={"progressToken": 1}) == "handshake"
    assert request_era(meta=[META_VERSION]) == "handshake"
    assert request_era() == "handshake"


def test_the_http_header_alone_marks_the_stateless_era_unless_it_names_a_handshake_version() -> None:
    assert request_era(header=LATEST_STATELESS) == "stateless"
    assert request_era(header=f" {LATEST_STATELESS}\t") == "stateless"
    assert request_era(header="2099-01-01") == "stateless"
    for version in HANDSHAKE:
        assert request_era(header=version) == "handshake"
    assert request_era(header=None) == "handshake"


def test_the_client_plan_for_each_requested_era() -> None:
    assert client_era.plan("auto") == client_era.Plan("stateless", None, probe=True)
    assert client_era.plan("auto", "stateless") == client_era.Plan("stateless", None, probe=True)
    assert client_era.plan("auto", "handshake") == client_era.Plan("handshake", None, probe=False)
    assert client_era.plan("handshake") == client_era.Plan("handshake", None, probe=False)
    assert client_era.plan("stateless", "handshake") == client_era.Plan("stateless", None, probe=False)
    assert client_era.plan(HANDSHAKE[-1]) == client_era.Plan("handshake", HANDSHAKE[-1], probe=False)
    assert client_era.plan(LATEST_STATELESS) == client_era.Plan("stateless", LATEST_STATELESS, probe=False)
    with pytest.raises(ValueError, match="1999-01-01"):
        client_era.plan("1999-01-01")


def test_only_an_answer_the_stateless_era_alone_gives_stops_auto_from_falling_back() -> None:
    modern = McpError(HEADER_MISMATCH, "header mismatch")
    assert client_era.after_probe(True, modern) == "raise"
    assert client_era.after_probe(True, McpError(UNSUPPORTED_VERSION, "no")) == "raise"
    assert client_era.after_probe(True, McpError(METHOD_NOT_FOUND, "no such method")) == "handshake"
    assert client_era.after_probe(True, RequestTimeout("slow")) == "handshake"
    assert client_era.after_probe(True, client_era.NoCommonVersion([LATEST_STATELESS], ["2099-01-01"])) == "handshake"
    assert client_era.after_probe(True, UnsupportedVersions([LATEST_STATELESS], ["2099-01-01"])) == "raise"
    assert client_era.after_probe(True, UnsupportedVersions([LATEST_STATELESS], [HANDSHAKE[0]])) == "handshake"
    # A pinned era never falls back, whatever the answer.
    assert client_era.after_probe(False, RequestTimeout("slow")) == "raise"


def test_a_slow_probe_then_a_modern_refusal_of_initialize_means_the_stateless_era() -> None:
    slow = RequestTimeout("slow")
    refused = McpError(UNSUPPORTED_VERSION, "this connection speaks the stateless era")
    assert client_era.after_slow_probe(slow, refused)
    assert not client_era.after_slow_probe(McpError(METHOD_NOT_FOUND, "no"), refused)
    assert not client_era.after_slow_probe(slow, McpError(METHOD_NOT_FOUND, "no"))
    # A server that speaks only 2026-07-28 refusing initialize as the handshake era words it
    # (-32602 naming the versions it supports), or answering it with that version.
    only_modern = McpError(-32602, "Unsupported protocol version", {"supported": [LATEST_STATELESS]})
    assert client_era.after_slow_probe(slow, only_modern)
    both = McpError(-32602, "Unsupported protocol version", {"supported": [LATEST_STATELESS, HANDSHAKE[0]]})
    assert not client_era.after_slow_probe(slow, both)  # it could have spoken the handshake era
    assert not client_era.after_slow_probe(McpError(METHOD_NOT_FOUND, "no"), only_modern)
    chosen = UnsupportedVersion(LATEST_STATELESS)
    assert client_era.after_slow_probe(slow, chosen)
    assert not client_era.after_slow_probe(slow, UnsupportedVersion("2099-01-01"))


def test_only_an_answered_auto_probe_is_remembered() -> None:
    url = "http://127.0.0.1:9/mcp-era-rules"
    client_era.forget(url)
    try:
        client_era.remember(url, "handshake", "handshake", False)  # pinned: the user's choice
        client_era.remember(url, "auto", "handshake", True)  # timed out: no verdict
        client_era.remember(None, "auto", "handshake", False)  # no endpoint (stdio)
        assert client_era.known(url) is None
        client_era.remember(url, "auto", "handshake", False)
        assert client_era.known(url) == "handshake"
        assert client_era.plan("auto", client_era.known(url)).probe is False
    finally:
        client_era.forget(url)
