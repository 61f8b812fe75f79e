"""Where a manifest's object lives: diff, sync and drift place manifests as kubectl does.

A namespaced object without ``metadata.namespace`` is in ``-n``'s namespace, else the
cluster side's context namespace; a cluster-scoped object's namespace is dropped. The
scope of a custom kind comes from its CRD (in the manifests or the cluster), else from
the cluster's discovery.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson
import pytest

from kubewerk.client import CONFIGMAP, Client
from kubewerk.client.errors import NotFound
from kubewerk.sync import LAST_SYNCED_ANNOTATION, diff_sources, load
from kubewerk.sync.apply import apply_object
from kubewerk.sync.compare import _discover_scopes, index_entries
from kubewerk.sync.engine import ADOPTED, sync
from kubewerk.sync.keys import GroupKind, ObjectKey
from kubewerk.sync.schemas import KindSchemas
from kubewerk.sync.sources import ClusterSource, Entry, SourceError
from kubewerk.testing import install_crds

from .conftest import (
    bare,
    configmap,
    drifted_after_edit,
    gadget_crd,
    make_namespace,
    target,
    widget_crd,
    write_manifests,
)

GADGET = GroupKind("sync.test", "Gadget")
WIDGET = GroupKind("sync.test", "Widget")


def summary_and_changes(report: Any) -> tuple[dict[str, int], dict[str, Any]]:
    return report.summary(), {
        str(i.key): i.diff.patch for i in report.items if i.status == "changed"
    }


async def test_diff_places_crs_as_kubectl_when_the_crd_is_in_the_cluster(
    clients: list[Client], tmp_path: Path
) -> None:
    """The newcomer's walk: the CRDs only in the cluster, objects created without a
    namespace; a manifest without one (namespaced) or with one (cluster-scoped) is
    equal to the cluster's object, as a ConfigMap already was."""
    c = clients[0]
    await install_crds(c, gadget_crd())
    await c.create(bare("Widget", "w", size="m"))
    await c.create(bare("Gadget", "g", size="m"))
    await c.create(configmap("cm"))
    repo = tmp_path / "repo"
    write_manifests(
        repo / "m.yaml",
        bare("Widget", "w", size="m"),
        bare("Widget", "w2", namespace="", size="m"),  # "" is no namespace, as for kube
        bare("Gadget", "g", namespace="elsewhere", size="m"),
        configmap("cm"),
    )
    await c.create(bare("Widget", "w2", size="m"))
    report = await diff_sources(load(str(repo)), load(c.server))
    counts, changes = summary_and_changes(report)
    assert changes == {} and counts == {"added": 0, "removed": 0, "changed": 0, "equal": 4}
    keys = {str(i.key) for i in report.items}
    assert keys == {
        "Widget.sync.test default/w",
        "Widget.sync.test default/w2",
        "Gadget.sync.test g",
        "ConfigMap default/cm",
    }
    # the other direction (cluster on the left) is placed the same way
    back = await diff_sources(load(c.server), load(str(repo)))
    assert summary_and_changes(back) == (counts, {})


async def test_sync_with_the_crds_in_the_manifests(clients: list[Client], tmp_path: Path) -> None:
    """CRDs among the manifests (not yet in the cluster): the file side's scope places
    the objects; the sync creates them where kubectl would, then diff is equal and a
    second sync (dry run or not) leaves everything unchanged."""
    c = clients[0]
    repo = tmp_path / "repo"
    write_manifests(
        repo / "all.yaml",
        gadget_crd(),
        bare("Widget", "w", size="m"),
        bare("Gadget", "g", namespace="elsewhere", size="m"),
    )
    first = await sync(load(str(repo)), [target(c)], "git-wins")
    assert first.ok, first.targets[0].detail
    done = {str(r.key): r.action for r in first.targets[0].results}
    assert done == {
        "CustomResourceDefinition.apiextensions.k8s.io gadgets.sync.test": "created",
        "Widget.sync.test default/w": "created",
        "Gadget.sync.test g": "created",
    }
    gadget = await c.get(await c.resolve("sync.test/v1", "Gadget"), "g")
    assert "namespace" not in gadget["metadata"]
    widget_rt = await c.resolve("sync.test/v1", "Widget")
    recorded = orjson.loads(
        (await c.get(widget_rt, "w", "default"))["metadata"]["annotations"][LAST_SYNCED_ANNOTATION]
    )
    assert recorded["metadata"]["namespace"] == "default"  # as kubectl's last-applied has it
    report = await diff_sources(load(str(repo)), load(c.server))
    assert summary_and_changes(report)[1] == {}
    for dry_run in (True, False):
        again = await sync(load(str(repo)), [target(c)], "git-wins", dry_run=dry_run)
        assert {r.action for r in again.targets[0].results} == {"unchanged"}
    merged = await sync(load(str(repo)), [target(c)], "merge")
    assert {r.action for r in merged.targets[0].results} == {"unchanged"}


async def test_first_sync_of_an_object_made_otherwise(
    clients: list[Client], tmp_path: Path
) -> None:
    """An object created without a sync (equal to the manifest, which omits the
    namespace): diff finds it equal; the first sync, dry run or not, reports it updated
    and says why (its record is written); the next one leaves it unchanged."""
    c = clients[0]
    await c.create(bare("Widget", "w", size="m"))
    path = write_manifests(tmp_path / "repo" / "w.yaml", bare("Widget", "w", size="m"))
    assert not (await diff_sources(load(str(path)), load(c.server))).different
    for dry_run in (True, False):
        report = await sync(load(str(path)), [target(c)], "git-wins", dry_run=dry_run)
        assert [(r.action, r.detail) for r in report.targets[0].results] == [("updated", ADOPTED)]
    report = await sync(load(str(path)), [target(c)], "git-wins")
    assert [(r.action, r.detail) for r in report.targets[0].results] == [("unchanged", "")]


async def test_the_context_namespace_places_manifests(
    clients: list[Client], tmp_path: Path
) -> None:
    """A cluster side whose context names namespace ``team``: a manifest without a
    namespace is compared with, and synced into, ``team`` (not ``default``), for a
    custom resource and a ConfigMap alike; one that names a namespace keeps it."""
    plain = clients[0]
    await make_namespace(plain, "team")
    team = Client.from_url(plain.server, namespace="team")
    try:
        repo = tmp_path / "repo"
        write_manifests(
            repo / "m.yaml",
            bare("Widget", "w", size="m"),
            bare("Widget", "pinned", namespace="default", size="m"),
            configmap("cm"),
        )
        report = await sync(load(str(repo)), [target(team)], "git-wins")
        assert report.ok, report.targets[0].detail
        assert {str(r.key) for r in report.targets[0].results} == {
            "Widget.sync.test team/w",
            "Widget.sync.test default/pinned",
            "ConfigMap team/cm",
        }
        widget_rt = await plain.resolve("sync.test/v1", "Widget")
        assert (await plain.get(widget_rt, "w", "team"))["spec"]["size"] == "m"
        assert (await plain.get(CONFIGMAP, "cm", "team"))["data"] == {"a": "b"}
        with pytest.raises(NotFound):
            await plain.get(widget_rt, "w", "default")
        side = ClusterSource("cluster:team", team, owns_client=False)
        diff = await diff_sources(load(str(repo)), side)
        assert summary_and_changes(diff) == (
            {"added": 0, "removed": 0, "changed": 0, "equal": 3},
            {},
        )
    finally:
        await team.close()


async def test_namespace_flag_places_and_refuses(clients: list[Client], tmp_path: Path) -> None:
    """``-n NS``: manifests without a namespace are in NS; a manifest of a namespaced kind
    in another namespace is refused naming its file (kubectl refuses it too); a
    cluster-scoped object's namespace is not checked (it is dropped)."""
    c = clients[0]
    await make_namespace(c, "team")
    await install_crds(c, gadget_crd())
    await c.create(bare("Widget", "w", namespace="team", size="m"))
    await c.create(bare("Gadget", "g", size="m"))
    ok = write_manifests(
        tmp_path / "ok" / "m.yaml",
        bare("Widget", "w", size="m"),
        bare("Gadget", "g", namespace="default", size="m"),
    )
    narrowed = load(c.server, namespace="team")
    report = await diff_sources(load(str(ok)), narrowed, namespace="team")
    assert summary_and_changes(report) == (
        {"added": 0, "removed": 0, "changed": 0, "equal": 2},
        {},
    )
    bad = write_manifests(
        tmp_path / "bad" / "m.yaml", bare("Widget", "w", size="m"), bare("Widget", "x", "other")
    )
    with pytest.raises(SourceError) as err:
        await diff_sources(load(str(bad)), load(c.server, namespace="team"))
    assert str(err.value) == (
        f"{bad}: Widget.sync.test other/x is in namespace 'other', not in 'team' "
        "(the namespace compared): pass -n other to compare it"
    )


async def test_cluster_wins_leaves_a_manifest_without_namespace_alone(
    clients: list[Client], tmp_path: Path
) -> None:
    """cluster-wins writes back only what differs: a manifest that omits the namespace
    of the cluster's equal object is not rewritten."""
    c = clients[0]
    await c.create(bare("Widget", "w", size="m", replicas=1))
    # (every default written: cluster-wins compares without applying defaults)
    path = write_manifests(tmp_path / "repo" / "w.yaml", bare("Widget", "w", size="m", replicas=1))
    before = path.read_bytes()
    report = await sync(load(str(path)), [target(c)], "cluster-wins")
    assert [(str(r.key), r.action) for r in report.targets[0].results] == [
        ("Widget.sync.test default/w", "unchanged")
    ]
    assert path.read_bytes() == before


async def test_a_record_without_namespace_still_matches(
    clients: list[Client], tmp_path: Path
) -> None:
    """An object whose last-synced record omits the namespace (a sync before manifests
    were placed, or apply_object given an unplaced object) is not rewritten just to add
    it: the record names the object's own namespace."""
    c = clients[0]
    result = await apply_object(c, bare("Widget", "w", size="m"))
    record = orjson.loads(result.object["metadata"]["annotations"][LAST_SYNCED_ANNOTATION])
    assert "namespace" not in record["metadata"]
    path = write_manifests(tmp_path / "repo" / "w.yaml", bare("Widget", "w", size="m"))
    for policy in ("git-wins", "merge"):
        report = await sync(load(str(path)), [target(c)], policy)  # type: ignore[arg-type]
        assert [r.action for r in report.targets[0].results] == ["unchanged"], policy
    # a record that differs in anything else is still a difference
    write_manifests(path, bare("Widget", "w", size="m", replicas=1))
    report = await sync(load(str(path)), [target(c)], "git-wins")
    assert [r.action for r in report.targets[0].results] == ["updated"]


async def test_drift_of_a_manifest_without_namespace(clients: list[Client], tmp_path: Path) -> None:
    """The drift watch compares the placed manifest: an untouched object synced from a
    manifest without a namespace is not drift, an edited one is."""
    c = clients[0]
    path = write_manifests(
        tmp_path / "repo" / "w.yaml", bare("Widget", "w", size="m"), bare("Widget", "v", size="m")
    )
    source = load(str(path))
    targets = [target(c, "a")]
    assert (await sync(source, targets, "git-wins")).ok
    v = ObjectKey("sync.test", "Widget", "default", "v")
    # the list (which checks w) is handled before the edit's event
    drifted = await drifted_after_edit(source, targets, "default", "v", {"size": "edited"})
    assert drifted == {v: "differs from the source"}


def test_index_entries_places_copies() -> None:
    """Placement copies: the entries and objects given are not changed; a present
    namespace is kept; absent, null and "" are filled for a namespaced kind; a
    cluster-scoped kind loses a string or null namespace; a non-string namespace is
    left for the server to refuse."""
    schemas = KindSchemas()
    schemas.add_crd(widget_crd())
    schemas.add_crd(gadget_crd())
    objs = [
        bare("Widget", "a"),
        bare("Widget", "b", "x"),
        {**bare("Widget", "c"), "metadata": {"name": "c", "namespace": None}},
        bare("Widget", "d", ""),
        bare("Widget", "e", 7),
        bare("Gadget", "f", "x"),
        {**bare("Gadget", "g"), "metadata": {"name": "g", "namespace": None}},
        bare("Gadget", "h"),
        bare("Gadget", "i", ["x"]),
    ]
    entries = [Entry(o, "m.yaml", i) for i, o in enumerate(objs)]
    snapshot = copy.deepcopy(objs)
    placed = index_entries(entries, schemas, manifests=True, default_namespace="team")
    assert objs == snapshot and [e.obj for e in entries] == snapshot
    got = {
        str(k): (e.obj["metadata"].get("namespace", "<absent>"), e.path, e.index)
        for k, e in placed.items()
    }
    assert got == {
        "Widget.sync.test team/a": ("team", "m.yaml", 0),
        "Widget.sync.test x/b": ("x", "m.yaml", 1),
        "Widget.sync.test team/c": ("team", "m.yaml", 2),
        "Widget.sync.test team/d": ("team", "m.yaml", 3),
        "Widget.sync.test team/e": (7, "m.yaml", 4),
        "Gadget.sync.test f": ("<absent>", "m.yaml", 5),
        "Gadget.sync.test g": ("<absent>", "m.yaml", 6),
        "Gadget.sync.test h": ("<absent>", "m.yaml", 7),
        "Gadget.sync.test i": (["x"], "m.yaml", 8),
    }
    assert placed[ObjectKey("sync.test", "Widget", "x", "b")] is entries[1]  # unchanged
    assert placed[ObjectKey("sync.test", "Gadget", "", "h")] is entries[7]
    # objects read from a cluster are keyed as they are, never changed
    live = index_entries(entries[:1], schemas, manifests=False, default_namespace="team")
    assert list(live) == [ObjectKey("sync.test", "Widget", "", "a")]


async def test_scope_from_discovery(clients: list[Client]) -> None:
    """A kind no known CRD defines takes the scope the cluster's discovery serves it
    at (here the CRDs are not given to the schemas on purpose); a kind the cluster does
    not serve keeps the fallbacks (namespaced unless a built-in cluster-scoped kind);
    a CRD, once known, decides over discovery."""
    c = clients[0]
    await install_crds(c, gadget_crd())
    schemas = KindSchemas()
    unknown = GroupKind("nowhere.test", "Thing")
    entries = [
        Entry(bare("Gadget", "g")),
        Entry(bare("Widget", "w")),
        Entry({"apiVersion": "nowhere.test/v1", "kind": "Thing", "metadata": {"name": "t"}}),
        Entry(
            {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "s"}}
        ),
    ]
    assert schemas.namespaced(GADGET)  # before discovery: unknown, taken as namespaced
    await _discover_scopes(target(c), schemas, entries)
    assert not schemas.namespaced(GADGET)
    assert schemas.namespaced(WIDGET)
    assert schemas.namespaced(unknown)
    assert not schemas.namespaced(GroupKind("storage.k8s.io", "StorageClass"))
    flipped = gadget_crd()
    flipped["spec"]["scope"] = "Namespaced"
    schemas.add_crd(flipped)
    assert schemas.namespaced(GADGET)
    placed = index_entries(entries[:1], schemas, manifests=True)
    assert list(placed) == [ObjectKey("sync.test", "Gadget", "default", "g")]


async def test_apply_object_places_what_it_is_given(clients: list[Client]) -> None:
    """apply_object alone: a namespaced object without a namespace goes to the client's
    namespace; a cluster-scoped one is sent without the namespace it names, on create
    and on update alike."""
    plain = clients[0]
    await make_namespace(plain, "team")
    await install_crds(plain, gadget_crd())
    team = Client.from_url(plain.server, namespace="team")
    try:
        made = await apply_object(team, bare("Widget", "w", size="m"))
        assert made.action == "created" and made.object["metadata"]["namespace"] == "team"
        gadget_rt = await plain.resolve("sync.test/v1", "Gadget")
        live = None
        for size, action in (("m", "created"), ("l", "updated")):
            done = await apply_object(team, bare("Gadget", "g", "team", size=size), live=live)
            assert done.action == action and "namespace" not in done.object["metadata"]
            live = await plain.get(gadget_rt, "g")
            assert live["spec"]["size"] == size
    finally:
        await team.close()
