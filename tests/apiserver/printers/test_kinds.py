"""Rows of the other built-in kinds as kube's printers compute them (the wide row the
API server sends), compared with what ``kubectl get -o wide`` prints for the object."""

from __future__ import annotations

from typing import Any

import pytest

from kubewerk.apiserver.printers import printer
from kubewerk.apiserver.printers.format import quantity_string
from kubewerk.apiserver.printers.registry import printers
from kubewerk.core.meta import parse_time

NOW = parse_time("2025-01-01T12:00:00Z") or 0.0
CREATED = "2025-01-01T11:00:00Z"  # Age 60m


def obj(api_version: str, kind: str, **body: Any) -> dict[str, Any]:
    meta = {"name": "x", "namespace": "d", "creationTimestamp": CREATED}
    meta.update(body.pop("metadata", {}))
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, **body}


def row(o: dict[str, Any]) -> list[Any]:
    p = printer(o["apiVersion"], o["kind"])
    assert p is not None, o["kind"]
    cells = p.cells_at(o, NOW)
    assert len(cells) == len(p.columns)
    return cells


def names(api_version: str, kind: str) -> list[tuple[str, int]]:
    p = printer(api_version, kind)
    assert p is not None
    return [(c.name, c.priority) for c in p.columns]


TEMPLATE = {
    "metadata": {"labels": {"app": "web"}},
    "spec": {
        "containers": [
            {"name": "web", "image": "nginx:1.27"},
            {"name": "log", "image": "busybox"},
        ]
    },
}


def test_every_kind_of_the_issue_has_a_printer() -> None:
    expected = {
        "v1/Pod", "v1/Service", "v1/Endpoints", "v1/PersistentVolumeClaim",
        "v1/PersistentVolume", "v1/Node", "v1/ReplicationController", "v1/LimitRange",
        "v1/ResourceQuota", "v1/PodTemplate", "apps/v1/Deployment", "apps/v1/ReplicaSet",
        "apps/v1/StatefulSet", "apps/v1/DaemonSet", "apps/v1/ControllerRevision",
        "batch/v1/Job", "batch/v1/CronJob", "networking.k8s.io/v1/Ingress",
        "networking.k8s.io/v1/IngressClass", "networking.k8s.io/v1/NetworkPolicy",
        "discovery.k8s.io/v1/EndpointSlice", "policy/v1/PodDisruptionBudget",
        "autoscaling/v2/HorizontalPodAutoscaler", "autoscaling/v1/HorizontalPodAutoscaler",
        "storage.k8s.io/v1/StorageClass", "scheduling.k8s.io/v1/PriorityClass",
        # issue 15: the RBAC kinds (tests/apiserver/auth/test_rbac_tables.py)
        "rbac.authorization.k8s.io/v1/Role", "rbac.authorization.k8s.io/v1/ClusterRole",
        "rbac.authorization.k8s.io/v1/RoleBinding",
        "rbac.authorization.k8s.io/v1/ClusterRoleBinding",
        # what a built-in kind's /scale prints (tests/e2e/test_kubectl_verbs.py)
        "autoscaling/v1/Scale",
    }  # fmt: skip
    assert set(printers()) == expected
    assert printer("v1", "ConfigMap") is None
    assert printer("apps/v1beta1", "Deployment") is None


def test_every_printer_survives_an_empty_object() -> None:
    for key, p in printers().items():
        cells = p.cells_at({"metadata": {}}, NOW)
        assert len(cells) == len(p.columns), key


def test_deployment_mid_rollout() -> None:
    d = obj(
        "apps/v1",
        "Deployment",
        spec={
            "replicas": 3,
            "selector": {
                "matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]}],
            },
            "template": TEMPLATE,
        },
        status={"replicas": 4, "updatedReplicas": 2, "readyReplicas": 3, "availableReplicas": 3},
    )
    assert names("apps/v1", "Deployment") == [
        ("Ready", 0), ("Up-to-date", 0), ("Available", 0), ("Age", 0),
        ("Containers", 1), ("Images", 1), ("Selector", 1),
    ]  # fmt: skip
    assert row(d) == ["3/3", 2, 3, "60m", "web,log", "nginx:1.27,busybox", "app=web,tier in (a,b)"]


def test_deployment_invalid_selector() -> None:
    d = obj(
        "apps/v1",
        "Deployment",
        spec={"selector": {"matchExpressions": [{"key": "k", "operator": "Bogus"}]}},
    )
    assert row(d)[0] == "0/1"
    assert row(d)[-1] == "<invalid>"


def test_replica_set_and_replication_controller() -> None:
    rs = obj(
        "apps/v1",
        "ReplicaSet",
        spec={"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": TEMPLATE},
        status={"replicas": 2, "readyReplicas": 1},
    )
    assert row(rs) == [2, 2, 1, "60m", "web,log", "nginx:1.27,busybox", "app=web"]
    rc = obj(
        "v1",
        "ReplicationController",
        spec={"replicas": 1, "selector": {"app": "web", "a": "b"}, "template": TEMPLATE},
        status={"replicas": 1},
    )
    assert row(rc) == [1, 1, 0, "60m", "web,log", "nginx:1.27,busybox", "a=b,app=web"]


def test_stateful_set_and_daemon_set() -> None:
    ss = obj(
        "apps/v1",
        "StatefulSet",
        spec={"replicas": 3, "template": TEMPLATE},
        status={"readyReplicas": 1},
    )
    assert row(ss) == ["1/3", "60m", "web,log", "nginx:1.27,busybox"]
    ds = obj(
        "apps/v1",
        "DaemonSet",
        spec={
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {
                "spec": {
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    "containers": [{"name": "agent", "image": "fluentd"}],
                }
            },
        },
        status={
            "desiredNumberScheduled": 3,
            "currentNumberScheduled": 3,
            "numberReady": 2,
            "updatedNumberScheduled": 3,
            "numberAvailable": 2,
        },
    )
    assert names("apps/v1", "DaemonSet")[:7] == [
        ("Desired", 0), ("Current", 0), ("Ready", 0), ("Up-to-date", 0),
        ("Available", 0), ("Node Selector", 0), ("Age", 0),
    ]  # fmt: skip
    assert row(ds) == [
        3,
        3,
        2,
        3,
        2,
        "kubernetes.io/os=linux",
        "60m",
        "agent",
        "fluentd",
        "app=agent",
    ]
    ds["spec"]["template"]["spec"].pop("nodeSelector")
    assert row(ds)[5] == "<none>"


def test_controller_revision() -> None:
    cr = obj(
        "apps/v1",
        "ControllerRevision",
        metadata={
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "1"},
                {
                    "apiVersion": "apps/v1",
                    "kind": "DaemonSet",
                    "name": "fluentd",
                    "uid": "2",
                    "controller": True,
                },
            ]
        },
        revision=4,
    )
    assert row(cr) == ["daemonset.apps/fluentd", 4, "60m"]
    bare = obj("apps/v1", "ControllerRevision", revision=1)
    assert row(bare)[0] == "<none>"


def test_completed_job() -> None:
    job = obj(
        "batch/v1",
        "Job",
        spec={"completions": 1, "parallelism": 1, "template": TEMPLATE,
              "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u"}}},
        status={
            "succeeded": 1,
            "startTime": "2025-01-01T11:00:05Z",
            "completionTime": "2025-01-01T11:00:47Z",
            "conditions": [
                {"type": "SuccessCriteriaMet", "status": "True"},
                {"type": "Complete", "status": "True"},
            ],
        },
    )  # fmt: skip
    assert names("batch/v1", "Job")[:4] == [
        ("Status", 0), ("Completions", 0), ("Duration", 0), ("Age", 0),
    ]  # fmt: skip
    assert row(job) == [
        "Complete", "1/1", "42s", "60m", "web,log", "nginx:1.27,busybox",
        "batch.kubernetes.io/controller-uid=u",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("spec", "status", "meta", "expected"),
    [
        ({"completions": 5}, {"succeeded": 2, "startTime": "2025-01-01T11:50:00Z"}, {},
         ["Running", "2/5", "10m"]),
        ({"parallelism": 3}, {"succeeded": 0}, {}, ["Running", "0/1 of 3", ""]),
        ({}, {}, {}, ["Running", "0/1", ""]),
        ({"completions": 1}, {"conditions": [{"type": "Failed", "status": "True"}]}, {},
         ["Failed", "0/1", ""]),
        ({"completions": 1}, {}, {"deletionTimestamp": CREATED}, ["Terminating", "0/1", ""]),
        ({"completions": 1}, {"conditions": [{"type": "Suspended", "status": "True"}]}, {},
         ["Suspended", "0/1", ""]),
        ({"completions": 1}, {"conditions": [{"type": "FailureTarget", "status": "True"}]}, {},
         ["FailureTarget", "0/1", ""]),
        ({"completions": 1}, {"conditions": [{"type": "Complete", "status": "False"}]}, {},
         ["Running", "0/1", ""]),
    ],
)  # fmt: skip
def test_job_status(
    spec: dict[str, Any], status: dict[str, Any], meta: dict[str, Any], expected: list[str]
) -> None:
    assert row(obj("batch/v1", "Job", metadata=meta, spec=spec, status=status))[:3] == expected


def test_cron_job() -> None:
    cj = obj(
        "batch/v1",
        "CronJob",
        spec={
            "schedule": "*/5 * * * *",
            "suspend": False,
            "jobTemplate": {"spec": {"template": TEMPLATE}},
        },
        status={"active": [{"name": "x-1"}], "lastScheduleTime": "2025-01-01T11:55:00Z"},
    )
    assert names("batch/v1", "CronJob")[:6] == [
        ("Schedule", 0), ("Timezone", 0), ("Suspend", 0), ("Active", 0),
        ("Last Schedule", 0), ("Age", 0),
    ]  # fmt: skip
    assert row(cj) == [
        "*/5 * * * *", "<none>", "False", 1, "5m", "60m", "web,log", "nginx:1.27,busybox",
        "<none>",
    ]  # fmt: skip
    cj["spec"]["timeZone"] = "Europe/Paris"
    del cj["spec"]["suspend"]
    del cj["status"]
    assert row(cj)[:5] == ["*/5 * * * *", "Europe/Paris", "<unset>", 0, "<none>"]


def test_services() -> None:
    def svc(spec: dict[str, Any], status: dict[str, Any] | None = None) -> list[Any]:
        return row(obj("v1", "Service", spec=spec, status=status or {}))

    assert svc(
        {
            "type": "ClusterIP",
            "clusterIP": "10.96.0.10",
            "clusterIPs": ["10.96.0.10"],
            "ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}],
            "selector": {"k8s-app": "kube-dns"},
        }
    ) == ["ClusterIP", "10.96.0.10", "<none>", "53/UDP,53/TCP", "60m", "k8s-app=kube-dns"]
    assert svc(
        {
            "type": "NodePort",
            "clusterIPs": ["10.96.3.4"],
            "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}],
        }
    )[:4] == ["NodePort", "10.96.3.4", "<none>", "80:30080/TCP"]
    lb = {
        "type": "LoadBalancer",
        "clusterIPs": ["10.96.1.1"],
        "ports": [{"port": 443, "nodePort": 31443, "protocol": "TCP"}],
    }
    assert svc(lb)[2] == "<pending>"
    ingress = {
        "loadBalancer": {
            "ingress": [
                {"ip": "203.0.113.9"},
                {"hostname": "lb.example.com"},
                {"ip": "198.51.100.200"},
            ]
        }
    }
    # the server prints wide: never cut to 16 characters
    assert svc(lb, ingress)[2] == "198.51.100.200,203.0.113.9,lb.example.com"
    assert svc({**lb, "externalIPs": ["192.0.2.1"]}, ingress)[2] == (
        "198.51.100.200,203.0.113.9,lb.example.com,192.0.2.1"
    )
    assert svc({"type": "ExternalName", "externalName": "db.example.com"})[:4] == [
        "ExternalName", "<none>", "db.example.com", "<none>",
    ]  # fmt: skip
    headless = svc({"type": "ClusterIP", "clusterIPs": ["None"], "externalIPs": ["1.2.3.4"]})
    assert headless[:3] == ["ClusterIP", "None", "1.2.3.4"]


def test_endpoints_and_endpoint_slices() -> None:
    ep = obj(
        "v1",
        "Endpoints",
        subsets=[
            {
                "addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}, {"ip": "fd00::3"}],
                "ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"}],
            }
        ],
    )
    assert row(ep) == ["10.0.0.1:80,10.0.0.2:80,[fd00::3]:80 + 3 more...", "60m"]
    headless = obj("v1", "Endpoints", subsets=[{"addresses": [{"ip": "10.0.0.9"}]}])
    assert row(headless) == ["10.0.0.9", "60m"]
    assert row(obj("v1", "Endpoints")) == ["<none>", "60m"]
    slice_ = obj(
        "discovery.k8s.io/v1",
        "EndpointSlice",
        addressType="IPv4",
        ports=[{"port": 80}, {"name": "metrics"}, {}, {"port": 9090}],
        endpoints=[{"addresses": ["10.0.0.1"]}, {"addresses": ["10.0.0.2", "10.0.0.3"]},
                   {"addresses": ["10.0.0.4"]}],
    )  # fmt: skip
    assert row(slice_) == [
        "IPv4", "80,metrics,* + 1 more...", "10.0.0.1,10.0.0.2,10.0.0.3 + 1 more...", "60m",
    ]  # fmt: skip
    empty = obj("discovery.k8s.io/v1", "EndpointSlice", addressType="IPv6")
    assert row(empty) == ["IPv6", "<unset>", "<unset>", "60m"]


def test_nodes() -> None:
    node = obj(
        "v1",
        "Node",
        metadata={
            "namespace": None,
            "labels": {
                "node-role.kubernetes.io/control-plane": "",
                "node-role.kubernetes.io/": "",
                "kubernetes.io/role": "infra",
            },
        },
        spec={"unschedulable": True},
        status={
            "conditions": [
                {"type": "MemoryPressure", "status": "False"},
                {"type": "Ready", "status": "True"},
            ],
            "addresses": [
                {"type": "Hostname", "address": "n1"},
                {"type": "InternalIP", "address": "172.18.0.2"},
            ],
            "nodeInfo": {"kubeletVersion": "v1.33.1", "osImage": "Debian GNU/Linux 12"},
        },
    )
    assert row(node) == [
        "Ready,SchedulingDisabled", "control-plane,infra", "60m", "v1.33.1", "172.18.0.2",
        "<none>", "Debian GNU/Linux 12", "<unknown>", "<unknown>",
    ]  # fmt: skip
    bare = obj("v1", "Node", status={"conditions": [{"type": "Ready", "status": "Unknown"}]})
    assert row(bare)[:2] == ["NotReady", "<none>"]
    assert row(obj("v1", "Node"))[0] == "Unknown"


def test_persistent_volumes_and_claims() -> None:
    pv = obj(
        "v1",
        "PersistentVolume",
        spec={
            "capacity": {"storage": "10Gi"},
            "accessModes": ["ReadWriteMany", "ReadWriteOnce", "ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain",
            "claimRef": {"namespace": "d", "name": "data"},
            "storageClassName": "standard",
            "volumeMode": "Filesystem",
        },
        status={"phase": "Bound"},
    )
    assert names("v1", "PersistentVolume")[-1] == ("VolumeMode", 1)
    assert row(pv) == [
        "10Gi", "RWO,RWX", "Retain", "Bound", "d/data", "standard", "<unset>", "", "60m",
        "Filesystem",
    ]  # fmt: skip
    pv["metadata"]["deletionTimestamp"] = CREATED
    pv["metadata"]["annotations"] = {"volume.beta.kubernetes.io/storage-class": "old"}
    assert row(pv)[3:6] == ["Terminating", "d/data", "old"]

    pvc = obj(
        "v1",
        "PersistentVolumeClaim",
        spec={
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1.5Gi"}},
            "storageClassName": "standard",
        },
        status={"phase": "Pending"},
    )
    assert row(pvc) == ["Pending", "", "", "", "standard", "<unset>", "60m", "<unset>"]
    pvc["spec"]["volumeName"] = "pv-1"
    pvc["spec"]["volumeMode"] = "Block"
    pvc["status"] = {
        "phase": "Bound",
        "capacity": {"storage": "1536Mi"},
        "accessModes": ["ReadWriteOncePod"],
    }
    assert row(pvc) == ["Bound", "pv-1", "1536Mi", "RWOP", "standard", "<unset>", "60m", "Block"]
    # the beta annotation wins over spec.storageClassName, even when empty
    pvc["metadata"]["annotations"] = {"volume.beta.kubernetes.io/storage-class": ""}
    assert row(pvc)[4] == ""


def test_limit_range_uses_the_default_table() -> None:
    lr = obj("v1", "LimitRange", spec={"limits": [{"type": "Container"}]})
    assert names("v1", "LimitRange") == [("Created At", 0)]
    assert row(lr) == [CREATED]


def test_resource_quota() -> None:
    rq = obj(
        "v1",
        "ResourceQuota",
        status={
            "hard": {
                "pods": "10",
                "requests.cpu": "2",
                "limits.memory": "4Gi",
                "limits.cpu": "4000m",
                "configmaps": "5",
            },
            "used": {"pods": "3", "requests.cpu": "500m", "limits.memory": "1073741824"},
        },
    )
    assert row(rq) == [
        "configmaps: 0/5, pods: 3/10, requests.cpu: 500m/2",
        "limits.cpu: 0/4, limits.memory: 1073741824/4Gi",
        "60m",
    ]


def test_pod_template() -> None:
    pt = obj("v1", "PodTemplate", template=TEMPLATE)
    assert names("v1", "PodTemplate") == [("Containers", 0), ("Images", 0), ("Pod Labels", 0)]
    assert row(pt) == ["web,log", "nginx:1.27,busybox", "app=web"]


def test_ingress_and_ingress_class() -> None:
    ing = obj(
        "networking.k8s.io/v1",
        "Ingress",
        spec={
            "ingressClassName": "nginx",
            "rules": [{"host": "a.example.com"}, {}, {"host": "b.example.com"},
                      {"host": "c.example.com"}, {"host": "d.example.com"}],
            "tls": [{"hosts": ["a.example.com"]}],
        },
        status={"loadBalancer": {"ingress": [{"ip": "192.0.2.10"}]}},
    )  # fmt: skip
    assert row(ing) == [
        "nginx", "a.example.com,b.example.com,c.example.com + 2 more...", "192.0.2.10",
        "80, 443", "60m",
    ]  # fmt: skip
    catch_all = obj("networking.k8s.io/v1", "Ingress", spec={"defaultBackend": {}})
    assert row(catch_all) == ["<none>", "*", "", "80", "60m"]
    ic = obj(
        "networking.k8s.io/v1",
        "IngressClass",
        spec={
            "controller": "k8s.io/ingress-nginx",
            "parameters": {"apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "p"},
        },
    )
    assert row(ic) == ["k8s.io/ingress-nginx", "IngressParameters.k8s.example.com/p", "60m"]
    ic["spec"]["parameters"] = {"kind": "ConfigMap", "name": "cfg"}
    assert row(ic)[1] == "ConfigMap/cfg"


def test_network_policy() -> None:
    np = obj(
        "networking.k8s.io/v1",
        "NetworkPolicy",
        spec={"podSelector": {"matchLabels": {"role": "db"}}},
    )
    assert row(np) == ["role=db", "60m"]
    everything = obj("networking.k8s.io/v1", "NetworkPolicy", spec={"podSelector": {}})
    assert row(everything) == ["<none>", "60m"]


def test_pod_disruption_budget() -> None:
    pdb = obj(
        "policy/v1",
        "PodDisruptionBudget",
        spec={"minAvailable": "50%"},
        status={"disruptionsAllowed": 1},
    )
    assert row(pdb) == ["50%", "N/A", 1, "60m"]
    pdb["spec"] = {"maxUnavailable": 1}
    assert row(pdb)[:2] == ["N/A", "1"]


def test_hpa_v2() -> None:
    hpa = obj(
        "autoscaling/v2",
        "HorizontalPodAutoscaler",
        spec={
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 2,
            "maxReplicas": 10,
            "metrics": [
                {"type": "Resource", "resource": {"name": "cpu", "target": {
                    "type": "Utilization", "averageUtilization": 50}}},
                {"type": "Resource", "resource": {"name": "memory", "target": {
                    "type": "AverageValue", "averageValue": "500Mi"}}},
                {"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {
                    "type": "AverageValue", "averageValue": "1k"}}},
            ],
        },
        status={
            "currentReplicas": 3,
            "currentMetrics": [
                {"type": "Resource", "resource": {"name": "cpu", "current": {
                    "averageUtilization": 23, "averageValue": "115m"}}},
            ],
        },
    )  # fmt: skip
    assert names("autoscaling/v2", "HorizontalPodAutoscaler") == [
        ("Reference", 0), ("Targets", 0), ("MinPods", 0), ("MaxPods", 0),
        ("Replicas", 0), ("Age", 0),
    ]  # fmt: skip
    assert row(hpa) == [
        "Deployment/web", "cpu: 23%/50%, memory: <unknown>/500Mi + 1 more...", "2", 10, 3,
        "60m",
    ]  # fmt: skip
    hpa["spec"]["metrics"] = [
        {"type": "External", "external": {"metric": {"name": "q"}, "target": {
            "type": "Value", "value": "100"}}},
        {"type": "Object", "object": {"metric": {"name": "hits"}, "target": {
            "type": "AverageValue", "averageValue": "2"}}},
    ]  # fmt: skip
    hpa["status"] = {"currentMetrics": []}
    del hpa["spec"]["minReplicas"]
    assert row(hpa)[1:3] == ["<unknown>/100, <unknown>/2 (avg)", "<unset>"]
    hpa["spec"]["metrics"] = []
    assert row(hpa)[1] == "<none>"


def test_hpa_v1_through_the_conversion() -> None:
    hpa = obj(
        "autoscaling/v1",
        "HorizontalPodAutoscaler",
        spec={
            "scaleTargetRef": {"kind": "Deployment", "name": "web"},
            "minReplicas": 1,
            "maxReplicas": 5,
            "targetCPUUtilizationPercentage": 60,
        },
        status={"currentReplicas": 1, "currentCPUUtilizationPercentage": 12},
    )
    assert row(hpa) == ["Deployment/web", "cpu: 12%/60%", "1", 5, 1, "60m"]
    del hpa["spec"]["targetCPUUtilizationPercentage"]
    del hpa["status"]["currentCPUUtilizationPercentage"]
    assert row(hpa)[1] == "cpu: <unknown>/80%"


def test_storage_class_and_its_name_cell() -> None:
    sc = obj(
        "storage.k8s.io/v1",
        "StorageClass",
        metadata={
            "name": "standard",
            "namespace": None,
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
        },
        provisioner="rancher.io/local-path",
        volumeBindingMode="WaitForFirstConsumer",
    )
    p = printer("storage.k8s.io/v1", "StorageClass")
    assert p is not None
    assert p.name(sc) == "standard (default)"
    assert row(sc) == ["rancher.io/local-path", "Delete", "WaitForFirstConsumer", False, "60m"]
    sc["metadata"]["annotations"] = {}
    sc["reclaimPolicy"] = "Retain"
    sc["allowVolumeExpansion"] = True
    assert p.name(sc) == "standard"
    assert row(sc)[:4] == ["rancher.io/local-path", "Retain", "WaitForFirstConsumer", True]
    pod_printer = printer("v1", "Pod")
    assert pod_printer is not None
    assert pod_printer.name(sc) == "standard"


def test_priority_class() -> None:
    pc = obj(
        "scheduling.k8s.io/v1",
        "PriorityClass",
        value=1000000000,
        globalDefault=False,
        preemptionPolicy="PreemptLowerPriority",
    )
    assert row(pc) == [1000000000, False, "60m", "PreemptLowerPriority"]


def test_cells_use_the_current_time() -> None:
    p = printer("apps/v1", "StatefulSet")
    assert p is not None
    fresh = obj("apps/v1", "StatefulSet")
    fresh["metadata"]["creationTimestamp"] = "2000-01-01T00:00:00Z"
    assert p.cells(fresh)[1].endswith("y")


@pytest.mark.parametrize(
    ("given", "canonical"),
    [
        ("1500m", "1500m"), ("1.5", "1500m"), ("1000", "1k"), ("2000m", "2"),
        ("100Mi", "100Mi"), ("1.5Gi", "1536Mi"), ("1024", "1024"), ("0.5Ki", "512"),
        ("1e3", "1e3"), ("12e6", "12e6"), ("0.1", "100m"), ("1G", "1G"), ("0", "0"),
        ("0.0000000001", "1n"), (5, "5"), (None, "0"),
    ],
)  # fmt: skip
def test_quantity_canonical_form(given: Any, canonical: str) -> None:
    assert quantity_string(given) == canonical
