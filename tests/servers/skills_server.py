"""An mcpgen server serving the skills under a directory, for tests/runtime/server/test_skills.py.

Run: python tests/servers/skills_server.py ROOT [--page-size N] [--http PORT]
"""

from __future__ import annotations

import argparse

from mcpgen import Server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("--page-size", type=int, default=100)
    parser.add_argument("--http", type=int, default=None)
    args = parser.parse_args()
    server = Server("skills-server", "1.0.0")
    server.skills(args.root, page_size=args.page_size)
    if args.http is None:
        server.run()
    else:
        server.run("http", port=args.http)


if __name__ == "__main__":
    main()
