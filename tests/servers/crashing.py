"""A stdio server that dies, for the tests of crash reasons.

Run: python tests/servers/crashing.py MODE, where MODE is
  exit3    print "fatal: missing API_KEY" to stderr and exit with status 3 before serving
  import   fail on start with ModuleNotFoundError (a traceback on stderr, status 1)
  killed   kill itself with SIGKILL before serving (nothing on stderr)
  on-call  serve; the tool `die` prints "dying now" to stderr and exits with status 5
"""

from __future__ import annotations

import os
import signal
import sys

MODE = sys.argv[1] if len(sys.argv) > 1 else "exit3"

if MODE == "exit3":
    print("starting up", file=sys.stderr)
    print("fatal: missing API_KEY", file=sys.stderr)
    sys.exit(3)
elif MODE == "import":
    import mcpgen_no_such_module  # noqa: F401
elif MODE == "killed":
    os.kill(os.getpid(), signal.SIGKILL)

from mcpgen import Server  # noqa: E402

server = Server("crashing", "0.1")


@server.tool()
def die() -> str:
    """Exit at once, in the middle of the call."""
    print("dying now", file=sys.stderr, flush=True)
    os._exit(5)


@server.tool()
def ok() -> str:
    """Answer normally."""
    return "fine"


if __name__ == "__main__":
    server.run()
