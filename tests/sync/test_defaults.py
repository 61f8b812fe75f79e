"""Defaults are not differences: what only a server's defaulting added (a CRD's schema
defaults, a built-in kind's server defaults) is neither a change for ``diff``, nor drift,
nor a merge conflict, nor written back by ``cluster-wins``; a real difference in a
defaulted field still is. ``kubectl diff``'s answer (the manifest as a server dry run
stores it) is the reference.

One server for the module; each test works in its own namespace.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import CollectorRegistry

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.client import Client
from kubewerk.sync import FIELD_MANAGER, LAST_SYNCED_ANNOTATION, diff_sources, load
from kubewerk.sync.apply import desired_state
from kubewerk.sync.defaults import without_defaults
from kubewerk.sync.drift import DriftController
from kubewerk.sync.engine import sync
from kubewerk.sync.keys import ObjectKey
from kubewerk.sync.shapes import ShapeReader
from kubewerk.sync.sources import ClusterSource
from kubewerk.testing import install_crds, wait_for

from .conftest import served, widget, widget_crd, write_manifests

DEPLOY = ("apps/v1", "Deployment")
SERVICE = ("v1", "Service")
WIDGET = ("sync.test/v1", "Widget")


@pytest.fixture(scope="module")
def server() -> Iterator[EmbeddedServer]:
    async def prepare(s: EmbeddedServer) -> None:
        async with Client.from_url(s.url) as c:
            await install_crds(c, widget_crd())

    with served(prepare) as s:
        yield s


def deployment(name: str, ns: str, **container: Any) -> dict[str, Any]:
    """A Deployment as a user writes it: none of the fields the server defaults."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {
                            "name": "web",
                            "image": "nginx:1.25",
                            "ports": [{"containerPort": 80}],
                            **container,
                        }
                    ]
                },
            },
        },
    }


def service(name: str, ns: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"selector": {"app": name}, "ports": [{"port": 80}], **spec},
    }


def manifests(ns: str) -> list[dict[str, Any]]:
    """A namespace, a custom resource relying on its CRD's defaults (``size``,
    ``replicas``, an endpoint's ``weight``), a Deployment and a Service relying on the
    server's."""
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
        widget("w", ns, endpoints=[{"name": "a"}]),
        deployment("web", ns),
        service("web", ns),
    ]


async def synced(
    url: str, repo: Path, ns: str, *extra: dict[str, Any]
) -> tuple[list[dict[str, Any]], ClusterSource]:
    """The manifests (and ``extra``) written to ``repo/all.yaml`` and synced (git-wins)
    into ``url``."""
    objs = [*manifests(ns), *extra]
    write_manifests(repo / "all.yaml", *objs)
    target = ClusterSource(url, Client.from_url(url))
    report = await sync(load(str(repo)), [target], "git-wins")
    assert report.ok and set(actions(report, ns).values()) == {"created"}
    return objs, target


def ours(key: ObjectKey, ns: str) -> bool:
    """Whether ``key`` is this test's (the module's server is shared by its tests)."""
    return key.namespace == ns or (key.kind == "Namespace" and key.name == ns)


def actions(report: Any, ns: str) -> dict[str, str]:
    return {str(r.key): r.action for r in report.targets[0].results if ours(r.key, ns)}


async def edit(
    target: ClusterSource, kind: tuple[str, str], name: str, ns: str, patch: Any
) -> None:
    rt = await target.client.resolve(*kind)
    await target.client.patch(rt, name, patch, ns, field_manager="someone-else")


async def changes(repo: Path, target: ClusterSource, ns: str) -> dict[str, list[dict[str, Any]]]:
    """``diff repo cluster``'s changed objects of namespace ``ns`` and their patches
    (nothing of it added or removed)."""
    report = await diff_sources(load(str(repo)), target)
    assert not report.errors
    items = [i for i in report.items if ours(i.key, ns)]
    assert {i.status for i in items} <= {"equal", "changed"}
    return {str(i.key): i.diff.patch for i in items if i.status == "changed"}


async def test_diff_and_git_wins_ignore_defaults_and_see_a_changed_default(
    server: EmbeddedServer, tmp_path: Path
) -> None:
    ns = "d-diff"
    _, target = await synced(server.url, tmp_path, ns)
    try:
        assert await changes(tmp_path, target, ns) == {}
        again = await sync(load(str(tmp_path)), [target], "git-wins")
        assert set(actions(again, ns).values()) == {"unchanged"}
        await edit(target, DEPLOY, "web", ns, {"spec": {"progressDeadlineSeconds": 60}})
        await edit(target, WIDGET, "w", ns, {"spec": {"endpoints": [{"name": "a", "weight": 7}]}})
        assert await changes(tmp_path, target, ns) == {
            f"Deployment.apps {ns}/web": [
                {"op": "replace", "path": "/spec/progressDeadlineSeconds", "value": 60}
            ],
            f"Widget.sync.test {ns}/w": [
                {"op": "replace", "path": "/spec/endpoints/0/weight", "value": 7}
            ],
        }
        # git-wins puts the defaults back
        healed = await sync(load(str(tmp_path)), [target], "git-wins")
        assert actions(healed, ns) == {
            f"Namespace {ns}": "unchanged",
            f"Widget.sync.test {ns}/w": "updated",
            f"Deployment.apps {ns}/web": "updated",
            f"Service {ns}/web": "unchanged",
        }
        assert await changes(tmp_path, target, ns) == {}
    finally:
        await target.close()


async def test_merge_compares_with_the_defaults_applied(
    server: EmbeddedServer, tmp_path: Path
) -> None:
    """A source change of a field the server had defaulted is the source's change, not
    a conflict (the cluster did not change it); a field the cluster changed away from
    its default is kept; both changing it to different values is still a conflict."""
    ns = "d-merge"
    objs, target = await synced(server.url, tmp_path, ns)
    try:
        await edit(target, DEPLOY, "web", ns, {"spec": {"revisionHistoryLimit": 3}})
        ns_obj, w, d, s = copy.deepcopy(objs)
        w["spec"].update(size="large", endpoints=[{"name": "a", "weight": 20}])
        d["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = "Always"
        s["spec"]["sessionAffinity"] = "ClientIP"
        write_manifests(tmp_path / "all.yaml", ns_obj, w, d, s)
        report = await sync(load(str(tmp_path)), [target], "merge")
        got = {
            str(r.key): (r.action, r.conflicts)
            for r in report.targets[0].results
            if ours(r.key, ns)
        }
        assert got == {
            f"Namespace {ns}": ("unchanged", []),
            f"Widget.sync.test {ns}/w": ("updated", []),
            f"Deployment.apps {ns}/web": ("updated", []),
            f"Service {ns}/web": ("updated", []),
        }
        # the cluster's own change of a defaulted field stayed
        assert await changes(tmp_path, target, ns) == {
            f"Deployment.apps {ns}/web": [
                {"op": "replace", "path": "/spec/revisionHistoryLimit", "value": 3}
            ]
        }
        again = await sync(load(str(tmp_path)), [target], "merge")
        assert set(actions(again, ns).values()) == {"unchanged"}
        # both sides change a defaulted field, to different values: a conflict
        await edit(target, WIDGET, "w", ns, {"spec": {"replicas": 5}})
        w["spec"]["replicas"] = 3
        write_manifests(tmp_path / "all.yaml", ns_obj, w, d, s)
        report = await sync(load(str(tmp_path)), [target], "merge")
        [conflict] = [r for r in report.targets[0].results if r.action == "conflict"]
        assert (str(conflict.key), conflict.conflicts) == (
            f"Widget.sync.test {ns}/w",
            ["/spec/replicas"],
        )
    finally:
        await target.close()


async def test_merge_defaults_a_record_without_namespace_in_the_objects_namespace(
    server: EmbeddedServer, tmp_path: Path
) -> None:
    """A last-synced record written before manifests were placed names no namespace: its
    dry run goes to the object's namespace (not the client's), so a source change of a
    field the server defaulted is still no conflict."""
    ns = "d-oldrec"
    objs, target = await synced(server.url, tmp_path, ns)
    try:
        rt = await target.client.resolve(*DEPLOY)
        live = await target.client.get(rt, "web", ns)
        record = json.loads(live["metadata"]["annotations"][LAST_SYNCED_ANNOTATION])
        del record["metadata"]["namespace"]
        # written back by the sync's own field manager, as an older kubewerk wrote it
        body = desired_state(live)
        body["metadata"].setdefault("annotations", {})[LAST_SYNCED_ANNOTATION] = json.dumps(
            record, sort_keys=True, separators=(",", ":")
        )
        await target.client.patch(
            rt, "web", body, ns, type="apply", force=True, field_manager=FIELD_MANAGER
        )
        ns_obj, w, d, s = copy.deepcopy(objs)
        d["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = "Always"
        write_manifests(tmp_path / "all.yaml", ns_obj, w, d, s)
        report = await sync(load(str(tmp_path)), [target], "merge")
        [result] = [
            r for r in report.targets[0].results if r.key.kind == "Deployment" and ours(r.key, ns)
        ]
        assert (result.action, result.detail, result.conflicts) == ("updated", "", [])
        assert await changes(tmp_path, target, ns) == {}
    finally:
        await target.close()


async def test_cluster_wins_writes_back_only_real_changes(
    server: EmbeddedServer, tmp_path: Path
) -> None:
    """Nothing is written while the cluster holds the manifests plus its defaults; a
    cluster change is written back without the defaults around it."""
    ns = "d-back"
    objs, target = await synced(server.url, tmp_path, ns)
    path = tmp_path / "all.yaml"
    try:
        before = path.read_bytes()
        report = await sync(load(str(tmp_path)), [target], "cluster-wins")
        assert set(actions(report, ns).values()) == {"unchanged"}
        assert path.read_bytes() == before
        await edit(target, DEPLOY, "web", ns, {"spec": {"replicas": 3}})
        await edit(
            target,
            DEPLOY,
            "web",
            ns,
            {"spec": {"strategy": {"rollingUpdate": {"maxSurge": "50%"}}}},
        )
        await edit(target, WIDGET, "w", ns, {"spec": {"endpoints": [{"name": "a", "weight": 7}]}})
        report = await sync(load(str(tmp_path)), [target], "cluster-wins")
        got = actions(report, ns)
        assert got == {
            f"Namespace {ns}": "unchanged",
            f"Widget.sync.test {ns}/w": "written",
            f"Deployment.apps {ns}/web": "written",
            f"Service {ns}/web": "unchanged",
        }
        ns_obj, w, d, s = copy.deepcopy(objs)
        d["spec"]["replicas"] = 3
        d["spec"]["strategy"] = {"rollingUpdate": {"maxSurge": "50%"}}
        w["spec"]["endpoints"][0]["weight"] = 7
        assert list(yaml.safe_load_all(path.read_text())) == [ns_obj, w, d, s]
        assert await changes(tmp_path, target, ns) == {}
    finally:
        await target.close()


async def test_drift_ignores_defaults_and_sees_a_changed_default(
    server: EmbeddedServer, tmp_path: Path
) -> None:
    """Once each kind's first list was checked (a sentinel of that kind, edited, is
    reported), the untouched objects are not drift; an edit of a defaulted field is."""
    ns = "d-drift"
    sentinels = [widget("s", ns), deployment("s", ns), service("s", ns)]
    _, target = await synced(server.url, tmp_path, ns, *sentinels)
    ctl = DriftController(load(str(tmp_path)), [target], registry=CollectorRegistry())
    await ctl.start()
    try:
        await edit(target, WIDGET, "s", ns, {"spec": {"size": "x"}})
        await edit(target, DEPLOY, "s", ns, {"spec": {"replicas": 2}})
        await edit(target, SERVICE, "s", ns, {"spec": {"sessionAffinity": "ClientIP"}})
        marks = {
            ObjectKey("sync.test", "Widget", ns, "s"),
            ObjectKey("apps", "Deployment", ns, "s"),
            ObjectKey("", "Service", ns, "s"),
        }
        await wait_for(lambda: set(ctl.drifted(0)) == marks, 5, 0.01)
        await edit(
            target,
            DEPLOY,
            "web",
            ns,
            {"spec": {"template": {"spec": {"terminationGracePeriodSeconds": 5}}}},
        )
        await edit(target, WIDGET, "w", ns, {"spec": {"size": "large"}})
        edited = {
            ObjectKey("apps", "Deployment", ns, "web"),
            ObjectKey("sync.test", "Widget", ns, "w"),
        }
        await wait_for(lambda: set(ctl.drifted(0)) == marks | edited, 5, 0.01)
    finally:
        await ctl.stop()
        await target.close()


async def test_cluster_wins_keeps_what_the_server_converted(
    server: EmbeddedServer, tmp_path: Path
) -> None:
    """A Secret written with ``stringData`` is stored as ``data``: not a difference, and
    when its document is written back (a label the cluster added) the content is kept,
    as the cluster stores it, rather than dropped as if the server had defaulted it."""
    ns = "d-secret"
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s", "namespace": ns},
        "stringData": {"password": "hunter2"},
    }
    _, target = await synced(server.url, tmp_path, ns, secret)
    try:
        assert await changes(tmp_path, target, ns) == {}
        await edit(target, ("v1", "Secret"), "s", ns, {"metadata": {"labels": {"team": "a"}}})
        report = await sync(load(str(tmp_path)), [target], "cluster-wins")
        assert actions(report, ns)[f"Secret {ns}/s"] == "written"
        docs = list(yaml.safe_load_all((tmp_path / "all.yaml").read_text()))
        assert docs[-1] == {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "s", "namespace": ns, "labels": {"team": "a"}},
            "data": {"password": "aHVudGVyMg=="},
            "type": "Opaque",
        }
        assert await changes(tmp_path, target, ns) == {}
    finally:
        await target.close()


async def test_cluster_wins_leaves_the_namespace_to_placement(
    server: EmbeddedServer, tmp_path: Path
) -> None:
    """A manifest that named no namespace (placed by -n) is written back without one."""
    ns = "d-placed"
    target = ClusterSource(server.url, Client.from_url(server.url), namespace=ns)
    try:
        await target.client.create(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
        )
        w = widget("w", ns)
        del w["metadata"]["namespace"]
        write_manifests(tmp_path / "w.yaml", w)
        assert (await sync(load(str(tmp_path)), [target], "git-wins")).ok
        await edit(target, WIDGET, "w", ns, {"spec": {"size": "large"}})
        report = await sync(load(str(tmp_path)), [target], "cluster-wins")
        assert actions(report, ns) == {f"Widget.sync.test {ns}/w": "written"}
        assert yaml.safe_load((tmp_path / "w.yaml").read_text()) == {
            **w,
            "spec": {"size": "large"},
        }
    finally:
        await target.close()


PORTS = ShapeReader().shape(
    {
        "type": "object",
        "properties": {
            "ports": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["containerPort", "protocol"],
                "items": {"type": "object"},
            },
            "args": {"type": "array", "items": {"type": "object"}},
        },
    }
)
WITHOUT_DEFAULTS = [
    (
        "a key field only defaulting filled in still pairs the item",
        {"ports": [{"containerPort": 80, "protocol": "TCP", "name": "x"}]},
        {"ports": [{"containerPort": 80}]},
        {"ports": [{"containerPort": 80, "protocol": "TCP"}]},
        {"ports": [{"containerPort": 80, "name": "x"}]},
    ),
    (
        "of a changed defaulted map only the changed part",
        {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "50%", "u": 1}}},
        {},
        {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "u": 1}}},
        {"strategy": {"rollingUpdate": {"maxSurge": "50%"}}},
    ),
    (
        "a key only defaulting gave goes; one the manifest writes stays, even at its default",
        {"a": 1, "b": 2},
        {"a": 1},
        {"a": 1, "b": 2},
        {"a": 1},
    ),
    (
        "a key the cluster added that defaulting does not give stays",
        {"a": 1, "c": 3},
        {"a": 1},
        {"a": 1},
        {"a": 1, "c": 3},
    ),
    (
        "an atomic list pairs by position when the lengths agree",
        {"args": [{"v": 1, "d": 0}, {"v": 2, "d": 5}]},
        {"args": [{"v": 1}, {"v": 2}]},
        {"args": [{"v": 1, "d": 0}, {"v": 2, "d": 0}]},
        {"args": [{"v": 1}, {"v": 2, "d": 5}]},
    ),
    (
        "an atomic list of another length stays whole",
        {"args": [{"v": 1, "d": 0}, {"v": 2, "d": 0}]},
        {"args": [{"v": 1}]},
        {"args": [{"v": 1, "d": 0}]},
        {"args": [{"v": 1, "d": 0}, {"v": 2, "d": 0}]},
    ),
]


@pytest.mark.parametrize(
    ("state", "manifest", "defaulted", "expected"),
    [case[1:] for case in WITHOUT_DEFAULTS],
    ids=[case[0] for case in WITHOUT_DEFAULTS],
)
def test_without_defaults(state: Any, manifest: Any, defaulted: Any, expected: Any) -> None:
    assert without_defaults(state, manifest, defaulted, PORTS) == expected
