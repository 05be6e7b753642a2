"""A stdio server started by a client leads a process group of its own, and closing the
client ends the whole group: a launcher's other children (``npx``, ``uv run`` and
``sh -c`` start the real server as a child) do not outlive the client."""

from __future__ import annotations

import asyncio
import os
import shlex
import sys
import uuid

import pytest

from mcpgen import Client
from mcpgen.runtime.transports.stdio import ProcessTransport
from tests.processes import running_with
from tests.wire import DEMO

pytestmark = pytest.mark.anyio

posix_only = pytest.mark.skipif(os.name != "posix", reason="process groups are POSIX's")


@posix_only
async def test_closing_the_client_ends_the_launchers_other_children() -> None:
    token = f"mcpgen-group-{uuid.uuid4().hex}"
    # The launcher starts a helper that would run for two minutes (it holds our pipes, as
    # a launcher's child does), then becomes the server.
    sleeper = shlex.join([sys.executable, "-c", "import time; time.sleep(120)", token])
    script = f"{sleeper} & exec {shlex.join([sys.executable, str(DEMO)])}"
    try:
        async with Client.stdio("sh", "-c", script) as client:
            assert (await client.call_tool("add", {"a": 1, "b": 2})).structured_content == {"result": 3}
            assert running_with(token), "the launcher's helper should be running"
            transport = client.session.transport
            assert isinstance(transport, ProcessTransport)
            assert transport.group == transport.process.pid == os.getpgid(transport.process.pid)
        for _ in range(100):  # the helper was signalled on close; it is reaped by init
            if not running_with(token):
                break
            await asyncio.sleep(0.05)
        assert running_with(token) == []
    finally:
        for pid in running_with(token):
            os.kill(pid, 9)


@posix_only
async def test_a_process_may_stay_in_our_group_when_asked() -> None:
    transport = await ProcessTransport.spawn(sys.executable, [str(DEMO)], own_group=False)
    try:
        assert transport.group is None
        assert os.getpgid(transport.process.pid) == os.getpgrp()
    finally:
        await transport.close()
