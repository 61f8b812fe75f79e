"""kubernetes_asyncio (the asyncio port of the official client) against the embedded API
server: what an operator author does with it — ``config.load_kube_config``, typed CRUD
through CoreV1Api/AppsV1Api, custom objects, every patch content type, subresources,
``watch.Watch().stream`` and the errors as ``ApiException`` carrying Kubernetes' Status.

One server per module (a background thread) serving HTTPS with client certificates, as a
real cluster's kubeconfig has it: the client verifies the server against the kubeconfig's
CA and authenticates with the admin certificate. Each test works in its own namespace."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubewerk.apiserver.server import EmbeddedServer

from ..conftest import DEMO_DIR
from .conftest import CRD_NAME, GROUP, PLURAL, VERSION

pytestmark = pytest.mark.e2e

kubernetes_asyncio = pytest.importorskip(
    "kubernetes_asyncio", reason="kubernetes_asyncio is needed"
)
from kubernetes_asyncio import client, config, watch  # noqa: E402
from kubernetes_asyncio.client.exceptions import ApiException  # noqa: E402

APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
ROOT_CA = "kube-root-ca.crt"
"""The ConfigMap every namespace of a TLS server holds (the root CA publisher's)."""


async def _configuration(kubeconfig: Path) -> client.Configuration:
    """A client Configuration loaded by ``config.load_kube_config`` from ``kubeconfig``."""
    cfg = client.Configuration()
    await config.load_kube_config(
        config_file=str(kubeconfig), client_configuration=cfg, persist_config=False
    )
    return cfg


async def _install_crd(kubeconfig: Path) -> None:
    """Register the demo CRD through ApiextensionsV1Api and wait until it is Established."""
    async with client.ApiClient(await _configuration(kubeconfig)) as api:
        ext = client.ApiextensionsV1Api(api)
        await ext.create_custom_resource_definition(
            yaml.safe_load((DEMO_DIR / "crd.yaml").read_text())
        )
        for _ in range(250):
            got = await ext.read_custom_resource_definition(CRD_NAME)
            if any(
                c.type == "Established" and c.status == "True" for c in got.status.conditions or []
            ):
                return
            await asyncio.sleep(0.02)
        pytest.fail(f"{CRD_NAME} was not Established")


@pytest.fixture(scope="module")
def server() -> Iterator[EmbeddedServer]:
    """One in-memory HTTPS server for the module."""
    srv = EmbeddedServer("memory", bookmark_interval=0.5, tls=True).start_in_thread()
    try:
        yield srv
    finally:
        srv.stop_thread()


@pytest.fixture(scope="module")
def kubeconfig(server: EmbeddedServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The server's admin kubeconfig (CA and client certificate), once the demo CRD it
    registers through the API is Established."""
    path = server.write_kubeconfig(tmp_path_factory.mktemp("k8s-asyncio") / "kubeconfig")
    asyncio.run(_install_crd(path))
    return path


@pytest.fixture
async def api(kubeconfig: Path) -> AsyncIterator[client.ApiClient]:
    """An ApiClient configured by ``config.load_kube_config`` (on the test's event loop)."""
    async with client.ApiClient(await _configuration(kubeconfig)) as api_client:
        yield api_client


async def _namespace(api: client.ApiClient, name: str) -> str:
    """Create namespace ``name`` and wait for the ``kube-root-ca.crt`` ConfigMap the
    server publishes in it (as kube-controller-manager does), so no test races it."""
    v1 = client.CoreV1Api(api)
    await v1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    for _ in range(250):
        try:
            await v1.read_namespaced_config_map(ROOT_CA, name)
            return name
        except ApiException as exc:
            assert exc.status == 404
        await asyncio.sleep(0.02)
    pytest.fail(f"{ROOT_CA} was not published in {name}")


def status_of(exc: ApiException) -> dict[str, Any]:
    """The Kubernetes Status an ApiException carries in its body."""
    body: dict[str, Any] = json.loads(exc.body)
    return body


def database(name: str, replicas: int = 1, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Database",
        "metadata": {"name": name, **meta},
        "spec": {"engine": "postgres", "replicas": replicas},
    }


def deployment(name: str, replicas: int = 1) -> client.V1Deployment:
    labels = {"app": name}
    return client.V1Deployment(
        metadata=client.V1ObjectMeta(name=name, labels=labels),
        spec=client.V1DeploymentSpec(
            replicas=replicas,
            selector=client.V1LabelSelector(match_labels=labels),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels=labels),
                spec=client.V1PodSpec(
                    containers=[client.V1Container(name="web", image="nginx:1.27")]
                ),
            ),
        ),
    )


# -- CoreV1Api -----------------------------------------------------------------------------


async def test_configmap_crud_selectors_and_replace(api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    ns = await _namespace(api, "crud")
    created = await v1.create_namespaced_config_map(
        ns,
        client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name="a", labels={"tier": "web"}), data={"k": "1"}
        ),
    )
    assert created.metadata.uid and created.metadata.resource_version
    assert created.metadata.namespace == ns and created.data == {"k": "1"}
    await v1.create_namespaced_config_map(
        ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="b", labels={"tier": "db"}))
    )
    got = await v1.read_namespaced_config_map("a", ns)
    assert got.metadata.uid == created.metadata.uid

    listed = await v1.list_namespaced_config_map(ns)
    assert listed.kind == "ConfigMapList" and [c.metadata.name for c in listed.items] == [
        "a",
        "b",
        ROOT_CA,
    ]
    by_label = await v1.list_namespaced_config_map(ns, label_selector="tier in (db,cache)")
    assert [c.metadata.name for c in by_label.items] == ["b"]
    by_field = await v1.list_namespaced_config_map(ns, field_selector="metadata.name!=b")
    assert [c.metadata.name for c in by_field.items] == ["a", ROOT_CA]
    everywhere = await v1.list_config_map_for_all_namespaces(
        field_selector=f"metadata.namespace={ns}", label_selector="tier"
    )
    assert sorted(c.metadata.name for c in everywhere.items) == ["a", "b"]  # labelled ones

    got.data = {"k": "2"}
    replaced = await v1.replace_namespaced_config_map("a", ns, got)
    assert replaced.data == {"k": "2"}
    assert int(replaced.metadata.resource_version) > int(got.metadata.resource_version)
    with pytest.raises(ApiException) as stale:
        await v1.replace_namespaced_config_map("a", ns, got)  # got's resourceVersion is old
    assert stale.value.status == 409
    assert status_of(stale.value) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'Operation cannot be fulfilled on configmaps "a": the object has been '
        "modified; please apply your changes to the latest version and try again",
        "reason": "Conflict",
        "details": {"name": "a", "kind": "configmaps"},
        "code": 409,
    }

    deleted = await v1.delete_namespaced_config_map("b", ns)
    assert deleted.status == "Success" and deleted.details.name == "b"
    assert [c.metadata.name for c in (await v1.list_namespaced_config_map(ns)).items] == [
        "a",
        ROOT_CA,
    ]


async def test_list_pagination_with_limit_and_continue(api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    ns = await _namespace(api, "pages")
    for i in range(7):
        await v1.create_namespaced_config_map(
            ns,
            client.V1ConfigMap(
                metadata=client.V1ObjectMeta(name=f"cm-{i}", labels={"odd": str(i % 2)})
            ),
        )
    first = await v1.list_namespaced_config_map(ns, limit=3)
    assert [c.metadata.name for c in first.items] == ["cm-0", "cm-1", "cm-2"]
    assert first.metadata._continue and first.metadata.remaining_item_count == 5
    await v1.delete_namespaced_config_map("cm-5", ns)  # after the snapshot: still listed
    names = [c.metadata.name for c in first.items]
    token = first.metadata._continue
    while token:
        page = await v1.list_namespaced_config_map(ns, limit=3, _continue=token)
        assert page.metadata.resource_version == first.metadata.resource_version
        names += [c.metadata.name for c in page.items]
        token = page.metadata._continue
    assert names == [*(f"cm-{i}" for i in range(7)), ROOT_CA]

    # a label selector filters before the limit counts; kube gives no remaining count then
    odd = await v1.list_namespaced_config_map(ns, limit=2, label_selector="odd=1")
    assert [c.metadata.name for c in odd.items] == ["cm-1", "cm-3"]
    assert odd.metadata._continue and odd.metadata.remaining_item_count is None
    rest = await v1.list_namespaced_config_map(
        ns, limit=2, label_selector="odd=1", _continue=odd.metadata._continue
    )
    assert rest.items == [] and not rest.metadata._continue

    with pytest.raises(ApiException) as bad:
        await v1.list_namespaced_config_map(ns, limit=3, _continue="not-a-token")
    assert bad.value.status == 400 and status_of(bad.value)["reason"] == "BadRequest"


# -- AppsV1Api: every patch type, subresources ----------------------------------------------


async def test_deployment_patch_types_scale_and_status(api: client.ApiClient) -> None:
    apps = client.AppsV1Api(api)
    ns = await _namespace(api, "apps")
    created = await apps.create_namespaced_deployment(ns, deployment("web"))
    assert created.metadata.generation == 1 and created.spec.strategy.type == "RollingUpdate"

    # a dict body goes as a strategic merge patch: containers merge by name
    strategic = await apps.patch_namespaced_deployment(
        "web",
        ns,
        {"spec": {"template": {"spec": {"containers": [{"name": "side", "image": "busybox"}]}}}},
    )
    assert [c.name for c in strategic.spec.template.spec.containers] == ["side", "web"]
    # the same body as a merge patch replaces the list
    merged = await apps.patch_namespaced_deployment(
        "web",
        ns,
        {"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:1.28"}]}}}},
        _content_type=MERGE,
    )
    assert [(c.name, c.image) for c in merged.spec.template.spec.containers] == [
        ("web", "nginx:1.28")
    ]
    # a list body goes as a JSON patch
    json_patched = await apps.patch_namespaced_deployment(
        "web",
        ns,
        [
            {"op": "test", "path": "/spec/replicas", "value": 1},
            {"op": "replace", "path": "/spec/replicas", "value": 2},
        ],
    )
    assert json_patched.spec.replicas == 2 and json_patched.metadata.generation == 4
    with pytest.raises(ApiException) as failed_test:
        await apps.patch_namespaced_deployment(
            "web", ns, [{"op": "test", "path": "/spec/replicas", "value": 9}]
        )
    assert failed_test.value.status == 422
    assert status_of(failed_test.value)["reason"] == "Invalid"
    # server-side apply with a field manager, then a conflict with another manager
    applied = await apps.patch_namespaced_deployment(
        "web",
        ns,
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"owner": "ops"}},
        },
        field_manager="ops",
        _content_type=APPLY,
    )
    assert applied.metadata.labels == {"app": "web", "owner": "ops"}
    managers = {(m.manager, m.operation) for m in applied.metadata.managed_fields}
    assert ("ops", "Apply") in managers
    with pytest.raises(ApiException) as conflict:
        await apps.patch_namespaced_deployment(
            "web",
            ns,
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "web", "labels": {"owner": "dev"}},
            },
            field_manager="dev",
            _content_type=APPLY,
        )
    assert conflict.value.status == 409
    assert status_of(conflict.value)["message"] == (
        'Apply failed with 1 conflict: conflict with "ops": .metadata.labels.owner'
    )
    with pytest.raises(ApiException) as no_manager:
        await apps.patch_namespaced_deployment(
            "web", ns, {"apiVersion": "apps/v1", "kind": "Deployment"}, _content_type=APPLY
        )
    assert no_manager.value.status == 422
    assert status_of(no_manager.value)["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: '
        "is required for apply patch"
    )

    # the scale subresource
    scale = await apps.read_namespaced_deployment_scale("web", ns)
    assert (scale.kind, scale.spec.replicas, scale.status.selector) == ("Scale", 2, "app=web")
    scaled = await apps.patch_namespaced_deployment_scale("web", ns, {"spec": {"replicas": 4}})
    assert scaled.spec.replicas == 4
    scale = await apps.read_namespaced_deployment_scale("web", ns)
    scale.spec.replicas = 5
    assert (await apps.replace_namespaced_deployment_scale("web", ns, scale)).spec.replicas == 5
    assert (await apps.read_namespaced_deployment("web", ns)).spec.replicas == 5

    # the status subresource changes status only, and leaves the generation alone
    before = await apps.read_namespaced_deployment("web", ns)
    status = await apps.patch_namespaced_deployment_status(
        "web",
        ns,
        {"spec": {"replicas": 1}, "status": {"observedGeneration": 7, "readyReplicas": 3}},
        _content_type=MERGE,
    )
    assert status.status.ready_replicas == 3 and status.status.observed_generation == 7
    assert status.spec.replicas == 5 and status.metadata.generation == before.metadata.generation
    read = await apps.read_namespaced_deployment_status("web", ns)
    assert read.status.ready_replicas == 3


async def test_delete_with_propagation_policies(api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    ns = await _namespace(api, "gc")

    async def family(owner: str) -> client.V1ConfigMap:
        parent = await v1.create_namespaced_config_map(
            ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name=owner))
        )
        ref = client.V1OwnerReference(
            api_version="v1",
            kind="ConfigMap",
            name=owner,
            uid=parent.metadata.uid,
            block_owner_deletion=True,
        )
        await v1.create_namespaced_config_map(
            ns,
            client.V1ConfigMap(
                metadata=client.V1ObjectMeta(name=f"{owner}-child", owner_references=[ref])
            ),
        )
        return parent

    async def exists(name: str) -> bool:
        try:
            await v1.read_namespaced_config_map(name, ns)
        except ApiException as exc:
            assert exc.status == 404
            return False
        return True

    async def eventually_gone(name: str) -> None:
        for _ in range(250):
            if not await exists(name):
                return
            await asyncio.sleep(0.02)
        pytest.fail(f"{name} was not deleted")

    # Orphan: the child stays, without its owner reference
    await family("orphaner")
    await v1.delete_namespaced_config_map("orphaner", ns, propagation_policy="Orphan")
    await eventually_gone("orphaner")
    child = await v1.read_namespaced_config_map("orphaner-child", ns)
    assert not child.metadata.owner_references

    # Background: the owner goes at once, the garbage collector removes the child after
    await family("bg")
    await v1.delete_namespaced_config_map("bg", ns, propagation_policy="Background")
    assert not await exists("bg")
    await eventually_gone("bg-child")

    # Foreground: the owner waits (deletionTimestamp, the foregroundDeletion finalizer)
    # until the child that blocks it is gone
    await family("fg")
    await v1.patch_namespaced_config_map(
        "fg-child", ns, {"metadata": {"finalizers": ["example.com/hold"]}}
    )
    await v1.delete_namespaced_config_map(
        "fg", ns, body=client.V1DeleteOptions(propagation_policy="Foreground")
    )
    held = await v1.read_namespaced_config_map("fg", ns)
    assert held.metadata.deletion_timestamp and held.metadata.finalizers == ["foregroundDeletion"]
    for _ in range(250):  # the collector deletes the child, which its finalizer holds
        if (await v1.read_namespaced_config_map("fg-child", ns)).metadata.deletion_timestamp:
            break
        await asyncio.sleep(0.02)
    else:
        pytest.fail("the garbage collector never deleted the blocking dependent")
    assert await exists("fg")
    await v1.patch_namespaced_config_map(
        "fg-child", ns, [{"op": "remove", "path": "/metadata/finalizers"}]
    )
    await eventually_gone("fg-child")
    await eventually_gone("fg")


# -- CustomObjectsApi ------------------------------------------------------------------------


async def test_custom_objects_crud_patches_and_subresources(api: client.ApiClient) -> None:
    co = client.CustomObjectsApi(api)
    ns = await _namespace(api, "custom")
    args = (GROUP, VERSION, ns, PLURAL)
    created = await co.create_namespaced_custom_object(
        *args, database("orders", 3, labels={"team": "a"})
    )
    assert created["metadata"]["generation"] == 1 and created["spec"]["storage"] == "1Gi"
    await co.create_namespaced_custom_object(*args, database("users", labels={"team": "b"}))
    assert await co.get_namespaced_custom_object(*args, "orders") == created
    listed = await co.list_namespaced_custom_object(*args, label_selector="team=a")
    assert listed["kind"] == "DatabaseList"
    assert [i["metadata"]["name"] for i in listed["items"]] == ["orders"]
    by_field = await co.list_namespaced_custom_object(*args, field_selector="metadata.name=users")
    assert [i["metadata"]["name"] for i in by_field["items"]] == ["users"]
    page = await co.list_namespaced_custom_object(*args, limit=1)
    assert [i["metadata"]["name"] for i in page["items"]] == ["orders"]
    page = await co.list_namespaced_custom_object(
        *args, limit=1, _continue=page["metadata"]["continue"]
    )
    assert [i["metadata"]["name"] for i in page["items"]] == ["users"]
    assert "continue" not in page["metadata"]

    merged = await co.patch_namespaced_custom_object(
        *args, "orders", {"spec": {"replicas": 2}}, _content_type=MERGE
    )
    assert merged["spec"]["replicas"] == 2 and merged["metadata"]["generation"] == 2
    # a list body is a JSON patch without being told
    json_patched = await co.patch_namespaced_custom_object(
        *args, "orders", [{"op": "add", "path": "/spec/version", "value": "16"}]
    )
    assert json_patched["spec"]["version"] == "16"
    # custom resources have no strategic merge patch: 415 as kube-apiserver answers it
    with pytest.raises(ApiException) as strategic:
        await co.patch_namespaced_custom_object(
            *args, "orders", {"spec": {"replicas": 3}}, _content_type=STRATEGIC
        )
    assert strategic.value.status == 415
    assert status_of(strategic.value)["reason"] == "UnsupportedMediaType"
    apply_body = {**database("orders", 4), "spec": {"engine": "postgres", "replicas": 4}}
    with pytest.raises(ApiException) as conflict:
        # the merge patch above made the client's user agent the manager of .spec.replicas
        await co.patch_namespaced_custom_object(
            *args, "orders", apply_body, field_manager="operator", _content_type=APPLY
        )
    assert conflict.value.status == 409
    assert status_of(conflict.value)["details"]["causes"] == [
        {
            "reason": "FieldManagerConflict",
            "message": 'conflict with "OpenAPI-Generator" using demo.kubewerk.dev/v1',
            "field": ".spec.replicas",
        }
    ]
    applied = await co.patch_namespaced_custom_object(
        *args,
        "orders",
        apply_body,
        field_manager="operator",
        force=True,
        _content_type=APPLY,
    )
    assert applied["spec"]["replicas"] == 4
    assert ("operator", "Apply") in {
        (m["manager"], m["operation"]) for m in applied["metadata"]["managedFields"]
    }

    current = await co.get_namespaced_custom_object(*args, "orders")
    current["spec"] = {"engine": "mysql", "replicas": 2}
    replaced = await co.replace_namespaced_custom_object(*args, "orders", current)
    assert replaced["spec"] == {"engine": "mysql", "replicas": 2, "storage": "1Gi"}
    generation = replaced["metadata"]["generation"]

    # status: only status changes, the generation stays
    status = {"status": {"replicas": 2, "conditions": [{"type": "Ready", "status": "True"}]}}
    with_status = await co.patch_namespaced_custom_object_status(
        *args, "orders", {**status, "spec": {"replicas": 7}}, _content_type=MERGE
    )
    assert with_status["status"] == status["status"]
    assert with_status["spec"]["replicas"] == 2
    assert with_status["metadata"]["generation"] == generation
    assert (await co.get_namespaced_custom_object_status(*args, "orders"))["status"] == status[
        "status"
    ]

    # scale: specReplicasPath and statusReplicasPath of the CRD
    scale = await co.get_namespaced_custom_object_scale(*args, "orders")
    assert (scale["kind"], scale["spec"]["replicas"], scale["status"]["replicas"]) == (
        "Scale",
        2,
        2,
    )
    await co.patch_namespaced_custom_object_scale(
        *args, "orders", {"spec": {"replicas": 3}}, _content_type=MERGE
    )
    assert (await co.get_namespaced_custom_object(*args, "orders"))["spec"]["replicas"] == 3
    with pytest.raises(ApiException) as too_many:  # mysql supports at most 3 (a CEL rule)
        await co.patch_namespaced_custom_object_scale(
            *args, "orders", {"spec": {"replicas": 5}}, _content_type=MERGE
        )
    assert too_many.value.status == 422
    assert status_of(too_many.value)["details"]["causes"][0]["message"].endswith(
        "mysql supports at most 3 replicas"
    )

    # a custom resource's store answers a Status (no ReturnDeletedObject in apiextensions)
    answer = await co.delete_namespaced_custom_object(*args, "orders")
    assert (answer["kind"], answer["status"], answer["details"]["name"]) == (
        "Status",
        "Success",
        "orders",
    )
    await co.delete_collection_namespaced_custom_object(*args, label_selector="team=b")
    assert (await co.list_namespaced_custom_object(*args))["items"] == []


# -- watch ---------------------------------------------------------------------------------


async def _events(
    func: Any, *args: Any, count: int, **kwargs: Any
) -> tuple[list[tuple[str, str]], watch.Watch]:
    """The first ``count`` events of ``watch.Watch().stream(func, ...)`` as (type, name)."""
    w = watch.Watch()
    seen: list[tuple[str, str]] = []
    async with w:
        async for event in w.stream(func, *args, timeout_seconds=5, **kwargs):
            seen.append((event["type"], event["raw_object"]["metadata"]["name"]))
            if len(seen) == count:
                w.stop()
    return seen, w


async def test_watch_stream_order_resume_and_410(
    api: client.ApiClient, server: EmbeddedServer
) -> None:
    v1 = client.CoreV1Api(api)
    ns = await _namespace(api, "watching")
    start = (await v1.list_namespaced_config_map(ns)).metadata.resource_version

    # a running watch sees ADDED, MODIFIED, DELETED in order, typed as V1ConfigMap
    async def writes() -> None:
        await asyncio.sleep(0.2)
        await v1.create_namespaced_config_map(
            ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="a"), data={"v": "1"})
        )
        await v1.patch_namespaced_config_map("a", ns, {"data": {"v": "2"}})
        await v1.delete_namespaced_config_map("a", ns)

    w = watch.Watch()
    live: list[tuple[str, str, Any]] = []
    writer = asyncio.create_task(writes())
    async with w:
        async for event in w.stream(
            v1.list_namespaced_config_map, ns, resource_version=start, timeout_seconds=5
        ):
            live.append((event["type"], event["object"].metadata.name, event["object"]))
            if len(live) == 3:
                w.stop()
    await writer
    assert [(t, n) for t, n, _ in live] == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]
    assert all(isinstance(obj, client.V1ConfigMap) for _, _, obj in live)
    assert [obj.data for _, _, obj in live] == [{"v": "1"}, {"v": "2"}, {"v": "2"}]
    revisions = [int(obj.metadata.resource_version) for _, _, obj in live]
    assert revisions == sorted(revisions) and len(set(revisions)) == 3
    assert w.resource_version == live[-1][2].metadata.resource_version

    # resume from a remembered resourceVersion: only what came after it
    await v1.create_namespaced_config_map(
        ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="b"))
    )
    resumed, _ = await _events(
        v1.list_namespaced_config_map, ns, count=1, resource_version=w.resource_version
    )
    assert resumed == [("ADDED", "b")]
    # without a resourceVersion: the current objects first, as ADDED
    current, _ = await _events(v1.list_namespaced_config_map, ns, count=1)
    assert current == [("ADDED", "b")]

    # after compaction the old revision is gone: the watch's ERROR event (410 Expired)
    # becomes an ApiException (Watch retries a 410 once only when it watches forever)
    server.store.compact(server.store.revision)
    with pytest.raises(ApiException) as expired:
        await _events(v1.list_namespaced_config_map, ns, count=1, resource_version=start)
    assert expired.value.status == 410
    assert str(expired.value.reason).startswith("Expired: too old resource version: ")
    # watching forever (no timeout_seconds), Watch reconnects once after the 410; that works
    # only because the server ends the stream after its ERROR event, and the second 410 is
    # raised
    forever = watch.Watch()
    with pytest.raises(ApiException) as again:
        async with forever:
            stream = forever.stream(v1.list_namespaced_config_map, ns, resource_version=start)
            await asyncio.wait_for(stream.next(), 5)
    assert again.value.status == 410

    # the custom objects API streams dicts
    co = client.CustomObjectsApi(api)
    rv = (await co.list_namespaced_custom_object(GROUP, VERSION, ns, PLURAL))["metadata"][
        "resourceVersion"
    ]
    await co.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, database("w"))
    await co.patch_namespaced_custom_object(
        GROUP, VERSION, ns, PLURAL, "w", {"spec": {"replicas": 2}}, _content_type=MERGE
    )
    await co.delete_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "w")
    custom, _ = await _events(
        co.list_namespaced_custom_object, GROUP, VERSION, ns, PLURAL, count=3, resource_version=rv
    )
    assert custom == [("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")]


async def test_watch_bookmarks_move_the_resume_point(api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    ns = await _namespace(api, "bookmarks")
    start = (await v1.list_namespaced_config_map(ns)).metadata.resource_version
    await _namespace(api, "bookmarks-elsewhere")  # moves the global revision on
    w = watch.Watch()
    types: list[str] = []
    async with w:
        async for event in w.stream(
            v1.list_namespaced_config_map,
            ns,
            resource_version=start,
            allow_watch_bookmarks=True,
            timeout_seconds=5,
        ):
            types.append(event["type"])
            w.stop()
    assert types == ["BOOKMARK"]
    assert int(w.resource_version) > int(start)


# -- errors --------------------------------------------------------------------------------


async def test_errors_are_api_exceptions_with_the_status(api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    ns = await _namespace(api, "errors")
    with pytest.raises(ApiException) as missing:
        await v1.read_namespaced_config_map("nope", ns)
    assert (missing.value.status, missing.value.reason) == (404, "Not Found")
    assert status_of(missing.value) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'configmaps "nope" not found',
        "reason": "NotFound",
        "details": {"name": "nope", "kind": "configmaps"},
        "code": 404,
    }
    with pytest.raises(ApiException) as no_ns:
        await v1.create_namespaced_config_map(
            "nowhere", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="x"))
        )
    assert no_ns.value.status == 404
    assert status_of(no_ns.value)["message"] == 'namespaces "nowhere" not found'

    cm = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="dup"))
    await v1.create_namespaced_config_map(ns, cm)
    with pytest.raises(ApiException) as exists:
        await v1.create_namespaced_config_map(ns, cm)
    assert exists.value.status == 409
    assert status_of(exists.value)["reason"] == "AlreadyExists"
    assert status_of(exists.value)["message"] == 'configmaps "dup" already exists'

    with pytest.raises(ApiException) as invalid:
        await v1.create_namespaced_config_map(
            ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="Bad_Name"))
        )
    assert invalid.value.status == 422
    body = status_of(invalid.value)
    assert body["reason"] == "Invalid" and body["details"]["kind"] == "ConfigMap"
    assert body["details"]["causes"][0]["field"] == "metadata.name"
    assert body["message"].startswith(
        'ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": '
    )

    # without the client certificate: 401 with kube's Status
    anonymous = client.Configuration()
    anonymous.host = api.configuration.host
    anonymous.ssl_ca_cert = api.configuration.ssl_ca_cert
    async with client.ApiClient(anonymous) as nobody:
        with pytest.raises(ApiException) as unauthorized:
            await client.CoreV1Api(nobody).list_namespaced_config_map(ns)
    assert unauthorized.value.status == 401
    assert status_of(unauthorized.value) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Unauthorized",
        "reason": "Unauthorized",
        "code": 401,
    }

    # a custom resource against its schema and CEL rule
    co = client.CustomObjectsApi(api)
    with pytest.raises(ApiException) as schema:
        await co.create_namespaced_custom_object(
            GROUP,
            VERSION,
            ns,
            PLURAL,
            {**database("big"), "spec": {"engine": "mysql", "replicas": 9}},
        )
    assert schema.value.status == 422
    causes = status_of(schema.value)["details"]["causes"]
    assert {
        "reason": "FieldValueInvalid",
        "message": "Invalid value: 9: spec.replicas in body should be less than or equal to 7",
        "field": "spec.replicas",
    } in causes

    # CustomObjectsApi sends a dict patch without _content_type as a JSON patch (the first
    # type its OpenAPI spec lists, kubernetes_asyncio/client/api_client.py
    # select_header_content_type); the server refuses it as kube-apiserver does
    with pytest.raises(ApiException) as not_a_json_patch:
        await co.patch_namespaced_custom_object(
            GROUP, VERSION, ns, PLURAL, "orders", {"spec": {"replicas": 2}}
        )
    assert not_a_json_patch.value.status == 404  # the object is looked up first
    await co.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, database("orders"))
    with pytest.raises(ApiException) as not_a_json_patch:
        await co.patch_namespaced_custom_object(
            GROUP, VERSION, ns, PLURAL, "orders", {"spec": {"replicas": 2}}
        )
    assert not_a_json_patch.value.status == 400
    assert status_of(not_a_json_patch.value)["message"] == (
        "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
    )

    # a pod's delete answers the deleted Pod, which the typed client decodes
    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name="p"),
        spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="busybox")]),
    )
    created = await v1.create_namespaced_pod(ns, pod)
    deleted = await v1.delete_namespaced_pod("p", ns)
    assert isinstance(deleted, client.V1Pod) and deleted.metadata.uid == created.metadata.uid
    assert deleted.spec.containers[0].image == "busybox"


async def test_watch_selection_and_initial_events(api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    ns = await _namespace(api, "selection")
    await v1.create_namespaced_config_map(
        ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="s", labels={"a": "1"}))
    )
    rv = (await v1.list_namespaced_config_map(ns)).metadata.resource_version
    await v1.patch_namespaced_config_map("s", ns, {"metadata": {"labels": {"a": "2"}}})
    await v1.patch_namespaced_config_map("s", ns, {"metadata": {"labels": {"a": "1"}}})
    # an object leaving a watch's label selection is DELETED for it, coming back is ADDED
    w = watch.Watch()
    seen: list[tuple[str, Any]] = []
    async with w:
        async for event in w.stream(
            v1.list_namespaced_config_map,
            ns,
            label_selector="a=1",
            resource_version=rv,
            timeout_seconds=5,
        ):
            seen.append((event["type"], event["object"].metadata.labels))
            if len(seen) == 2:
                w.stop()
    assert seen == [("DELETED", {"a": "2"}), ("ADDED", {"a": "1"})]

    # a watch list (sendInitialEvents): the current objects, then the bookmark that ends them
    w = watch.Watch()
    initial: list[tuple[str, Any]] = []
    async with w:
        async for event in w.stream(
            v1.list_namespaced_config_map,
            ns,
            send_initial_events=True,
            resource_version_match="NotOlderThan",
            allow_watch_bookmarks=True,
            timeout_seconds=5,
        ):
            meta = event["raw_object"]["metadata"]
            initial.append((event["type"], meta.get("name") or meta.get("annotations")))
            if event["type"] == "BOOKMARK":
                w.stop()
    assert initial == [
        ("ADDED", ROOT_CA),
        ("ADDED", "s"),
        ("BOOKMARK", {"k8s.io/initial-events-end": "true"}),
    ]


async def test_dynamic_client_discovers_and_serves_the_crd(api: client.ApiClient) -> None:
    from kubernetes_asyncio.dynamic import DynamicClient

    ns = await _namespace(api, "dynamic")
    dyn = await DynamicClient(api)
    databases = await dyn.resources.get(api_version=f"{GROUP}/{VERSION}", kind="Database")
    assert (databases.name, databases.namespaced) == (PLURAL, True)
    created = await databases.create(body=database("d"), namespace=ns)
    assert created.spec.storage == "1Gi"
    scale = databases.subresources["scale"]
    assert (await scale.get(name="d", namespace=ns)).spec.replicas == 1
    configmaps = await dyn.resources.get(api_version="v1", kind="ConfigMap")
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa", "namespace": ns}}
    applied = await dyn.server_side_apply(
        configmaps, body={**body, "data": {"a": "b"}}, field_manager="dyn"
    )
    assert applied.to_dict()["data"] == {"a": "b"}
    listed = await configmaps.get(namespace=ns)
    assert [i.metadata.name for i in listed.items] == [ROOT_CA, "ssa"]


async def test_leader_election_with_a_lease_lock(api: client.ApiClient) -> None:
    from kubernetes_asyncio.leaderelection import electionconfig, leaderelection
    from kubernetes_asyncio.leaderelection.resourcelock.leaselock import LeaseLock

    ns = await _namespace(api, "election")
    leading = {"a": asyncio.Event(), "b": asyncio.Event()}

    def candidate(identity: str) -> asyncio.Task[None]:
        async def lead() -> None:
            leading[identity].set()
            await asyncio.sleep(60)

        async def stopped() -> None:
            return None

        conf = electionconfig.Config(
            LeaseLock("operator-lock", ns, identity, api),
            lease_duration=2,
            renew_deadline=1.5,
            retry_period=1,  # the client's minimums: a takeover would take seconds
            onstarted_leading=lead,
            onstopped_leading=stopped,
        )
        return asyncio.create_task(leaderelection.LeaderElection(conf).run())

    first = candidate("a")
    await asyncio.wait_for(leading["a"].wait(), 5)
    second = candidate("b")
    await asyncio.sleep(0.3)  # b's first attempt finds a's unexpired lease
    lease = await client.CoordinationV1Api(api).read_namespaced_lease("operator-lock", ns)
    assert (lease.spec.holder_identity, lease.spec.lease_duration_seconds) == ("a", 2)
    # the MicroTime the client wrote is read back to the microsecond
    assert lease.spec.renew_time >= lease.spec.acquire_time
    assert not leading["b"].is_set()
    for task in (first, second):
        task.cancel()
    await asyncio.gather(first, second, return_exceptions=True)
