"""Field selectors of the built-in workload kinds (issue 13): the labels each kind's
conversion accepts, its exact rejection message, and the field set objects are matched
on — Kubernetes' core/v1 and batch/v1 field label conversions and the registry
strategies' ``ToSelectableFields``."""

from __future__ import annotations

from typing import Any

import pytest

from kubewerk.core.selectors import (
    FieldLabelError,
    builtin_field_set,
    convert_builtin_field_label,
    parse_field_selector,
    supported_field_labels,
)


def matches(key: str, selector: str, obj: dict[str, Any]) -> bool:
    """The API server's filter: convert each label, then match the object's field set."""
    sel = parse_field_selector(selector)
    converted = sel.transform(lambda f, v: (convert_builtin_field_label(key, f), v))
    return converted.matches(builtin_field_set(key, obj))


POD = {
    "metadata": {"name": "web-0", "namespace": "shop"},
    "spec": {
        "nodeName": "node-a",
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
        "serviceAccountName": "web",
        "hostNetwork": True,
        "containers": [{"name": "c", "image": "nginx"}],
    },
    "status": {
        "phase": "Running",
        "podIP": "10.0.0.7",
        "podIPs": [{"ip": "10.0.0.7"}, {"ip": "fd00::7"}],
        "nominatedNodeName": "node-b",
    },
}


def test_pod_field_set() -> None:
    assert builtin_field_set("v1/Pod", POD) == {
        "metadata.name": "web-0",
        "metadata.namespace": "shop",
        "spec.nodeName": "node-a",
        "spec.restartPolicy": "Always",
        "spec.schedulerName": "default-scheduler",
        "spec.serviceAccountName": "web",
        "spec.hostNetwork": "true",
        "status.phase": "Running",
        "status.podIP": "10.0.0.7",
        "status.nominatedNodeName": "node-b",
    }


def test_pod_field_set_of_a_fresh_pod() -> None:
    fresh = {"metadata": {"name": "p", "namespace": "d"}, "spec": {}}
    fields = builtin_field_set("v1/Pod", fresh)
    assert fields["spec.hostNetwork"] == "false"
    assert fields["status.podIP"] == ""
    assert fields["spec.nodeName"] == ""


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("spec.nodeName=node-a", True),
        ("spec.nodeName=node-b", False),
        ("spec.host=node-a", True),  # the v1.0 alias of spec.nodeName
        ("spec.nodeName!=", True),
        ("status.phase=Running,spec.restartPolicy=Always", True),
        ("status.phase!=Running", False),
        ("spec.hostNetwork=true", True),
        ("spec.hostNetwork=false", False),
        ("status.podIP=10.0.0.7", True),
        ("status.nominatedNodeName=node-b", True),
        ("spec.schedulerName=default-scheduler,spec.serviceAccountName=web", True),
        ("metadata.namespace=shop,metadata.name=web-0", True),
        # accepted, but not in the field set: matches only the empty value
        ("status.podIPs=10.0.0.7", False),
        ("status.podIPs=", True),
    ],
)
def test_pod_selectors(selector: str, expected: bool) -> None:
    assert matches("v1/Pod", selector, POD) is expected


def test_unscheduled_pods_selector() -> None:
    """What kubelets and the scheduler ask for: pods with no node yet."""
    pending = {"metadata": {"name": "p", "namespace": "d"}, "spec": {}, "status": {}}
    assert matches("v1/Pod", "spec.nodeName=", pending)
    assert not matches("v1/Pod", "spec.nodeName=", POD)


@pytest.mark.parametrize(
    ("key", "label", "message"),
    [
        ("v1/Pod", "spec.containers", "field label not supported: spec.containers"),
        ("v1/Pod", "metadata.uid", "field label not supported: metadata.uid"),
        ("v1/Node", "metadata.namespace", "field label not supported: metadata.namespace"),
        ("v1/Node", "spec.podCIDR", "field label not supported: spec.podCIDR"),
        ("v1/ReplicationController", "spec.replicas", "field label not supported: spec.replicas"),
        ("v1/Service", "spec.ports", "field label not supported: spec.ports"),
        ("batch/v1/Job", "status.failed", 'field label "status.failed" not supported for Job'),
        (
            "apps/v1/ReplicaSet",
            "status.replicas",
            '"status.replicas" is not a known field selector: '
            'only "metadata.name", "metadata.namespace"',
        ),
        (
            "apps/v1/Deployment",
            "spec.replicas",
            '"spec.replicas" is not a known field selector: '
            'only "metadata.name", "metadata.namespace"',
        ),
        (
            "v1/PersistentVolumeClaim",
            "spec.volumeName",
            '"spec.volumeName" is not a known field selector: '
            'only "metadata.name", "metadata.namespace"',
        ),
        (
            "v1/PersistentVolume",
            "spec.claimRef.name",
            '"spec.claimRef.name" is not a known field selector: '
            'only "metadata.name", "metadata.namespace"',
        ),
    ],
)
def test_unsupported_labels(key: str, label: str, message: str) -> None:
    with pytest.raises(FieldLabelError) as err:
        convert_builtin_field_label(key, label)
    assert str(err.value) == message


def test_node() -> None:
    node = {"metadata": {"name": "node-a"}, "spec": {"unschedulable": True}}
    assert builtin_field_set("v1/Node", node) == {
        "metadata.name": "node-a",
        "spec.unschedulable": "true",
    }
    assert matches("v1/Node", "spec.unschedulable=true", node)
    schedulable = {"metadata": {"name": "node-b"}, "spec": {}}
    assert matches("v1/Node", "spec.unschedulable=false", schedulable)
    assert supported_field_labels("v1/Node") == {"metadata.name", "spec.unschedulable"}


def test_replication_controller() -> None:
    rc = {"metadata": {"name": "rc", "namespace": "d"}, "status": {"replicas": 3}}
    assert builtin_field_set("v1/ReplicationController", rc)["status.replicas"] == "3"
    assert matches("v1/ReplicationController", "status.replicas=3", rc)
    assert matches("v1/ReplicationController", "status.replicas!=0", rc)
    fresh = {"metadata": {"name": "rc", "namespace": "d"}}
    assert matches("v1/ReplicationController", "status.replicas=0", fresh)


def test_replica_set_field_set_holds_status_replicas() -> None:
    """apps/v1 registers no conversion (so the label is refused above), yet the
    strategy's field set has it — as in Kubernetes."""
    rs = {"metadata": {"name": "rs", "namespace": "d"}, "status": {"replicas": 2}}
    assert builtin_field_set("apps/v1/ReplicaSet", rs) == {
        "metadata.name": "rs",
        "metadata.namespace": "d",
        "status.replicas": "2",
    }
    assert convert_builtin_field_label("apps/v1/ReplicaSet", "metadata.name") == "metadata.name"


def test_job() -> None:
    job = {"metadata": {"name": "pi", "namespace": "d"}, "status": {"succeeded": 1}}
    assert builtin_field_set("batch/v1/Job", job)["status.successful"] == "1"
    assert matches("batch/v1/Job", "status.successful=1", job)
    running = {"metadata": {"name": "pi", "namespace": "d"}, "status": {}}
    assert matches("batch/v1/Job", "status.successful=0", running)


def test_service() -> None:
    svc = {
        "metadata": {"name": "web", "namespace": "d"},
        "spec": {"type": "ClusterIP", "clusterIP": "None"},
    }
    assert builtin_field_set("v1/Service", svc) == {
        "metadata.name": "web",
        "metadata.namespace": "d",
        "spec.clusterIP": "None",
        "spec.type": "ClusterIP",
    }
    # kube-proxy's question: every Service that is not headless
    assert not matches("v1/Service", "spec.clusterIP!=None", svc)
    assert matches("v1/Service", "spec.type=ClusterIP", svc)


@pytest.mark.parametrize(
    "key",
    [
        "apps/v1/Deployment",
        "apps/v1/StatefulSet",
        "apps/v1/DaemonSet",
        "batch/v1/CronJob",
        "v1/PersistentVolumeClaim",
        "v1/Endpoints",
        "networking.k8s.io/v1/Ingress",
    ],
)
def test_metadata_only_kinds(key: str) -> None:
    obj = {"metadata": {"name": "x", "namespace": "d"}, "spec": {"replicas": 1}}
    assert supported_field_labels(key) == {"metadata.name", "metadata.namespace"}
    assert builtin_field_set(key, obj) == {"metadata.name": "x", "metadata.namespace": "d"}
