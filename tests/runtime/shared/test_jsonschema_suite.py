"""The official JSON-Schema-Test-Suite, run through mcpgen.runtime.shared.jsonschema.

Every test case of ``tests/draft2020-12/`` and ``tests/draft7/``, including their
``optional/`` parts (``optional/format/`` with format assertion on), is one test here,
read from ``../shared/json-schema-test-suite`` (not copied into the project). The suite's
remote ``$ref`` documents, which it expects at ``http://localhost:1234/``, are served
from its ``remotes/`` directory on 127.0.0.1 and reached through ``compile_schema``'s
``retrieve`` hook; the runtime itself never fetches a remote ``$ref``.

A test case the library gets wrong goes into KNOWN_FAILURES (strict xfail), so one it
starts getting right fails loudly; today there is none. The ``jsonschema`` package, the
reference implementation, is cross-checked against a sample of the same cases.
"""

from __future__ import annotations

import http.server
import json
import re
import threading
import urllib.request
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import jsonschema
import pytest
import referencing
import referencing.jsonschema

from mcpgen.runtime.shared.jsonschema import SchemaValidationError, compile_schema
from tests.conftest import SHARED, shared_params, shared_path

SUITE = SHARED / "json-schema-test-suite"
REMOTE = "http://localhost:1234/"
DRAFTS = {"draft2020-12": None, "draft7": "http://json-schema.org/draft-07/schema#"}

# "<draft>/<file>::<group>::<test>" -> why the library fails it. Checked with strict xfail.
KNOWN_FAILURES: dict[str, str] = {}


def _cases() -> Iterator[Any]:
    for draft, schema_uri in DRAFTS.items():
        folder = SUITE / "tests" / draft
        for path in sorted(folder.rglob("*.json")):
            name = path.relative_to(folder).as_posix()
            for g, group in enumerate(json.loads(path.read_text())):
                schema = group["schema"]
                # The draft7 files leave the draft to the runner; the runtime learns it from
                # $schema, as it would from a tool's schema.
                if schema_uri and isinstance(schema, dict) and "$schema" not in schema:
                    schema = {"$schema": schema_uri, **schema}
                for test in group["tests"]:
                    case_id = f"{draft}/{name}::{group['description']}::{test['description']}"
                    marks = []
                    if case_id in KNOWN_FAILURES:
                        marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_FAILURES[case_id]))
                    yield pytest.param(
                        (draft, name, g),
                        schema,
                        name.startswith("optional/format/"),
                        test["data"],
                        test["valid"],
                        id=case_id,
                        marks=marks,
                    )


CASES = shared_params(_cases, 5)


class _Remotes(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        pass


@pytest.fixture(scope="module")
def retrieve() -> Iterator[Callable[[str], Any]]:
    """The suite's ``remotes/`` served on 127.0.0.1, and a retriever mapping the
    suite's ``http://localhost:1234/`` onto it. Any other URI is refused."""
    handler = partial(_Remotes, directory=str(shared_path("json-schema-test-suite", "remotes")))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback, never a proxy

    def fetch(uri: str) -> Any:
        if not uri.startswith(REMOTE):
            raise LookupError(f"the test suite has no remote {uri}")
        with opener.open(base + uri[len(REMOTE) :], timeout=10) as response:
            return json.load(response)

    yield fetch
    server.shutdown()
    server.server_close()
    thread.join()


_compiled: dict[tuple[str, str, int], Callable[[Any], None]] = {}


@pytest.mark.parametrize(("group", "schema", "formats", "data", "valid"), CASES)
def test_suite(
    retrieve: Callable[[str], Any], group: tuple[str, str, int], schema: Any, formats: bool, data: Any, valid: bool
) -> None:
    check = _compiled.get(group)
    if check is None:  # once per schema, as the runtime does per tool
        check = _compiled[group] = compile_schema(schema, format_assertion=formats, retrieve=retrieve)
    if valid:
        check(data)
    else:
        with pytest.raises(SchemaValidationError) as info:
            check(data)
        assert info.value.path.startswith("$") and "\n" not in str(info.value)


def test_suite_is_all_there() -> None:
    """The parametrisation above really holds the suite (a copy cut short fails here)."""
    shared_path("json-schema-test-suite")
    counts: dict[str, int] = {}
    for param in CASES:
        draft, name, _ = param.values[0]
        key = draft + ("/optional" if name.startswith("optional/") else "")
        counts[key] = counts.get(key, 0) + 1
    # Counts for the suite's commit recorded in ../shared/json-schema-test-suite/SOURCE.md.
    assert counts == {"draft2020-12": 1299, "draft2020-12/optional": 926, "draft7": 927, "draft7/optional": 794}


# -- the reference implementation, on a sample of the same cases -------------------


def _oracle_registry() -> referencing.Registry[Any]:
    remotes = shared_path("json-schema-test-suite", "remotes")
    resources = []
    for path in sorted(remotes.rglob("*.json")):
        contents = json.loads(path.read_text())
        # Documents under draft7/ (and older) carry no $schema: say which draft they are.
        default = referencing.jsonschema.DRAFT7 if "/draft7/" in path.as_posix() else referencing.jsonschema.DRAFT202012
        uri = REMOTE + path.relative_to(remotes).as_posix()
        resources.append((uri, referencing.Resource.from_contents(contents, default_specification=default)))
    return referencing.Registry().with_resources(resources)


def test_oracle_agrees_on_a_sample(retrieve: Callable[[str], Any]) -> None:
    """Every 5th case outside optional/ (the reference leaves some optional parts out),
    judged by mcpgen and by the ``jsonschema`` package: the verdicts must be the same."""
    registry = _oracle_registry()
    sample = [p for p in CASES if not p.values[0][1].startswith("optional/")][::5]
    assert len(sample) > 400
    disagree, unjudged = [], []
    for param in sample:
        (draft, _, _), schema, _, data, valid = param.values
        default = jsonschema.Draft7Validator if draft == "draft7" else jsonschema.Draft202012Validator
        oracle = jsonschema.validators.validator_for(schema, default=default)(schema, registry=registry)
        try:
            theirs = oracle.is_valid(data)
        except re.error:  # Python's re lacks ECMA-262 regex features (\p{...}): no verdict
            unjudged.append(param.id)
            continue
        try:
            compile_schema(schema, retrieve=retrieve)(data)
            ours = True
        except SchemaValidationError:
            ours = False
        if not ours == theirs == valid:
            disagree.append((param.id, valid, ours, theirs))
    assert disagree == []
    assert len(unjudged) < 10, unjudged
