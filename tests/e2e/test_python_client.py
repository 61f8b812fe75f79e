"""The official ``kubernetes`` Python client against the embedded API server."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

from kubewerk.apiserver.server import EmbeddedServer

from .conftest import CRD_NAME, GROUP, PLURAL, VERSION, wait_until

pytestmark = pytest.mark.e2e

NS = "default"


@pytest.fixture
def api(kubeconfig: Path) -> Iterator[client.ApiClient]:
    api_client = config.new_client_from_config(config_file=str(kubeconfig), persist_config=False)
    try:
        yield api_client
    finally:
        api_client.close()


@pytest.fixture
def crd(api: client.ApiClient, demo_dir: Path) -> client.CustomObjectsApi:
    """The demo CRD created with ApiextensionsV1Api and Established."""
    ext = client.ApiextensionsV1Api(api)
    body = yaml.safe_load((demo_dir / "crd.yaml").read_text())
    created = ext.create_custom_resource_definition(body)
    assert created.metadata.name == CRD_NAME and created.metadata.uid

    def established() -> bool:
        got = ext.read_custom_resource_definition(CRD_NAME)
        return any(
            c.type == "Established" and c.status == "True" for c in got.status.conditions or []
        )

    wait_until(established)
    return client.CustomObjectsApi(api)


def database(name: str, replicas: int = 1, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Database",
        "metadata": {"name": name, **meta},
        "spec": {"engine": "postgres", "replicas": replicas},
    }


def status_of(exc: ApiException) -> dict[str, Any]:
    import json

    body: dict[str, Any] = json.loads(exc.body)
    return body


# -- CustomObjectsApi --------------------------------------------------------------------


def test_custom_objects_crud(crd: client.CustomObjectsApi) -> None:
    co = crd
    created = co.create_namespaced_custom_object(
        GROUP, VERSION, NS, PLURAL, database("orders", 3, labels={"team": "a"})
    )
    meta = created["metadata"]
    assert (
        meta["uid"]
        and meta["resourceVersion"]
        and meta["generation"] == 1
        and meta["namespace"] == NS
    )

    with pytest.raises(ApiException) as dup:
        co.create_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, database("orders"))
    assert dup.value.status == 409 and status_of(dup.value)["reason"] == "AlreadyExists"

    generated = co.create_namespaced_custom_object(
        GROUP, VERSION, NS, PLURAL, {**database(""), "metadata": {"generateName": "tmp-"}}
    )
    assert (
        generated["metadata"]["name"].startswith("tmp-") and len(generated["metadata"]["name"]) == 9
    )
    dry = co.create_namespaced_custom_object(
        GROUP, VERSION, NS, PLURAL, database("ghost"), dry_run="All"
    )
    assert dry["metadata"]["name"] == "ghost"

    got = co.get_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "orders")
    assert got == created
    listed = co.list_namespaced_custom_object(GROUP, VERSION, NS, PLURAL)
    assert listed["kind"] == "DatabaseList"
    assert sorted(i["metadata"]["name"] for i in listed["items"]) == sorted(
        ["orders", generated["metadata"]["name"]]
    )
    selected = co.list_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, label_selector="team=a")
    assert [i["metadata"]["name"] for i in selected["items"]] == ["orders"]
    everywhere = co.list_cluster_custom_object(GROUP, VERSION, PLURAL)
    assert len(everywhere["items"]) == 2

    patched = co.patch_namespaced_custom_object(
        GROUP, VERSION, NS, PLURAL, "orders", {"spec": {"replicas": 2}}
    )
    assert patched["spec"]["replicas"] == 2 and patched["metadata"]["generation"] == 2
    jsonpatched = co.patch_namespaced_custom_object(
        GROUP,
        VERSION,
        NS,
        PLURAL,
        "orders",
        [{"op": "add", "path": "/spec/version", "value": "16"}],
        _content_type="application/json-patch+json",
    )
    assert jsonpatched["spec"] == {
        "engine": "postgres",
        "replicas": 2,
        "version": "16",
        "storage": "1Gi",
    }

    # replace: needs the current resourceVersion
    stale = dict(got, spec={"engine": "mysql", "replicas": 1})
    with pytest.raises(ApiException) as conflict:
        co.replace_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "orders", stale)
    assert conflict.value.status == 409
    assert status_of(conflict.value)["message"] == (
        'Operation cannot be fulfilled on databases.demo.kubewerk.dev "orders": the object '
        "has been modified; please apply your changes to the latest version and try again"
    )
    no_rv = database("orders")
    with pytest.raises(ApiException) as invalid:
        co.replace_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "orders", no_rv)
    assert invalid.value.status == 422
    assert status_of(invalid.value)["details"]["causes"][0]["field"] == "metadata.resourceVersion"
    current = co.get_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "orders")
    replaced = co.replace_namespaced_custom_object(
        GROUP, VERSION, NS, PLURAL, "orders", dict(current, spec={"engine": "mysql", "replicas": 1})
    )
    assert replaced["spec"] == {
        "engine": "mysql",
        "replicas": 1,
        "storage": "1Gi",
    }  # schema default
    assert replaced["metadata"]["generation"] == 4
    assert int(replaced["metadata"]["resourceVersion"]) > int(
        current["metadata"]["resourceVersion"]
    )

    # status subresource: only status changes there, and generation stays
    status = {"status": {"replicas": 1, "conditions": [{"type": "Ready", "status": "True"}]}}
    with_status = co.patch_namespaced_custom_object_status(
        GROUP, VERSION, NS, PLURAL, "orders", status
    )
    assert with_status["status"] == status["status"] and with_status["metadata"]["generation"] == 4
    assert (
        co.get_namespaced_custom_object_status(GROUP, VERSION, NS, PLURAL, "orders")["status"]
        == status["status"]
    )
    sneaky = dict(with_status, spec={"engine": "postgres", "replicas": 5}, status={"replicas": 0})
    after = co.replace_namespaced_custom_object_status(GROUP, VERSION, NS, PLURAL, "orders", sneaky)
    assert after["spec"] == replaced["spec"] and after["status"] == {"replicas": 0}
    ignored = co.patch_namespaced_custom_object(
        GROUP, VERSION, NS, PLURAL, "orders", {"status": {"replicas": 7}}
    )
    assert ignored["status"] == {"replicas": 0}
    assert ignored["metadata"]["resourceVersion"] == after["metadata"]["resourceVersion"]

    # scale subresource
    scale = co.get_namespaced_custom_object_scale(GROUP, VERSION, NS, PLURAL, "orders")
    assert (
        scale["kind"] == "Scale"
        and scale["spec"]["replicas"] == 1
        and scale["status"]["replicas"] == 0
    )
    co.patch_namespaced_custom_object_scale(
        GROUP, VERSION, NS, PLURAL, "orders", {"spec": {"replicas": 3}}
    )
    assert (
        co.get_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "orders")["spec"]["replicas"]
        == 3
    )

    co.delete_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "orders")
    with pytest.raises(ApiException) as gone:
        co.get_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "orders")
    assert gone.value.status == 404
    assert status_of(gone.value)["message"] == 'databases.demo.kubewerk.dev "orders" not found'
    co.delete_collection_namespaced_custom_object(GROUP, VERSION, NS, PLURAL)
    assert co.list_namespaced_custom_object(GROUP, VERSION, NS, PLURAL)["items"] == []


def test_finalizer_keeps_a_custom_object_until_removed(crd: client.CustomObjectsApi) -> None:
    co = crd
    co.create_namespaced_custom_object(
        GROUP, VERSION, NS, PLURAL, database("held", finalizers=["x.dev/hold"])
    )
    co.delete_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "held")
    held = co.get_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "held")
    assert held["metadata"]["deletionTimestamp"] and held["metadata"]["finalizers"] == [
        "x.dev/hold"
    ]
    co.patch_namespaced_custom_object(
        GROUP, VERSION, NS, PLURAL, "held", {"metadata": {"finalizers": None}}
    )
    with pytest.raises(ApiException) as gone:
        co.get_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "held")
    assert gone.value.status == 404


# -- watch -----------------------------------------------------------------------------


def _events(co: client.CustomObjectsApi, count: int, **kwargs: Any) -> list[tuple[str, str, str]]:
    """The first ``count`` watch events as (type, name, resourceVersion)."""
    w = watch.Watch()
    seen: list[tuple[str, str, str]] = []
    for ev in w.stream(
        co.list_namespaced_custom_object, GROUP, VERSION, NS, PLURAL, timeout_seconds=5, **kwargs
    ):
        obj = ev["object"]
        seen.append(
            (ev["type"], obj["metadata"].get("name", ""), obj["metadata"]["resourceVersion"])
        )
        if len(seen) == count:
            w.stop()
    return seen


def test_watch_from_a_resource_version_and_recovery_after_410(
    crd: client.CustomObjectsApi, tserver: EmbeddedServer
) -> None:
    co = crd
    start_rv = co.list_namespaced_custom_object(GROUP, VERSION, NS, PLURAL)["metadata"][
        "resourceVersion"
    ]
    co.create_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, database("a"))
    co.patch_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "a", {"spec": {"replicas": 2}})
    co.create_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, database("b"))
    co.delete_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "a")

    # replay from the list's resourceVersion: every change, in order, exactly once
    replay = _events(co, 4, resource_version=start_rv)
    assert [(t, n) for t, n, _ in replay] == [
        ("ADDED", "a"),
        ("MODIFIED", "a"),
        ("ADDED", "b"),
        ("DELETED", "a"),
    ]
    revisions = [int(rv) for _, _, rv in replay]
    assert revisions == sorted(revisions) and len(set(revisions)) == 4

    # live events reach a running watch
    live: list[tuple[str, str, str]] = []
    watcher = threading.Thread(
        target=lambda: live.extend(_events(co, 2, resource_version=replay[-1][2]))
    )
    watcher.start()
    time.sleep(0.3)
    co.create_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, database("c"))
    co.patch_namespaced_custom_object(
        GROUP, VERSION, NS, PLURAL, "b", {"metadata": {"labels": {"x": "y"}}}
    )
    watcher.join(timeout=10)
    assert [(t, n) for t, n, _ in live] == [("ADDED", "c"), ("MODIFIED", "b")]

    # compaction makes the old revision unusable: the watch answers 200 with an ERROR event (410)
    tserver.store.compact(tserver.store.revision)
    with pytest.raises(ApiException) as expired:
        _events(co, 1, resource_version=start_rv)
    assert expired.value.status == 410
    assert "Expired" in str(expired.value.reason) and "too old resource version" in str(
        expired.value.reason
    )

    # recovery as an informer does it: relist, then watch from the list's resourceVersion
    relisted = co.list_namespaced_custom_object(GROUP, VERSION, NS, PLURAL)
    assert sorted(i["metadata"]["name"] for i in relisted["items"]) == ["b", "c"]
    co.patch_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "c", {"spec": {"replicas": 4}})
    resumed = _events(co, 1, resource_version=relisted["metadata"]["resourceVersion"])
    assert [(t, n) for t, n, _ in resumed] == [("MODIFIED", "c")]


def test_watch_bookmarks(crd: client.CustomObjectsApi) -> None:
    co = crd
    co.create_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, database("a"))
    events: list[dict[str, Any]] = []
    w = watch.Watch()
    for ev in w.stream(
        co.list_namespaced_custom_object,
        GROUP,
        VERSION,
        NS,
        PLURAL,
        timeout_seconds=5,
        allow_watch_bookmarks=True,
    ):
        events.append(ev)
        if ev["type"] == "BOOKMARK":
            w.stop()
    # without a resourceVersion the watch starts with the current objects as ADDED
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]
    bookmark = events[1]["object"]
    assert bookmark["kind"] == "Database" and bookmark["apiVersion"] == f"{GROUP}/{VERSION}"
    assert int(bookmark["metadata"]["resourceVersion"]) >= int(
        events[0]["object"]["metadata"]["resourceVersion"]
    )
    assert w.resource_version == bookmark["metadata"]["resourceVersion"]

    # timeoutSeconds: the server ends a quiet watch, and the client's stream ends with it
    started = time.monotonic()
    quiet = list(
        watch.Watch().stream(
            co.list_namespaced_custom_object,
            GROUP,
            VERSION,
            NS,
            PLURAL,
            resource_version=bookmark["metadata"]["resourceVersion"],
            timeout_seconds=1,
        )
    )
    assert quiet == [] and 0.9 < time.monotonic() - started < 5


# -- CoreV1Api ------------------------------------------------------------------------


def test_core_v1_namespaces_and_configmaps(api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    ns = v1.create_namespace(
        client.V1Namespace(metadata=client.V1ObjectMeta(name="py", labels={"env": "test"}))
    )
    assert ns.status.phase == "Active" and ns.spec.finalizers == ["kubernetes"]
    assert ns.metadata.labels == {"env": "test", "kubernetes.io/metadata.name": "py"}
    names = [n.metadata.name for n in v1.list_namespace().items]
    assert {"default", "kube-system", "kube-public", "py"} <= set(names)
    assert [n.metadata.name for n in v1.list_namespace(label_selector="env=test").items] == ["py"]
    v1.patch_namespace(
        "py",
        {"metadata": {"annotations": {"a": "b"}}},
        _content_type="application/merge-patch+json",
    )
    assert v1.read_namespace("py").metadata.annotations == {"a": "b"}

    cm = client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="settings"), data={"a": "1", "b": "2"}
    )
    created = v1.create_namespaced_config_map("py", cm)
    assert created.metadata.namespace == "py" and created.data == {"a": "1", "b": "2"}
    assert v1.read_namespaced_config_map("settings", "py").metadata.uid == created.metadata.uid
    merged = v1.patch_namespaced_config_map(
        "settings",
        "py",
        {"data": {"b": None, "c": "3"}},
        _content_type="application/merge-patch+json",
    )
    assert merged.data == {"a": "1", "c": "3"}
    strategic = v1.patch_namespaced_config_map(
        "settings",
        "py",
        {"data": {"d": "4"}},
        _content_type="application/strategic-merge-patch+json",
    )
    assert strategic.data == {"a": "1", "c": "3", "d": "4"}
    jp = v1.patch_namespaced_config_map("settings", "py", [{"op": "remove", "path": "/data/a"}])
    assert jp.data == {"c": "3", "d": "4"}
    jp.data = {"only": "this"}
    replaced = v1.replace_namespaced_config_map("settings", "py", jp)
    assert replaced.data == {"only": "this"}
    with pytest.raises(ApiException) as conflict:
        v1.replace_namespaced_config_map("settings", "py", jp)  # jp's resourceVersion is now stale
    assert conflict.value.status == 409
    assert [c.metadata.name for c in v1.list_namespaced_config_map("py").items] == ["settings"]
    assert (
        len(v1.list_config_map_for_all_namespaces(field_selector="metadata.namespace=py").items)
        == 1
    )

    with pytest.raises(ApiException) as invalid:
        v1.create_namespaced_config_map(
            "py", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="Bad_Name"))
        )
    assert invalid.value.status == 422

    v1.create_namespaced_config_map(
        "py", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="second"))
    )
    status = v1.delete_namespaced_config_map("second", "py")
    assert status["status"] == "Success" and status["details"]["name"] == "second"
    v1.delete_namespace("py")

    def gone() -> bool:
        try:
            v1.read_namespace("py")
        except ApiException as exc:
            return exc.status == 404
        return False

    wait_until(gone)
    with pytest.raises(ApiException) as missing:
        v1.read_namespaced_config_map("settings", "py")
    assert missing.value.status == 404


def test_list_pagination(api: client.ApiClient, tserver: EmbeddedServer) -> None:
    v1 = client.CoreV1Api(api)
    for i in range(25):
        v1.create_namespaced_config_map(
            NS, client.V1ConfigMap(metadata=client.V1ObjectMeta(name=f"cm-{i:02d}"))
        )
    first = v1.list_namespaced_config_map(NS, limit=10)
    assert [c.metadata.name for c in first.items] == [f"cm-{i:02d}" for i in range(10)]
    assert first.metadata._continue and first.metadata.remaining_item_count == 15
    # a change after the first page is not part of this (consistent) list
    v1.create_namespaced_config_map(
        NS, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="cm-99"))
    )
    v1.delete_namespaced_config_map("cm-20", NS)
    names = [c.metadata.name for c in first.items]
    token = first.metadata._continue
    pages = 1
    while token:
        page = v1.list_namespaced_config_map(NS, limit=10, _continue=token)
        assert page.metadata.resource_version == first.metadata.resource_version
        names += [c.metadata.name for c in page.items]
        token = page.metadata._continue
        pages += 1
    assert pages == 3 and names == [f"cm-{i:02d}" for i in range(25)]
    assert page.metadata.remaining_item_count is None

    # a token whose snapshot was compacted away is 410 Expired
    second = v1.list_namespaced_config_map(NS, limit=5)
    v1.delete_namespaced_config_map("cm-00", NS)
    tserver.store.compact(tserver.store.revision)
    with pytest.raises(ApiException) as expired:
        v1.list_namespaced_config_map(NS, limit=5, _continue=second.metadata._continue)
    assert expired.value.status == 410
    assert status_of(expired.value)["reason"] == "Expired"
    assert "The provided continue parameter is too old" in status_of(expired.value)["message"]
    # a fresh list works
    fresh = v1.list_namespaced_config_map(NS)
    assert len(fresh.items) == 24 and "cm-99" in {c.metadata.name for c in fresh.items}
