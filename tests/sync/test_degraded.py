"""diff, sync and the drift watch under a user who may not list CRDs (RBAC on).

They still work with what discovery, the published OpenAPI and server dry runs give,
and say once, on stderr, what is degraded; they do not fail. One RBAC server for the
module: ``adm`` is in system:masters, ``dev`` may do anything with core, apps, events
and the test group's kinds, and nothing with CustomResourceDefinitions.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import CollectorRegistry

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.cli import main
from kubewerk.client import Client
from kubewerk.sync import load
from kubewerk.sync.drift import DriftController
from kubewerk.sync.keys import ObjectKey
from kubewerk.sync.sources import ClusterSource
from kubewerk.testing import install_crds, wait_for

from .conftest import configmap, make_namespace, served, widget, widget_crd, write_manifests

NO_CRDS = (
    "kubewerk: warning: cluster:dev: may not list CustomResourceDefinitions (403 Forbidden): "
    "custom kinds are read as built-in ones are (scope from discovery, list types from "
    "/openapi/v2, defaults from a server dry run)"
)
USERS = ("adm", "dev", "nsdev", "viewer")
DEV_ROLE = [
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "dev"},
        "rules": [
            {
                "apiGroups": ["", "apps", "events.k8s.io", "sync.test"],
                "resources": ["*"],
                "verbs": ["*"],
            }
        ],
    },
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "dev"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "dev"},
        "subjects": [{"kind": "User", "name": "dev", "apiGroup": "rbac.authorization.k8s.io"}],
    },
    {  # viewer: reads everything, CRDs included, and writes nothing
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "viewer"},
        "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list", "watch"]}],
    },
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "viewer"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "viewer",
        },
        "subjects": [{"kind": "User", "name": "viewer", "apiGroup": "rbac.authorization.k8s.io"}],
    },
    {  # nsdev: the same rights as dev, in namespace team only
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "nsdev", "namespace": "team"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "dev"},
        "subjects": [{"kind": "User", "name": "nsdev", "apiGroup": "rbac.authorization.k8s.io"}],
    },
]


@pytest.fixture(scope="module")
def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The RBAC server's kubeconfig, a context per user (namespace ``team``)."""
    home = tmp_path_factory.mktemp("rbac")
    tokens = home / "tokens.csv"
    tokens.write_text('adm,adm,1,"system:masters"\ndev,dev,2\nnsdev,nsdev,3\nviewer,viewer,4\n')
    path = home / "kubeconfig"

    async def prepare(server: EmbeddedServer) -> None:
        path.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "c", "cluster": {"server": server.url}}],
                    "users": [{"name": u, "user": {"token": u}} for u in USERS],
                    "contexts": [
                        {"name": u, "context": {"cluster": "c", "user": u, "namespace": "team"}}
                        for u in USERS
                    ],
                    "current-context": "adm",
                }
            )
        )
        async with Client.from_kubeconfig(str(path), "adm") as adm:
            await install_crds(adm, widget_crd())
            await make_namespace(adm, "team")
            for obj in DEV_ROLE:
                await adm.create(obj)

    with served(prepare, token_auth_file=tokens, authorizer="RBAC"):
        yield str(path)


def deployment(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }


def test_diff_and_sync_without_crd_access(
    kubeconfig: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each command works and warns once; the custom resource is defaulted by the
    server's dry run (its CRD's ``size``, ``replicas`` and an endpoint's ``weight`` are
    not differences) and its ``map`` list compares by key (from /openapi/v2)."""
    repo = tmp_path / "repo"
    w = widget("w", "team", endpoints=[{"name": "a"}, {"name": "b"}])
    write_manifests(repo / "all.yaml", w, deployment("web"))
    kc = ["--kubeconfig", kubeconfig]

    def run(*argv: str) -> tuple[int, str]:
        code = main([*argv, *kc])
        out, err = capsys.readouterr()
        assert err.splitlines() == [NO_CRDS], argv
        return code, out

    code, out = run("sync", "--from", str(repo), "--to", "dev", "-o", "json")
    doc = json.loads(out)
    assert code == 0 and doc["warnings"] == [NO_CRDS.removeprefix("kubewerk: warning: ")]
    assert doc["targets"][0]["counts"] == {"created": 2}
    assert run("diff", str(repo), "cluster:dev", "-o", "summary") == (
        0,
        "0 added, 0 removed, 0 changed, 2 equal\n",
    )
    # the endpoints listed in another order: a map list, not a difference
    w["spec"]["endpoints"].reverse()
    write_manifests(repo / "all.yaml", w, deployment("web"))
    code, out = run("diff", str(repo), "cluster:dev", "-o", "json")
    assert code == 0 and json.loads(out)["warnings"] == [NO_CRDS[len("kubewerk: warning: ") :]]
    # a changed source: its last-synced record is rewritten, the rest is unchanged
    code, out = run("sync", "--from", str(repo), "--to", "dev")
    assert (code, out.splitlines()[0]) == (0, "cluster:dev: ok (1 unchanged, 1 updated)")
    for policy in ("merge", "cluster-wins"):
        code, out = run("sync", "--from", str(repo), "--to", "dev", "--policy", policy)
        assert (code, out.splitlines()[0]) == (0, "cluster:dev: ok (2 unchanged)"), policy
    # a real change of a defaulted field is one
    w["spec"]["size"] = "large"
    write_manifests(repo / "all.yaml", w, deployment("web"))
    code, out = run("sync", "--from", str(repo), "--to", "dev", "--policy", "merge")
    assert (code, out.splitlines()[1]) == (0, "  updated   Widget.sync.test team/w")


def test_cluster_to_cluster_diff_without_crd_access(
    kubeconfig: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two clusters, one side without CRD access: the custom kinds come from discovery,
    CRDs are left out (said so), and the rest is compared."""
    write_manifests(tmp_path / "w.yaml", widget("c2c", "team", size="m"))
    assert main(["sync", "--from", str(tmp_path), "--to", "adm", "--kubeconfig", kubeconfig]) == 0
    capsys.readouterr()
    code = main(["diff", "cluster:dev", "cluster:adm", "--kubeconfig", kubeconfig, "-o", "json"])
    out, err = capsys.readouterr()
    assert code == 0, out
    doc = json.loads(out)
    kinds = {(o["kind"], o["name"]) for o in doc["objects"]}
    assert ("Widget", "c2c") in kinds and ("Namespace", "team") in kinds
    assert not any(k == "CustomResourceDefinition" for k, _ in kinds)
    assert err.splitlines() == [
        NO_CRDS,
        "kubewerk: warning: cluster:dev: CustomResourceDefinitions are not compared; the "
        "custom kinds compared are those discovery serves in groups outside Kubernetes' "
        "own (k8s.io, kubernetes.io)",
    ]


async def test_drift_watch_without_crd_access(kubeconfig: str, tmp_path: Path) -> None:
    """The watch starts without its SyncTarget (it may not install the CRD: a warning)
    and still reports drift; a defaulted field alone is none."""
    path = write_manifests(tmp_path / "w.yaml", widget("dw", "team", endpoints=[{"name": "a"}]))
    async with Client.from_kubeconfig(kubeconfig, "adm") as adm:
        rt = await adm.resolve("sync.test/v1", "Widget")
        await adm.create(widget("dw", "team", endpoints=[{"name": "a"}]))
        await adm.create(widget("mark", "team"))
        write_manifests(path, *yaml.safe_load_all(path.read_text()), widget("mark", "team"))
        dev = ClusterSource("cluster:dev", Client.from_kubeconfig(kubeconfig, "dev"))
        ctl = DriftController(load(str(path)), [dev], registry=CollectorRegistry())
        await ctl.start()
        try:
            assert dev.warnings[-1] == (
                "cluster:dev: may not create the SyncTarget CRD (403 Forbidden), and it is "
                "not installed: drift is reported without a SyncTarget"
            )
            await adm.patch(rt, "mark", {"spec": {"size": "x"}}, "team")
            mark = ObjectKey("sync.test", "Widget", "team", "mark")
            await wait_for(lambda: set(ctl.drifted(0)) == {mark}, 5, 0.01)
            await adm.patch(rt, "dw", {"spec": {"replicas": 4}}, "team")
            dw = ObjectKey("sync.test", "Widget", "team", "dw")
            await wait_for(lambda: set(ctl.drifted(0)) == {mark, dw}, 5, 0.01)
        finally:
            await ctl.stop()
            await dev.close()


def test_a_user_of_one_namespace_is_told_to_narrow(
    kubeconfig: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A user whose rights end at a namespace cannot list a kind in every namespace: the
    error says to pass -n (exit 2, one line); with -n both commands work."""
    write_manifests(tmp_path / "cm.yaml", configmap("ns-cm"))
    kc = ["--kubeconfig", kubeconfig]
    assert main(["diff", str(tmp_path), "cluster:nsdev", *kc]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "kubewerk: error: cluster:nsdev: may not list configmaps in every namespace (403 "
        'Forbidden: configmaps is forbidden: User "nsdev" cannot list resource "configmaps" '
        'in API group "" at the cluster scope): pass -n NAMESPACE to read one',
    ]
    assert main(["sync", "--from", str(tmp_path), "--to", "nsdev", "-n", "team", *kc]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "cluster:nsdev: ok (1 created)",
        "  created   ConfigMap team/ns-cm",
    ]
    assert main(["diff", str(tmp_path), "cluster:nsdev", "-n", "team", *kc]) == 0


def test_a_reader_is_told_that_built_in_defaults_are_unknown(
    kubeconfig: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A user who may read but not write (not even a dry run) cannot learn a built-in
    kind's server defaults: they show as differences, and a warning says why."""

    async def readers() -> None:
        async with Client.from_kubeconfig(kubeconfig, "adm") as adm:
            await make_namespace(adm, "readers")

    asyncio.run(readers())
    write_manifests(tmp_path / "d.yaml", deployment("seen"))
    kc = ["--kubeconfig", kubeconfig, "-n", "readers"]
    assert main(["sync", "--from", str(tmp_path), "--to", "adm", *kc]) == 0
    capsys.readouterr()
    assert main(["diff", str(tmp_path), "cluster:adm", *kc, "-o", "summary"]) == 0
    capsys.readouterr()
    assert main(["diff", str(tmp_path), "cluster:viewer", *kc, "-o", "summary"]) == 1
    out, err = capsys.readouterr()
    assert out == "0 added, 0 removed, 1 changed, 0 equal\n"
    assert err.splitlines() == [
        "kubewerk: warning: cluster:viewer: may not write Deployment objects, even in a dry "
        "run (403 Forbidden): the defaults the server gives them are unknown and show as "
        "differences"
    ]
