"""Protocol revisions the runtime speaks, as data.

Each revision's era decides the session policy: the handshake era (2024-11-05 to
2025-11-25) opens with ``initialize``; the stateless era (2026-07-28 on) will not. Code
asks these facts instead of comparing version strings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Revision:
    name: str
    era: Literal["handshake", "stateless"]
    elicitation: bool = False  # elicitation/create exists
    structured_output: bool = False  # Tool.outputSchema / structuredContent
    url_elicitation: bool = False
    tasks: bool = False
    batches: bool = False  # JSON-RPC batches allowed (2025-03-26 only)


REVISIONS = {
    r.name: r
    for r in (
        Revision("2024-11-05", "handshake"),
        Revision("2025-03-26", "handshake", batches=True),
        Revision("2025-06-18", "handshake", elicitation=True, structured_output=True),
        Revision("2025-11-25", "handshake", elicitation=True, structured_output=True,
                 url_elicitation=True, tasks=True),  # fmt: skip
    )
}
SUPPORTED = tuple(sorted(REVISIONS, reverse=True))  # newest first
LATEST = SUPPORTED[0]
# What a Streamable HTTP server assumes when a request names no version (spec rule).
HTTP_DEFAULT = "2025-03-26"


def negotiate(requested: str) -> str:
    """The version a server answers with: the client's if supported, else our latest."""
    return requested if requested in REVISIONS else LATEST
