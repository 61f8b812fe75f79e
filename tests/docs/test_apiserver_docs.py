"""docs/apiserver.md's claims a newcomer acts on: the architecture names real modules
and classes, the ``builtins.py`` snippet names the real tuple (the PriorityClass example
itself is run by tests/apiserver/test_kinds.py), every limit's ``kubewerk up`` flag and
``EmbeddedServer`` keyword exist and are accepted, and ``kubewerk up --host 0.0.0.0`` is
refused with the quoted message before anything is opened."""

from __future__ import annotations

import importlib
import inspect
import re

import pytest

from kubewerk.apiserver import builtins
from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.cli import build_parser, main

from .pages import fenced, page, section, subparser

DOC = page("apiserver")


def test_the_architecture_names_real_modules_and_classes() -> None:
    [tree, *_] = fenced(section(DOC, "## Architecture"))
    named = re.findall(r"([a-z_]+)\.([A-Z]\w+)", tree.text)
    assert len(named) >= 6
    for module, name in named:
        assert hasattr(importlib.import_module(f"kubewerk.apiserver.{module}"), name), name
    packages = re.findall(r"─ ([a-z_]+)/ ", tree.text)
    assert packages == ["kinds"]
    for package in packages:
        importlib.import_module(f"kubewerk.apiserver.{package}")


def test_the_builtins_snippet_names_the_real_tuple() -> None:
    [snippet] = [b.text for b in fenced(DOC) if "BUILTIN_KINDS" in b.text]
    assert snippet.startswith("BUILTIN_KINDS = (")
    assert isinstance(builtins.BUILTIN_KINDS, tuple) and builtins.BUILTIN_KINDS


def _flag_keyword_pairs() -> list[tuple[str, str]]:
    limits = section(DOC, "## Limits")
    pairs = re.findall(r"`(--[a-z-]+)(?: [A-Z]+)?` / `([a-z_]+)=?`", limits)
    assert len(pairs) >= 8
    return pairs


@pytest.mark.parametrize(
    ("flag", "keyword"), _flag_keyword_pairs(), ids=[f for f, _ in _flag_keyword_pairs()]
)
def test_each_limit_has_its_flag_and_keyword(flag: str, keyword: str) -> None:
    up = subparser(build_parser(), "up")
    [action] = [a for a in up._actions if flag in a.option_strings]
    parameters = inspect.signature(EmbeddedServer.__init__).parameters
    if keyword in parameters:
        return
    # the store's bounds go through EmbeddedServer's **store_policy to open_store
    assert inspect.Parameter.VAR_KEYWORD in {p.kind for p in parameters.values()}
    server = EmbeddedServer("memory", **{keyword: action.default})
    assert server.store is not None


def test_a_non_loopback_host_is_refused_as_quoted(capsys: pytest.CaptureFixture[str]) -> None:
    where = section(DOC, "### Where it listens").replace("\n  ", " ")
    quoted = re.search(r"`(kubewerk: error: --host 0\.0\.0\.0: [^`]*?)\.\.\.`", where)
    assert quoted is not None
    capsys.readouterr()
    assert main(["up", "--host", "0.0.0.0", "--port", "0", "--kubeconfig", "/nonexistent/kc"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(quoted.group(1)), err
