"""The typed built-in kinds of kinds/catalog.py, over HTTP: every kind stored and served
(create, get, list, watch, update, delete), discovery and OpenAPI v3 from the vendored
definitions, generation and status rules, /scale, strategic merge and HPA conversion."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubewerk.apiserver.kinds import k8s_openapi
from kubewerk.apiserver.kinds.catalog import KindRow, rows
from kubewerk.apiserver.kinds.pods import pod_qos_class
from kubewerk.apiserver.server import EmbeddedServer
from tests.apiserver.helpers import Api

LABELS = {"app": "web"}
CONTAINER = {"name": "c", "image": "nginx:1.27"}
POD_SPEC = {"containers": [CONTAINER]}
TEMPLATE = {"metadata": {"labels": LABELS}, "spec": POD_SPEC}
SELECTOR = {"matchLabels": LABELS}

BODIES: dict[str, dict[str, Any]] = {
    "Pod": {"spec": POD_SPEC},
    "Service": {"spec": {"selector": LABELS, "ports": [{"port": 80}]}},
    "Endpoints": {"subsets": [{"addresses": [{"ip": "10.1.0.1"}], "ports": [{"port": 80}]}]},
    "PersistentVolumeClaim": {
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    },
    "PersistentVolume": {
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "hostPath": {"path": "/data/x"},
        }
    },
    "Node": {"spec": {}},
    "ReplicationController": {"spec": {"replicas": 1, "selector": LABELS, "template": TEMPLATE}},
    "LimitRange": {"spec": {"limits": [{"type": "Container", "default": {"cpu": "500m"}}]}},
    "ResourceQuota": {"spec": {"hard": {"pods": "10"}}},
    "PodTemplate": {"template": TEMPLATE},
    "Deployment": {"spec": {"replicas": 2, "selector": SELECTOR, "template": TEMPLATE}},
    "ReplicaSet": {"spec": {"replicas": 2, "selector": SELECTOR, "template": TEMPLATE}},
    "StatefulSet": {
        "spec": {"replicas": 1, "serviceName": "web", "selector": SELECTOR, "template": TEMPLATE}
    },
    "DaemonSet": {"spec": {"selector": SELECTOR, "template": TEMPLATE}},
    "ControllerRevision": {"revision": 1, "data": {"spec": {}}},
    "Job": {
        "spec": {
            "template": {
                "metadata": {"labels": {"job": "x"}},
                "spec": {**POD_SPEC, "restartPolicy": "Never"},
            }
        }
    },
    "CronJob": {
        "spec": {
            "schedule": "*/5 * * * *",
            "jobTemplate": {
                "spec": {"template": {"spec": {**POD_SPEC, "restartPolicy": "OnFailure"}}}
            },
        }
    },
    "Ingress": {"spec": {"defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}}},
    "IngressClass": {"spec": {"controller": "example.com/ingress"}},
    "NetworkPolicy": {"spec": {"podSelector": {}}},
    "EndpointSlice": {
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.1.0.1"]}],
        "ports": [{"port": 80}],
    },
    "PodDisruptionBudget": {"spec": {"minAvailable": 1, "selector": SELECTOR}},
    "HorizontalPodAutoscaler": {
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "maxReplicas": 3,
        }
    },
    "StorageClass": {"provisioner": "example.com/disk"},
    "PriorityClass": {"value": 1000},
    # admissionregistration.k8s.io/v1 (issue 14); a webhook nobody matches (a group no
    # kind has), so creating them changes no other write in the test
    "MutatingWebhookConfiguration": {"webhooks": []},
    "ValidatingWebhookConfiguration": {"webhooks": []},
    "ValidatingAdmissionPolicy": {
        "spec": {
            "matchConstraints": {
                "resourceRules": [
                    {
                        "operations": ["CREATE"],
                        "apiGroups": ["nothing.example.com"],
                        "apiVersions": ["v1"],
                        "resources": ["things"],
                    }
                ]
            },
            "validations": [{"expression": "true"}],
        }
    },
    "ValidatingAdmissionPolicyBinding": {
        "spec": {"policyName": "nothing", "validationActions": ["Deny"]}
    },
}


def collection(row: KindRow, version: str | None = None) -> str:
    version = version or row.versions[0]
    base = f"/apis/{row.group}/{version}" if row.group else f"/api/{version}"
    ns = "/namespaces/default" if row.namespaced else ""
    return f"{base}{ns}/{row.resource}"


def new_object(row: KindRow, name: str, version: str | None = None) -> dict[str, Any]:
    version = version or row.versions[0]
    return {
        "apiVersion": f"{row.group}/{version}" if row.group else version,
        "kind": row.kind,
        "metadata": {"name": name, "labels": {"team": "a"}},
        **copy.deepcopy(BODIES[row.kind]),
    }


ROWS = {row.kind: row for row in rows()}
KUBERNETES_SERVICE = ("Service", "Endpoints", "EndpointSlice")


@pytest.fixture
async def api(aserver: EmbeddedServer) -> AsyncIterator[Api]:
    client = Api(aserver.url)
    try:
        yield client
    finally:
        await client.close()


def test_every_row_has_a_sample_and_a_vendored_definition() -> None:
    assert set(BODIES) == set(ROWS)
    for row in rows():
        for version in row.versions:
            assert k8s_openapi.definition_name(row.group, version, row.kind), row.kind


async def test_every_kind_is_stored_and_served(api: Api) -> None:
    for row in rows():
        path = collection(row)
        status, created = await api.post(path, new_object(row, "one"))
        assert status == 201, (row.kind, created)
        assert created["kind"] == row.kind and created["metadata"]["uid"]
        assert ("generation" in created["metadata"]) == row.generation, row.kind
        if row.generation:
            assert created["metadata"]["generation"] == 1
        status, got = await api.get(f"{path}/one")
        assert status == 200 and got["metadata"]["uid"] == created["metadata"]["uid"]
        status, listed = await api.get(path)
        assert status == 200 and listed["kind"] == row.kind + "List", row.kind
        # default/kubernetes (Service, Endpoints, EndpointSlice) is there from the start
        names = [o["metadata"]["name"] for o in listed["items"]]
        assert names == (["kubernetes", "one"] if row.kind in KUBERNETES_SERVICE else ["one"])
        # a metadata-only update keeps the generation
        got["metadata"]["labels"]["team"] = "b"
        status, updated = await api.put(f"{path}/one", got)
        assert status == 200, (row.kind, updated)
        assert updated["metadata"]["labels"]["team"] == "b"
        assert updated["metadata"].get("generation") == created["metadata"].get("generation")
        rv = updated["metadata"]["resourceVersion"]
        events = await api.watch(f"{path}?watch=1&resourceVersion={rv}", 1, timeout=0.05)
        assert events == []
        status, _ = await api.delete(f"{path}/one")
        assert status == 200, row.kind
        status, gone = await api.get(f"{path}/one")
        assert status == 404 and gone["reason"] == "NotFound"


async def test_watch_sees_a_pod_created(api: Api) -> None:
    row = ROWS["Pod"]
    status, listed = await api.get(collection(row))
    rv = listed["metadata"]["resourceVersion"]
    status, _ = await api.post(collection(row), new_object(row, "w"))
    assert status == 201
    events = await api.watch(f"{collection(row)}?watch=1&resourceVersion={rv}", 1)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "w")]


async def test_discovery_lists_names_categories_and_subresources(api: Api) -> None:
    status, core = await api.get("/api/v1")
    assert status == 200
    by_name = {r["name"]: r for r in core["resources"]}
    assert by_name["pods"]["shortNames"] == ["po"]
    assert by_name["pods"]["categories"] == ["all"]
    assert "pods/status" in by_name and "pods/log" not in by_name
    assert by_name["nodes"]["namespaced"] is False
    assert by_name["replicationcontrollers/scale"]["kind"] == "Scale"
    status, apps = await api.get("/apis/apps/v1")
    names = {r["name"]: r for r in apps["resources"]}
    assert names["deployments"]["shortNames"] == ["deploy"]
    assert {"deployments/scale", "statefulsets/scale", "replicasets/scale"} <= set(names)
    assert "daemonsets/scale" not in names
    status, groups = await api.get("/apis")
    autoscaling = next(g for g in groups["groups"] if g["name"] == "autoscaling")
    assert [v["version"] for v in autoscaling["versions"]] == ["v2", "v1"]


async def test_openapi_v3_serves_the_vendored_definitions(api: Api) -> None:
    status, doc = await api.get("/openapi/v3/apis/apps/v1")
    assert status == 200
    schemas = doc["components"]["schemas"]
    deployment = schemas["io.k8s.api.apps.v1.Deployment"]
    assert deployment["x-kubernetes-group-version-kind"] == [
        {"group": "apps", "kind": "Deployment", "version": "v1"}
    ]
    containers = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["items"] == {"$ref": "#/components/schemas/io.k8s.api.core.v1.Container"}
    strategy = schemas["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["strategy"]
    assert strategy["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.api.apps.v1.DeploymentStrategy"}
    ]
    assert "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale" in doc["paths"]
    assert "io.k8s.api.autoscaling.v1.Scale" in schemas
    # every $ref resolves inside the document
    refs: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if isinstance(value.get("$ref"), str):
                refs.add(value["$ref"].rsplit("/", 1)[-1])
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(doc)
    assert refs <= set(schemas)
    # the older built-ins are served with their vendored definitions too
    status, core = await api.get("/openapi/v3/api/v1")
    config_map = core["components"]["schemas"]["io.k8s.api.core.v1.ConfigMap"]
    assert "immutable" in config_map["properties"]
    assert "io.k8s.api.core.v1.PodSpec" in core["components"]["schemas"]
    status, index = await api.get("/openapi/v3")
    assert "apis/autoscaling/v1" in index["paths"] and "apis/autoscaling/v2" in index["paths"]


async def test_generation_and_status_rules(api: Api) -> None:
    row = ROWS["Deployment"]
    path = collection(row)
    body = new_object(row, "web")
    body["status"] = {"replicas": 7}
    status, created = await api.post(path, body)
    assert status == 201 and created["status"] == {}
    created["spec"]["replicas"] = 3
    created["status"] = {"replicas": 9}
    status, updated = await api.put(f"{path}/web", created)
    assert status == 200, updated
    assert updated["metadata"]["generation"] == 2 and updated["status"] == {}
    updated["status"] = {"replicas": 3, "observedGeneration": 2}
    updated["spec"]["replicas"] = 10
    status, written = await api.put(f"{path}/web/status", updated)
    assert status == 200, written
    assert written["status"]["replicas"] == 3 and written["spec"]["replicas"] == 3
    assert written["metadata"]["generation"] == 2
    # a Node registers with its status; a Service starts with an empty load balancer
    node = new_object(ROWS["Node"], "n1")
    node["status"] = {"capacity": {"cpu": "4"}}
    status, created_node = await api.post(collection(ROWS["Node"]), node)
    assert status == 201 and created_node["status"]["capacity"] == {"cpu": "4"}
    status, svc = await api.post(collection(ROWS["Service"]), new_object(ROWS["Service"], "s"))
    assert status == 201 and svc["status"] == {"loadBalancer": {}}


async def test_pods_are_created_pending_with_their_qos_class(api: Api) -> None:
    row = ROWS["Pod"]
    body = new_object(row, "p")
    body["status"] = {"phase": "Running"}
    status, pod = await api.post(collection(row), body)
    assert status == 201 and pod["status"] == {"phase": "Pending", "qosClass": "BestEffort"}
    pod["spec"]["activeDeadlineSeconds"] = 30
    status, updated = await api.put(f"{collection(row)}/p", pod)
    assert status == 200 and updated["metadata"]["generation"] == 2


def test_qos_class() -> None:
    def pod(*resources: dict[str, Any]) -> dict[str, Any]:
        return {"spec": {"containers": [{"name": "c", "resources": r} for r in resources]}}

    assert pod_qos_class(pod({})) == "BestEffort"
    both = {"cpu": "500m", "memory": "1Gi"}
    assert pod_qos_class(pod({"limits": both})) == "Guaranteed"
    assert pod_qos_class(pod({"limits": both, "requests": {"cpu": "0.5"}})) == "Guaranteed"
    assert pod_qos_class(pod({"limits": both, "requests": {"cpu": "250m"}})) == "Burstable"
    assert pod_qos_class(pod({"requests": {"memory": "64Mi"}})) == "Burstable"
    assert pod_qos_class(pod({"limits": both}, {})) == "Burstable"


async def test_scale_subresource(api: Api) -> None:
    for kind in ("Deployment", "ReplicaSet", "StatefulSet", "ReplicationController"):
        row = ROWS[kind]
        path = collection(row)
        status, _ = await api.post(path, new_object(row, "s"))
        assert status == 201
        status, scale = await api.get(f"{path}/s/scale")
        assert status == 200, scale
        assert scale["apiVersion"] == "autoscaling/v1" and scale["kind"] == "Scale"
        assert scale["status"]["selector"] == "app=web"
        assert scale["spec"]["replicas"] == BODIES[kind]["spec"]["replicas"]
        scale["spec"]["replicas"] = 5
        status, scaled = await api.put(f"{path}/s/scale", scale)
        assert status == 200 and scaled["spec"]["replicas"] == 5
        status, obj = await api.get(f"{path}/s")
        assert obj["spec"]["replicas"] == 5 and obj["metadata"]["generation"] == 2
        status, _ = await api.patch(f"{path}/s/scale", {"spec": {"replicas": 1}})
        status, obj = await api.get(f"{path}/s")
        assert obj["spec"]["replicas"] == 1
    status, _ = await api.get(f"{collection(ROWS['DaemonSet'])}/s/scale")
    assert status == 404


async def test_strategic_merge_follows_the_vendored_patch_keys(api: Api) -> None:
    row = ROWS["Deployment"]
    path = collection(row)
    body = new_object(row, "web")
    body["spec"]["template"]["spec"]["containers"] = [
        {
            "name": "app",
            "image": "app:1",
            "ports": [{"containerPort": 80}],
            "env": [{"name": "A", "value": "1"}],
            "volumeMounts": [{"name": "v", "mountPath": "/data"}],
        }
    ]
    body["spec"]["template"]["spec"]["volumes"] = [
        {"name": "v", "emptyDir": {}},
        {"name": "w", "emptyDir": {}},
    ]
    status, _ = await api.post(path, body)
    assert status == 201
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": "app:2",
                            "env": [{"name": "B", "value": "2"}],
                            "volumeMounts": [{"name": "w", "mountPath": "/data"}],
                        },
                        {"name": "sidecar", "image": "proxy:1"},
                    ]
                }
            },
            "strategy": {"type": "Recreate", "rollingUpdate": None},
        }
    }
    status, patched = await api.patch(f"{path}/web", patch, kind="strategic")
    assert status == 200, patched
    containers = {c["name"]: c for c in patched["spec"]["template"]["spec"]["containers"]}
    assert set(containers) == {"app", "sidecar"}
    app = containers["app"]
    assert app["image"] == "app:2" and [p["containerPort"] for p in app["ports"]] == [80]
    assert {e["name"] for e in app["env"]} == {"A", "B"}
    assert [(m["name"], m["mountPath"]) for m in app["volumeMounts"]] == [("w", "/data")]
    assert patched["spec"]["strategy"] == {"type": "Recreate"}
    assert patched["metadata"]["generation"] == 2


async def test_a_job_gets_its_generated_selector(api: Api) -> None:
    row = ROWS["Job"]
    status, job = await api.post(collection(row), new_object(row, "j"))
    assert status == 201, job
    uid = job["metadata"]["uid"]
    assert job["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    labels = job["spec"]["template"]["metadata"]["labels"]
    assert labels["controller-uid"] == labels["batch.kubernetes.io/controller-uid"] == uid
    assert labels["job-name"] == labels["batch.kubernetes.io/job-name"] == "j"


async def test_hpa_is_served_as_v2_and_v1(api: Api) -> None:
    row = ROWS["HorizontalPodAutoscaler"]
    v1 = new_object(row, "h", "v1")
    v1["spec"]["targetCPUUtilizationPercentage"] = 60
    status, created = await api.post(collection(row, "v1"), v1)
    assert status == 201, created
    assert created["spec"]["targetCPUUtilizationPercentage"] == 60
    assert created["status"] == {"currentReplicas": 0, "desiredReplicas": 0}
    status, v2 = await api.get(f"{collection(row, 'v2')}/h")
    assert status == 200 and v2["apiVersion"] == "autoscaling/v2"
    assert v2["spec"]["metrics"] == [
        {
            "type": "Resource",
            "resource": {
                "name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 60},
            },
        }
    ]
    assert "annotations" not in v2["metadata"]
    memory = {
        "type": "Resource",
        "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1Gi"}},
    }
    v2["spec"]["metrics"].append(memory)
    status, _ = await api.put(f"{collection(row, 'v2')}/h", v2)
    assert status == 200
    status, as_v1 = await api.get(f"{collection(row, 'v1')}/h")
    assert as_v1["spec"]["targetCPUUtilizationPercentage"] == 60
    assert "autoscaling.alpha.kubernetes.io/metrics" in as_v1["metadata"]["annotations"]
    as_v1["spec"]["maxReplicas"] = 5
    status, _ = await api.put(f"{collection(row, 'v1')}/h", as_v1)
    assert status == 200
    status, back = await api.get(f"{collection(row, 'v2')}/h")
    assert back["spec"]["maxReplicas"] == 5 and back["spec"]["metrics"][1] == memory
    assert "annotations" not in back["metadata"]


async def test_tables_use_the_printers_or_age(api: Api) -> None:
    row = ROWS["Deployment"]
    await api.post(collection(row), new_object(row, "t"))
    status, table = await api.get(
        collection(row), headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
    )
    assert status == 200 and table["kind"] == "Table"
    names = [c["name"] for c in table["columnDefinitions"]]
    assert names[0] == "Name" and names[-1] != "Name" and "Age" in names
    assert table["rows"][0]["cells"][0] == "t"
    assert len(table["rows"][0]["cells"]) == len(names)
