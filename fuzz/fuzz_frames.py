"""Coverage-guided fuzzing of the frame decoder and the session engine, with atheris.

    python fuzz/fuzz_frames.py -runs=1000000           # any libFuzzer flag passes through
    python fuzz/fuzz_frames.py -max_total_time=600 -jobs=2 -workers=2

Each input is one frame. ``decode_envelope`` must return an envelope or raise
``FrameError`` and nothing else; then the frame goes to ``Session.on_frame`` of a ready
demo-server session (``tests/fuzzing.py``), whose oracle checks the replies, and every
1,000 inputs the session must still answer a ping with no task left over. Any
AssertionError or other exception is a crash: libFuzzer saves the input as
``<artifact_prefix>crash-<sha1>`` and exits non-zero.

Bugs already known (``tests.fuzzing.KNOWN_BUGS``) are tallied, not reported again, unless
``FUZZ_STRICT=1``. With no corpus directory on the command line, new inputs go to a
temporary directory, seeded by ``fuzz/corpus`` (valid MCP frames) and ``fuzz/crashes``
(every input that ever failed, kept so it is replayed first); with no ``-artifact_prefix``,
crashes go to ``fuzz/artifacts/``; with no ``-dict``, ``fuzz/mcp.dict`` (JSON-RPC and MCP
tokens) guides the mutations.
"""

from __future__ import annotations

import io
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import atheris  # type: ignore[import-untyped]  # noqa: E402  (pip install atheris)

with atheris.instrument_imports(include=["mcpgen"]):
    import mcpgen.runtime.jsonrpc.framing
    import mcpgen.runtime.jsonrpc.session  # noqa: F401
    import mcpgen.runtime.server.context  # noqa: F401
    import mcpgen.runtime.server.server  # noqa: F401
    import mcpgen.runtime.server.session  # noqa: F401
    import mcpgen.runtime.server.signature  # noqa: F401
    import mcpgen.runtime.shared.jsonschema  # noqa: F401
    import mcpgen.runtime.shared.uri_template  # noqa: F401

from msgspec import UNSET  # noqa: E402

from mcpgen.runtime.jsonrpc.framing import Envelope, FrameDropped, FrameError, decode_envelope  # noqa: E402
from tests import fuzzing  # noqa: E402

STRICT = os.environ.get("FUZZ_STRICT") == "1"
HEALTH_EVERY = 1_000
REPORT_EVERY = 100_000

_harness: fuzzing.FuzzHarness | None = None
_inputs = 0
_started = time.monotonic()


def harness() -> fuzzing.FuzzHarness:
    global _harness
    if _harness is None:
        _harness = fuzzing.FuzzHarness()
    return _harness


def check_decoder(data: bytes) -> None:
    try:
        envelope = decode_envelope(data)
    except FrameError as exc:
        assert exc.code in (fuzzing.PARSE_ERROR, fuzzing.INVALID_REQUEST), exc.code
        assert exc.id is UNSET or fuzzing.valid_id(exc.id), exc.id
        return
    except FrameDropped:
        # A response the decoder cannot read is dropped unanswered; the oracle must allow silence.
        expectation = fuzzing.expect(data)
        assert any(not option.reply for option in expectation.options), expectation
        return
    except UnicodeDecodeError:
        if STRICT:
            raise
        return  # known: unicode-decode-error-escapes
    assert isinstance(envelope, Envelope)
    assert envelope.id is UNSET or fuzzing.valid_id(envelope.id), envelope.id
    assert envelope.jsonrpc == "2.0"


def TestOneInput(data: bytes) -> None:  # noqa: N802 - the name atheris calls
    global _inputs
    _inputs += 1
    check_decoder(data)
    fuzz = harness()
    if STRICT:
        expectation = fuzzing.expect(data)
        if not fuzzing.unbounded_work(expectation.message):
            fuzzing.verify([data], [expectation], fuzz.feed([data]))
    else:
        fuzz.check_frame(data)
    if _inputs % HEALTH_EVERY == 0:
        fuzz.assert_healthy()
    if _inputs % REPORT_EVERY == 0:
        elapsed = time.monotonic() - _started
        print(
            f"#fuzz_frames {_inputs} inputs, {fuzz.frames} frames fed, {_inputs / elapsed:.0f}/s, "
            f"skipped {fuzz.skipped}, known bugs {dict(fuzz.known)}",
            file=sys.stderr,
            flush=True,
        )


def _arguments(argv: list[str]) -> list[str]:
    args = list(argv)
    flags = [a for a in args[1:] if a.startswith("-")]
    if not [a for a in args[1:] if not a.startswith("-")]:
        args += [tempfile.mkdtemp(prefix="mcpgen-fuzz-"), str(ROOT / "fuzz" / "corpus"), str(ROOT / "fuzz" / "crashes")]
    if not any(f.startswith("-artifact_prefix=") for f in flags):
        artifacts = ROOT / "fuzz" / "artifacts"
        artifacts.mkdir(exist_ok=True)
        args.append(f"-artifact_prefix={artifacts}/")
    if not any(f.startswith("-dict=") for f in flags):
        args.append(f"-dict={ROOT / 'fuzz' / 'mcp.dict'}")
    return args


def main() -> None:
    logging.getLogger("mcpgen").disabled = True  # handlers log tracebacks on purpose
    sys.stdout = io.StringIO() if os.environ.get("FUZZ_SHOW_STDOUT") != "1" else sys.stdout  # the noisy tool prints
    harness()  # build the session before the clock starts
    atheris.Setup(_arguments(sys.argv), TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
