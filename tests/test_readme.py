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
