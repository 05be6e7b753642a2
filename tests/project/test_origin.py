"""Where mcpgen came from decides what an install hint says and what a new project depends
on (issue 35.1, 35.3): an index, a checkout (editable), a directory, a wheel, a git URL, as
pip records them (PEP 610's direct_url.json)."""

from __future__ import annotations

import json
from pathlib import Path

from mcpgen import __version__
from mcpgen.origin import Origin, from_record, install_command, origin
from mcpgen.scaffold import project_requirement
from tests.paths import ROOT


def record(url: str, **info: object) -> str:
    return json.dumps({"url": url, **info})


def test_no_record_is_an_index() -> None:
    source = from_record(None)
    assert source == Origin("index")
    assert source.pip_install("http") == "pip install 'mcpgen[http]'"
    assert source.requirement("http") == f"mcpgen[http]>={__version__}"


def test_a_wheel_is_named_by_its_file(tmp_path: Path) -> None:
    wheel = tmp_path / "dist dir" / f"mcpgen-{__version__}-py3-none-any.whl"
    wheel.parent.mkdir()
    wheel.write_bytes(b"")
    source = from_record(record(wheel.as_uri(), archive_info={"hashes": {}}))
    assert source == Origin("archive", str(wheel))
    assert source.requirement("codegen") == f"mcpgen[codegen] @ {wheel.as_uri()}"
    assert source.pip_install("codegen") == f"pip install 'mcpgen[codegen] @ {wheel.as_uri()}'"
    assert project_requirement(tmp_path / "demo", source) == f"mcpgen[http] @ {wheel.as_uri()}"


def test_a_directory_editable_or_not(tmp_path: Path) -> None:
    clone = tmp_path / "src" / "mcpgen"
    clone.mkdir(parents=True)
    editable = from_record(record(clone.as_uri(), dir_info={"editable": True}))
    assert editable == Origin("directory", str(clone), editable=True)
    assert editable.pip_install("http") == f"pip install -e '{clone}[http]'"
    copied = from_record(record(clone.as_uri(), dir_info={}))
    assert copied.pip_install("http") == f"pip install 'mcpgen[http] @ {clone.as_uri()}'"
    # A project beside it names it relatively, as for a checkout.
    assert project_requirement(tmp_path / "src" / "demo", copied) == "mcpgen[http] @ {root:parent:uri}/mcpgen"


def test_a_git_url_keeps_its_commit() -> None:
    source = from_record(
        record(
            "https://example.org/mcpgen.git",
            vcs_info={"vcs": "git", "commit_id": "0123abc", "requested_revision": "main"},
        )
    )
    assert source.requirement("http") == "mcpgen[http] @ git+https://example.org/mcpgen.git@0123abc"
    assert source.pip_install() == "pip install 'mcpgen @ git+https://example.org/mcpgen.git@0123abc'"


def test_a_record_of_what_is_gone_falls_back_to_the_version(tmp_path: Path) -> None:
    gone = tmp_path / "mcpgen-0.1.0-py3-none-any.whl"
    assert from_record(record(gone.as_uri(), archive_info={})) == Origin("index")
    assert from_record("not json") == Origin("index")
    assert from_record(record("https://files.example.org/mcpgen.whl", archive_info={})) == Origin("index")


def test_this_checkout_is_its_own_origin() -> None:
    assert origin() == Origin("checkout", str(ROOT), editable=True)
    assert install_command("auth") == f"pip install -e '{ROOT}[auth]'"
