"""docs/observe.md stays true: the dashboard synopsis lists the real options, the
``kubectl kubewerk`` commands run against an embedded server with the exit codes their
comments give, ``kubewerk gen deploy`` writes the files of the page's table (stable, and
``kubewerk lint deploy`` passes), and the tracing example instruments (then is undone).
The dashboard itself is tested over HTTP in tests/observe; one server for this module,
in a thread, since the CLI runs its own event loop."""

from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.cli import build_parser, main
from kubewerk.cli.kubectl_plugin import main as kubectl_kubewerk
from kubewerk.observe import tracing

from ..govern.test_cluster import install
from .pages import fenced, page, section, subparser, synopsis_mismatch

DOC = page("observe")

WIDGETS: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
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
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}

OPERATOR = '''
from kubewerk.model import KubeModel, Resource
from kubewerk.runtime import Context, Manager


class WidgetSpec(KubeModel):
    size: int = 1


class Widget(Resource[WidgetSpec, None], group="observe-docs.example.com", version="v1"):
    """A widget (a group of its own: models are registered per process, and another
    test's example.com Widget of other versions would join this one's CRD)."""


manager = Manager()


@manager.reconciler(Widget)
async def reconcile(widget: Widget, ctx: Context) -> None:
    return None
'''


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The current directory, with KUBECONFIG naming an embedded server that serves
    one CRD (no objects: nothing is stuck)."""
    work = tmp_path_factory.mktemp("observe-docs")
    server = EmbeddedServer("memory").start_in_thread()
    try:
        install(server, WIDGETS)
        config = server.write_kubeconfig(work / "kubeconfig")
        with pytest.MonkeyPatch.context() as mp:
            mp.chdir(work)
            mp.setenv("KUBECONFIG", str(config))
            yield work
    finally:
        server.stop_thread()


def _blocks_starting(prefix: str) -> list[str]:
    return [b.text for b in fenced(DOC) if b.text.startswith(prefix)]


def test_the_dashboard_synopsis_lists_every_option() -> None:
    [synopsis] = _blocks_starting("kubewerk dashboard")
    assert synopsis_mismatch(synopsis, subparser(build_parser(), "dashboard")) == []


def test_the_kubectl_plugin_commands_exit_as_their_comments_say(
    cluster: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    [block] = _blocks_starting("kubectl kubewerk")
    commands = {line.split()[2]: line for line in block.splitlines()}
    assert set(commands) == {"health", "why", "graph", "lint"}
    assert "exit 1 when something is stuck" in commands["health"]
    assert kubectl_kubewerk(["health"]) == 0  # nothing is stuck
    assert kubectl_kubewerk(["health", "-o", "json", "-A"]) == 0
    assert "exit 0 when Ready, 1 when not" in commands["why"]
    assert kubectl_kubewerk(["why", "widgets/absent", "-n", "default"]) == 1
    capsys.readouterr()
    assert kubectl_kubewerk(["why", "job/x"]) == 2  # a kind no CRD defines: a usage error
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "jobs.batch" in err and "Traceback" not in err
    assert kubectl_kubewerk(["graph"]) == 0
    assert kubectl_kubewerk(["lint"]) == 0  # the clean CRD of the cluster
    assert "widgets.example.com" not in capsys.readouterr().err


def test_gen_deploy_writes_the_files_of_the_table(
    cluster: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    [block] = _blocks_starting("kubewerk gen deploy")
    gen = shlex.split(block.splitlines()[0].replace("[--replicas 2]", "--replicas 2"))
    assert gen[:3] == ["kubewerk", "gen", "deploy"] and gen[3] == "pkg.main:manager"
    (cluster / "pkg").mkdir()
    (cluster / "pkg" / "__init__.py").write_text("")
    (cluster / "pkg" / "main.py").write_text(OPERATOR)
    sys.path.insert(0, str(cluster))
    try:
        assert main(gen[1:]) == 0
        first = {p: p.read_bytes() for p in Path("deploy").rglob("*") if p.is_file()}
        assert main(gen[1:]) == 0
        again = {p: p.read_bytes() for p in Path("deploy").rglob("*") if p.is_file()}
    finally:
        sys.path.remove(str(cluster))
        for name in ("pkg", "pkg.main"):
            sys.modules.pop(name, None)
    assert first == again  # the same operator and flags give the same bytes
    table = section(DOC, "## Shipping an operator: `kubewerk gen deploy`")
    listed = set(re.findall(r"^\| `([\w/.<>]+)`", table, re.M))
    written = {str(p.relative_to("deploy")) for p in first}
    expected = {f.replace("<group>_<plural>", "observe-docs.example.com_widgets") for f in listed}
    expected.discard("rbac/")
    expected.discard("webhook/")
    assert expected <= written, sorted(expected - written)
    assert {w for w in written if w.startswith("rbac/")} == {
        "rbac/service_account.yaml",
        "rbac/role.yaml",
        "rbac/role_binding.yaml",
    }
    deployment = yaml.safe_load(Path("deploy/manager/deployment.yaml").read_text())
    assert deployment["spec"]["replicas"] == 2
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert "--leader-elect" in container["args"]
    capsys.readouterr()
    assert main(["lint", "deploy"]) == 0  # "`kubewerk lint deploy` passes it"
    assert "`kubewerk lint deploy` passes it" in DOC


def test_the_tracing_example_instruments() -> None:
    [example] = [b for b in fenced(DOC) if b.lang == "python" and "tracing.instrument" in b.text]
    assert not tracing.instrumented()
    try:
        exec(compile(example.text, f"docs/observe.md:{example.line}", "exec"), {})
        assert tracing.instrumented()
    finally:
        tracing.uninstrument()
    assert not tracing.instrumented()
