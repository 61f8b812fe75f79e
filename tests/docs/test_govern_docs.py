"""docs/govern.md stays true: the synopses list the real options, the commands of "CRDs
in a cluster" run as written against an embedded server (contexts ``prod`` and
``staging`` in the kubeconfig point at it), the errors the page quotes are the ones
printed, and the config file example does what its comments say. One server for the
module, in a thread, since the CLI runs its own event loop."""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.cli import build_parser, main

from ..govern.test_cluster import install, kubeconfig
from .pages import fenced, page, section, subparser, synopsis_mismatch

DOC = page("govern")


def _crd(name: str, kind: str, spec_properties: dict[str, Any]) -> dict[str, Any]:
    plural = name.split(".", 1)[0]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/part-of": "platform"}},
        "spec": {
            "group": "example.com",
            "names": {
                "kind": kind,
                "plural": plural,
                "singular": kind.lower(),
                "listKind": f"{kind}List",
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {"type": "object", "properties": spec_properties},
                                "status": {
                                    "type": "object",
                                    "properties": {"observedGeneration": {"type": "integer"}},
                                },
                            },
                        }
                    },
                }
            ],
        },
    }


WIDGETS = _crd("widgets.example.com", "Widget", {"replicas": {"type": "integer", "maximum": 10}})


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The current directory of a reader who has ``crds/widgets.yaml`` installed in the
    clusters of their kubeconfig's contexts (``kubewerk``, the current one, ``prod`` and
    ``staging``: all the same embedded server) and a ``my-widget.yaml``."""
    work = tmp_path_factory.mktemp("govern-docs")
    (work / "crds").mkdir()
    (work / "crds" / "widgets.yaml").write_text(yaml.safe_dump(WIDGETS))
    (work / "my-widget.yaml").write_text(
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: default}\n"
        "spec: {replicas: 3}\n"
    )
    server = EmbeddedServer("memory").start_in_thread()
    try:
        install(server, WIDGETS)
        contexts = dict.fromkeys(("kubewerk", "prod", "staging"), server.url)
        config = kubeconfig(work / "kubeconfig", contexts, "kubewerk")
        with pytest.MonkeyPatch.context() as mp:
            mp.chdir(work)
            mp.setenv("KUBECONFIG", str(config))
            yield work
    finally:
        server.stop_thread()


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _synopses() -> dict[str, str]:
    """Each command's synopsis lines from the page's first block, by command."""
    [block, *_] = fenced(DOC)
    by_command: dict[str, str] = {}
    command = ""
    for line in block.text.splitlines():
        if line.startswith("kubewerk "):
            command = line.split()[1]
        by_command[command] = by_command.get(command, "") + line.split("#", 1)[0] + "\n"
    return by_command


@pytest.mark.parametrize("command", ["lint", "compat", "validate"])
def test_the_synopsis_lists_every_option(command: str) -> None:
    synopsis = _synopses()[command]
    assert synopsis_mismatch(synopsis, subparser(build_parser(), command)) == []


def test_the_cluster_commands_run_as_written(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    [block] = fenced(section(DOC, "## CRDs in a cluster"))
    lines = [shlex.split(line, comments=True) for line in block.text.splitlines()]
    assert len(lines) == 6
    for argv in lines:
        assert argv[0] == "kubewerk"
        code, out, err = _run(argv[1:], capsys)
        assert (code, err) == (0, ""), (argv, out, err)
        assert " 0 error(s), 0 warning(s)" in out, (argv, out)


def test_the_cluster_errors_are_the_ones_quoted(
    workdir: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = section(DOC, "## CRDs in a cluster")
    other = kubeconfig(tmp_path / "other", {"dev": "http://127.0.0.1:1", "staging": ""}, "dev")
    code, _, err = _run(["lint", "--kubeconfig", str(other), "--context", "prod"], capsys)
    assert code == 2
    assert f"`{err.strip()}`" in text.replace("\n  ", " ")
    code, _, err = _run(["lint", "cluster:prod/gadgets.example.com"], capsys)
    assert code == 2
    quoted = (
        "`kubewerk: error: cluster:prod/widgets.example.com: "
        'customresourcedefinitions.apiextensions.k8s.io "widgets.example.com" not found`'
    )
    assert quoted in text.replace("\n  ", " ")
    assert err.strip() == quoted.strip("`").replace("widgets", "gadgets")


def test_an_unreadable_file_is_the_quoted_exit_2(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    crd = yaml.safe_dump(WIDGETS, sort_keys=False).splitlines()
    crd[10] = "    shortNames: [wd, wdg"  # line 11: the sequence is not closed
    (workdir / "bad").mkdir()
    (workdir / "bad" / "a.yaml").write_text("\n".join(crd) + "\n")
    code, out, err = _run(["lint", "bad/a.yaml"], capsys)
    assert (code, out) == (2, "")
    quoted = section(DOC, "## Exit codes").replace("\n  ", " ")
    assert f"`{err.strip().replace('bad/', 'crds/')}`" in quoted


def test_the_config_file_does_what_its_comments_say(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    [config] = [b for b in fenced(DOC) if b.lang == "yaml"]
    (workdir / "lint-config.yaml").write_text(config.text)
    crd = _crd(
        "widgets.example.com",
        "Widget",
        {
            "ratio": {"type": "number"},  # no-floats: info
            "hosts": {"type": "array", "items": {"type": "string"}},  # list-type-missing: off
            "restartPolicy": {"type": "string"},  # logic-in-spec: disabled
            "auth": {"type": "object", "properties": {"token": {"type": "string"}}},
        },
    )
    (workdir / "config-crds").mkdir()
    (workdir / "config-crds" / "widgets.yaml").write_text(yaml.safe_dump(crd))
    argv = ["lint", "config-crds", "--config", "lint-config.yaml", "--format", "json"]
    code, out, err = _run(argv, capsys)
    report = json.loads(out)
    assert [(f["rule"], f["severity"]) for f in report["findings"]] == [("no-floats", "info")]
    assert [(f["rule"], f["field"]) for f in report["suppressed"]] == [
        ("plaintext-credential", "spec.auth.token")
    ]
    assert report["summary"]["failOn"] == "warning"
    assert code == 0 and err == ""
    code, _, _ = _run([*argv, "--fail-on", "info"], capsys)
    assert code == 1
