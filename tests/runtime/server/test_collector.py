"""The garbage collector tuned for serving at an HTTP app's start-up: what start-up made is
frozen and collections are rarer, unless the application chose its own thresholds or
turned the tuning off. (Its effect on throughput is measured by bench/scale.py.)"""

from __future__ import annotations

import subprocess
import sys

import pytest

from mcpgen.runtime.server.collector import SERVING

CHECK = """
import asyncio, gc, sys
from mcpgen import Server
frozen_before = gc.get_freeze_count()  # not 0 on 3.12: the interpreter freezes some of its own
{before}
app = Server("gc").http_app({options})
async def main():
    messages = iter([{{"type": "lifespan.startup"}}, {{"type": "lifespan.shutdown"}}])
    sent = []
    async def receive():
        return next(messages)
    async def send(message):
        sent.append(message["type"])
    await app({{"type": "lifespan"}}, receive, send)
    print(gc.get_threshold(), gc.get_freeze_count() > frozen_before, sent[0])
asyncio.run(main())
"""


def started(before: str = "", options: str = "") -> str:
    code = CHECK.format(before=before, options=options)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def test_an_app_tunes_the_collector_at_start_up() -> None:
    assert started() == f"{SERVING} True lifespan.startup.complete"


@pytest.mark.parametrize(
    ("before", "options"), [("gc.set_threshold(5000, 10, 10)", ""), ("", "tune_gc=False"), ("gc.disable()", "")]
)
def test_the_applications_own_choice_is_kept(before: str, options: str) -> None:
    threshold, frozen, _ = started(before, options).rsplit(" ", 2)
    assert threshold != str(SERVING) and frozen == "False"
