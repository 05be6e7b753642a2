"""Every registering decorator works bare (``@server.tool``) and called
(``@server.tool(...)``); anything else given where the name or URI goes is a TypeError
when the decorator is applied, not a function silently left unregistered."""

from __future__ import annotations

from typing import Any

import pytest

from mcpgen import Client, Server
from mcpgen.generated import PromptReference, ResourceTemplateReference, TextContent, TextResourceContents

pytestmark = pytest.mark.anyio


async def test_bare_and_called_forms_register_alike() -> None:
    server = Server("s")

    @server.tool
    def bare_tool(a: int) -> int:
        """Doubles."""
        return 2 * a

    @server.tool()
    def called_tool(a: int) -> int:
        return 3 * a

    @server.prompt
    def bare_prompt(topic: str) -> str:
        return f"about {topic}"

    @server.prompt("named_prompt")
    def called_prompt(topic: str) -> str:
        return f"named {topic}"

    @server.resource
    def settings() -> str:
        return "bare resource"

    @server.resource("mem://called")
    def called_resource() -> str:
        return "called resource"

    @server.resource_template
    def user(org: str, login: str) -> str:
        return f"{org}/{login}"

    @server.resource_template("mem://called/{key}")
    def called_template(key: str) -> str:
        return key

    @server.completion(argument="topic", prompt="bare_prompt")
    def topics(value: str, arguments: dict[str, str]) -> list[str]:
        return ["weather", "tides"]

    @server.completion(argument="login", template="resource://user/{org}/{login}")
    def logins(value: str, arguments: dict[str, str]) -> list[str]:
        return [f"{arguments.get('org')}-admin"]

    # The decorator hands the function back unchanged, in both forms.
    assert bare_tool(2) == 4 and called_tool(2) == 6 and settings() == "bare resource"

    async with Client(server) as client:
        tools = {t.name: t for t in await client.list_tools()}
        assert set(tools) == {"bare_tool", "called_tool"} and tools["bare_tool"].description == "Doubles."
        assert (await client.call_tool("bare_tool", {"a": 5})).structured_content == {"result": 10}
        assert {p.name for p in await client.list_prompts()} == {"bare_prompt", "named_prompt"}
        message = (await client.get_prompt("bare_prompt", {"topic": "tea"})).messages[0].content
        assert message == TextContent(text="about tea")
        assert {r.uri for r in await client.list_resources()} == {"resource://settings", "mem://called"}
        contents = (await client.read_resource("resource://settings")).contents[0]
        assert isinstance(contents, TextResourceContents) and contents.text == "bare resource"
        templates = {t.uri_template for t in await client.list_resource_templates()}
        assert templates == {"resource://user/{org}/{login}", "mem://called/{key}"}
        contents = (await client.read_resource("resource://user/acme/ada")).contents[0]
        assert isinstance(contents, TextResourceContents) and contents.text == "acme/ada"
        done = await client.complete(PromptReference(name="bare_prompt"), "topic", "")
        assert done.completion.values == ["weather", "tides"]
        done = await client.complete(
            ResourceTemplateReference(uri="resource://user/{org}/{login}"), "login", "", {"org": "acme"}
        )
        assert done.completion.values == ["acme-admin"]


def fn() -> str:
    return "x"


@pytest.mark.parametrize(
    "decorate",
    [
        lambda s: s.tool(42),
        lambda s: s.tool(b"name"),
        lambda s: s.tool(["name"]),
        lambda s: s.prompt(3.5),
        lambda s: s.resource(b"mem://x"),
        lambda s: s.resource(None),
        lambda s: s.resource_template(7),
        lambda s: s.completion(fn),  # no bare form: which argument it completes must be said
        lambda s: s.completion(argument=5, prompt="p"),
        lambda s: s.completion(argument="a", prompt=fn),
    ],
)
def test_anything_but_a_string_or_the_function_is_a_type_error(decorate: Any) -> None:
    with pytest.raises(TypeError):
        decorate(Server("s"))


@pytest.mark.parametrize("decorator", ["tool", "prompt", "resource", "resource_template"])
def test_decorating_something_that_is_not_a_function_is_a_type_error(decorator: str) -> None:
    server = Server("s")
    first = {"tool": (), "prompt": (), "resource": ("mem://x",), "resource_template": ("mem://x/{a}",)}[decorator]
    with pytest.raises(TypeError, match="decorates a function"):
        getattr(server, decorator)(*first)(42)


def test_functions_that_cannot_serve_what_they_are_registered_as_are_refused() -> None:
    server = Server("s")

    def needs_an_argument(key: str) -> str:
        return key

    def takes_nothing() -> str:
        return "x"

    with pytest.raises(TypeError, match="resource_template"):
        server.resource("mem://x")(needs_an_argument)
    with pytest.raises(TypeError, match="resource_template"):
        server.resource(needs_an_argument)
    with pytest.raises(TypeError, match="no parameters"):
        server.resource_template(takes_nothing)


def test_a_template_whose_variables_miss_the_parameters_is_refused() -> None:
    """`notes://{id}` on `def note(note_id)` would answer every read "not found": refused at
    registration, naming both sets."""
    server = Server("t")
    with pytest.raises(TypeError) as refused:

        @server.resource_template("notes://{id}")
        def note(note_id: str) -> str:
            return note_id

    message = str(refused.value)
    assert "{id}" in message and "(note_id)" in message
    assert "no parameter for id" in message and "no variable for the required note_id" in message

    with pytest.raises(TypeError, match="no variable for the required lang"):

        @server.resource_template("notes://{id}")
        def translated(id: str, lang: str) -> str:
            return id

    # A parameter with a default may stay out of the template; a query variable fills one.
    @server.resource_template("notes://{id}{?lang}")
    def optional(id: str, lang: str = "en", verbose: bool = False) -> str:
        return id


async def test_a_tool_is_built_when_first_listed_or_called() -> None:
    """Registering a tool reads no annotation (a server of thousands starts at once); what
    only the annotations can tell is told when the tool is first listed or called: the list
    leaves it out and says why in the log, a call answers with why."""
    from mcpgen import Client

    class Opaque: ...

    server = Server("lazy")

    @server.tool()
    def fine(a: int) -> int:
        return a

    @server.tool()
    def broken(a: Opaque) -> str:  # no schema for Opaque: found when built
        return "never"

    with pytest.raises(AttributeError):  # not built at registration
        object.__getattribute__(server.catalog.tools["broken"], "signature")
    async with Client(server) as client:
        assert [t.name for t in await client.list_tools()] == ["fine"]
        answer = await client.call_tool("broken", {"a": 1})
    assert answer.is_error is True and "cannot be served" in answer.content[0].text  # type: ignore[union-attr]

    def positional(a: int, /) -> int:
        return a

    with pytest.raises(TypeError, match="positional-only"):
        server.tool()(positional)  # what the function's shape says is refused at once
