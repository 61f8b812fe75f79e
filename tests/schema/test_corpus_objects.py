"""Hand-written valid and invalid objects for ten real CRDs, with the exact messages
a kube-apiserver answers (sibling properties are checked in Go map order upstream, so
errors are compared as sets of messages)."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import load_crd, messages

CASES = [
    (
        "cert-manager+cert-manager/cert-manager.io_certificates.yaml",
        "v1",
        {
            "spec": {
                "secretName": "tls",
                "issuerRef": {"name": "ca"},
                "dnsNames": ["a.example.com"],
                "privateKey": {"algorithm": "ECDSA", "size": 256},
            }
        },
        {
            "spec": {
                "issuerRef": {},
                "privateKey": {"algorithm": "DSA", "size": "big"},
                "renewBeforePercentage": "x",
                "dnsNames": "a.example.com",
            }
        },
    ),
    (
        "prometheus-operator+prometheus-operator/monitoring.coreos.com_prometheuses.yaml",
        "v1",
        {"spec": {"replicas": 2, "retention": "15d", "scrapeInterval": "30s", "logLevel": "info"}},
        {
            "spec": {
                "retention": "15 days",
                "logLevel": "verbose",
                "maximumStartupDurationSeconds": 30,
                "updateStrategy": {"type": "OnDelete", "rollingUpdate": {}},
            }
        },
    ),
    (
        "argoproj+argo-cd/argoproj.io_applications.yaml",
        "v1alpha1",
        {
            "spec": {
                "project": "default",
                "destination": {"server": "https://kubernetes.default.svc", "namespace": "app"},
                "source": {
                    "repoURL": "https://github.com/x/y",
                    "path": "k8s",
                    "targetRevision": "HEAD",
                },
            }
        },
        {"spec": {"destination": {"server": 5}, "source": {"path": "k8s"}}},
    ),
    (
        "kyverno+kyverno/kyverno.io_clusterpolicies.yaml",
        "v1",
        {
            "spec": {
                "validationFailureAction": "Enforce",
                "rules": [
                    {
                        "name": "require-labels",
                        "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                        "validate": {
                            "message": "label app is required",
                            "pattern": {"metadata": {"labels": {"app": "?*"}}},
                        },
                    }
                ],
            }
        },
        {
            "spec": {
                "validationFailureAction": "Block",
                "failurePolicy": "Maybe",
                "rules": [{"match": {}}],
            }
        },
    ),
    (
        "kubernetes-sigs+cluster-api/cluster.x-k8s.io_clusters.yaml",
        "v1beta2",
        {
            "spec": {
                "clusterNetwork": {
                    "apiServerPort": 6443,
                    "pods": {"cidrBlocks": ["192.168.0.0/16"]},
                },
                "controlPlaneRef": {
                    "apiGroup": "controlplane.cluster.x-k8s.io",
                    "kind": "KubeadmControlPlane",
                    "name": "cp",
                },
            }
        },
        {
            "spec": {
                "clusterNetwork": {"apiServerPort": 70000, "serviceDomain": ""},
                "controlPlaneRef": {"apiGroup": "Bad_Group", "kind": "9Kind", "name": "cp"},
                "availabilityGates": [{"conditionType": "A"}, {"conditionType": "A"}],
            }
        },
    ),
    (
        "fluxcd+kustomize-controller/kustomize.toolkit.fluxcd.io_kustomizations.yaml",
        "v1",
        {
            "spec": {
                "interval": "10m",
                "prune": True,
                "sourceRef": {"kind": "GitRepository", "name": "repo"},
                "path": "./deploy",
            }
        },
        {
            "spec": {
                "interval": "ten minutes",
                "sourceRef": {"kind": "GitRepository", "name": "repo"},
                "kubeConfig": {},
            }
        },
    ),
    (
        "strimzi+strimzi-kafka-operator/kafka.strimzi.io_kafkatopics.yaml",
        "v1",
        {"spec": {"partitions": 3, "replicas": 3, "config": {"retention.ms": 7200000}}},
        {"spec": {"partitions": 0, "replicas": 40000}},
    ),
    (
        "vmware-tanzu+velero/velero.io_backups.yaml",
        "v1",
        {"spec": {"includedNamespaces": ["*"], "ttl": "720h0m0s", "snapshotVolumes": True}},
        {
            "spec": {
                "includedNamespaces": "all",
                "resourcePolicy": {"kind": "ConfigMap"},
                "snapshotVolumes": "yes",
            }
        },
    ),
    (
        "kedacore+keda/keda.sh_scaledobjects.yaml",
        "v1alpha1",
        {
            "spec": {
                "scaleTargetRef": {"name": "web"},
                "minReplicaCount": 1,
                "maxReplicaCount": 10,
                "triggers": [
                    {"type": "cpu", "metadata": {"value": "60"}, "metricType": "Utilization"}
                ],
            }
        },
        {
            "spec": {
                "scaleTargetRef": {"name": "web"},
                "minReplicaCount": 5,
                "maxReplicaCount": 2,
                "triggers": [{"type": "cpu", "metadata": {"value": "60"}}],
            }
        },
    ),
    (
        "istio+istio/networking.istio.io_virtualservices.yaml",
        "v1",
        {
            "spec": {
                "hosts": ["reviews"],
                "http": [
                    {"route": [{"destination": {"host": "reviews", "subset": "v1"}, "weight": 100}]}
                ],
            }
        },
        {
            "spec": {
                "hosts": "reviews",
                "http": [{"route": [{"destination": {"host": "reviews"}, "weight": "all"}]}],
            }
        },
    ),
]

EXPECTED_BAD: dict[str, list[str]] = {
    "cert-manager.io_certificates.yaml": [
        'spec.dnsNames: Invalid value: "string": '
        'spec.dnsNames in body must be of type array: "string"',
        "spec.issuerRef.name: Required value",
        "spec.privateKey.algorithm: Unsupported value: "
        '"DSA": supported values: "RSA", "ECDSA", "Ed25519"',
        'spec.privateKey.size: Invalid value: "string": '
        'spec.privateKey.size in body must be of type integer: "string"',
        'spec.renewBeforePercentage: Invalid value: "string": '
        'spec.renewBeforePercentage in body must be of type integer: "string"',
        "spec.secretName: Required value",
    ],
    "monitoring.coreos.com_prometheuses.yaml": [
        'spec.logLevel: Unsupported value: "verbose": '
        'supported values: "", "debug", "info", "warn", "error"',
        "spec.maximumStartupDurationSeconds: Invalid value: 30: "
        "spec.maximumStartupDurationSeconds in body should be greater than or equal to 60",
        'spec.retention: Invalid value: "15 days": spec.retention in body should match '
        "'^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?"
        "(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$'",
        '<nil>: Invalid value: "null": some validation rules were not checked because '
        "the object was invalid; correct the existing errors to complete validation",
    ],
    "argoproj.io_applications.yaml": [
        'spec.destination.server: Invalid value: "integer": '
        'spec.destination.server in body must be of type string: "integer"',
        "spec.source.repoURL: Required value",
        "spec.project: Required value",
    ],
    "kyverno.io_clusterpolicies.yaml": [
        'spec.failurePolicy: Unsupported value: "Maybe": supported values: "Ignore", "Fail"',
        "spec.rules[0].name: Required value",
        'spec.validationFailureAction: Unsupported value: "Block": '
        'supported values: "audit", "enforce", "Audit", "Enforce"',
    ],
    "cluster.x-k8s.io_clusters.yaml": [
        "spec.clusterNetwork.apiServerPort: Invalid value: 70000: "
        "spec.clusterNetwork.apiServerPort in body should be less than or equal to 65535",
        'spec.clusterNetwork.serviceDomain: Invalid value: "": '
        "spec.clusterNetwork.serviceDomain in body should be at least 1 chars long",
        'spec.controlPlaneRef.apiGroup: Invalid value: "Bad_Group": '
        "spec.controlPlaneRef.apiGroup in body should match "
        "'^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'",
        'spec.controlPlaneRef.kind: Invalid value: "9Kind": spec.controlPlaneRef.kind '
        "in body should match '^[a-zA-Z]([-a-zA-Z0-9]*[a-zA-Z0-9])?$'",
        'spec.availabilityGates[1]: Duplicate value: {"conditionType":"A"}',
    ],
    "kustomize.toolkit.fluxcd.io_kustomizations.yaml": [
        'spec.interval: Invalid value: "ten minutes": spec.interval '
        "in body should match '^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$'",
        "spec.prune: Required value",
        '<nil>: Invalid value: "null": some validation rules were not checked because '
        "the object was invalid; correct the existing errors to complete validation",
    ],
    "kafka.strimzi.io_kafkatopics.yaml": [
        "spec.partitions: Invalid value: 0: spec.partitions "
        "in body should be greater than or equal to 1",
        "spec.replicas: Invalid value: 40000: spec.replicas "
        "in body should be less than or equal to 32767",
    ],
    "velero.io_backups.yaml": [
        'spec.includedNamespaces: Invalid value: "string": '
        'spec.includedNamespaces in body must be of type array: "string"',
        "spec.resourcePolicy.name: Required value",
        'spec.snapshotVolumes: Invalid value: "string": '
        'spec.snapshotVolumes in body must be of type boolean: "string"',
    ],
    "keda.sh_scaledobjects.yaml": [
        'spec: Invalid value: "object": minReplicaCount '
        "must be less than or equal to maxReplicaCount"
    ],
    "networking.istio.io_virtualservices.yaml": [
        'spec.hosts: Invalid value: "string": spec.hosts in body must be of type array: "string"',
        'spec.http[0].route[0].weight: Invalid value: "string": '
        'spec.http[0].route[0].weight in body must be of type integer: "string"',
        '<nil>: Invalid value: "null": some validation rules were not checked because '
        "the object was invalid; correct the existing errors to complete validation",
    ],
}


def _obj(corpus_dir: Any, rel: str, version: str, body: dict[str, Any]) -> dict[str, Any]:
    crd = load_crd(corpus_dir, rel)
    return {
        "apiVersion": f"{crd['spec']['group']}/{version}",
        "kind": crd["spec"]["names"]["kind"],
        "metadata": {"name": "x", "namespace": "default"},
        **body,
    }


@pytest.mark.parametrize(
    ("rel", "version", "good", "bad"), CASES, ids=[c[0].split("/")[1] for c in CASES]
)
def test_corpus_objects(
    corpus_dir: Any, crd_schema: Any, rel: str, version: str, good: Any, bad: Any
) -> None:
    cs = crd_schema(rel, version)
    ok = _obj(corpus_dir, rel, version, good)
    cs.apply_defaults(ok)
    assert cs.prune(ok) == []
    assert messages(cs.validate(ok)) == []
    wrong = _obj(corpus_dir, rel, version, bad)
    cs.apply_defaults(wrong)
    cs.prune(wrong)
    got = messages(cs.validate(wrong))
    assert sorted(got) == sorted(EXPECTED_BAD[rel.split("/")[1]])
