"""A server whose workers share their state through Redis, for tests/runtime/stores/test_redis_store.py
(several apps in one process, each a "worker") and tests/runtime/stores/test_scale_redis.py (uvicorn
``--workers 4`` on one port; ``app`` reads ``$MCPGEN_REDIS_URL``, ``$MCPGEN_REDIS_PREFIX``
and ``$MCPGEN_REDIS_LEASE``). Every tool says which process ran it:

- ``whoami()``: the worker's pid (tells a test which worker a connection reached);
- ``steps(n, pause)``: reports progress 1..n, ``pause`` seconds apart, then returns n;
- ``confirm(name)`` (task-capable): asks the client (key ``go``), answers with the reply;
- ``ticker(ticks, pause)`` (task-capable): reports progress ``ticks`` times, then returns;
- ``sleeper(seconds)`` (task-capable): sleeps; counts its cancellations in this worker;
- ``announce(name)``: registers a tool (a tools list change); ``ask()``: an elicitation;
- ``stats()``: this worker's cancelled sleepers and running tasks.

Run: MCPGEN_REDIS_URL=redis://127.0.0.1:6379/0 uvicorn tests.servers.redis_peer:app --workers 4
(``tagged_app``: the same, each response naming the pid that received its request).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from mcpgen import Context, Server
from mcpgen.runtime.server.http_server import McpHttpApp
from mcpgen.runtime.stores.redis_store import RedisStore

GO_FORM = {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}


def make_server() -> Server:
    server = Server("redis-peer")
    counts = {"cancelled": 0, "entered": 0}

    @server.tool()
    async def whoami() -> dict[str, int]:
        """The worker's pid."""
        return {"pid": os.getpid()}

    @server.tool()
    async def steps(n: int, ctx: Context, pause: float = 0.05) -> dict[str, int]:
        """Progress 1..n, ``pause`` seconds apart, then n and the pid."""
        for i in range(1, n + 1):
            await ctx.report_progress(i, n, f"step {i}")
            await asyncio.sleep(pause)
        return {"n": n, "pid": os.getpid()}

    @server.tool(task="optional")
    async def confirm(name: str, ctx: Context) -> dict[str, Any]:
        """Asks the client for a word (key ``go``) and returns it with the pid."""
        answer = await ctx.elicit(f"pid={os.getpid()}: a word for {name}?", GO_FORM, key="go")
        return {"pid": os.getpid(), "name": name, "word": (answer.content or {}).get("word")}

    @server.tool(task="optional")
    async def ticker(ticks: int, ctx: Context, pause: float = 0.1) -> dict[str, int]:
        """Reports progress ``ticks`` times, ``pause`` seconds apart (as a task: each report
        is recorded on the task, in Redis), then returns the ticks and the pid."""
        for i in range(1, ticks + 1):
            await ctx.report_progress(i, ticks, f"tick {i}")
            await asyncio.sleep(pause)
        return {"ticks": ticks, "pid": os.getpid()}

    @server.tool(task="optional")
    async def sleeper(seconds: float) -> dict[str, int]:
        """Sleeps; a cancellation is counted in this worker."""
        counts["entered"] += 1
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            counts["cancelled"] += 1
            raise
        return {"pid": os.getpid()}

    @server.tool()
    async def announce(name: str) -> int:
        """Registers a tool named ``name`` (the sessions that follow the list are told);
        returns the pid."""
        server.tool(name=name, description="added at run time")(lambda: "new")
        return os.getpid()

    @server.tool()
    async def ask(ctx: Context) -> dict[str, Any]:
        """Asks the client for a word (an elicitation on the request's stream); returns it."""
        answer = await ctx.elicit("a word?", GO_FORM)
        return {"pid": os.getpid(), "word": (answer.content or {}).get("word")}

    @server.tool()
    async def stats() -> dict[str, int]:
        """This worker's pid, cancelled sleepers, entered sleepers and running tasks."""
        return {"pid": os.getpid(), **counts, "running": server.tasks.running}

    return server


def make_app(
    url: str, prefix: str = "mcpgen", lease: float = 15.0, **options: Any
) -> tuple[Server, McpHttpApp, RedisStore]:
    """One worker: its server, its app (sharing Redis at ``url``) and its store."""
    server = make_server()
    store = RedisStore(url, prefix=prefix, lease=lease)
    return server, server.http_app(store=store, **options), store


def tagged(inner: Any) -> Any:
    """``inner`` with each HTTP response saying which process received its request
    (``x-worker-pid``): how a test sees its requests spread over the workers."""
    tag = (b"x-worker-pid", str(os.getpid()).encode())

    async def app(scope: Any, receive: Any, send: Any) -> None:
        async def tagging(message: Any) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), tag]}
            await send(message)

        await inner(scope, receive, tagging if scope["type"] == "http" else send)

    return app


app = make_app(
    os.environ.get("MCPGEN_REDIS_URL", "redis://127.0.0.1:6379/0"),
    os.environ.get("MCPGEN_REDIS_PREFIX", "mcpgen"),
    float(os.environ.get("MCPGEN_REDIS_LEASE", "15")),
)[1]
tagged_app = tagged(app)
