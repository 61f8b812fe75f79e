"""lightkube (sync ``Client`` and ``AsyncClient``) against the embedded API server: typed
built-in resources and generic resources for a CRD registered through the API — get, list
(selectors, chunked pagination), watch, create, every patch type, replace, delete,
deletecollection, ``wait`` on a condition, the status and scale subresources, and errors as
``ApiError`` carrying Kubernetes' Status.

One server per module (a background thread) serving HTTPS with client certificates, as a
real cluster's kubeconfig has it. Each test works in its own namespace."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubewerk.apiserver.server import EmbeddedServer

from ..conftest import DEMO_DIR
from .conftest import CRD_NAME, GROUP, PLURAL, VERSION

pytestmark = pytest.mark.e2e

lightkube = pytest.importorskip("lightkube", reason="lightkube is needed")
from lightkube import ApiError, AsyncClient, Client, KubeConfig  # noqa: E402
from lightkube import generic_resource as gr  # noqa: E402
from lightkube.models.apps_v1 import DeploymentSpec  # noqa: E402
from lightkube.models.autoscaling_v1 import ScaleSpec  # noqa: E402
from lightkube.models.core_v1 import Container, PodSpec, PodTemplateSpec  # noqa: E402
from lightkube.models.meta_v1 import LabelSelector, ObjectMeta  # noqa: E402
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition  # noqa: E402
from lightkube.resources.apps_v1 import Deployment  # noqa: E402
from lightkube.resources.core_v1 import ConfigMap, Namespace  # noqa: E402
from lightkube.types import CascadeType, PatchType  # noqa: E402

Database = gr.create_namespaced_resource(GROUP, VERSION, "Database", PLURAL)
ROOT_CA = "kube-root-ca.crt"
"""The ConfigMap every namespace of a TLS server holds (the root CA publisher's)."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedServer]:
    """One in-memory server for the module; the demo CRD is registered by the first test
    that needs it (``crd``)."""
    srv = EmbeddedServer("memory", bookmark_interval=0.5, tls=True).start_in_thread()
    try:
        yield srv
    finally:
        srv.stop_thread()


@pytest.fixture(scope="module")
def kubeconfig(server: EmbeddedServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return server.write_kubeconfig(tmp_path_factory.mktemp("lightkube") / "kubeconfig")


@pytest.fixture
def lk(kubeconfig: Path) -> Iterator[Client]:
    """A sync lightkube Client from the kubeconfig, field manager ``lightkube``."""
    with Client(KubeConfig.from_file(str(kubeconfig)), field_manager="lightkube") as c:
        yield c


@pytest.fixture
async def alk(kubeconfig: Path) -> AsyncIterator[AsyncClient]:
    """An AsyncClient from the kubeconfig, on the test's event loop."""
    c = AsyncClient(KubeConfig.from_file(str(kubeconfig)), field_manager="lightkube")
    try:
        yield c
    finally:
        await c.close()


@pytest.fixture(scope="module")
def crd(kubeconfig: Path) -> str:
    """The demo CRD created through lightkube and waited for with ``Client.wait`` until
    the server's CRD controller sets Established; returns its name."""
    with Client(KubeConfig.from_file(str(kubeconfig))) as c:
        body = yaml.safe_load((DEMO_DIR / "crd.yaml").read_text())
        c.create(CustomResourceDefinition.from_dict(body))
        c.wait(CustomResourceDefinition, CRD_NAME, for_conditions=["Established"])
    return CRD_NAME


def namespace(c: Client, name: str) -> str:
    """Create namespace ``name`` and wait for the ``kube-root-ca.crt`` ConfigMap the server
    publishes in it (as kube-controller-manager does), so no test races it."""
    c.create(Namespace(metadata=ObjectMeta(name=name)))
    deadline = time.monotonic() + 5
    while True:
        try:
            c.get(ConfigMap, ROOT_CA, namespace=name)
            return name
        except ApiError as exc:
            assert exc.status.code == 404
        assert time.monotonic() < deadline, f"{ROOT_CA} was not published in {name}"
        time.sleep(0.02)


def configmap(name: str, **labels: str) -> ConfigMap:
    return ConfigMap(metadata=ObjectMeta(name=name, labels=labels or None), data={"k": name})


def deployment(name: str, replicas: int = 1) -> Deployment:
    labels = {"app": name}
    return Deployment(
        metadata=ObjectMeta(name=name, labels=labels),
        spec=DeploymentSpec(
            replicas=replicas,
            selector=LabelSelector(matchLabels=labels),
            template=PodTemplateSpec(
                metadata=ObjectMeta(labels=labels),
                spec=PodSpec(containers=[Container(name="web", image="nginx:1.27")]),
            ),
        ),
    )


def database(name: str, replicas: int = 1, **labels: str) -> Any:
    return Database(
        metadata=ObjectMeta(name=name, labels=labels or None),
        spec={"engine": "postgres", "replicas": replicas},
    )


# -- sync Client: built-in kinds -----------------------------------------------------------


def test_get_list_selectors_pagination_replace_delete(lk: Client) -> None:
    ns = namespace(lk, "lk-crud")
    created = lk.create(configmap("a", tier="web"), namespace=ns)
    assert created.metadata.uid and created.metadata.namespace == ns
    for name, tier in (("b", "db"), ("c", "db"), ("d", "cache"), ("e", "web")):
        lk.create(configmap(name, tier=tier), namespace=ns)
    assert lk.get(ConfigMap, "a", namespace=ns).metadata.uid == created.metadata.uid

    listed = lk.list(ConfigMap, namespace=ns)
    assert [c.metadata.name for c in listed] == ["a", "b", "c", "d", "e", ROOT_CA]
    assert int(listed.resourceVersion) >= int(created.metadata.resourceVersion)
    # chunk_size is limit + continue underneath: the same items over three pages
    assert [c.metadata.name for c in lk.list(ConfigMap, namespace=ns, chunk_size=2)] == [
        "a",
        "b",
        "c",
        "d",
        "e",
        ROOT_CA,
    ]
    from lightkube import operators as op

    assert [c.metadata.name for c in lk.list(ConfigMap, namespace=ns, labels={"tier": "db"})] == [
        "b",
        "c",
    ]
    selected = lk.list(ConfigMap, namespace=ns, labels={"tier": op.not_in(["db", "web"])})
    assert [c.metadata.name for c in selected] == ["d", ROOT_CA]  # notin matches no label
    by_field = lk.list(
        ConfigMap, namespace="*", fields={"metadata.namespace": ns, "metadata.name": "e"}
    )
    assert [(c.metadata.namespace, c.metadata.name) for c in by_field] == [(ns, "e")]
    not_a = lk.list(
        ConfigMap, namespace=ns, fields={"metadata.name": op.not_equal("a")}, chunk_size=3
    )
    assert [c.metadata.name for c in not_a] == ["b", "c", "d", "e", ROOT_CA]

    got = lk.get(ConfigMap, "a", namespace=ns)
    got.data = {"k": "replaced"}
    replaced = lk.replace(got)
    assert replaced.data == {"k": "replaced"}
    with pytest.raises(ApiError) as stale:
        lk.replace(got)  # got carries the old resourceVersion
    assert stale.value.status.code == 409 and stale.value.status.reason == "Conflict"

    lk.delete(ConfigMap, "a", namespace=ns)
    with pytest.raises(ApiError) as gone:
        lk.get(ConfigMap, "a", namespace=ns)
    assert gone.value.status.code == 404
    # lightkube's deletecollection takes no selectors (lightkube/core/client.py): all of them
    lk.deletecollection(ConfigMap, namespace=ns)
    # the root CA publisher may already have put its ConfigMap back
    assert {c.metadata.name for c in lk.list(ConfigMap, namespace=ns)} <= {ROOT_CA}


def test_every_patch_type_and_the_subresources(lk: Client) -> None:
    ns = namespace(lk, "lk-patch")
    lk.create(deployment("web"), namespace=ns)
    # the default patch type is a strategic merge patch: containers merge by name
    side = {"spec": {"template": {"spec": {"containers": [{"name": "side", "image": "busybox"}]}}}}
    patched = lk.patch(Deployment, "web", side, namespace=ns)
    assert [c.name for c in patched.spec.template.spec.containers] == ["side", "web"]
    web = {"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:1.28"}]}}}}
    merged = lk.patch(Deployment, "web", web, namespace=ns, patch_type=PatchType.MERGE)
    assert [(c.name, c.image) for c in merged.spec.template.spec.containers] == [
        ("web", "nginx:1.28")
    ]
    json_patched = lk.patch(
        Deployment,
        "web",
        [{"op": "replace", "path": "/spec/replicas", "value": 2}],
        namespace=ns,
        patch_type=PatchType.JSON,
    )
    assert json_patched.spec.replicas == 2
    apply = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"owner": "ops"}},
    }
    applied = lk.patch(
        Deployment, "web", apply, namespace=ns, patch_type=PatchType.APPLY, field_manager="ops"
    )
    assert applied.metadata.labels == {"app": "web", "owner": "ops"}
    assert ("ops", "Apply") in {(m.manager, m.operation) for m in applied.metadata.managedFields}
    apply["metadata"]["labels"] = {"owner": "dev"}
    with pytest.raises(ApiError) as conflict:
        lk.patch(
            Deployment, "web", apply, namespace=ns, patch_type=PatchType.APPLY, field_manager="dev"
        )
    assert conflict.value.status.code == 409
    assert conflict.value.status.message == (
        'Apply failed with 1 conflict: conflict with "ops": .metadata.labels.owner'
    )
    forced = lk.patch(
        Deployment,
        "web",
        apply,
        namespace=ns,
        patch_type=PatchType.APPLY,
        field_manager="dev",
        force=True,
    )
    assert forced.metadata.labels["owner"] == "dev"
    # the client's own field manager (Client(field_manager=...)) on a plain apply
    own = lk.apply(configmap("cfg"), namespace=ns)
    assert own.metadata.managedFields[0].manager == "lightkube"

    # scale
    scale = lk.get(Deployment.Scale, "web", namespace=ns)
    assert (scale.spec.replicas, scale.status.selector) == (2, "app=web")
    scale.spec = ScaleSpec(replicas=4)
    assert lk.replace(scale).spec.replicas == 4
    lk.patch(
        Deployment.Scale, "web", {"spec": {"replicas": 5}}, namespace=ns, patch_type=PatchType.MERGE
    )
    assert lk.get(Deployment, "web", namespace=ns).spec.replicas == 5
    # status: only status changes, the generation stays
    generation = lk.get(Deployment, "web", namespace=ns).metadata.generation
    status = lk.patch(
        Deployment.Status,
        "web",
        {"spec": {"replicas": 1}, "status": {"readyReplicas": 3}},
        namespace=ns,
        patch_type=PatchType.MERGE,
    )
    assert status.status.readyReplicas == 3 and status.spec.replicas == 5
    assert status.metadata.generation == generation
    assert lk.get(Deployment.Status, "web", namespace=ns).status.readyReplicas == 3

    # delete with a propagation policy: Foreground holds the owner (deletionTimestamp, the
    # foregroundDeletion finalizer) until the garbage collector finds no dependents left
    lk.delete(Deployment, "web", namespace=ns, cascade=CascadeType.FOREGROUND)
    deadline = time.monotonic() + 5
    while True:
        try:
            held = lk.get(Deployment, "web", namespace=ns)
        except ApiError as exc:
            assert exc.status.code == 404
            break
        assert held.metadata.deletionTimestamp is not None
        assert held.metadata.finalizers == ["foregroundDeletion"]
        assert time.monotonic() < deadline, "the Deployment was never deleted"
        time.sleep(0.02)


def test_watch_events_resume_and_410(lk: Client, server: EmbeddedServer) -> None:
    ns = namespace(lk, "lk-watch")
    start = lk.list(ConfigMap, namespace=ns)
    list(start)
    rv = start.resourceVersion
    lk.create(configmap("a"), namespace=ns)
    lk.patch(ConfigMap, "a", {"data": {"k": "2"}}, namespace=ns)
    lk.delete(ConfigMap, "a", namespace=ns)

    events: list[tuple[str, str, str]] = []
    for kind, obj in lk.watch(ConfigMap, namespace=ns, resource_version=rv, server_timeout=5):
        events.append((kind, obj.metadata.name, obj.metadata.resourceVersion))
        if len(events) == 3:
            break
    assert [(k, n) for k, n, _ in events] == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]
    revisions = [int(r) for _, _, r in events]
    assert revisions == sorted(revisions) and len(set(revisions)) == 3

    # a live watch in another thread, resumed from the last event's resourceVersion
    live: list[tuple[str, str]] = []
    ready = threading.Event()

    def follow() -> None:
        ready.set()
        for kind, obj in lk.watch(
            ConfigMap, namespace=ns, resource_version=events[-1][2], server_timeout=5
        ):
            live.append((kind, obj.metadata.name))
            if len(live) == 2:
                return

    watcher = threading.Thread(target=follow)
    watcher.start()
    ready.wait(5)
    lk.create(configmap("b"), namespace=ns)
    lk.patch(ConfigMap, "b", {"metadata": {"labels": {"x": "y"}}}, namespace=ns)
    watcher.join(10)
    assert live == [("ADDED", "b"), ("MODIFIED", "b")]

    # compaction: the old resourceVersion answers an ERROR event, raised as ApiError 410
    server.store.compact(server.store.revision)
    with pytest.raises(ApiError) as expired:
        next(iter(lk.watch(ConfigMap, namespace=ns, resource_version=rv, server_timeout=5)))
    assert expired.value.status.code == 410 and expired.value.status.reason == "Expired"
    assert expired.value.status.message.startswith("too old resource version: ")
    # on_error_retry restarts the watch without a resourceVersion after the 410: the
    # current objects come as ADDED
    from lightkube.types import on_error_retry

    restarted = lk.watch(
        ConfigMap, namespace=ns, resource_version=rv, server_timeout=5, on_error=on_error_retry
    )
    current = [(kind, obj.metadata.name) for kind, obj in itertools.islice(restarted, 2)]
    restarted.close()
    assert current == [("ADDED", "b"), ("ADDED", ROOT_CA)]


def test_errors_are_api_errors_with_the_status(lk: Client) -> None:
    ns = namespace(lk, "lk-errors")
    with pytest.raises(ApiError) as missing:
        lk.get(ConfigMap, "nope", namespace=ns)
    status = missing.value.status
    assert (status.code, status.reason, status.status) == (404, "NotFound", "Failure")
    assert status.message == 'configmaps "nope" not found' and status.details.name == "nope"
    assert str(missing.value) == 'configmaps "nope" not found'
    assert missing.value.response.status_code == 404

    lk.create(configmap("dup"), namespace=ns)
    with pytest.raises(ApiError) as exists:
        lk.create(configmap("dup"), namespace=ns)
    assert (exists.value.status.code, exists.value.status.reason) == (409, "AlreadyExists")

    with pytest.raises(ApiError) as invalid:
        lk.create(configmap("Bad_Name"), namespace=ns)
    status = invalid.value.status
    assert (status.code, status.reason, status.details.kind) == (422, "Invalid", "ConfigMap")
    assert [c.field for c in status.details.causes] == ["metadata.name"]

    # a 422 from a JSON patch whose test fails, with kube's message
    with pytest.raises(ApiError) as failed_test:
        lk.patch(
            ConfigMap,
            "dup",
            [{"op": "test", "path": "/data/k", "value": "other"}],
            namespace=ns,
            patch_type=PatchType.JSON,
        )
    assert (failed_test.value.status.code, failed_test.value.status.reason) == (422, "Invalid")


# -- generic resources for a CRD -----------------------------------------------------------


def test_generic_resources_for_a_crd(lk: Client, crd: str) -> None:
    ns = namespace(lk, "lk-generic")
    gr.load_in_cluster_generic_resources(lk)
    loaded = gr.get_generic_resource(f"{GROUP}/{VERSION}", "Database")
    assert loaded is not None and loaded._api_info.plural == PLURAL
    created = lk.create(
        loaded(
            metadata=ObjectMeta(name="orders", labels={"team": "a"}),
            spec={"engine": "postgres", "replicas": 3},
        ),
        namespace=ns,
    )
    assert created.spec == {"engine": "postgres", "replicas": 3, "storage": "1Gi"}
    assert created.metadata.generation == 1
    lk.create(database("users", team="b"), namespace=ns)
    assert lk.get(Database, "orders", namespace=ns).metadata.uid == created.metadata.uid
    assert [d.metadata.name for d in lk.list(Database, namespace=ns, labels={"team": "b"})] == [
        "users"
    ]
    assert [d.metadata.name for d in lk.list(Database, namespace=ns, chunk_size=1)] == [
        "orders",
        "users",
    ]

    merged = lk.patch(
        Database, "orders", {"spec": {"replicas": 2}}, namespace=ns, patch_type=PatchType.MERGE
    )
    assert merged.spec["replicas"] == 2 and merged.metadata.generation == 2
    json_patched = lk.patch(
        Database,
        "orders",
        [{"op": "add", "path": "/spec/version", "value": "16"}],
        namespace=ns,
        patch_type=PatchType.JSON,
    )
    assert json_patched.spec["version"] == "16"
    # lightkube's default patch type is strategic, which custom resources do not have
    with pytest.raises(ApiError) as strategic:
        lk.patch(Database, "orders", {"spec": {"replicas": 3}}, namespace=ns)
    assert strategic.value.status.code == 415
    assert strategic.value.status.reason == "UnsupportedMediaType"
    intent = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Database",
        "metadata": {"name": "orders"},
        "spec": {"engine": "postgres", "storage": "2Gi"},
    }
    # the create's manager owns the storage its decoding defaulted (kube's create handler
    # records managedFields on the decoded, defaulted object): another manager's apply of
    # another value conflicts, as on a cluster, until it forces
    with pytest.raises(ApiError) as conflict:
        lk.patch(
            Database,
            "orders",
            intent,
            namespace=ns,
            patch_type=PatchType.APPLY,
            field_manager="operator",
        )
    assert conflict.value.status.code == 409
    assert ".spec.storage" in str(conflict.value.status.message)
    applied = lk.patch(
        Database,
        "orders",
        intent,
        namespace=ns,
        patch_type=PatchType.APPLY,
        field_manager="operator",
        force=True,
    )
    assert applied.spec["storage"] == "2Gi"

    current = lk.get(Database, "orders", namespace=ns)
    current["spec"] = {"engine": "mysql", "replicas": 2}  # a Generic is a dict
    replaced = lk.replace(current)
    assert replaced.spec == {"engine": "mysql", "replicas": 2, "storage": "1Gi"}

    status = lk.patch(
        Database.Status,
        "orders",
        {"status": {"replicas": 2}, "spec": {"replicas": 7}},
        namespace=ns,
        patch_type=PatchType.MERGE,
    )
    assert status.status == {"replicas": 2} and status.spec["replicas"] == 2
    scale = lk.get(Database.Scale, "orders", namespace=ns)
    assert (scale.spec.replicas, scale.status.replicas) == (2, 2)
    scale.spec = ScaleSpec(replicas=3)
    assert lk.replace(scale).spec.replicas == 3
    with pytest.raises(ApiError) as cel:
        lk.patch(
            Database.Scale,
            "orders",
            {"spec": {"replicas": 5}},
            namespace=ns,
            patch_type=PatchType.MERGE,
        )
    assert cel.value.status.code == 422
    assert cel.value.status.details.causes[0].message.endswith("mysql supports at most 3 replicas")

    lk.delete(Database, "orders", namespace=ns)
    lk.deletecollection(Database, namespace=ns)
    assert list(lk.list(Database, namespace=ns)) == []


# -- AsyncClient ---------------------------------------------------------------------------


async def test_async_client_round_trip_and_wait(alk: AsyncClient, crd: str) -> None:
    await alk.create(Namespace(metadata=ObjectMeta(name="lk-async")))
    ns = "lk-async"
    await gr.async_load_in_cluster_generic_resources(alk)
    created = await alk.create(database("orders", 2, team="a"), namespace=ns)
    assert created.spec["storage"] == "1Gi"
    assert (await alk.get(Database, "orders", namespace=ns)).metadata.uid == created.metadata.uid
    names = [d.metadata.name async for d in alk.list(Database, namespace=ns, labels={"team": "a"})]
    assert names == ["orders"]

    # Client.wait returns once the condition the test sets in status is True
    async def set_ready() -> None:
        await asyncio.sleep(0.2)
        await alk.patch(
            Database.Status,
            "orders",
            {"status": {"conditions": [{"type": "Ready", "status": "False"}]}},
            namespace=ns,
            patch_type=PatchType.MERGE,
        )
        await asyncio.sleep(0.1)
        await alk.patch(
            Database.Status,
            "orders",
            {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
            namespace=ns,
            patch_type=PatchType.MERGE,
        )

    setter = asyncio.create_task(set_ready())
    ready = await asyncio.wait_for(
        alk.wait(Database, "orders", for_conditions=["Ready"], namespace=ns), 5
    )
    await setter
    assert ready.status["conditions"] == [{"type": "Ready", "status": "True"}]

    # watch from a resourceVersion
    rv = ready.metadata.resourceVersion
    await alk.patch(
        Database, "orders", {"spec": {"replicas": 3}}, namespace=ns, patch_type=PatchType.MERGE
    )
    await alk.delete(Database, "orders", namespace=ns)
    seen: list[tuple[str, str]] = []
    async for kind, obj in alk.watch(Database, namespace=ns, resource_version=rv, server_timeout=5):
        seen.append((kind, obj.metadata.name))
        if len(seen) == 2:
            break
    assert seen == [("MODIFIED", "orders"), ("DELETED", "orders")]

    cm = await alk.create(configmap("c"), namespace=ns)
    cm.data = {"k": "new"}
    assert (await alk.replace(cm)).data == {"k": "new"}
    await alk.deletecollection(ConfigMap, namespace=ns)
    with pytest.raises(ApiError) as gone:
        await alk.get(ConfigMap, "c", namespace=ns)
    assert gone.value.status.code == 404


def test_manifests_set_dry_run_and_wait_outcomes(
    lk: Client, crd: str, server: EmbeddedServer
) -> None:
    from lightkube import codecs
    from lightkube.core.exceptions import ConditionError, ObjectDeleted

    ns = namespace(lk, "lk-manifests")
    assert lk.get(Namespace, ns).status.phase == "Active"  # a cluster-scoped get
    assert {"default", ns} <= {n.metadata.name for n in lk.list(Namespace)}
    gr.load_in_cluster_generic_resources(lk)
    manifests = codecs.load_all_yaml((DEMO_DIR / "databases.yaml").read_text())
    assert {type(m).__name__ for m in manifests} == {"Database"}
    applied = [lk.apply(m, namespace=ns) for m in manifests]
    assert all(a.metadata.managedFields[0].manager == "lightkube" for a in applied)
    name = applied[0].metadata.name
    everywhere = lk.list(Database, namespace="*")
    assert {(d.metadata.namespace, d.metadata.name) for d in everywhere} >= {
        (ns, a.metadata.name) for a in applied
    }

    # set: labels through a merge patch; None removes one
    assert (
        lk.set(Database, name, namespace=ns, labels={"tier": "gold"}).metadata.labels["tier"]
        == "gold"
    )
    assert "tier" not in (
        lk.set(Database, name, namespace=ns, labels={"tier": None}).metadata.labels or {}
    )
    # dryRun=All: the answer has a uid, nothing is stored
    dry = lk.create(configmap("dry"), namespace=ns, dry_run=True)
    assert dry.metadata.uid
    with pytest.raises(ApiError):
        lk.get(ConfigMap, "dry", namespace=ns)

    # wait: a failure condition the test sets ends it with ConditionError, a delete with
    # ObjectDeleted (each set once the wait's watch is open on the server)
    failure = {"type": "Failed", "status": "True", "message": "disk full"}
    outcome = _waiting(
        server,
        lambda: lk.wait(
            Database, name, for_conditions=["Ready"], raise_for_conditions=["Failed"], namespace=ns
        ),
        lambda: lk.patch(
            Database.Status,
            name,
            {"status": {"conditions": [failure]}},
            namespace=ns,
            patch_type=PatchType.MERGE,
        ),
    )
    assert isinstance(outcome, ConditionError) and "disk full" in str(outcome)
    outcome = _waiting(
        server,
        lambda: lk.wait(Database, name, for_conditions=["Ready"], namespace=ns),
        lambda: lk.delete(Database, name, namespace=ns),
    )
    assert isinstance(outcome, ObjectDeleted)


def _open_watches(server: EmbeddedServer, resource: str) -> float:
    """The server's gauge of open watches on ``resource`` (apiserver_longrunning_requests)."""
    text = server.app.metrics.render().decode()
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("apiserver_longrunning_requests{")
        and f'resource="{resource}"' in line
        and 'verb="WATCH"' in line
    )


def _waiting(server: EmbeddedServer, wait: Any, action: Any) -> BaseException | None:
    """Run ``wait()`` on a thread, do ``action()`` once its watch is open on the server, and
    return what the wait raised (None when it returned)."""
    before = _open_watches(server, PLURAL)
    raised: list[BaseException | None] = []

    def run() -> None:
        try:
            wait()
            raised.append(None)
        except BaseException as exc:  # handed back to the test
            raised.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 5
    while _open_watches(server, PLURAL) <= before:
        assert time.monotonic() < deadline, "the wait never opened its watch"
        time.sleep(0.02)
    action()
    thread.join(5)
    assert not thread.is_alive(), "the wait did not end"
    return raised[0]
