"""diff_sources against embedded servers: each case equal or different as kube says."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from kubewerk.client import CONFIGMAP, Client
from kubewerk.core.patch import json_patch
from kubewerk.sync import diff_sources, load
from kubewerk.sync.sources import SourceError

from .conftest import widget, widget_crd, write_manifests

EP = [{"name": "a", "url": "http://a"}, {"name": "b", "url": "http://b", "weight": 5}]

# (case, manifest, what the cluster holds (created through the API), equal?)
CASES: list[tuple[str, dict[str, Any], dict[str, Any], bool]] = [
    (
        "schema defaults",
        widget("w", memory="1Gi"),
        widget("w", size="small", replicas=1, memory="1Gi"),
        True,
    ),
    ("default overridden", widget("w"), widget("w", size="large"), False),
    ("reordered set", widget("w", tags=["x", "y"]), widget("w", tags=["y", "x"]), True),
    ("set changed", widget("w", tags=["x", "y"]), widget("w", tags=["y", "z"]), False),
    ("atomic list reordered", widget("w", order=["x", "y"]), widget("w", order=["y", "x"]), False),
    (
        "reordered map-list with item defaults",
        widget("w", endpoints=EP),
        widget("w", endpoints=EP[::-1]),
        True,
    ),
    (
        "map-list item changed",
        widget("w", endpoints=EP),
        widget("w", endpoints=[EP[0], {**EP[1], "weight": 6}]),
        False,
    ),
    ("quantity 1Gi vs 1024Mi", widget("w", memory="1Gi"), widget("w", memory="1024Mi"), True),
    ("quantity 1Gi vs 1G", widget("w", memory="1Gi"), widget("w", memory="1G"), False),
    ("int-or-string 8080 vs '8080'", widget("w", port=8080), widget("w", port="8080"), True),
    ("int-or-string named port", widget("w", port="http"), widget("w", port="https"), False),
    (
        "older version of a multi-version CRD",
        widget("w", version="v1alpha1", memory="1Gi"),
        widget("w", memory="1Gi"),
        True,
    ),
    (
        "label added in cluster",
        widget("w"),
        {**widget("w"), "metadata": {"name": "w", "namespace": "default", "labels": {"x": "1"}}},
        False,
    ),
]


@pytest.mark.parametrize(("case", "manifest", "live", "equal"), CASES, ids=[c[0] for c in CASES])
async def test_dir_vs_cluster(
    clients: list[Client],
    tmp_path: Path,
    case: str,
    manifest: dict[str, Any],
    live: dict[str, Any],
    equal: bool,
) -> None:
    client = clients[0]
    created = await client.create(live)
    await client.patch_status(
        await client.resolve("sync.test/v1", "Widget"), "w", {"status": {"phase": "Up"}}, "default"
    )
    assert created["metadata"]["uid"]
    write_manifests(tmp_path / "m" / "w.yaml", manifest)
    report = await diff_sources(load(str(tmp_path / "m")), load(client.server))
    assert not report.errors
    [item] = report.items
    assert (item.status == "equal") is equal, item.diff.patch
    if not equal:
        # the RFC 6902 patch turns the (normalized) left side into the right
        patched = json_patch(item.diff.left, item.diff.patch)
        again = await diff_sources(
            load(str(write_manifests(tmp_path / "p" / "w.yaml", patched))), load(client.server)
        )
        assert again.items[0].status == "equal", again.items[0].diff.patch


async def test_added_removed_and_server_fields(clients: list[Client], tmp_path: Path) -> None:
    a, b = clients[0], clients[1]
    for name in ("same", "only-a"):
        await a.create(widget(name, size="m"))
    for name in ("same", "only-b"):
        await b.create(widget(name, size="m"))
    # different uid, resourceVersion, creationTimestamp, managedFields on each side: equal
    report = await diff_sources(load(a.server), load(b.server))
    by_name = {i.key.name: i.status for i in report.items if i.key.kind == "Widget"}
    assert by_name == {"same": "equal", "only-a": "removed", "only-b": "added"}
    assert report.summary()["equal"] >= 2  # the CRD is equal too
    crd = [i for i in report.items if i.key.kind == "CustomResourceDefinition"]
    assert [i.status for i in crd] == ["equal"]


async def test_status_only_when_asked(clients: list[Client]) -> None:
    a, b = clients[0], clients[1]
    rt = await a.resolve("sync.test/v1", "Widget")
    for c, phase in ((a, "Up"), (b, "Down")):
        await c.create(widget("w"))
        await c.patch_status(rt, "w", {"status": {"phase": phase}}, "default")
    plain = await diff_sources(load(a.server), load(b.server))
    assert {i.status for i in plain.items} == {"equal"}
    with_status = await diff_sources(load(a.server), load(b.server), keep_status=True)
    [w] = [i for i in with_status.items if i.key.kind == "Widget"]
    assert w.diff.patch == [{"op": "replace", "path": "/status/phase", "value": "Down"}]


async def test_builtin_defaults_from_the_server(clients: list[Client], tmp_path: Path) -> None:
    client = clients[0]
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]},
    }
    await client.create(svc)
    write_manifests(tmp_path / "svc.yaml", svc)
    report = await diff_sources(load(str(tmp_path / "svc.yaml")), load(client.server))
    # the server added type, sessionAffinity, clusterIP(s), protocol: none is a difference
    assert [i.status for i in report.items] == ["equal"], report.items[0].diff.patch
    explicit = {
        **svc,
        "spec": {**svc["spec"], "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]},
    }
    write_manifests(tmp_path / "svc.yaml", explicit)
    report = await diff_sources(load(str(tmp_path / "svc.yaml")), load(client.server))
    assert [i.status for i in report.items] == ["equal"]  # a default written out is no difference
    other = {**svc, "spec": {**svc["spec"], "ports": [{"port": 81, "targetPort": 8080}]}}
    write_manifests(tmp_path / "svc.yaml", other)
    report = await diff_sources(load(str(tmp_path / "svc.yaml")), load(client.server))
    assert [i.status for i in report.items] == ["changed"]
    # Service ports are a map-list keyed by (port, protocol): another port is another item
    assert [op["path"] for op in report.items[0].diff.patch] == ["/spec/ports/0", "/spec/ports/-"]
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}}
    await client.create({**cm, "metadata": {"name": "c", "namespace": "default"}})
    write_manifests(tmp_path / "cm.yaml", cm)  # no namespace: default, as kubectl reads it
    report = await diff_sources(load(str(tmp_path / "cm.yaml")), load(client.server))
    assert [(i.key.namespace, i.status) for i in report.items] == [("default", "equal")]
    assert await client.get(CONFIGMAP, "c", "default")


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


async def test_git_source(clients: list[Client], tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "t")
    write_manifests(repo / "deploy" / "crd.yaml", widget_crd())
    write_manifests(repo / "deploy" / "w.yaml", widget("w", size="large"), widget("v"))
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "one")
    write_manifests(repo / "deploy" / "w.yaml", widget("w", size="small"))
    _git(repo, "commit", "-q", "-am", "two")
    await clients[0].create(widget("w", size="large"))
    await clients[0].create(widget("v"))
    old = await diff_sources(load("git:HEAD~1:deploy", repo=repo), load(clients[0].server))
    assert {(i.key.kind, i.key.name): i.status for i in old.items} == {
        ("CustomResourceDefinition", "widgets.sync.test"): "equal",
        ("Widget", "w"): "equal",
        ("Widget", "v"): "equal",
    }
    new = await diff_sources(load("git:main:deploy", repo=repo), load(clients[0].server))
    assert {(i.key.kind, i.key.name): i.status for i in new.items if i.key.kind == "Widget"} == {
        ("Widget", "w"): "changed",
        ("Widget", "v"): "added",
    }
    with pytest.raises(SourceError, match="no manifests"):
        load("git:main:nowhere", repo=repo)
    with pytest.raises(SourceError):
        load("git:nosuchrev:deploy", repo=repo)
