"""mkdocs hooks (mkdocs.yml ``hooks:``): the docstrings cross-reference in reStructuredText
roles (``:class:`~mcpgen.runtime.errors.ServerExited```), which the Python handler leaves as
text; render each as the code name it points at, as Sphinx would (``~`` keeps the last part)."""

from __future__ import annotations

import re
from typing import Any

ROLE = re.compile(r":(?:class|meth|func|mod|attr|data|exc|obj):<code>(~?)([^<]+)</code>")


def shown(match: re.Match[str]) -> str:
    tilde, target = match[1], match[2]
    return f"<code>{target.rsplit('.', 1)[-1] if tilde else target}</code>"


def on_page_content(html: str, **kwargs: Any) -> str:
    return ROLE.sub(shown, html)
