"""Validation of the built-in kinds: a table of invalid objects (each a valid, defaulted
object with one mistake users make) and the exact field errors kube-apiserver reports
for it, in its order (``field.Error.Error()`` text; the 422 envelope is the REST layer's).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from kubewerk.apiserver import kindrules
from kubewerk.core.errors import aggregate_message

JSON = dict[str, Any]

DNS_LABEL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
PERCENT = (
    "a valid percent string must be a numeric string followed by an ending '%' "
    "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"
)
POD_UPDATE = (
    "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be "
    "set to 1 if it was previously negative)"
)
STS_UPDATE = (
    "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', "
    "'template', 'updateStrategy', 'revisionHistoryLimit', "
    "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"
)
MISMATCH = "`selector` does not match template `labels`"


def defaulted(obj: JSON) -> JSON:
    fn = kindrules.defaulter(obj["apiVersion"], obj["kind"])
    out = copy.deepcopy(obj)
    if fn is not None:
        fn(out)
    return out


def container() -> JSON:
    return {"name": "nginx", "image": "nginx:1.14.2", "ports": [{"containerPort": 80}]}


def pod() -> JSON:
    return defaulted(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {"containers": [container()]},
        }
    )


def workload(kind: str, api_version: str = "apps/v1", **spec: Any) -> JSON:
    template = {"metadata": {"labels": {"app": "nginx"}}, "spec": {"containers": [container()]}}
    body: JSON = {"selector": {"matchLabels": {"app": "nginx"}}, "template": template, **spec}
    return defaulted(
        {"apiVersion": api_version, "kind": kind, "metadata": {"name": "w"}, "spec": body}
    )


def job(**spec: Any) -> JSON:
    labels = {"batch.kubernetes.io/controller-uid": "u1"}
    body: JSON = {
        "selector": {"matchLabels": dict(labels)},
        "template": {
            "metadata": {"labels": dict(labels)},
            "spec": {"containers": [container()], "restartPolicy": "Never"},
        },
        **spec,
    }
    return defaulted(
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": body}
    )


def cron_job(**spec: Any) -> JSON:
    body: JSON = {
        "schedule": "*/5 * * * *",
        "jobTemplate": {
            "spec": {
                "template": {"spec": {"containers": [container()], "restartPolicy": "OnFailure"}}
            }
        },
        **spec,
    }
    return defaulted(
        {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "cj"}, "spec": body}
    )


def service(**spec: Any) -> JSON:
    body: JSON = {"selector": {"app": "nginx"}, "ports": [{"port": 80}], **spec}
    svc = defaulted(
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": body}
    )
    if svc["spec"].get("type") != "ExternalName" and "clusterIP" not in body:
        svc["spec"]["clusterIP"] = "10.96.0.10"
        svc["spec"]["clusterIPs"] = ["10.96.0.10"]
    return svc


def pvc(**spec: Any) -> JSON:
    body: JSON = {
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": "standard",
        "resources": {"requests": {"storage": "1Gi"}},
        **spec,
    }
    return defaulted(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "c"},
            "spec": body,
        }
    )


def simple(api_version: str, kind: str, **fields: Any) -> JSON:
    return defaulted({"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}, **fields})


def edit(obj: JSON, fn: Callable[[JSON], Any]) -> JSON:
    out = copy.deepcopy(obj)
    fn(out)
    return out


def ctr(obj: JSON, i: int = 0) -> JSON:
    spec = obj["spec"]
    pod_spec = spec["template"]["spec"] if "template" in spec else spec
    c: JSON = pod_spec["containers"][i]
    return c


@dataclass
class Case:
    id: str
    new: JSON
    errors: list[str]
    old: JSON | None = None
    status: bool = False


DEPLOY = workload("Deployment")
STS = workload("StatefulSet", serviceName="nginx")
SVC = service()
PVC = pvc()

CASES = [
    # -- Pod -------------------------------------------------------------------
    Case(
        "pod-no-containers",
        edit(pod(), lambda o: o["spec"].update(containers=[])),
        ["spec.containers: Required value"],
    ),
    Case(
        "pod-no-image",
        edit(pod(), lambda o: ctr(o).pop("image")),
        ["spec.containers[0].image: Required value"],
    ),
    Case(
        "pod-container-name-case",
        edit(pod(), lambda o: ctr(o).update(name="Nginx")),
        [f'spec.containers[0].name: Invalid value: "Nginx": {DNS_LABEL}'],
    ),
    Case(
        "pod-duplicate-container",
        edit(pod(), lambda o: o["spec"]["containers"].append({**ctr(o), "ports": []})),
        ['spec.containers[1].name: Duplicate value: "nginx"'],
    ),
    Case(
        "pod-port-range",
        edit(pod(), lambda o: ctr(o)["ports"][0].update(containerPort=70000)),
        [
            "spec.containers[0].ports[0].containerPort: Invalid value: 70000: "
            "must be between 1 and 65535, inclusive"
        ],
    ),
    Case(
        "pod-port-missing",
        edit(pod(), lambda o: ctr(o)["ports"][0].pop("containerPort")),
        ["spec.containers[0].ports[0].containerPort: Required value"],
    ),
    Case(
        "pod-protocol",
        edit(pod(), lambda o: ctr(o)["ports"][0].update(protocol="HTTP")),
        [
            'spec.containers[0].ports[0].protocol: Unsupported value: "HTTP": '
            'supported values: "SCTP", "TCP", "UDP"'
        ],
    ),
    Case(
        "pod-port-name-long",
        edit(pod(), lambda o: ctr(o)["ports"][0].update(name="a-very-long-port-name")),
        [
            'spec.containers[0].ports[0].name: Invalid value: "a-very-long-port-name": '
            "must be no more than 15 characters"
        ],
    ),
    Case(
        "pod-restart-policy",
        edit(pod(), lambda o: o["spec"].update(restartPolicy="Sometimes")),
        [
            'spec.restartPolicy: Unsupported value: "Sometimes": '
            'supported values: "Always", "OnFailure", "Never"'
        ],
    ),
    Case(
        "pod-dns-policy",
        edit(pod(), lambda o: o["spec"].update(dnsPolicy="Google")),
        [
            'spec.dnsPolicy: Unsupported value: "Google": supported values: '
            '"ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"'
        ],
    ),
    Case(
        "pod-pull-policy",
        edit(pod(), lambda o: ctr(o).update(imagePullPolicy="Sometimes")),
        [
            'spec.containers[0].imagePullPolicy: Unsupported value: "Sometimes": '
            'supported values: "Always", "IfNotPresent", "Never"'
        ],
    ),
    Case(
        "pod-mount-unknown-volume",
        edit(pod(), lambda o: ctr(o).update(volumeMounts=[{"name": "data", "mountPath": "/d"}])),
        ['spec.containers[0].volumeMounts[0].name: Not found: "data"'],
    ),
    Case(
        # the sources are taken in kube's order (validateVolumeSource), not the body's
        "pod-volume-with-three-sources",
        edit(
            pod(),
            lambda o: o["spec"].update(
                volumes=[
                    {
                        "name": "v",
                        "configMap": {"name": "c", "defaultMode": 420},
                        "emptyDir": None,
                        "secret": {"secretName": "s", "defaultMode": 420},
                        "hostPath": {"path": "/x", "type": ""},
                    }
                ]
            ),
        ),
        [
            "spec.volumes[0].secret: Forbidden: may not specify more than 1 volume type",
            "spec.volumes[0].configMap: Forbidden: may not specify more than 1 volume type",
        ],
    ),
    Case(
        "pod-requests-over-limits",
        edit(
            pod(),
            lambda o: ctr(o).update(resources={"limits": {"cpu": "1"}, "requests": {"cpu": "2"}}),
        ),
        [
            'spec.containers[0].resources.requests: Invalid value: "2": '
            "must be less than or equal to cpu limit of 1"
        ],
    ),
    Case(
        "pod-negative-quantities",
        edit(
            pod(),
            lambda o: ctr(o).update(
                resources={"limits": {"cpu": "-0.5"}, "requests": {"cpu": "-1", "memory": "1Mi"}}
            ),
        ),
        [
            'spec.containers[0].resources.limits[cpu]: Invalid value: "-500m": '
            "must be greater than or equal to 0",
            'spec.containers[0].resources.requests[cpu]: Invalid value: "-1": '
            "must be greater than or equal to 0",
        ],
    ),
    Case(
        "pod-update-command",
        edit(pod(), lambda o: ctr(o).update(command=["sh"])),
        [POD_UPDATE],
        old=pod(),
    ),
    # -- Deployment ------------------------------------------------------------
    Case(
        "deploy-selector-mismatch",
        edit(DEPLOY, lambda o: o["spec"]["template"]["metadata"].update(labels={"app": "web"})),
        [f'spec.template.metadata.labels: Invalid value: {{"app":"web"}}: {MISMATCH}'],
    ),
    Case(
        "deploy-no-selector",
        edit(DEPLOY, lambda o: o["spec"].pop("selector")),
        [
            "spec.selector: Required value",
            f'spec.template.metadata.labels: Invalid value: {{"app":"nginx"}}: {MISMATCH}',
        ],
    ),
    Case(
        "deploy-empty-selector",
        edit(DEPLOY, lambda o: o["spec"].update(selector={})),
        ["spec.selector: Invalid value: {}: empty selector is invalid for deployment"],
    ),
    Case(
        "deploy-bad-expression",
        edit(
            DEPLOY,
            lambda o: o["spec"]["selector"].update(
                matchExpressions=[{"key": "tier", "operator": "In"}]
            ),
        ),
        [
            "spec.selector.matchExpressions[0].values: Required value: "
            "must be specified when `operator` is 'In' or 'NotIn'",
            "spec.selector: Invalid value: "
            '{"matchLabels":{"app":"nginx"},"matchExpressions":[{"key":"tier","operator":"In"}]}: '
            "invalid label selector",
        ],
    ),
    Case(
        "deploy-negative-replicas",
        edit(DEPLOY, lambda o: o["spec"].update(replicas=-1)),
        ["spec.replicas: Invalid value: -1: must be greater than or equal to 0"],
    ),
    Case(
        "deploy-restart-never",
        edit(DEPLOY, lambda o: o["spec"]["template"]["spec"].update(restartPolicy="Never")),
        [
            'spec.template.spec.restartPolicy: Unsupported value: "Never": '
            'supported values: "Always"'
        ],
    ),
    Case(
        "deploy-active-deadline",
        edit(DEPLOY, lambda o: o["spec"]["template"]["spec"].update(activeDeadlineSeconds=5)),
        [
            "spec.template.spec.activeDeadlineSeconds: Forbidden: "
            "activeDeadlineSeconds in ReplicaSet is not Supported"
        ],
    ),
    Case(
        "deploy-surge-and-unavailable-zero",
        edit(
            DEPLOY,
            lambda o: o["spec"]["strategy"].update(
                rollingUpdate={"maxSurge": 0, "maxUnavailable": 0}
            ),
        ),
        [
            "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: "
            "may not be 0 when `maxSurge` is 0"
        ],
    ),
    Case(
        "deploy-percent-without-sign",
        edit(DEPLOY, lambda o: o["spec"]["strategy"]["rollingUpdate"].update(maxSurge="25")),
        [f'spec.strategy.rollingUpdate.maxSurge: Invalid value: "25": {PERCENT}'],
    ),
    Case(
        "deploy-unavailable-over-100",
        edit(
            DEPLOY, lambda o: o["spec"]["strategy"]["rollingUpdate"].update(maxUnavailable="120%")
        ),
        [
            'spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "120%": '
            "must not be greater than 100%"
        ],
    ),
    Case(
        "deploy-recreate-with-rolling",
        edit(DEPLOY, lambda o: o["spec"]["strategy"].update(type="Recreate")),
        [
            "spec.strategy.rollingUpdate: Forbidden: "
            "may not be specified when strategy `type` is 'Recreate'"
        ],
    ),
    Case(
        "deploy-strategy-type",
        edit(DEPLOY, lambda o: o["spec"].update(strategy={"type": "BlueGreen"})),
        [
            'spec.strategy.type: Unsupported value: "BlueGreen": '
            'supported values: "Recreate", "RollingUpdate"'
        ],
    ),
    Case(
        "deploy-deadline-under-min-ready",
        edit(DEPLOY, lambda o: o["spec"].update(minReadySeconds=600)),
        ["spec.progressDeadlineSeconds: Invalid value: 600: must be greater than minReadySeconds"],
    ),
    Case(
        "deploy-selector-immutable",
        edit(
            DEPLOY,
            lambda o: (
                o["spec"].update(selector={"matchLabels": {"app": "web"}}),
                o["spec"]["template"]["metadata"].update(labels={"app": "web"}),
            ),
        ),
        ['spec.selector: Invalid value: {"matchLabels":{"app":"web"}}: field is immutable'],
        old=DEPLOY,
    ),
    Case(
        "deploy-template-label-value",
        edit(DEPLOY, lambda o: o["spec"]["template"]["metadata"]["labels"].update(v="a b")),
        [
            'spec.template.labels: Invalid value: "a b": a valid label must be an empty string or '
            "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
            "alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
            "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        ],
    ),
    Case(
        "deploy-status-counts",
        edit(
            DEPLOY,
            lambda o: o.update(status={"replicas": 1, "readyReplicas": -1, "availableReplicas": 2}),
        ),
        [
            "status.readyReplicas: Invalid value: -1: must be greater than or equal to 0",
            "status.availableReplicas: Invalid value: 2: cannot be greater than status.replicas",
            "status.availableReplicas: Invalid value: 2: cannot be greater than readyReplicas",
        ],
        old=DEPLOY,
        status=True,
    ),
    # -- ReplicaSet, StatefulSet, DaemonSet, RC --------------------------------
    Case(
        "rs-selector-mismatch",
        edit(
            workload("ReplicaSet"),
            lambda o: o["spec"]["selector"].update(matchLabels={"tier": "frontend"}),
        ),
        [f'spec.template.metadata.labels: Invalid value: {{"app":"nginx"}}: {MISMATCH}'],
    ),
    Case(
        "rs-status-available-over-ready",
        edit(
            workload("ReplicaSet"),
            lambda o: o.update(status={"replicas": 3, "readyReplicas": 1, "availableReplicas": 2}),
        ),
        ["status.availableReplicas: Invalid value: 2: cannot be greater than readyReplicas"],
        old=workload("ReplicaSet"),
        status=True,
    ),
    Case(
        "sts-claim-templates-immutable",
        edit(
            STS,
            lambda o: o["spec"].update(
                volumeClaimTemplates=[
                    {"metadata": {"name": "www"}, "spec": {"accessModes": ["ReadWriteOnce"]}}
                ]
            ),
        ),
        [STS_UPDATE],
        old=STS,
    ),
    Case(
        "sts-pod-management-policy",
        edit(STS, lambda o: o["spec"].update(podManagementPolicy="Random")),
        [
            'spec.podManagementPolicy: Invalid value: "Random": '
            "must be 'OrderedReady' or 'Parallel'"
        ],
    ),
    Case(
        "ds-surge-and-unavailable",
        edit(
            workload("DaemonSet"),
            lambda o: o["spec"]["updateStrategy"]["rollingUpdate"].update(maxSurge=1),
        ),
        [
            "spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: 1: "
            "may not be set when maxUnavailable is non-zero"
        ],
    ),
    Case(
        "ds-restart-on-failure",
        edit(
            workload("DaemonSet"),
            lambda o: o["spec"]["template"]["spec"].update(restartPolicy="OnFailure"),
        ),
        [
            'spec.template.spec.restartPolicy: Unsupported value: "OnFailure": '
            'supported values: "Always"'
        ],
    ),
    Case(
        "rc-selector-mismatch",
        edit(workload("ReplicationController", "v1", selector={"app": "web"}), lambda o: None),
        [f'spec.template.metadata.labels: Invalid value: {{"app":"nginx"}}: {MISMATCH}'],
    ),
    # -- Job, CronJob ----------------------------------------------------------
    Case(
        "job-restart-always",
        edit(job(), lambda o: o["spec"]["template"]["spec"].update(restartPolicy="Always")),
        ['spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"'],
    ),
    Case(
        "job-negative-parallelism",
        edit(job(), lambda o: o["spec"].update(parallelism=-1)),
        ["spec.parallelism: Invalid value: -1: must be greater than or equal to 0"],
    ),
    Case(
        "job-indexed-without-completions",
        edit(
            job(),
            lambda o: (o["spec"].update(completionMode="Indexed"), o["spec"].pop("completions")),
        ),
        ["spec.completions: Required value: when completion mode is Indexed"],
    ),
    Case(
        "job-completions-immutable",
        edit(job(), lambda o: o["spec"].update(completions=3)),
        ["spec.completions: Invalid value: 3: field is immutable"],
        old=job(),
    ),
    Case(
        "job-no-selector",
        edit(job(), lambda o: o["spec"].pop("selector")),
        [
            "spec.selector: Required value",
            "spec.template.metadata.labels: Invalid value: "
            f'{{"batch.kubernetes.io/controller-uid":"u1"}}: {MISMATCH}',
        ],
    ),
    Case(
        "cronjob-schedule",
        cron_job(schedule="every minute"),
        [
            'spec.schedule: Invalid value: "every minute": '
            "expected exactly 5 fields, found 2: [every minute]"
        ],
    ),
    Case(
        "cronjob-schedule-range",
        cron_job(schedule="61 * * * *"),
        ['spec.schedule: Invalid value: "61 * * * *": end of range (61) above maximum (59): 61'],
    ),
    Case(
        "cronjob-concurrency",
        cron_job(concurrencyPolicy="Sometimes"),
        [
            'spec.concurrencyPolicy: Unsupported value: "Sometimes": '
            'supported values: "Allow", "Forbid", "Replace"'
        ],
    ),
    Case(
        "cronjob-time-zone",
        cron_job(timeZone="Mars/Olympus"),
        ['spec.timeZone: Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus'],
    ),
    # -- Service, Endpoints ----------------------------------------------------
    Case(
        "svc-no-ports", edit(SVC, lambda o: o["spec"].pop("ports")), ["spec.ports: Required value"]
    ),
    Case(
        "svc-port-zero",
        edit(SVC, lambda o: o["spec"]["ports"][0].update(port=0)),
        ["spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive"],
    ),
    Case(
        "svc-unnamed-ports",
        edit(
            SVC,
            lambda o: o["spec"]["ports"].append(
                {"port": 443, "protocol": "TCP", "targetPort": 443}
            ),
        ),
        ["spec.ports[0].name: Required value", "spec.ports[1].name: Required value"],
    ),
    Case(
        "svc-type",
        edit(SVC, lambda o: o["spec"].update(type="Internal")),
        [
            'spec.type: Unsupported value: "Internal": supported values: '
            '"ClusterIP", "ExternalName", "LoadBalancer", "NodePort"'
        ],
    ),
    Case(
        "svc-target-port-name",
        edit(SVC, lambda o: o["spec"]["ports"][0].update(targetPort="HTTP")),
        [
            'spec.ports[0].targetPort: Invalid value: "HTTP": '
            "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
            'spec.ports[0].targetPort: Invalid value: "HTTP": '
            "must contain at least one letter (a-z)",
        ],
    ),
    Case(
        "svc-node-port-on-cluster-ip",
        edit(SVC, lambda o: o["spec"]["ports"][0].update(nodePort=30080)),
        ["spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"],
    ),
    Case(
        "svc-external-traffic-policy",
        edit(SVC, lambda o: o["spec"].update(externalTrafficPolicy="Local")),
        [
            'spec.externalTrafficPolicy: Invalid value: "Local": '
            "may only be set for externally-accessible services"
        ],
    ),
    Case(
        "svc-cluster-ip-changed",
        edit(SVC, lambda o: o["spec"].update(clusterIP="10.96.0.99", clusterIPs=["10.96.0.99"])),
        ['spec.clusterIPs[0]: Invalid value: ["10.96.0.99"]: may not change once set'],
        old=SVC,
    ),
    Case(
        "svc-external-name-missing",
        service(type="ExternalName"),
        ["spec.externalName: Required value"],
    ),
    Case(
        "endpoints-no-addresses",
        simple("v1", "Endpoints", subsets=[{"ports": [{"port": 80}]}]),
        ["subsets[0]: Required value: must specify `addresses` or `notReadyAddresses`"],
    ),
    # -- storage ---------------------------------------------------------------
    Case(
        "pvc-no-access-modes",
        edit(PVC, lambda o: o["spec"].pop("accessModes")),
        ["spec.accessModes: Required value: at least 1 access mode is required"],
    ),
    Case(
        "pvc-no-storage",
        edit(PVC, lambda o: o["spec"]["resources"].update(requests={})),
        ["spec.resources[storage]: Required value"],
    ),
    Case(
        "pvc-access-mode",
        edit(PVC, lambda o: o["spec"].update(accessModes=["ReadWriteAll"])),
        [
            'spec.accessModes: Unsupported value: "ReadWriteAll": supported values: '
            '"ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"'
        ],
    ),
    Case(
        "pvc-class-immutable",
        edit(PVC, lambda o: o["spec"].update(storageClassName="fast")),
        [
            "spec: Forbidden: spec is immutable after creation except resources.requests and "
            "volumeAttributesClassName for bound claims"
        ],
        old=PVC,
    ),
    Case(
        "pv-reclaim-policy",
        simple(
            "v1",
            "PersistentVolume",
            spec={
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "hostPath": {"path": "/d"},
                "persistentVolumeReclaimPolicy": "Keep",
            },
        ),
        [
            'spec.persistentVolumeReclaimPolicy: Unsupported value: "Keep": '
            'supported values: "Delete", "Recycle", "Retain"'
        ],
    ),
    Case(
        "sc-no-provisioner",
        simple("storage.k8s.io/v1", "StorageClass"),
        ["provisioner: Required value"],
    ),
    Case(
        "sc-parameters-immutable",
        simple(
            "storage.k8s.io/v1",
            "StorageClass",
            provisioner="p.example.com",
            parameters={"type": "ssd"},
        ),
        ["parameters: Forbidden: updates to parameters are forbidden."],
        old=simple("storage.k8s.io/v1", "StorageClass", provisioner="p.example.com"),
    ),
    Case(
        "sc-binding-mode",
        simple(
            "storage.k8s.io/v1",
            "StorageClass",
            provisioner="p.example.com",
            volumeBindingMode="Later",
        ),
        [
            'volumeBindingMode: Unsupported value: "Later": '
            'supported values: "Immediate", "WaitForFirstConsumer"'
        ],
    ),
    # -- cluster ---------------------------------------------------------------
    Case(
        "priority-too-high",
        simple("scheduling.k8s.io/v1", "PriorityClass", value=2000000000),
        ["value: Forbidden: maximum allowed value of a user defined priority is 1000000000"],
    ),
    Case(
        "priority-value-immutable",
        simple("scheduling.k8s.io/v1", "PriorityClass", value=2),
        ["value: Forbidden: may not be changed in an update."],
        old=simple("scheduling.k8s.io/v1", "PriorityClass", value=1),
    ),
    Case(
        "node-taint-effect",
        simple("v1", "Node", spec={"taints": [{"key": "k", "effect": "NoRun"}]}),
        [
            'spec.taints[0].effect: Unsupported value: "NoRun": '
            'supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"'
        ],
    ),
    Case(
        "quota-negative",
        simple("v1", "ResourceQuota", spec={"hard": {"pods": "-1"}}),
        ['spec.hard[pods]: Invalid value: "-1": must be greater than or equal to 0'],
    ),
    # -- networking, policy, autoscaling ---------------------------------------
    Case(
        "ingress-path-type",
        simple(
            "networking.k8s.io/v1",
            "Ingress",
            spec={
                "rules": [
                    {
                        "http": {
                            "paths": [
                                {
                                    "path": "/",
                                    "backend": {"service": {"name": "web", "port": {"number": 80}}},
                                }
                            ]
                        }
                    }
                ]
            },
        ),
        ["spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified"],
    ),
    Case(
        "ingress-relative-path",
        simple(
            "networking.k8s.io/v1",
            "Ingress",
            spec={
                "rules": [
                    {
                        "http": {
                            "paths": [
                                {
                                    "path": "api",
                                    "pathType": "Prefix",
                                    "backend": {"service": {"name": "web", "port": {"number": 80}}},
                                }
                            ]
                        }
                    }
                ]
            },
        ),
        ['spec.rules[0].http.paths[0].path: Invalid value: "api": must be an absolute path'],
    ),
    Case(
        "ingress-port-missing",
        simple(
            "networking.k8s.io/v1",
            "Ingress",
            spec={"defaultBackend": {"service": {"name": "web", "port": {}}}},
        ),
        ["spec.defaultBackend: Required value: port name or number is required"],
    ),
    Case(
        "netpol-policy-type",
        simple(
            "networking.k8s.io/v1",
            "NetworkPolicy",
            spec={"podSelector": {}, "policyTypes": ["Both"]},
        ),
        ['spec.policyTypes[0]: Unsupported value: "Both": supported values: "Ingress", "Egress"'],
    ),
    Case(
        "pdb-both-set",
        simple(
            "policy/v1",
            "PodDisruptionBudget",
            spec={
                "minAvailable": 2,
                "maxUnavailable": 1,
                "selector": {"matchLabels": {"app": "zookeeper"}},
            },
        ),
        [
            'spec: Invalid value: {"minAvailable":2,"selector":{"matchLabels":{"app":"zookeeper"}},'
            '"maxUnavailable":1}: minAvailable and maxUnavailable cannot be both set'
        ],
    ),
    Case(
        "hpa-max-under-min",
        simple(
            "autoscaling/v2",
            "HorizontalPodAutoscaler",
            spec={
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 5,
                "maxReplicas": 2,
            },
        ),
        ["spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`"],
    ),
    Case(
        "endpointslice-address-type",
        simple("discovery.k8s.io/v1", "EndpointSlice", addressType="IPv5", endpoints=[]),
        ['addressType: Unsupported value: "IPv5": supported values: "FQDN", "IPv4", "IPv6"'],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_invalid_objects_get_kube_apiservers_errors(case: Case) -> None:
    lookup = kindrules.status_validator if case.status else kindrules.validator
    check = lookup(case.new["apiVersion"], case.new["kind"])
    assert check is not None
    assert [e.message() for e in check(case.new, case.old)] == case.errors


def test_the_table_is_large_enough_and_its_bases_are_valid() -> None:
    assert len(CASES) >= 40
    bases = [
        pod(),
        DEPLOY,
        STS,
        SVC,
        PVC,
        job(),
        cron_job(),
        workload("ReplicaSet"),
        workload("DaemonSet"),
        workload("ReplicationController", "v1", selector={"app": "nginx"}),
    ]
    for base in bases:
        check = kindrules.validator(base["apiVersion"], base["kind"])
        assert check is not None
        assert check(base, None) == [], base["kind"]
        assert check(base, copy.deepcopy(base)) == [], base["kind"]


def test_aggregate_message_of_several_errors() -> None:
    bad = edit(DEPLOY, lambda o: (o["spec"].pop("selector"), o["spec"].update(replicas=-1)))
    check = kindrules.validator("apps/v1", "Deployment")
    assert check is not None
    assert aggregate_message(check(bad, None)) == (
        "[spec.replicas: Invalid value: -1: must be greater than or equal to 0, "
        "spec.selector: Required value, "
        f'spec.template.metadata.labels: Invalid value: {{"app":"nginx"}}: {MISMATCH}]'
    )


def test_causes_carry_reason_field_and_body() -> None:
    check = kindrules.validator("v1", "Service")
    assert check is not None
    (err,) = check(edit(SVC, lambda o: o["spec"]["ports"][0].update(protocol="HTTP")), None)
    assert err.cause() == {
        "reason": "FieldValueNotSupported",
        "message": 'Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"',
        "field": "spec.ports[0].protocol",
    }
