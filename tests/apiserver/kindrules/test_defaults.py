"""Defaults of the built-in kinds: objects from the Kubernetes documentation's examples,
defaulted, against the whole object a cluster returns for them (written out from the
documented defaults); every defaulter applied twice changes nothing more."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubewerk.apiserver import kindrules
from kubewerk.apiserver.kindrules.batch import generate_job_selector
from kubewerk.apiserver.kindrules.service import set_cluster_ips

JSON = dict[str, Any]

POD_SPEC_DEFAULTS: JSON = {
    "dnsPolicy": "ClusterFirst",
    "restartPolicy": "Always",
    "schedulerName": "default-scheduler",
    "securityContext": {},
    "terminationGracePeriodSeconds": 30,
}
CONTAINER_DEFAULTS: JSON = {
    "imagePullPolicy": "IfNotPresent",
    "resources": {},
    "terminationMessagePath": "/dev/termination-log",
    "terminationMessagePolicy": "File",
}


def defaulted(obj: JSON) -> JSON:
    out = copy.deepcopy(obj)
    fn = kindrules.defaulter(out["apiVersion"], out["kind"])
    assert fn is not None
    fn(out)
    return out


FRONTEND_IMAGE = "us-docker.pkg.dev/google-samples/containers/gke/gb-frontend:v5"


def nginx_container(**extra: Any) -> JSON:
    return {"name": "nginx", "image": "nginx:1.14.2", "ports": [{"containerPort": 80}], **extra}


def nginx_container_defaulted(**extra: Any) -> JSON:
    return {
        "name": "nginx",
        "image": "nginx:1.14.2",
        "ports": [{"containerPort": 80, "protocol": "TCP"}],
        **CONTAINER_DEFAULTS,
        **extra,
    }


def test_pod_from_the_pods_concept_page() -> None:
    # https://kubernetes.io/docs/concepts/workloads/pods/
    # (pods/simple-pod.yaml)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "nginx"},
        "spec": {"containers": [nginx_container()]},
    }
    assert defaulted(pod) == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "nginx"},
        "spec": {
            "containers": [nginx_container_defaulted()],
            "enableServiceLinks": True,
            **POD_SPEC_DEFAULTS,
        },
    }


def test_pod_with_probes_limits_volumes_and_env() -> None:
    # https://kubernetes.io/docs/tasks/configure-pod-container/configure-liveness-readiness-startup-probes/
    # https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "liveness-http"},
        "spec": {
            "hostNetwork": True,
            "containers": [
                {
                    "name": "liveness",
                    "image": "registry.k8s.io/e2e-test-images/agnhost",
                    "args": ["liveness"],
                    "ports": [{"containerPort": 8080, "name": "http"}],
                    "livenessProbe": {
                        "httpGet": {"port": 8080},
                        "initialDelaySeconds": 3,
                        "periodSeconds": 3,
                    },
                    "readinessProbe": {"grpc": {"port": 2379}},
                    "resources": {"limits": {"memory": "128Mi", "cpu": "0.5"}},
                    "env": [
                        {
                            "name": "MY_NODE",
                            "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}},
                        }
                    ],
                    "volumeMounts": [{"name": "cache", "mountPath": "/cache"}],
                }
            ],
            "volumes": [
                {"name": "cache"},
                {"name": "cfg", "configMap": {"name": "log-config"}},
                {"name": "sec", "secret": {"secretName": "s"}},
                {"name": "host", "hostPath": {"path": "/data"}},
                {
                    "name": "proj",
                    "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]},
                },
            ],
        },
    }
    out = defaulted(pod)
    ctr = out["spec"]["containers"][0]
    assert ctr["imagePullPolicy"] == "Always"  # no tag: latest
    assert ctr["ports"] == [
        {"containerPort": 8080, "name": "http", "protocol": "TCP", "hostPort": 8080}
    ]
    assert ctr["livenessProbe"] == {
        "httpGet": {"port": 8080, "path": "/", "scheme": "HTTP"},
        "initialDelaySeconds": 3,
        "periodSeconds": 3,
        "timeoutSeconds": 1,
        "successThreshold": 1,
        "failureThreshold": 3,
    }
    assert ctr["readinessProbe"] == {
        "grpc": {"port": 2379, "service": ""},
        "timeoutSeconds": 1,
        "periodSeconds": 10,
        "successThreshold": 1,
        "failureThreshold": 3,
    }
    # requests copied from limits (Pods only), quantities in canonical form
    assert ctr["resources"] == {
        "limits": {"memory": "128Mi", "cpu": "500m"},
        "requests": {"memory": "128Mi", "cpu": "500m"},
    }
    assert ctr["env"][0]["valueFrom"]["fieldRef"] == {
        "apiVersion": "v1",
        "fieldPath": "spec.nodeName",
    }
    assert out["spec"]["volumes"] == [
        {"name": "cache", "emptyDir": {}},
        {"name": "cfg", "configMap": {"name": "log-config", "defaultMode": 420}},
        {"name": "sec", "secret": {"secretName": "s", "defaultMode": 420}},
        {"name": "host", "hostPath": {"path": "/data", "type": ""}},
        {
            "name": "proj",
            "projected": {
                "defaultMode": 420,
                "sources": [{"serviceAccountToken": {"path": "token", "expirationSeconds": 3600}}],
            },
        },
    ]


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("nginx", "Always"),
        ("nginx:latest", "Always"),
        ("nginx:1.25", "IfNotPresent"),
        ("localhost:5000/nginx", "Always"),
        ("localhost:5000/nginx:1.2", "IfNotPresent"),
        ("nginx@sha256:" + "a" * 64, "IfNotPresent"),
    ],
)
def test_image_pull_policy_follows_the_tag(image: str, policy: str) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": image}]},
    }
    assert defaulted(pod)["spec"]["containers"][0]["imagePullPolicy"] == policy


def test_deployment_from_the_deployments_page() -> None:
    # https://kubernetes.io/docs/concepts/workloads/controllers/deployment/
    # (controllers/nginx-deployment.yaml)
    deploy = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "nginx-deployment", "labels": {"app": "nginx"}},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "nginx"}},
            "template": {
                "metadata": {"labels": {"app": "nginx"}},
                "spec": {"containers": [nginx_container()]},
            },
        },
    }
    assert defaulted(deploy) == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "nginx-deployment", "labels": {"app": "nginx"}},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "nginx"}},
            "template": {
                "metadata": {"labels": {"app": "nginx"}},
                "spec": {"containers": [nginx_container_defaulted()], **POD_SPEC_DEFAULTS},
            },
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
            },
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600,
        },
    }


def test_deployment_recreate_gets_no_rolling_update_and_replicas_one() -> None:
    deploy = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {"strategy": {"type": "Recreate"}},
    }
    spec = defaulted(deploy)["spec"]
    assert spec["strategy"] == {"type": "Recreate"}
    assert spec["replicas"] == 1


def test_replica_set_from_the_replicaset_page() -> None:
    # https://kubernetes.io/docs/concepts/workloads/controllers/replicaset/
    # (controllers/frontend.yaml)
    rs = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "frontend", "labels": {"app": "guestbook", "tier": "frontend"}},
        "spec": {
            "selector": {"matchLabels": {"tier": "frontend"}},
            "template": {
                "metadata": {"labels": {"tier": "frontend"}},
                "spec": {
                    "containers": [
                        {
                            "name": "php-redis",
                            "image": FRONTEND_IMAGE,
                        }
                    ]
                },
            },
        },
    }
    out = defaulted(rs)
    assert out["spec"]["replicas"] == 1
    assert out["spec"]["template"]["spec"] == {
        "containers": [
            {
                "name": "php-redis",
                "image": FRONTEND_IMAGE,
                **CONTAINER_DEFAULTS,
            }
        ],
        **POD_SPEC_DEFAULTS,
    }
    assert set(out["spec"]) == {"replicas", "selector", "template"}


def test_stateful_set_from_the_statefulset_page() -> None:
    # https://kubernetes.io/docs/concepts/workloads/controllers/statefulset/
    # (the "web" example)
    sts = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": {"app": "nginx"}},
            "serviceName": "nginx",
            "replicas": 3,
            "minReadySeconds": 10,
            "template": {
                "metadata": {"labels": {"app": "nginx"}},
                "spec": {
                    "terminationGracePeriodSeconds": 10,
                    "containers": [
                        {
                            "name": "nginx",
                            "image": "registry.k8s.io/nginx-slim:0.24",
                            "ports": [{"containerPort": 80, "name": "web"}],
                            "volumeMounts": [{"name": "www", "mountPath": "/usr/share/nginx/html"}],
                        }
                    ],
                },
            },
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "www"},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "storageClassName": "my-storage-class",
                        "resources": {"requests": {"storage": "1Gi"}},
                    },
                }
            ],
        },
    }
    assert defaulted(sts)["spec"] == {
        "selector": {"matchLabels": {"app": "nginx"}},
        "serviceName": "nginx",
        "replicas": 3,
        "minReadySeconds": 10,
        "podManagementPolicy": "OrderedReady",
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
        "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
        "revisionHistoryLimit": 10,
        "template": {
            "metadata": {"labels": {"app": "nginx"}},
            "spec": {
                **POD_SPEC_DEFAULTS,
                "terminationGracePeriodSeconds": 10,
                "containers": [
                    {
                        "name": "nginx",
                        "image": "registry.k8s.io/nginx-slim:0.24",
                        "ports": [{"containerPort": 80, "name": "web", "protocol": "TCP"}],
                        "volumeMounts": [{"name": "www", "mountPath": "/usr/share/nginx/html"}],
                        **CONTAINER_DEFAULTS,
                    }
                ],
            },
        },
        "volumeClaimTemplates": [
            {
                "metadata": {"name": "www"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": "my-storage-class",
                    "resources": {"requests": {"storage": "1Gi"}},
                    "volumeMode": "Filesystem",
                },
                "status": {"phase": "Pending"},
            }
        ],
    }


def test_daemon_set_from_the_daemonset_page() -> None:
    # https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/
    # (controllers/daemonset.yaml)
    ds = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "fluentd-elasticsearch", "namespace": "kube-system"},
        "spec": {
            "selector": {"matchLabels": {"name": "fluentd-elasticsearch"}},
            "template": {
                "metadata": {"labels": {"name": "fluentd-elasticsearch"}},
                "spec": {
                    "tolerations": [
                        {
                            "key": "node-role.kubernetes.io/control-plane",
                            "operator": "Exists",
                            "effect": "NoSchedule",
                        }
                    ],
                    "containers": [
                        {
                            "name": "fluentd-elasticsearch",
                            "image": "quay.io/fluentd_elasticsearch/fluentd:v5.0.1",
                            "resources": {
                                "limits": {"memory": "200Mi"},
                                "requests": {"cpu": "100m", "memory": "200Mi"},
                            },
                            "volumeMounts": [{"name": "varlog", "mountPath": "/var/log"}],
                        }
                    ],
                    "terminationGracePeriodSeconds": 30,
                    "volumes": [{"name": "varlog", "hostPath": {"path": "/var/log"}}],
                },
            },
        },
    }
    spec = defaulted(ds)["spec"]
    assert spec["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0},
    }
    assert spec["revisionHistoryLimit"] == 10
    pod = spec["template"]["spec"]
    assert pod["volumes"] == [{"name": "varlog", "hostPath": {"path": "/var/log", "type": ""}}]
    # a template's containers do not get requests from limits (SetDefaults_Pod only)
    assert pod["containers"][0]["resources"] == {
        "limits": {"memory": "200Mi"},
        "requests": {"cpu": "100m", "memory": "200Mi"},
    }
    assert "enableServiceLinks" not in pod


def test_job_from_the_jobs_page_and_its_generated_selector() -> None:
    # https://kubernetes.io/docs/concepts/workloads/controllers/job/
    # (controllers/job.yaml)
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "pi", "uid": "7f3b"},
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "pi",
                            "image": "perl:5.34.0",
                            "command": ["perl", "-Mbignum=bpi", "-wle", "print bpi(2000)"],
                        }
                    ],
                    "restartPolicy": "Never",
                }
            },
            "backoffLimit": 4,
        },
    }
    out = defaulted(job)
    generate_job_selector(out)
    labels = {
        "batch.kubernetes.io/controller-uid": "7f3b",
        "batch.kubernetes.io/job-name": "pi",
        "controller-uid": "7f3b",
        "job-name": "pi",
    }
    assert out == {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "pi", "uid": "7f3b", "labels": labels},
        "spec": {
            "backoffLimit": 4,
            "completions": 1,
            "parallelism": 1,
            "completionMode": "NonIndexed",
            "suspend": False,
            "podReplacementPolicy": "TerminatingOrFailed",
            "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "7f3b"}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    **POD_SPEC_DEFAULTS,
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "pi",
                            "image": "perl:5.34.0",
                            "command": ["perl", "-Mbignum=bpi", "-wle", "print bpi(2000)"],
                            **CONTAINER_DEFAULTS,
                        }
                    ],
                },
            },
        },
    }
    assert kindrules.validator("batch/v1", "Job")(out, None) == []  # type: ignore[misc]


def test_job_parallelism_backoff_per_index_and_failure_policy() -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j"},
        "spec": {
            "completions": 5,
            "completionMode": "Indexed",
            "backoffLimitPerIndex": 1,
            "podFailurePolicy": {
                "rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]
            },
            "template": {"spec": {}},
        },
    }
    spec = defaulted(job)["spec"]
    assert (spec["completions"], spec["parallelism"], spec["backoffLimit"]) == (5, 1, 2147483647)
    assert spec["podReplacementPolicy"] == "Failed"
    assert spec["podFailurePolicy"]["rules"][0]["onPodConditions"] == [
        {"type": "DisruptionTarget", "status": "True"}
    ]


def test_cron_job_from_the_cronjob_page() -> None:
    # https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/
    # (application/job/cronjob.yaml)
    cj = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "hello"},
        "spec": {
            "schedule": "* * * * *",
            "jobTemplate": {
                "spec": {
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "hello",
                                    "image": "busybox:1.28",
                                    "imagePullPolicy": "IfNotPresent",
                                    "command": [
                                        "/bin/sh",
                                        "-c",
                                        "date; echo Hello from the Kubernetes cluster",
                                    ],
                                }
                            ],
                            "restartPolicy": "OnFailure",
                        }
                    }
                }
            },
        },
    }
    out = defaulted(cj)
    spec = out["spec"]
    assert {k: v for k, v in spec.items() if k != "jobTemplate"} == {
        "schedule": "* * * * *",
        "concurrencyPolicy": "Allow",
        "suspend": False,
        "successfulJobsHistoryLimit": 3,
        "failedJobsHistoryLimit": 1,
    }
    # the job template's own spec is not defaulted (no completions, backoffLimit...)
    assert set(spec["jobTemplate"]["spec"]) == {"template"}
    assert spec["jobTemplate"]["spec"]["template"]["spec"]["dnsPolicy"] == "ClusterFirst"
    assert kindrules.validator("batch/v1", "CronJob")(out, None) == []  # type: ignore[misc]


def test_service_from_the_service_page_and_its_addresses() -> None:
    # https://kubernetes.io/docs/concepts/services-networking/service/
    # (my-service)
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "my-service"},
        "spec": {
            "selector": {"app.kubernetes.io/name": "MyApp"},
            "ports": [{"protocol": "TCP", "port": 80, "targetPort": 9376}],
        },
    }
    out = defaulted(svc)
    set_cluster_ips(out, "10.96.0.17")
    assert out == {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "my-service"},
        "spec": {
            "selector": {"app.kubernetes.io/name": "MyApp"},
            "ports": [{"protocol": "TCP", "port": 80, "targetPort": 9376}],
            "type": "ClusterIP",
            "sessionAffinity": "None",
            "internalTrafficPolicy": "Cluster",
            "clusterIP": "10.96.0.17",
            "clusterIPs": ["10.96.0.17"],
            "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack",
        },
    }


def test_service_node_port_load_balancer_headless_and_client_ip() -> None:
    # https://kubernetes.io/docs/concepts/services-networking/service/#type-nodeport
    node_port = defaulted(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "np"},
            "spec": {"type": "NodePort", "ports": [{"port": 80, "name": "http"}]},
        }
    )
    assert node_port["spec"]["ports"] == [
        {"port": 80, "name": "http", "protocol": "TCP", "targetPort": 80}
    ]
    assert node_port["spec"]["externalTrafficPolicy"] == "Cluster"
    assert "allocateLoadBalancerNodePorts" not in node_port["spec"]
    lb = defaulted(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "lb"},
            "spec": {"type": "LoadBalancer", "ports": [{"port": 443, "targetPort": "https"}]},
            "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.127"}]}},
        }
    )
    assert lb["spec"]["allocateLoadBalancerNodePorts"] is True
    assert lb["spec"]["ports"][0]["targetPort"] == "https"
    assert lb["status"]["loadBalancer"]["ingress"] == [{"ip": "192.0.2.127", "ipMode": "VIP"}]
    affinity = defaulted(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "a"},
            "spec": {"sessionAffinity": "ClientIP", "ports": [{"port": 80}]},
        }
    )
    assert affinity["spec"]["sessionAffinityConfig"] == {"clientIP": {"timeoutSeconds": 10800}}
    headless = defaulted(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "h"},
            "spec": {"clusterIP": "None", "ports": [{"port": 80}]},
        }
    )
    set_cluster_ips(headless, None)
    assert headless["spec"]["clusterIPs"] == ["None"]
    assert headless["spec"]["ipFamilyPolicy"] == "RequireDualStack"
    external = defaulted(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "e"},
            "spec": {"type": "ExternalName", "externalName": "my.database.example.com"},
        }
    )
    set_cluster_ips(external, None)
    assert external["spec"] == {
        "type": "ExternalName",
        "externalName": "my.database.example.com",
        "sessionAffinity": "None",
    }


def test_persistent_volume_and_claim_from_the_storage_task() -> None:
    # https://kubernetes.io/docs/tasks/configure-pod-container/configure-persistent-volume-storage/
    pv = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": "task-pv-volume", "labels": {"type": "local"}},
        "spec": {
            "storageClassName": "manual",
            "capacity": {"storage": "10Gi"},
            "accessModes": ["ReadWriteOnce"],
            "hostPath": {"path": "/mnt/data"},
        },
    }
    assert defaulted(pv) == {
        **pv,
        "spec": {
            **pv["spec"],
            "hostPath": {"path": "/mnt/data", "type": ""},
            "persistentVolumeReclaimPolicy": "Retain",
            "volumeMode": "Filesystem",
        },
        "status": {"phase": "Pending"},
    }
    pvc = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "task-pv-claim"},
        "spec": {
            "storageClassName": "manual",
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "3Gi"}},
        },
    }
    assert defaulted(pvc) == {
        **pvc,
        "spec": {**pvc["spec"], "volumeMode": "Filesystem"},
        "status": {"phase": "Pending"},
    }


def test_storage_class_and_priority_class() -> None:
    # https://kubernetes.io/docs/concepts/storage/storage-classes/
    sc = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": "low-latency"},
        "provisioner": "csi-driver.example-vendor.example",
        "allowVolumeExpansion": True,
        "mountOptions": ["discard"],
        "parameters": {"guaranteedReadWriteLatency": "true"},
    }
    assert defaulted(sc) == {**sc, "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"}
    # https://kubernetes.io/docs/concepts/scheduling-eviction/pod-priority-preemption/
    pc = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "high-priority"},
        "value": 1000000,
        "globalDefault": False,
        "description": "This priority class should be used for XYZ service pods only.",
    }
    assert defaulted(pc) == {**pc, "preemptionPolicy": "PreemptLowerPriority"}


def test_network_policy_from_the_network_policies_page() -> None:
    # https://kubernetes.io/docs/concepts/services-networking/network-policies/
    # (test-network-policy)
    np = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "test-network-policy", "namespace": "default"},
        "spec": {
            "podSelector": {"matchLabels": {"role": "db"}},
            "ingress": [
                {
                    "from": [{"ipBlock": {"cidr": "172.17.0.0/16", "except": ["172.17.1.0/24"]}}],
                    "ports": [{"protocol": "TCP", "port": 6379}],
                }
            ],
            "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/24"}}], "ports": [{"port": 5978}]}],
        },
    }
    out = defaulted(np)
    assert out["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert out["spec"]["egress"][0]["ports"] == [{"port": 5978, "protocol": "TCP"}]
    assert kindrules.validator("networking.k8s.io/v1", "NetworkPolicy")(out, None) == []  # type: ignore[misc]
    deny = defaulted(
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "default-deny-ingress"},
            "spec": {"podSelector": {}},
        }
    )
    assert deny["spec"] == {"podSelector": {}, "policyTypes": ["Ingress"]}


def test_ingress_class_endpoint_slice_and_endpoints() -> None:
    # https://kubernetes.io/docs/concepts/services-networking/ingress/#ingress-class
    ic = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "IngressClass",
        "metadata": {"name": "external-lb"},
        "spec": {
            "controller": "example.com/ingress-controller",
            "parameters": {
                "apiGroup": "k8s.example.com",
                "kind": "IngressParameters",
                "name": "external-lb",
            },
        },
    }
    assert defaulted(ic)["spec"]["parameters"]["scope"] == "Cluster"
    # https://kubernetes.io/docs/concepts/services-networking/endpoint-slices/
    es = {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"name": "example-abc"},
        "addressType": "IPv4",
        "ports": [{"name": "http", "port": 80}, {"port": 81}],
        "endpoints": [{"addresses": ["10.1.2.3"], "conditions": {"ready": True}}],
    }
    assert defaulted(es)["ports"] == [
        {"name": "http", "port": 80, "protocol": "TCP"},
        {"name": "", "port": 81, "protocol": "TCP"},
    ]
    ep = {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": "my-service"},
        "subsets": [{"addresses": [{"ip": "192.0.2.42"}], "ports": [{"port": 9376}]}],
    }
    assert defaulted(ep)["subsets"][0]["ports"] == [{"port": 9376, "protocol": "TCP"}]


def test_hpa_v2_and_v1_from_the_walkthrough() -> None:
    # https://kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale-walkthrough/
    v1 = {
        "apiVersion": "autoscaling/v1",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "php-apache"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "php-apache"},
            "maxReplicas": 10,
            "targetCPUUtilizationPercentage": 50,
        },
    }
    assert defaulted(v1)["spec"]["minReplicas"] == 1
    v2 = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "php-apache"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "php-apache"},
            "maxReplicas": 10,
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": 300}},
        },
    }
    spec = defaulted(v2)["spec"]
    assert spec["minReplicas"] == 1
    assert spec["metrics"] == [
        {
            "type": "Resource",
            "resource": {
                "name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 80},
            },
        }
    ]
    assert spec["behavior"] == {
        "scaleUp": {
            "stabilizationWindowSeconds": 0,
            "selectPolicy": "Max",
            "policies": [
                {"type": "Pods", "value": 4, "periodSeconds": 15},
                {"type": "Percent", "value": 100, "periodSeconds": 15},
            ],
        },
        "scaleDown": {
            "stabilizationWindowSeconds": 300,
            "selectPolicy": "Max",
            "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
        },
    }
    no_behavior = defaulted({**v2, "spec": {**v2["spec"], "behavior": None}})
    assert no_behavior["spec"].get("behavior") is None


def test_replication_controller_limit_range_quota_node_pod_template() -> None:
    # https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller/
    rc = {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": "nginx"},
        "spec": {
            "replicas": 3,
            "template": {
                "metadata": {"name": "nginx", "labels": {"app": "nginx"}},
                "spec": {"containers": [nginx_container()]},
            },
        },
    }
    out = defaulted(rc)
    assert out["metadata"]["labels"] == {"app": "nginx"}
    assert out["spec"]["selector"] == {"app": "nginx"}
    assert out["spec"]["template"]["spec"]["containers"] == [nginx_container_defaulted()]
    # https://kubernetes.io/docs/tasks/administer-cluster/manage-resources/cpu-constraint-namespace/
    lr = {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": "cpu-min-max-demo-lr"},
        "spec": {"limits": [{"max": {"cpu": "800m"}, "min": {"cpu": "200m"}, "type": "Container"}]},
    }
    assert defaulted(lr)["spec"]["limits"] == [
        {
            "max": {"cpu": "800m"},
            "min": {"cpu": "200m"},
            "type": "Container",
            "default": {"cpu": "800m"},
            "defaultRequest": {"cpu": "800m"},
        }
    ]
    # https://kubernetes.io/docs/tasks/administer-cluster/manage-resources/quota-memory-cpu-namespace/
    rq = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "mem-cpu-demo"},
        "spec": {
            "hard": {
                "requests.cpu": "1",
                "requests.memory": "1Gi",
                "limits.cpu": "2000m",
                "limits.memory": "2Gi",
            }
        },
    }
    assert defaulted(rq)["spec"]["hard"] == {
        "requests.cpu": "1",
        "requests.memory": "1Gi",
        "limits.cpu": "2",
        "limits.memory": "2Gi",
    }
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1"},
        "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }
    assert defaulted(node)["status"]["allocatable"] == {"cpu": "4", "memory": "8Gi", "pods": "110"}
    pt = {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": "t"},
        "template": {"spec": {"containers": [nginx_container()]}},
    }
    assert defaulted(pt)["template"] == {
        "metadata": {},
        "spec": {"containers": [nginx_container_defaulted()], **POD_SPEC_DEFAULTS},
    }


def test_kinds_without_defaults_answer_none() -> None:
    assert kindrules.defaulter("apps/v1", "ControllerRevision") is None
    assert kindrules.defaulter("policy/v1", "PodDisruptionBudget") is None
    assert kindrules.defaulter("v1", "ConfigMap") is None
    assert kindrules.validator("v1", "NoSuchKind") is None


@pytest.mark.parametrize("key", sorted(kindrules.DEFAULTERS), ids="/".join)
def test_every_defaulter_is_idempotent(key: tuple[str, str]) -> None:
    api_version, kind = key
    obj: JSON = {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": "x"},
        "spec": {
            "type": "LoadBalancer",
            "ports": [{"port": 80}],
            "template": {
                "metadata": {"labels": {"a": "b"}},
                "spec": {
                    "containers": [
                        {"name": "c", "image": "i", "resources": {"limits": {"cpu": "1000m"}}}
                    ]
                },
            },
            "egress": [{}],
            "limits": [{"type": "Container", "max": {"cpu": "2"}}],
            "behavior": {},
            "parameters": {"kind": "K", "name": "n"},
        },
        "status": {"capacity": {"cpu": "1"}},
        "ports": [{"port": 1}],
        "subsets": [{"ports": [{"port": 1}]}],
        "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}},
    }
    fn = kindrules.DEFAULTERS[key]
    fn(obj)
    once = copy.deepcopy(obj)
    fn(obj)
    assert obj == once
