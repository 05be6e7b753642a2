"""The stateless era answers on the spot what needs no waiting, as the handshake era does:
a tool declared ``blocking=False`` (and a request refused before any handler runs) takes
no task, over stdio and over HTTP, and its answer is the one the task path gives. A request
that carries no answers and no ``requestState`` gets its input scope only if its handler
asks the client. (Speed is measured by bench/, never asserted here: these tests pin down
what the fast path does, and that it is taken.)"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import httpx
import msgspec

from mcpgen.generated import CallToolRequestParams, CallToolResult
from mcpgen.runtime.jsonrpc import kernel
from mcpgen.runtime.jsonrpc.framing import decode_envelope
from mcpgen.runtime.jsonrpc.transport import memory_pair
from tests.era import CAPABILITIES, MODERN
from tests.http_server import free_port, running
from tests.paths import SERVERS
from tests.wire import RawPeer

SERVER = SERVERS / "stateless_now.py"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": CAPABILITIES,
}


def load_server() -> Any:
    """A fresh copy of the test server's module (its Server), imported from its file."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"stateless_now_{id(object())}", SERVER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.server


def call(rid: int, name: str, arguments: dict[str, Any] | None = None, **params: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"_meta": META, "name": name, **params}
    if arguments is not None:
        body["arguments"] = arguments
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": body}


def text_of(reply: dict[str, Any]) -> str:
    result = reply["result"]
    assert result["resultType"] == "complete", reply
    return str(result["content"][0]["text"])


# ---------------------------------------------------------------- no task on the spot


def test_a_blocking_false_tool_takes_no_task_and_others_still_get_one() -> None:
    server = load_server()

    async def main() -> tuple[int, int]:
        ours, theirs = memory_pair()
        serving = asyncio.create_task(server.serve(ours))
        loop = asyncio.get_running_loop()
        created = 0
        default = loop.get_task_factory()

        def counting(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> Any:
            nonlocal created
            created += 1
            if default is not None:
                return default(loop, coro, **kwargs)
            return asyncio.Task(coro, loop=loop, **kwargs)

        async def exchange(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
            for message in messages:
                await theirs.send(json.dumps(message).encode())
            replies = [json.loads(await theirs.receive() or b"null") for _ in messages]
            return sorted(replies, key=lambda r: r["id"])

        await exchange([call(1, "quick", {"text": "first"})])  # the first request picks the era
        loop.set_task_factory(counting)
        try:
            quick = await exchange([call(i, "quick", {"text": f"q{i}"}) for i in range(2, 202)])
            on_the_spot = created
            created = 0
            slow = await exchange([call(i, "waits", {"text": f"w{i}"}) for i in range(300, 305)])
            in_tasks = created
        finally:
            loop.set_task_factory(default)
        assert [text_of(r) for r in quick] == [f"q{i}" for i in range(2, 202)]
        assert [text_of(r) for r in slow] == [f"w{i}" for i in range(300, 305)]
        await theirs.close()
        await serving
        return on_the_spot, in_tasks

    on_the_spot, in_tasks = asyncio.run(main())
    assert on_the_spot < 10, f"{on_the_spot} tasks for 200 calls answered on the spot"
    assert in_tasks >= 5  # an async tool still runs in a task of its own


def test_answers_on_the_spot_are_those_of_the_task_path() -> None:
    """The same requests, served by a server whose call_tool is overridden (which keeps every
    call on the task path), give the same bytes."""
    spot = load_server()
    tasked = load_server()
    stock = type(tasked).call_tool
    seen: list[str] = []

    class Tasked(type(tasked)):  # type: ignore[misc]
        async def call_tool(self, params: CallToolRequestParams) -> CallToolResult:
            seen.append(params.name)
            return await stock(self, params)

    tasked.__class__ = Tasked
    requests = [
        call(1, "quick", {"text": "héllo"}),
        call(2, "quick_fails", {"text": "luck"}),  # a handler's error: an isError result
        call(3, "quick", {"text": 3}),  # invalid arguments: an isError result
        call(4, "no_such_tool", {}),  # -32602
        {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "quick", "arguments": {"text": "x"}}},
        {
            "jsonrpc": "2.0",
            "id": "six",
            "method": "tools/call",
            "params": {"_meta": {**META, "io.modelcontextprotocol/protocolVersion": "1999-01-01"}, "name": "quick"},
        },
    ]

    def served_now(server: Any, env: Any) -> tuple[bytes, int | None] | None:
        """The answer when the kernel gave it on the spot (as the request was read), else
        None (its task is cancelled: only the kernel's choice is looked at here). On Python
        3.12+ a request's task starts eagerly, so a task that never waits ends within serve
        too: whether the override saw the call is what tells the two paths apart."""
        reply = kernel.OneReply()
        try:
            request = server.features.stateless.admit(env, sink=None, reply=reply, slots=None)
        except Exception as exc:
            return server.features.stateless.refusal(env.id, env.method, exc)  # type: ignore[no-any-return]
        kernel.serve(request)
        if reply.ended:
            return reply.answer_frame
        kernel.cancel(request)
        return None

    async def main() -> None:
        for message in requests:
            env = decode_envelope(json.dumps(message).encode())
            now = served_now(spot, env)
            assert now is not None, message  # answered on the spot
            assert now == await spot.features.stateless.handle(env)
            assert now == await tasked.features.stateless.handle(env), message
            seen.clear()
            later = served_now(tasked, env)
            if message["id"] in (1, 2, 3, 4):
                # the override must see the call: a task (not started yet before 3.12, or
                # started eagerly and done), never an answer on the spot past the override
                started = (later, seen) == (now, [message["params"]["name"]])
                assert (later, seen) == (None, []) or started
            else:
                assert seen == [] and later == now  # refused before any handler
        pending = served_now(spot, decode_envelope(json.dumps(call(7, "waits", {"text": "w"})).encode()))
        assert pending is None  # an async tool needs a task

    asyncio.run(main())


# ---------------------------------------------------------------- the input scope, only when asked


def test_the_input_scope_is_built_only_when_a_handler_asks() -> None:
    server = load_server()

    async def main() -> None:
        plain = decode_envelope(json.dumps(call(1, "quick", {"text": "x"})).encode())
        request = server.features.stateless.admit(plain, sink=None, reply=kernel.OneReply(), slots=None)
        assert request.session.request.inputs is None  # nothing to check and nobody asked: no digest made
        frame, _ = await server.features.stateless.handle(decode_envelope(json.dumps(call(2, "asks", {})).encode()))
        first = msgspec.json.decode(frame)["result"]
        assert first["resultType"] == "input_required" and list(first["inputRequests"]) == ["name"]
        retry = call(
            3,
            "asks",
            {},
            inputResponses={"name": {"action": "accept", "content": {"name": "Ada"}}},
            requestState=first["requestState"],
        )
        frame, _ = await server.features.stateless.handle(decode_envelope(json.dumps(retry).encode()))
        assert text_of(msgspec.json.decode(frame)) == "hello Ada"
        # The state still belongs to its own request only.
        other = call(4, "asks", {"unexpected": 1}, inputResponses={}, requestState=first["requestState"])
        frame, code = await server.features.stateless.handle(decode_envelope(json.dumps(other).encode()))
        assert code == -32602 and b"another request" in frame

    asyncio.run(main())


# ---------------------------------------------------------------- over the real transports


def test_stdio_answers_on_the_spot_in_order_beside_tasks() -> None:
    async def main() -> None:
        peer = await RawPeer.start(script=SERVER)
        try:
            burst = [call(1, "waits", {"text": "slow"}, _meta={**META, "progressToken": "p"})]
            burst += [call(i, "quick" if i % 3 else "pooled", {"text": f"t{i}"}) for i in range(2, 120)]
            burst.append({"jsonrpc": "2.0", "id": 500, "method": "tools/call", "params": {"name": "quick"}})
            await peer.send_raw(b"".join(json.dumps(m).encode() + b"\n" for m in burst))
            replies: list[dict[str, Any]] = []
            progress = 0
            while len(replies) < len(burst):
                frame = await peer.recv(10)
                if frame.get("method") == "notifications/progress":
                    progress += 1
                else:
                    replies.append(frame)
            by_id = {r["id"]: r for r in replies}
            assert len(by_id) == len(burst) and progress == 1
            assert text_of(by_id[1]) == "slow"
            assert all(text_of(by_id[i]) == f"t{i}" for i in range(2, 120))
            assert by_id[500]["error"]["code"] == -32602
            # Answers on the spot go out in the order their requests were read.
            quick = [r["id"] for r in replies if isinstance(r["id"], int) and 2 <= r["id"] < 120 and r["id"] % 3]
            assert quick == sorted(quick)
        finally:
            await peer.close()

    asyncio.run(main())


def test_http_answers_on_the_spot_with_json_and_streams_the_rest() -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"

    def post(message: dict[str, Any]) -> httpx.Response:
        name = message["params"].get("name", "")
        headers = {
            "MCP-Protocol-Version": MODERN,
            "Mcp-Method": "tools/call",
            "Mcp-Name": name,
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        }
        return httpx.post(url, content=json.dumps(message), headers=headers, timeout=10)

    with running([sys.executable, str(SERVER), str(port)], url):
        quick = post(call(1, "quick", {"text": "héllo"}))
        assert quick.status_code == 200 and quick.headers["content-type"].startswith("application/json")
        assert text_of(quick.json()) == "héllo"
        failed = post(call(2, "quick_fails", {"text": "luck"}))
        assert failed.status_code == 200 and failed.json()["result"]["isError"] is True
        unknown = post(call(3, "no_such_tool", {}))
        assert unknown.status_code == 400 and unknown.json()["error"]["code"] == -32602
        streamed = post(call(4, "waits", {"text": "w"}, _meta={**META, "progressToken": 1}))
        assert streamed.headers["content-type"].startswith("text/event-stream")
        assert '"notifications/progress"' in streamed.text and '"text":"w"' in streamed.text
        pooled = post(call(5, "pooled", {"text": "p"}))
        assert pooled.status_code == 200 and text_of(pooled.json()) == "p"
