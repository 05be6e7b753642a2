"""The release workflow's first step: the version a maintainer asked to release is the one
in pyproject.toml, and CHANGELOG.md has a section for it no longer marked unreleased,
whose text becomes the release notes (written to the file named second). Exit 1, saying
why, otherwise.

    python .github/release_check.py 0.1.0 notes.md
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VERSION = re.compile(r"\d+\.\d+\.\d+(?:(?:a|b|rc)\d+)?(?:\.post\d+)?")


def section(changelog: str, version: str) -> tuple[str, str] | None:
    """The heading's rest and the text of ``## <version>`` in the changelog (up to the next
    ``## ``), or None."""
    found = re.search(rf"^## {re.escape(version)}([^\n]*)\n(.*?)(?=^## |\Z)", changelog, re.M | re.S)
    return (found[1].strip(), found[2].strip()) if found else None


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: release_check.py VERSION NOTES_FILE", file=sys.stderr)
        return 2
    asked, out = argv
    if not VERSION.fullmatch(asked):
        print(f"{asked!r} is not a version such as 0.1.0", file=sys.stderr)
        return 1
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    if asked != declared:
        print(f"pyproject.toml says {declared}, not {asked}: bump it first", file=sys.stderr)
        return 1
    found = section((ROOT / "CHANGELOG.md").read_text(encoding="utf-8"), asked)
    if found is None or not found[1]:
        print(f"CHANGELOG.md has no section '## {asked}': write it first", file=sys.stderr)
        return 1
    heading, text = found
    if "unreleased" in heading.lower():
        print(f"CHANGELOG.md's '## {asked}' still says {heading}: give it the release date first", file=sys.stderr)
        return 1
    Path(out).write_text(text + "\n", encoding="utf-8")
    print(f"releasing {asked}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
