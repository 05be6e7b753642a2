"""Annotations written as text are evaluated once per module and text (a generated server's
thousands of tools share a few), with what ``inspect.signature(eval_str=True)`` gives."""

from __future__ import annotations

import functools
import inspect
from typing import Any

import pytest

from mcpgen.runtime.server.signature import signature_of

SOURCE = """
from __future__ import annotations

async def look_up(query: Thing, limit: int = 10) -> Thing:
    return query

def other(query: Thing) -> list[Thing]:
    return [query]
"""


def module(thing: type) -> dict[str, Any]:
    scope: dict[str, Any] = {"Thing": thing, "__name__": f"made_{thing.__name__}"}
    exec(compile(SOURCE, "<made>", "exec"), scope)
    return scope


def test_the_same_text_in_two_modules_means_what_each_module_says() -> None:
    numbers, words = module(int), module(str)
    for scope, json_type in ((numbers, "integer"), (words, "string"), (numbers, "integer")):
        for name in ("look_up", "other"):
            made = signature_of(scope[name])
            assert made.input_schema["properties"]["query"]["type"] == json_type
            resolved = inspect.signature(scope[name], eval_str=True)
            assert resolved.parameters["query"].annotation is scope["Thing"]


def test_a_wrapped_function_and_an_unknown_name_are_resolved_as_inspect_does() -> None:
    scope = module(int)

    @functools.wraps(scope["other"])
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return scope["other"](*args, **kwargs)

    assert signature_of(wrapper).input_schema["properties"]["query"]["type"] == "integer"
    del scope["Thing"]  # the text names nothing now (the cache must not answer for it)
    fresh: dict[str, Any] = {"__name__": "made_fresh"}
    exec(compile(SOURCE, "<made>", "exec"), fresh)
    with pytest.raises(TypeError, match="cannot resolve the annotations of `look_up`"):
        signature_of(fresh["look_up"])
