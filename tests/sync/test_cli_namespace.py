"""``kubewerk sync -n NS``: kubectl's namespace placement, refused manifests before any write.

A manifest of a namespaced kind without a namespace is synced into NS; one naming another
namespace stops the whole command (exit 2, one line naming the file and both namespaces)
before any target is written; a cluster-scoped object's namespace is ignored, as kubectl
ignores it under ``-n``.
"""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.cli import main
from kubewerk.client import Client
from kubewerk.sync import load
from kubewerk.sync.drift import DriftController
from kubewerk.sync.engine import sync
from kubewerk.sync.keys import ObjectKey
from kubewerk.sync.sources import ClusterSource, SourceError
from kubewerk.testing import install_crds

from .conftest import (
    bare,
    configmap,
    drifted_after_edit,
    gadget_crd,
    make_namespace,
    widget,
    widget_crd,
    write_manifests,
)

TEAM_NS = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}


def unplaced(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["metadata"].pop("namespace", None)
    return out


async def _snapshot(url: str) -> set[tuple[str, str, str, str]]:
    """Every Namespace, CRD, ConfigMap and custom resource of ``url`` with its
    resourceVersion: any write changes it."""
    client = Client.from_url(url)
    try:
        kinds = [("v1", "Namespace"), ("v1", "ConfigMap")]
        crd_rt = await client.resolve("apiextensions.k8s.io/v1", "CustomResourceDefinition")
        crds = (await client.list_all(crd_rt)).items
        kinds.append(("apiextensions.k8s.io/v1", "CustomResourceDefinition"))
        for crd in crds:
            spec = crd["spec"]
            kinds.append((f"{spec['group']}/{spec['versions'][-1]['name']}", spec["names"]["kind"]))
        out: set[tuple[str, str, str, str]] = set()
        for api_version, kind in kinds:
            rt = await client.resolve(api_version, kind)
            for obj in (await client.list_all(rt)).items:
                meta = obj["metadata"]
                out.add((kind, meta.get("namespace", ""), meta["name"], meta["resourceVersion"]))
        return out
    finally:
        await client.close()


def snapshot(url: str) -> set[tuple[str, str, str, str]]:
    return asyncio.run(_snapshot(url))


def names(url: str) -> set[tuple[str, str, str]]:
    return {(kind, ns, name) for kind, ns, name, _ in snapshot(url)}


def test_sync_n_places_manifests_in_the_namespace(
    two: list[EmbeddedServer], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A custom resource and a ConfigMap without a namespace go to ``-n``'s namespace on
    every target (not the URL's ``default``); a second run is all ``unchanged``; a
    ``--dry-run`` first reports the placed keys and writes nothing."""
    a, b = (s.url for s in two)
    repo = tmp_path / "repo"
    write_manifests(repo / "crd.yaml", TEAM_NS, widget_crd())
    write_manifests(repo / "w.yaml", unplaced(widget("w", size="m")), configmap("cm"))
    before = snapshot(a)
    assert main(["sync", "--from", str(repo), "--to", a, "-n", "team", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "created   ConfigMap team/cm" in out
    assert "created   Widget.sync.test team/w" in out
    assert snapshot(a) == before
    argv = ["sync", "--from", str(repo), "--to", a, "--to", b, "--namespace", "team"]
    assert main([*argv, "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    for t in doc["targets"]:
        assert t["status"] == "ok"
        assert sorted(o["object"] for o in t["objects"]) == [
            "ConfigMap team/cm",
            "CustomResourceDefinition.apiextensions.k8s.io widgets.sync.test",
            "Namespace team",
            "Widget.sync.test team/w",
        ]
    for url in (a, b):
        got = names(url)
        assert {("Widget", "team", "w"), ("ConfigMap", "team", "cm")} <= got
        assert ("Widget", "default", "w") not in got and ("ConfigMap", "default", "cm") not in got
    assert main([*argv]) == 0
    assert capsys.readouterr().out.splitlines()[0] == f"{a}: ok (4 unchanged)"


def test_sync_n_refuses_before_any_target_is_written(
    two: list[EmbeddedServer], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A manifest in another namespace stops the command before anything is written on
    any target, with or without --dry-run and --watch. The hostile case: Gadget is
    cluster-scoped on the first target (its namespace is dropped there, so that target
    alone would sync) and namespaced on the second (refused there): the first target
    must not have been written either."""
    a, b = (s.url for s in two)

    async def prepare() -> None:
        ca, cb = Client.from_url(a), Client.from_url(b)
        try:
            await install_crds(ca, widget_crd(), gadget_crd())
            namespaced = gadget_crd()
            namespaced["spec"]["scope"] = "Namespaced"
            await install_crds(cb, widget_crd(), namespaced)
        finally:
            await ca.close()
            await cb.close()

    asyncio.run(prepare())
    repo = tmp_path / "repo"
    write_manifests(repo / "a.yaml", TEAM_NS, bare("Widget", "w", size="m"), configmap("cm"))
    bad = write_manifests(repo / "z.yaml", bare("Gadget", "g", "other", size="m"))
    before = [snapshot(a), snapshot(b)]
    argv = ["sync", "--from", str(repo), "--to", a, "--to", b, "-n", "team"]
    for extra in ([], ["--dry-run"], ["--watch"], ["--policy", "merge", "--prune"]):
        assert main([*argv, *extra]) == 2, extra
        captured = capsys.readouterr()
        assert captured.out == "", extra
        assert captured.err.splitlines() == [
            f"kubewerk: error: {bad}: Gadget.sync.test other/g is in namespace 'other', "
            "not in 'team' (the namespace synced): pass -n other to sync it"
        ], extra
        assert [snapshot(a), snapshot(b)] == before, extra
    # the first target alone takes it: Gadget is cluster-scoped there
    assert main(["sync", "--from", str(repo), "--to", a, "-n", "team"]) == 0
    capsys.readouterr()
    got = names(a)
    assert {("Gadget", "", "g"), ("Widget", "team", "w"), ("ConfigMap", "team", "cm")} <= got


def test_sync_n_ignores_it_for_cluster_scoped_kinds(
    two: list[EmbeddedServer], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Cluster-scoped objects (a custom kind, Namespaces, the CRDs themselves) are not
    checked against ``-n``, whatever namespace they name, and are created without one."""
    a = two[0].url
    repo = tmp_path / "repo"
    other_ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}}
    named_crd = widget_crd()
    named_crd["metadata"]["namespace"] = "elsewhere"
    write_manifests(repo / "crds.yaml", TEAM_NS, other_ns, named_crd, gadget_crd())
    write_manifests(
        repo / "objs.yaml",
        bare("Gadget", "g1", "other", size="m"),
        bare("Gadget", "g2", size="m"),
        bare("Widget", "w", "team", size="m"),
    )
    assert main(["sync", "--from", str(repo), "--to", a, "-n", "team"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"{a}: ok (7 created)"
    got = names(a)
    assert {
        ("Gadget", "", "g1"),
        ("Gadget", "", "g2"),
        ("Widget", "team", "w"),
        ("Namespace", "", "other"),
        ("CustomResourceDefinition", "", "widgets.sync.test"),
    } <= got


async def test_drift_watch_of_a_narrowed_target(clients: list[Client], tmp_path: Path) -> None:
    """The drift watch places manifests as the sync did (-n's namespace) and watches
    that namespace: an edit there is drift, an object of the same name in another
    namespace is not; a narrowed target refuses a manifest in another namespace before
    the watch writes its SyncTarget."""
    c = clients[0]
    await make_namespace(c, "team")
    path = write_manifests(tmp_path / "repo" / "w.yaml", bare("Widget", "w", size="m"))
    source = load(str(path))
    targets = [ClusterSource("t", c, owns_client=False, namespace="team")]
    assert (await sync(source, targets, "git-wins")).ok
    await c.create(bare("Widget", "w", "default", size="elsewhere"))
    w = ObjectKey("sync.test", "Widget", "team", "w")
    drifted = await drifted_after_edit(source, targets, "team", "w", {"size": "edited"})
    assert drifted == {w: "differs from the source"}
    write_manifests(path, bare("Widget", "w", size="m"), bare("Widget", "x", "other"))
    fresh = clients[1]
    narrowed = [ClusterSource("u", fresh, owns_client=False, namespace="team")]
    ctl = DriftController(load(str(path)), narrowed, registry=CollectorRegistry())
    with pytest.raises(SourceError, match="other/x is in namespace 'other', not in 'team'"):
        await ctl.start()
    await ctl.stop()
    crd_rt = await fresh.resolve("apiextensions.k8s.io/v1", "CustomResourceDefinition")
    assert "synctargets.sync.kubewerk.dev" not in {
        o["metadata"]["name"] for o in (await fresh.list_all(crd_rt)).items
    }
