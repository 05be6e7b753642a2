"""URL-mode elicitation in both eras: the stateless era's question has no ``elicitationId``
(its input key names it), and the client's handler, written against the handshake era's
type, gets the server's id in both."""

from __future__ import annotations

import pytest

from mcpgen import Client, Context, Server
from mcpgen.generated import ElicitRequestParams, ElicitRequestURLParams, ElicitResult, TextContent

pytestmark = pytest.mark.anyio


def url_server() -> Server:
    server = Server("url-elicitation")

    @server.tool()
    async def sign_in(ctx: Context) -> str:
        answer = await ctx.elicit_url("Sign in to continue", "https://auth.example/start", "sign-in-7")
        return answer.action

    return server


@pytest.mark.parametrize("era", ["handshake", "stateless"])
async def test_a_url_question_reaches_the_handler_with_the_servers_id(era: str) -> None:
    asked: list[ElicitRequestParams] = []

    async def on_elicit(params: ElicitRequestParams) -> ElicitResult:
        asked.append(params)
        return ElicitResult(action="accept")

    async with Client(url_server(), era=era, elicitation=on_elicit) as client:
        assert client.spoken_era == era
        result = await client.call_tool("sign_in", {})
    assert result.is_error is not True
    assert result.content == [TextContent(text="accept")]
    (params,) = asked
    assert isinstance(params, ElicitRequestURLParams)
    assert (params.elicitation_id, params.url) == ("sign-in-7", "https://auth.example/start")
