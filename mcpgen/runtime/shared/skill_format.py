"""The Agent Skills file format as the skills extension (SEP-2640) carries it, for both
sides: the ``SKILL.md`` frontmatter, skill names, and the ``sha256:`` digests.

The frontmatter travels twice: as JSON in a ``skills/list`` entry and as YAML at the top
of the file, and a client compares the two field by field. The YAML is read with PyYAML's
safe loader (the ``skills`` extra; imported on first use) narrowed to what JSON and a
YAML 1.2 reader agree on: ``yes``/``no``/``on``/``off`` stay strings and dates stay text,
so a host parsing the same file with another YAML library sees the same object.
"""

from __future__ import annotations

import hashlib
import math
import re
from typing import Any

from mcpgen.runtime.extras import require
from mcpgen.runtime.shared.meta import RESERVED_PREFIX, SKILLS_EXTENSION

EXTENSION = SKILLS_EXTENSION
"""The extension's identifier under ``capabilities.extensions``."""
META_PREFIX = "io.modelcontextprotocol.skills/"
"""The prefix of the ``_meta`` keys a skill resource carries."""
RESERVED_METADATA = RESERVED_PREFIX
"""Frontmatter ``metadata`` keys under this prefix belong to MCP extensions."""
SKILL_FILE = "SKILL.md"
SCHEME = "skill://"
DIRECTORY_MIME = "inode/directory"
MAX_FILES = 512
MAX_BYTES = 16 * 1024 * 1024
"""The extension's limits on one skill (SHOULD): files, and bytes over all of them."""

# Agent Skills naming: 1-64 lowercase alphanumerics and hyphens, no hyphen at either end
# and never two in a row.
_NAME = re.compile(r"(?!.*--)[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
# An optional BOM, a line of three dashes, the YAML, and a closing line of three dashes.
_FRONTMATTER = re.compile(r"\A\ufeff?---\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_loader: Any = None


class FrontmatterError(ValueError):
    """A SKILL.md whose frontmatter is missing, not YAML, or not a JSON object."""


def valid_name(name: object) -> bool:
    return isinstance(name, str) and _NAME.fullmatch(name) is not None


def valid_digest(value: object) -> bool:
    return isinstance(value, str) and _DIGEST.fullmatch(value) is not None


def digest(data: bytes) -> str:
    """``sha256:<64 lowercase hex>`` of the raw bytes."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def parse_frontmatter(text: str) -> dict[str, Any]:
    """The YAML frontmatter at the top of a SKILL.md, as the JSON object a listing carries."""
    found = _FRONTMATTER.match(text)
    if found is None:
        raise FrontmatterError("SKILL.md does not begin with a --- delimited YAML frontmatter block")
    yaml = require("yaml", "skills", "Reading SKILL.md frontmatter")
    try:
        data = yaml.load(found.group(1), Loader=_frontmatter_loader(yaml))
    except yaml.YAMLError as exc:
        raise FrontmatterError(f"the frontmatter is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise FrontmatterError("the frontmatter is not a mapping")
    problem = _not_json(data)
    if problem is not None:
        raise FrontmatterError(f"the frontmatter holds {problem}, which JSON cannot carry")
    return data


def check_frontmatter(frontmatter: dict[str, Any]) -> str | None:
    """Why this frontmatter cannot describe a served skill, or None."""
    for field in ("name", "description"):
        value = frontmatter.get(field)
        if not isinstance(value, str) or not value:
            return f"its frontmatter has no {field}"
    if not valid_name(frontmatter["name"]):
        return (
            f"its name {frontmatter['name']!r} breaks the Agent Skills naming rules "
            "(1-64 lowercase letters, digits and single hyphens, no hyphen at either end)"
        )
    metadata = frontmatter.get("metadata")
    if isinstance(metadata, dict) and any(str(key).startswith(RESERVED_METADATA) for key in metadata):
        return f"its metadata uses keys under {RESERVED_METADATA}, which are reserved for MCP extensions"
    return None


def _frontmatter_loader(yaml: Any) -> Any:
    """PyYAML's safe loader (libyaml's parser when built with it) without the YAML 1.1
    readings JSON and YAML 1.2 readers do not share: timestamps, and booleans other than
    true/false."""
    global _loader
    if _loader is None:
        base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        loader: Any = type("FrontmatterLoader", (base,), {})
        loader.yaml_implicit_resolvers = {
            first: [
                (tag, regexp)
                for tag, regexp in resolvers
                if tag not in ("tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:bool")
            ]
            for first, resolvers in base.yaml_implicit_resolvers.items()
        }
        loader.add_implicit_resolver(
            "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
        )
        _loader = loader
    return _loader


def _not_json(value: Any) -> str | None:
    """What in a parsed YAML value has no JSON form (None when all of it has one)."""
    if value is None or isinstance(value, (str, bool, int)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else "a non-finite number"
    if isinstance(value, list):
        for item in value:
            problem = _not_json(item)
            if problem is not None:
                return problem
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"a non-string key ({key!r})"
            problem = _not_json(item)
            if problem is not None:
                return problem
        return None
    return f"a {type(value).__name__}"
