"""``WWW-Authenticate`` challenges (RFC 9110 section 11.6.1): the auth-params of one scheme.

A resource server may offer several schemes in one header (``DPoP ..., Bearer ...``, RFC
9449 section 7.1); each scheme's params are read up to where the next scheme starts.
"""

from __future__ import annotations

import re

# One auth-param: name = token or quoted-string, after an optional comma.
_PARAM = re.compile(r'\s*,?\s*([A-Za-z0-9_.-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,"]+))')


def challenge_params(header: str, scheme: str) -> dict[str, str]:
    """The auth-params of the ``scheme`` challenge (case-insensitive) in a header value;
    names lowercased, quoted values unescaped, the first of a repeated name kept."""
    start = re.search(rf"(?i)(?:^|[\s,]){re.escape(scheme)}(?=\s|,|$)", header)
    if start is None:
        return {}
    params: dict[str, str] = {}
    position = start.end()
    while (match := _PARAM.match(header, position)) is not None:
        quoted, bare = match.group(2), match.group(3)
        value = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else bare
        params.setdefault(match.group(1).lower(), value)
        position = match.end()
    return params


__all__ = ["challenge_params"]
