"""docs/policy.md stays true: its policy as Python and as YAML compile to the same
ValidatingAdmissionPolicy and binding, and the ``kubewerk policy test`` transcripts
print what the page shows, with the files the page gives saved as a reader saves them.
The engine's semantics are tested in tests/schema/admission_policy; this keeps the
page's examples and commands honest."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubewerk.cli import build_parser, main

from .pages import (
    fenced,
    named_files,
    page,
    run_transcript,
    section,
    subparser,
    synopsis_mismatch,
)

DOC = page("policy")


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory holding every file the page names, as the current directory."""
    written = named_files(fenced(DOC), tmp_path)
    assert {p.name for p in written} == {
        "replica_limit.py",
        "replica-limit-policy.yaml",
        "replica-limits.yaml",
        "deploy-7.yaml",
        "deploy-3.yaml",
        "cases.yaml",
    }
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    try:
        yield tmp_path
    finally:
        sys.modules.pop("replica_limit", None)


def test_the_python_and_yaml_forms_compile_to_the_same_objects(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["gen", "policy", "replica_limit", "-o", "from-python"]) == 0
    assert main(["gen", "policy", "replica-limit-policy.yaml", "-o", "from-yaml"]) == 0
    assert capsys.readouterr().out.split() == [
        "from-python/replica-limit.yaml",
        "from-yaml/replica-limit.yaml",
    ]
    python = (workdir / "from-python" / "replica-limit.yaml").read_text()
    assert python == (workdir / "from-yaml" / "replica-limit.yaml").read_text()
    assert "kind: ValidatingAdmissionPolicyBinding" in python
    assert main(["gen", "policy", "replica_limit"]) == 0
    assert capsys.readouterr().out == python


def test_the_policy_test_transcripts_print_what_the_page_shows(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shells = [b for b in fenced(DOC) if b.lang == "" and b.text.startswith("$ kubewerk")]
    assert len(shells) == 2
    codes = [
        code for block in shells for code in run_transcript(block, lambda: capsys.readouterr().out)
    ]
    assert codes == [1, 1, 0, 0]


def test_the_policy_test_synopsis_lists_every_option() -> None:
    [synopsis, *_] = fenced(section(DOC, "## `kubewerk policy test`"))
    assert synopsis_mismatch(synopsis.text, subparser(build_parser(), "policy", "test")) == []
