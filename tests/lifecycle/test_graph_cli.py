"""``kubewerk graph``: the dependency graph of manifests (the CRDs' references annotation
plus the objects) as a text tree, dot, json and mermaid; cycles and unresolved refs exit
1; usage and input errors exit 2 with one line; and the same of a live embedded server."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.cli import main
from kubewerk.model import REFERENCES_ANNOTATION, crd_for, crd_yaml, dump_yaml

from .test_deps_models import STACK, Alpha, Beta, Database, Report
from .test_deps_platform import stack


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def write(path: Path, docs: list[Any]) -> Path:
    path.write_text("---\n".join(d if isinstance(d, str) else dump_yaml(d) for d in docs))
    return path


def obj(kind: str, name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "deps.kubewerk.dev/v1",
        "kind": kind,
        "metadata": {"name": name},
        "spec": spec,
    }


@pytest.fixture
def manifests(tmp_path: Path) -> Path:
    """A directory with the stack's CRDs (and Report's) and the stack's objects."""
    folder = tmp_path / "stack"
    (folder / "crds").mkdir(parents=True)
    write(folder / "crds" / "crds.yaml", [crd_yaml(k) for k in (*STACK, Report)])
    write(folder / "objects.yaml", stack())
    return folder


CLEAN_TREE = """\
Application/default/web
├─ spec.cacheRefs[*] → Cache/default/cold
│  └─ spec.environmentRef → Environment/default/prod
│     └─ spec.tenantRef → Tenant/default/acme
├─ spec.cacheRefs[*] → Cache/default/hot
│  └─ spec.environmentRef → Environment/default/prod (see above)
└─ spec.databaseRef → Database/default/orders
   ├─ spec.credentialsRef → Secret/default/orders-credentials
   └─ spec.environmentRef → Environment/default/prod (see above)

7 objects, 8 references, 0 cycles, 0 unresolved references
"""


def test_a_clean_graph_of_manifests_is_a_tree_and_exits_0(
    manifests: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(["graph", str(manifests)], capsys)
    assert (code, err) == (0, "")
    assert out == CLEAN_TREE


@pytest.fixture
def broken(manifests: Path) -> Path:
    """The stack plus a report on a missing database and two databases in a cycle."""
    write(
        manifests / "more.yaml",
        [
            obj("Report", "r", databaseRef={"name": "nope"}),
            obj("Database", "a", environmentRef={"name": "prod"}, replicaOf={"name": "b"}),
            obj("Database", "b", environmentRef={"name": "prod"}, replicaOf={"name": "a"}),
        ],
    )
    return manifests


def test_cycles_and_unresolved_refs_are_reported_and_exit_1(
    broken: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(["graph", str(broken)], capsys)
    assert (code, err) == (1, "")
    tail = out[out.index("Report/default/r") :]
    assert tail == (
        "Report/default/r\n"
        "└─ spec.databaseRef → Database/default/nope [missing]\n"
        "Database/default/a\n"
        "├─ spec.environmentRef → Environment/default/prod (see above)\n"
        "└─ spec.replicaOf → Database/default/b\n"
        "   ├─ spec.environmentRef → Environment/default/prod (see above)\n"
        "   └─ spec.replicaOf → Database/default/a (see above)\n"
        "\n"
        "cycles:\n"
        "  Database/default/a -> Database/default/b -> Database/default/a\n"
        "\n"
        "unresolved references:\n"
        "  Report/default/r spec.databaseRef → Database/default/nope (not found)\n"
        "\n"
        "10 objects, 13 references, 1 cycle, 1 unresolved reference\n"
    )


def test_dot(broken: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["graph", str(broken), "--format", "dot"], capsys)
    assert code == 1
    lines = out.splitlines()
    assert lines[:2] == ["digraph dependencies {", "  node [shape=box];"]
    assert lines[-1] == "}"
    db = "Database.deps.kubewerk.dev/default"
    assert (
        f'  "{db}/nope" [label="Database/default/nope [missing]", style=dashed, '
        'color="#cc0000"];' in lines
    )
    assert f'  "{db}/a" -> "{db}/b" [label="spec.replicaOf", color="#cc0000"];' in lines
    assert (
        f'  "{db}/orders" -> "Secret/default/orders-credentials" [label="spec.credentialsRef"];'
        in lines
    )
    assert sum(1 for line in lines if " -> " in line) == 13


def test_json(broken: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["graph", str(broken), "--format", "json"], capsys)
    assert code == 1
    doc = json.loads(out)
    db = "Database.deps.kubewerk.dev/default"
    assert doc["cycles"] == [[f"{db}/a", f"{db}/b"]]
    assert doc["unresolved"] == [
        {
            "from": "Report.deps.kubewerk.dev/default/r",
            "path": "spec.databaseRef",
            "to": f"{db}/nope",
        }
    ]
    assert doc["kindCycles"] == []
    missing = [o for o in doc["objects"] if not o["present"]]
    assert missing == [
        {
            "id": f"{db}/nope",
            "group": "deps.kubewerk.dev",
            "kind": "Database",
            "namespace": "default",
            "name": "nope",
            "present": False,
            "phase": None,
        }
    ]
    web = [r for r in doc["references"] if r["from"].endswith("/web")]
    assert [(r["path"], r["to"], r["onDelete"], r["resolved"]) for r in web] == [
        ("spec.cacheRefs[*]", "Cache.deps.kubewerk.dev/default/cold", "cascade", True),
        ("spec.cacheRefs[*]", "Cache.deps.kubewerk.dev/default/hot", "cascade", True),
        ("spec.databaseRef", f"{db}/orders", "cascade", True),
    ]
    assert doc["summary"] == "10 objects, 13 references, 1 cycle, 1 unresolved reference"


def test_mermaid(broken: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["graph", str(broken), "--format", "mermaid"], capsys)
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == "flowchart LR"
    nodes = [line for line in lines if line.endswith('"]')]
    ids = {line.split("[", 1)[1][1:-2]: line.split("[", 1)[0].strip() for line in nodes}
    assert len(ids) == 11
    assert ids["Database/default/nope [missing]"]
    a, b = ids["Database/default/a"], ids["Database/default/b"]
    assert f'  {a} -- "spec.replicaOf" --> {b}' in lines
    assert f"  class {ids['Database/default/nope [missing]']} missing;" in lines
    edges = [line for line in lines if " --> " in line]
    red = [i for i, line in enumerate(edges) if line.endswith((f"--> {b}", f"--> {a}"))]
    red = [i for i in red if '"spec.replicaOf"' in edges[i]]
    assert f"  linkStyle {','.join(map(str, red))} stroke:#cc0000;" in lines


def test_a_cycle_of_required_refs_between_kinds_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path / "kinds.yaml", [crd_yaml(Alpha), crd_yaml(Beta)])
    code, out, _ = run(["graph", str(path)], capsys)
    assert code == 1
    assert "cycles:\n  kinds Alpha -> Beta -> Alpha (every ref on it is required)\n" in out
    assert out.endswith("0 objects, 0 references, 1 cycle, 0 unresolved references\n")


def test_objects_without_a_namespace_go_to_the_one_given(
    manifests: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    objects = stack()
    for each in objects:
        del each["metadata"]["namespace"]
    write(manifests / "objects.yaml", objects)
    code, out, _ = run(["graph", str(manifests), "-n", "shop"], capsys)
    assert code == 0
    assert out == CLEAN_TREE.replace("/default/", "/shop/")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["graph"], "nothing to graph: give PATH arguments (CRDs and objects), or --cluster"),
        (["graph", "x.yaml", "--context", "c"], "give manifests (PATH) or a cluster"),
        (["graph", "/no/such/file.yaml"], "/no/such/file.yaml: no such file or directory"),
    ],
)
def test_usage_errors_exit_2_with_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(argv, capsys)
    assert (code, out) == (2, "")
    assert err.startswith(f"kubewerk: error: {message}") and err.count("\n") == 1


def test_a_bad_annotation_or_bad_yaml_exits_2_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    crd = crd_for(Database)
    crd["metadata"]["annotations"][REFERENCES_ANNOTATION] = '[{"path": "spec"}]'
    path = write(tmp_path / "bad.yaml", [crd])
    code, _, err = run(["graph", str(path)], capsys)
    assert code == 2
    assert err == (
        f"kubewerk: error: {path}: CRD databases.deps.kubewerk.dev: {REFERENCES_ANNOTATION}: "
        "path 'spec' is not a field path such as .spec.databaseRef\n"
    )
    path.write_text("a: [\n")
    code, _, err = run(["graph", str(path)], capsys)
    assert code == 2 and err.startswith(f"kubewerk: error: {path}:")


# -- a live cluster ------------------------------------------------------------------------


def _send(server: EmbeddedServer, method: str, path: str, body: dict[str, Any], ctype: str) -> None:
    request = urllib.request.Request(
        server.url + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": ctype},
        method=method,
    )
    deadline = time.monotonic() + 10
    while True:
        try:
            with urllib.request.urlopen(request, timeout=10):
                return
        except urllib.error.HTTPError as exc:
            if exc.code != 404 or time.monotonic() > deadline:  # a new CRD is served soon
                raise
            time.sleep(0.05)


def _path(item: dict[str, Any]) -> str:
    group, _, version = item["apiVersion"].rpartition("/")
    base = f"/apis/{group}/{version}" if group else f"/api/{version}"
    return f"{base}/namespaces/default/{item['kind'].lower()}s"  # every plural here is -s


def test_the_graph_of_a_live_cluster_shows_phases(
    tserver: EmbeddedServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for kind in (*STACK, Report):
        _send(
            tserver,
            "POST",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            crd_for(kind),
            "application/json",
        )
    for item in [*stack(), obj("Report", "r", databaseRef={"name": "nope"})]:
        item["metadata"]["namespace"] = "default"
        _send(tserver, "POST", _path(item), item, "application/json")
    tenant = _path({"apiVersion": "deps.kubewerk.dev/v1", "kind": "Tenant"}) + "/acme/status"
    _send(tserver, "PATCH", tenant, {"status": {"phase": "Active"}}, "application/merge-patch+json")
    config = tserver.write_kubeconfig(tmp_path / "kubeconfig")

    code, out, err = run(["graph", "--kubeconfig", str(config)], capsys)
    assert (code, err) == (1, "")
    assert "│     └─ spec.tenantRef → Tenant/default/acme [Active]\n" in out
    assert "└─ spec.databaseRef → Database/default/nope [missing]\n" in out
    assert "   ├─ spec.credentialsRef → Secret/default/orders-credentials\n" in out
    assert out.endswith("8 objects, 9 references, 0 cycles, 1 unresolved reference\n")

    code, out, _ = run(["graph", "--kubeconfig", str(config), "-n", "elsewhere"], capsys)
    assert code == 0 and out.endswith(
        "0 objects, 0 references, 0 cycles, 0 unresolved references\n"
    )


def test_an_unreachable_cluster_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "kubeconfig"
    config.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "contexts: [{name: c, context: {cluster: c}}]\n"
    )
    code, out, err = run(["graph", "--kubeconfig", str(config)], capsys)
    assert (code, out) == (2, "")
    assert err.startswith("kubewerk: error: cluster:c: ") and err.count("\n") == 1
