"""The README's claims that can drift from the code."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_every_path_in_where_things_are_exists() -> None:
    text = (ROOT / "README.md").read_text()
    section = text.split("### Where things are", 1)[1].split("\n## ", 1)[0]
    paths = re.findall(r"`(src/kubewerk/[^`]+)`", section)
    assert len(paths) > 20
    missing = [p for p in paths if not (ROOT / p).exists()]
    assert not missing, missing


async def test_the_servers_feature_list_matches_what_it_answers() -> None:
    """README: protobuf bodies work for built-in kinds; server-side apply works and every
    write keeps managedFields. Checked against the server itself."""
    from kubewerk.apiserver.app import ApiServer
    from kubewerk.apiserver.storage.memory import MemoryStore
    from tests.apiserver.helpers import asgi_call
    from tests.apiserver.test_protobuf import envelope, meta

    text = (ROOT / "README.md").read_text()
    assert "protobuf request bodies for the built-in kinds" in text
    assert "`kubectl apply --server-side` works; every write keeps `managedFields`" in text
    assert "Not yet: server-side apply" not in text
    app = ApiServer(MemoryStore())
    cms = "/api/v1/namespaces/default/configmaps"
    body = envelope("v1", "ConfigMap", meta("from-protobuf"))
    status, _, payload = await asgi_call(
        app, "POST", cms, headers={"content-type": "application/vnd.kubernetes.protobuf"}, body=body
    )
    assert status == 201, payload
    status, _, payload = await asgi_call(
        app,
        "PATCH",
        f"{cms}/from-protobuf",
        "fieldManager=me",
        headers={"content-type": "application/apply-patch+yaml"},
        body=b"{apiVersion: v1, kind: ConfigMap, metadata: {name: from-protobuf}, data: {a: b}}",
    )
    assert status == 200, payload
    status, _, payload = await asgi_call(app, "GET", f"{cms}/from-protobuf")
    assert status == 200 and b'"manager":"me","operation":"Apply"' in payload


def test_the_tours_define_and_govern_commands_work_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A newcomer pastes the tour's class into mypkg/models.py and runs its commands: the
    file `gen crd` writes is the one `compat` and `validate` then name, and each command
    answers as the README says."""
    from kubewerk.cli import main

    text = (ROOT / "README.md").read_text()
    tour = text.split("**Define**", 1)[1]
    model = tour.split("```python\n", 1)[1].split("```", 1)[0]
    govern = tour.split("**Govern**", 1)[1].split("```console\n", 1)[1].split("```", 1)[0]
    gen = tour.split("```console\n", 1)[1].split("```", 1)[0]
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text("")
    (tmp_path / "mypkg" / "models.py").write_text(model)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m == "mypkg" or m.startswith("mypkg.")]:
        monkeypatch.delitem(sys.modules, name)

    def argv(line: str) -> list[str]:
        words = shlex.split(line.split("  #", 1)[0].removeprefix("$ "))
        assert words[0] == ".venv/bin/kubewerk", line
        return words[1:]

    gen_cmd, gen_out = (line.split("  #", 1)[0].strip() for line in gen.splitlines()[:2])
    assert main(argv(gen_cmd)) == 0
    assert capsys.readouterr().out.strip() == gen_out
    lint, compat, validate = govern.splitlines()
    assert main(argv(lint)) == 0 and (tmp_path / "lint.sarif").is_file()
    old, new = argv(compat)[1:]
    assert old.startswith("git:main:") and (tmp_path / old.removeprefix("git:main:")).is_file()
    assert (tmp_path / new).is_file()
    manifest = argv(validate)[-1]
    (tmp_path / manifest).write_text(
        "apiVersion: example.com/v1\nkind: Database\nmetadata: {name: a}\nspec: {engine: oracle}\n"
    )
    capsys.readouterr()
    assert main(argv(validate)) == 1
    assert 'spec.engine: Invalid value: "oracle"' in capsys.readouterr().out


def _section(text: str, heading: str) -> str:
    return text.split(heading, 1)[1].split("\n## ", 1)[0]


def test_the_exit_codes_table_covers_every_command() -> None:
    """README "Exit codes": one row names each ``kubewerk`` command (and the kubectl
    plugin's), so a new command cannot ship without saying how it exits."""
    from kubewerk.cli import COMMANDS

    section = _section((ROOT / "README.md").read_text(), "## Exit codes\n")
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    named: set[str] = set()
    for row in rows:
        first = row.split("|")[1]
        assert row.count("|") == 5, row  # command, 0, 1, 2
        named.update(words.split()[0] for words in re.findall(r"`([^`]+)`", first))
    assert set(COMMANDS) | {"kubectl"} == named


def test_the_up_option_table_lists_every_option_of_kubewerk_up() -> None:
    """README's `kubewerk up` table and the parser agree both ways (``-v`` stands for
    ``--verbose``)."""
    import argparse

    from kubewerk.cli import build_parser

    parser = build_parser("up")
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    options = {o for a in sub.choices["up"]._actions for o in a.option_strings}
    options -= {"-h", "--help", "--verbose"}
    section = _section((ROOT / "README.md").read_text(), "## The embedded API server\n")
    table = section.split("| `kubewerk up` option | meaning |", 1)[1].split("\n\n", 1)[0]
    named = set(re.findall(r"`(-{1,2}[a-z][a-z0-9-]*)", table))
    assert named == options


def test_the_lifecycle_tour_composes_with_the_define_tour(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The lifecycle tour's two files, put where their comments say over the define
    tour's model, import; the platform registers Database; the regenerated CRD carries
    status.phase and its transition rule; and the graph command shown runs clean."""
    from kubewerk.cli import main

    text = (ROOT / "README.md").read_text()
    define = text.split("**Define**", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    tour = text.split("**Run many kinds with one kernel**", 1)[1].split("\n## ", 1)[0]
    models, operator = (b.split("```", 1)[0] for b in tour.split("```python\n")[1:3])
    assert models.startswith("# mypkg/models.py") and operator.startswith("# mypkg/operator.py")
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text("")
    spec_only = define.split("class DatabaseStatus", 1)[0]
    (tmp_path / "mypkg" / "models.py").write_text(spec_only + models)
    (tmp_path / "mypkg" / "operator.py").write_text(operator)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m == "mypkg" or m.startswith("mypkg.")]:
        monkeypatch.delitem(sys.modules, name)
    import importlib

    op = importlib.import_module("mypkg.operator")
    assert [c.kind.__name__ for c in op.platform.manager.controllers] == ["Database"]
    console = tour.split("```console\n", 1)[1].split("```", 1)[0].splitlines()
    gen = shlex.split(console[0].removeprefix("$ ").split(" && ", 1)[0])
    assert gen[0] == ".venv/bin/kubewerk" and main(gen[1:]) == 0
    crd = (tmp_path / "crds" / "example.com_databases.yaml").read_text()
    assert "phase:" in crd and "x-kubernetes-validations" in crd and "oldSelf" in crd
    graph = shlex.split(console[2].split("  #", 1)[0].removeprefix("$ "))
    monkeypatch.chdir(ROOT)
    capsys.readouterr()
    assert main(graph[1:]) == 0
    assert ", 0 cycles, 0 unresolved references" in capsys.readouterr().out


def test_every_import_the_readme_names_works() -> None:
    """Each ``from kubewerk... import ...`` line of the README, in code blocks or inline,
    imports as written (a newcomer copies them)."""
    import importlib

    text = (ROOT / "README.md").read_text()
    lines = set(re.findall(r"from (kubewerk[\w.]*) import ([\w, ]+)", text))
    assert ("kubewerk.apiserver.server", "EmbeddedServer") in lines
    for module, names in lines:
        imported = importlib.import_module(module)
        for name in names.split(","):
            assert hasattr(imported, name.strip()), f"from {module} import {name.strip()}"


def test_the_status_tables_counts_of_rules_and_checks_are_the_registries() -> None:
    from kubewerk.govern.compat import CHECKS
    from kubewerk.govern.rules import RULES

    text = (ROOT / "README.md").read_text()
    assert f"{len(RULES)} lint rules, {len(CHECKS)} compatibility checks" in text


def test_every_kubewerk_flag_the_readme_and_docs_show_exists() -> None:
    """A ``kubewerk COMMAND [ACTION] ... --flag`` in the README or docs/*.md names a flag
    that command has (a renamed flag would leave a newcomer with argparse's error)."""
    import argparse

    from kubewerk.cli import build_parser

    def parsers(
        parser: argparse.ArgumentParser, path: tuple[str, ...]
    ) -> dict[tuple[str, ...], set[str]]:
        found = {path: {o for a in parser._actions for o in a.option_strings}}
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found.update(parsers(sub, (*path, name)))
        return found

    known = parsers(build_parser(), ())
    checked = 0
    unknown: list[str] = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for m in re.finditer(
            r"kubewerk ([a-z][a-z-]*)( [a-z][a-z-]*)?([^`\n|]*)", page.read_text()
        ):
            path: tuple[str, ...] = (m.group(1),)
            if path not in known:
                continue  # prose ("kubewerk dashboard" is fine, "kubewerk is" is not a command)
            tail = m.group(3)
            if m.group(2) and (*path, m.group(2).strip()) in known:
                path = (*path, m.group(2).strip())
            elif m.group(2):
                tail = m.group(2) + tail
            for flag in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", tail):
                checked += 1
                if flag not in known[path]:
                    unknown.append(f"{page.name}: kubewerk {' '.join(path)} {flag}")
    assert checked > 50
    assert not unknown, unknown
