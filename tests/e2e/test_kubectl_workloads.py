"""The kubectl session of a new user against the embedded server, with the built-in
workload kinds: ``get pods``, ``get all``, ``cluster-info``, ``create deployment``,
``expose``, ``run``, ``scale``, ``apply --prune`` with kubectl's default allow-list, a CRD
and one of its objects from one file, ``explain``, a kind the server does not serve, and
``rollout status`` with the simulated cluster.

What is checked is what a cluster answers for the same commands: kubectl's own output
lines, and the objects read back with the defaults kube-apiserver adds
(pkg/apis/core/v1/defaults.go, pkg/apis/apps/v1/defaults.go and the registry strategies);
fields that admission plugins add on a cluster (service account volumes, tolerations,
priority) are not asserted.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubewerk.apiserver.server import EmbeddedServer

from .conftest import KubectlRun

pytestmark = pytest.mark.e2e


def get_json(kc: KubectlRun, *args: str) -> Any:
    return json.loads(kc("get", *args, "-o", "json").stdout)


def without_null_timestamps(value: Any) -> Any:
    """``value`` without ``creationTimestamp: null`` (older Go types write it, newer omit it)."""
    if isinstance(value, dict):
        return {
            k: without_null_timestamps(v)
            for k, v in value.items()
            if not (k == "creationTimestamp" and v is None)
        }
    if isinstance(value, list):
        return [without_null_timestamps(v) for v in value]
    return value


def lines(text: str) -> list[str]:
    return [line.strip() for line in text.strip().splitlines()]


def columns(text: str) -> list[list[str]]:
    """A kubectl table as rows of cells (cells are separated by 2+ spaces)."""
    return [re.split(r"\s{2,}", line.strip()) for line in text.strip().splitlines()]


# -- an empty cluster -------------------------------------------------------------------


def test_get_pods_and_all_on_a_new_cluster(kc: KubectlRun, tserver: EmbeddedServer) -> None:
    out = kc("get", "pods")
    assert out.stdout == "" and out.stderr.strip() == "No resources found in default namespace."

    # a cluster has the default/kubernetes Service from the start
    table = columns(kc("get", "all").stdout)
    assert table[0] == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
    assert [row[:2] + row[3:5] for row in table[1:]] == [
        ["service/kubernetes", "ClusterIP", "<none>", "443/TCP"]
    ]
    svc = get_json(kc, "service", "kubernetes")
    assert svc["spec"]["clusterIP"] == table[1][2]
    assert svc["spec"]["ports"][0]["port"] == 443


def test_cluster_info(kc: KubectlRun, tserver: EmbeddedServer) -> None:
    out = kc("cluster-info")
    first = lines(out.stdout)[0]
    # kubectl colours the line when it writes to a terminal; not here
    assert first == f"Kubernetes control plane is running at {tserver.url}"


# -- create deployment, expose, run ------------------------------------------------------


DEPLOYMENT_SPEC = {
    "replicas": 1,
    "selector": {"matchLabels": {"app": "web"}},
    "template": {
        "metadata": {"labels": {"app": "web"}},
        "spec": {
            "containers": [
                {
                    "name": "nginx",
                    "image": "nginx",
                    "resources": {},
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                    "imagePullPolicy": "Always",  # no tag: latest
                }
            ],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "securityContext": {},
            "schedulerName": "default-scheduler",
        },
    },
    "strategy": {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
    },
    "revisionHistoryLimit": 10,
    "progressDeadlineSeconds": 600,
}


def test_create_deployment_sends_protobuf_and_reads_back_with_defaults(kc: KubectlRun) -> None:
    out = kc("-v=8", "create", "deployment", "web", "--image=nginx")
    assert out.stdout.strip() == "deployment.apps/web created"
    post = out.stderr[out.stderr.index("POST ") :] if "POST " in out.stderr else out.stderr
    assert "Content-Type: application/vnd.kubernetes.protobuf" in out.stderr, post[:2000]
    assert "201 Created" in post, post[:2000]

    deploy = get_json(kc, "deployment", "web")
    assert deploy["apiVersion"] == "apps/v1" and deploy["kind"] == "Deployment"
    assert deploy["metadata"]["labels"] == {"app": "web"}
    assert deploy["metadata"]["generation"] == 1
    assert without_null_timestamps(deploy["spec"]) == DEPLOYMENT_SPEC
    assert deploy.get("status", {}) == {}

    again = kc("create", "deployment", "web", "--image=nginx", check=False)
    assert again.returncode != 0
    assert 'deployments.apps "web" already exists' in again.stderr

    table = columns(kc("get", "deployments").stdout)
    assert table[0] == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert table[1][:4] == ["web", "0/1", "0", "0"]

    # server-side dry run: answered, nothing stored
    dry = kc("create", "deployment", "dry", "--image=nginx", "--dry-run=server")
    assert dry.stdout.strip() == "deployment.apps/dry created (server dry run)"
    assert kc("get", "deployment", "dry", check=False).returncode != 0


def test_expose_deployment(kc: KubectlRun) -> None:
    kc("create", "deployment", "web", "--image=nginx")
    out = kc("expose", "deployment", "web", "--port=80")
    assert out.stdout.strip() == "service/web exposed"
    svc = get_json(kc, "service", "web")
    assert svc["metadata"]["labels"] == {"app": "web"}
    spec = svc["spec"]
    ip = spec.pop("clusterIP")
    assert re.fullmatch(r"\d+\.\d+\.\d+\.\d+", ip), ip
    assert spec == {
        "ports": [{"protocol": "TCP", "port": 80, "targetPort": 80}],
        "selector": {"app": "web"},
        "clusterIPs": [ip],
        "type": "ClusterIP",
        "sessionAffinity": "None",
        "ipFamilies": ["IPv4"],
        "ipFamilyPolicy": "SingleStack",
        "internalTrafficPolicy": "Cluster",
    }
    assert svc["status"] == {"loadBalancer": {}}
    kubernetes_ip = get_json(kc, "service", "kubernetes")["spec"]["clusterIP"]
    assert ip != kubernetes_ip

    table = columns(kc("get", "services").stdout)
    assert table[0] == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
    assert [row[:5] for row in table[1:]] == [
        ["kubernetes", "ClusterIP", kubernetes_ip, "<none>", "443/TCP"],
        ["web", "ClusterIP", ip, "<none>", "80/TCP"],
    ]


def test_run_pod(kc: KubectlRun) -> None:
    out = kc("run", "pod1", "--image=busybox")
    assert out.stdout.strip() == "pod/pod1 created"
    pod = get_json(kc, "pod", "pod1")
    assert pod["metadata"]["labels"] == {"run": "pod1"}
    spec = pod["spec"]
    container = spec["containers"][0]
    assert {k: container.get(k) for k in container if k != "volumeMounts"} == {
        "name": "pod1",
        "image": "busybox",
        "resources": {},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "imagePullPolicy": "Always",
    }
    for field, value in {
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "securityContext": {},
        "schedulerName": "default-scheduler",
        "enableServiceLinks": True,
    }.items():
        assert spec.get(field) == value, (field, spec)
    assert pod["status"]["phase"] == "Pending"
    assert pod["status"]["qosClass"] == "BestEffort"

    table = columns(kc("get", "pods").stdout)
    assert table[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert table[1][:4] == ["pod1", "0/1", "Pending", "0"]

    wide = columns(kc("get", "pods", "-o", "wide").stdout)
    assert wide[0] == [
        "NAME",
        "READY",
        "STATUS",
        "RESTARTS",
        "AGE",
        "IP",
        "NODE",
        "NOMINATED NODE",
        "READINESS GATES",
    ]
    assert wide[1][5:] == ["<none>", "<none>", "<none>", "<none>"]

    # an unscheduled pod is deleted at once (no kubelet has to confirm it)
    assert kc("delete", "pod", "pod1", "--timeout=10s").stdout.strip() == 'pod "pod1" deleted'
    assert kc("get", "pod", "pod1", check=False).returncode != 0


def test_get_all_lists_the_workloads(kc: KubectlRun) -> None:
    kc("create", "deployment", "web", "--image=nginx")
    kc("expose", "deployment", "web", "--port=80")
    kc("run", "pod1", "--image=busybox")
    names = [row[0] for row in columns(kc("get", "all").stdout) if row[0] != "NAME"]
    assert "pod/pod1" in names
    assert "service/kubernetes" in names and "service/web" in names
    assert "deployment.apps/web" in names


def test_protobuf_bodies_of_other_generators(kc: KubectlRun) -> None:
    """kubectl 1.32 sends these as protobuf; each is stored as a cluster stores it."""
    assert kc("create", "job", "j1", "--image=busybox", "--", "echo", "hi").stdout.strip() == (
        "job.batch/j1 created"
    )
    job = get_json(kc, "job", "j1")
    uid = job["metadata"]["uid"]
    spec = job["spec"]
    assert (spec["parallelism"], spec["completions"], spec["backoffLimit"]) == (1, 1, 6)
    assert spec["completionMode"] == "NonIndexed" and spec["suspend"] is False
    # the selector the Job strategy generates from the uid, and the template's labels
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    labels = spec["template"]["metadata"]["labels"]
    assert labels["batch.kubernetes.io/controller-uid"] == uid
    assert labels["batch.kubernetes.io/job-name"] == "j1"
    assert (labels["controller-uid"], labels["job-name"]) == (uid, "j1")  # the legacy pair
    assert spec["template"]["spec"]["restartPolicy"] == "Never"
    assert spec["template"]["spec"]["containers"][0]["command"] == ["echo", "hi"]

    out = kc("create", "cronjob", "cj1", "--image=busybox", "--schedule=*/5 * * * *")
    assert out.stdout.strip() == "cronjob.batch/cj1 created"
    cj = get_json(kc, "cronjob", "cj1")["spec"]
    assert (cj["schedule"], cj["concurrencyPolicy"], cj["suspend"]) == (
        "*/5 * * * *",
        "Allow",
        False,
    )
    assert (cj["successfulJobsHistoryLimit"], cj["failedJobsHistoryLimit"]) == (3, 1)
    assert cj["jobTemplate"]["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure"

    out = kc("create", "service", "nodeport", "np1", "--tcp=80:8080")
    assert out.stdout.strip() == "service/np1 created"
    np = get_json(kc, "service", "np1")["spec"]
    assert np["type"] == "NodePort" and np["externalTrafficPolicy"] == "Cluster"
    port = np["ports"][0]
    assert (port["port"], port["targetPort"], port["protocol"]) == (80, 8080, "TCP")
    assert 30000 <= port["nodePort"] <= 32767

    out = kc("create", "quota", "q1", "--hard=cpu=1500m,memory=1Gi,pods=10")
    assert out.stdout.strip() == "resourcequota/q1 created"
    quota = get_json(kc, "resourcequota", "q1")
    assert quota["spec"]["hard"] == {"cpu": "1500m", "memory": "1Gi", "pods": "10"}

    out = kc("create", "pdb", "pdb1", "--selector=app=web", "--min-available=50%")
    assert out.stdout.strip() == "poddisruptionbudget.policy/pdb1 created"
    pdb = get_json(kc, "pdb", "pdb1")["spec"]
    assert pdb["minAvailable"] == "50%" and pdb["selector"] == {"matchLabels": {"app": "web"}}

    out = kc("create", "priorityclass", "pc1", "--value=1000", "--description=high")
    assert out.stdout.strip() == "priorityclass.scheduling.k8s.io/pc1 created"
    pc = get_json(kc, "priorityclass", "pc1")
    assert (pc["value"], pc["description"], pc["preemptionPolicy"]) == (
        1000,
        "high",
        "PreemptLowerPriority",
    )

    out = kc("create", "ingress", "ing1", "--rule=foo.com/bar*=svc1:8080")
    assert out.stdout.strip() == "ingress.networking.k8s.io/ing1 created"
    rule = get_json(kc, "ingress", "ing1")["spec"]["rules"][0]
    assert rule["host"] == "foo.com"
    assert rule["http"]["paths"][0] == {
        "path": "/bar",
        "pathType": "Prefix",
        "backend": {"service": {"name": "svc1", "port": {"number": 8080}}},
    }


def test_scale_deployment(kc: KubectlRun) -> None:
    kc("create", "deployment", "web", "--image=nginx")
    out = kc("scale", "deployment", "web", "--replicas=3")
    assert out.stdout.strip() == "deployment.apps/web scaled"
    deploy = get_json(kc, "deployment", "web")
    assert deploy["spec"]["replicas"] == 3 and deploy["metadata"]["generation"] == 2
    scale = json.loads(
        kc("get", "--raw", "/apis/apps/v1/namespaces/default/deployments/web/scale").stdout
    )
    assert scale["kind"] == "Scale" and scale["apiVersion"] == "autoscaling/v1"
    assert scale["spec"] == {"replicas": 3}
    assert scale["status"]["replicas"] == 0 and scale["status"]["selector"] == "app=web"
    # a precondition kubectl checks before scaling
    stale = kc("scale", "deployment", "web", "--replicas=1", "--current-replicas=2", check=False)
    assert stale.returncode != 0
    assert "Expected replicas to be 2, was 3" in stale.stderr


# -- apply ---------------------------------------------------------------------------------


def _configmap(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"app": "x"}},
        "data": {"k": name},
    }


def test_apply_prune_with_the_default_allow_list(kc: KubectlRun, tmp_path: Path) -> None:
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    (manifests / "a.yaml").write_text(yaml.safe_dump(_configmap("a")))
    (manifests / "b.yaml").write_text(yaml.safe_dump(_configmap("b")))
    out = kc("apply", "--prune", "-l", "app=x", "-f", str(manifests))
    assert lines(out.stdout) == ["configmap/a created", "configmap/b created"]

    (manifests / "b.yaml").unlink()
    # kubectl lists every kind of its default allow-list (Endpoints, PVCs, Jobs, Ingresses,
    # apps/v1 ...) with the selector to find what to prune
    out = kc("apply", "--prune", "-l", "app=x", "-f", str(manifests))
    assert lines(out.stdout) == ["configmap/a unchanged", "configmap/b pruned"], out.stderr
    assert kc("get", "configmap", "b", check=False).returncode != 0


WIDGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.e2e.kubewerk.dev"},
    "spec": {
        "group": "e2e.kubewerk.dev",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}
                        },
                    }
                },
            }
        ],
    },
}


def test_a_crd_and_its_object_from_one_file(kc: KubectlRun, tmp_path: Path) -> None:
    widget = {
        "apiVersion": "e2e.kubewerk.dev/v1",
        "kind": "Widget",
        "metadata": {"name": "w1"},
        "spec": {"size": 3},
    }
    path = tmp_path / "both.yaml"
    path.write_text(yaml.safe_dump_all([WIDGET_CRD, widget]))

    first = kc("apply", "-f", str(path), check=False)
    assert first.returncode != 0
    assert "customresourcedefinition.apiextensions.k8s.io/widgets.e2e.kubewerk.dev created" in (
        first.stdout
    )
    # what a cluster says: the CRD is not established when kubectl maps the object
    assert (
        f'resource mapping not found for name: "w1" namespace: "" from "{path}": '
        'no matches for kind "Widget" in version "e2e.kubewerk.dev/v1"'
    ) in first.stderr, first.stderr
    assert "ensure CRDs are installed first" in first.stderr
    assert "could not find the requested resource" not in first.stderr

    kc("wait", "--for=condition=Established", "crd/widgets.e2e.kubewerk.dev", "--timeout=10s")
    second = kc("apply", "-f", str(path))
    assert lines(second.stdout) == [
        "customresourcedefinition.apiextensions.k8s.io/widgets.e2e.kubewerk.dev unchanged",
        "widget.e2e.kubewerk.dev/w1 created",
    ]
    assert get_json(kc, "widget", "w1")["spec"] == {"size": 3}


# -- explain, and what is not served ----------------------------------------------------


def test_explain(kc: KubectlRun) -> None:
    out = kc("explain", "pods.spec.containers").stdout
    assert lines(out)[:2] == ["KIND:       Pod", "VERSION:    v1"]
    assert "FIELD: containers <[]Container>" in out
    assert re.search(r"\bimage\s+<string>", out)

    # the OpenAPI v2 document (what older kubectl paths and validation fall back to)
    v2 = kc("explain", "pods.spec.containers", "--output=plaintext-openapiv2").stdout
    assert lines(v2)[:2] == ["KIND:     Pod", "VERSION:  v1"], v2
    assert "RESOURCE: containers <[]Object>" in v2
    assert re.search(r"\bimage\s+<string>", v2)

    out = kc("explain", "deployment.spec.strategy").stdout
    assert "KIND:       Deployment" in out and "GROUP:      apps" in out


def test_a_kind_the_server_does_not_serve(kc: KubectlRun) -> None:
    # discovery does not list it, so kubectl itself refuses the type
    out = kc("get", "certificatesigningrequests", check=False)
    assert out.returncode != 0
    assert 'the server doesn\'t have a resource type "certificatesigningrequests"' in out.stderr
    resources = kc("api-resources", "-o", "name").stdout.split()
    assert "certificatesigningrequests.certificates.k8s.io" not in resources
    assert "pods" in resources and "deployments.apps" in resources

    # asked directly, the server says it is not served (not a bare 404)
    raw = kc("get", "--raw", "/apis/certificates.k8s.io/v1/certificatesigningrequests", check=False)
    assert raw.returncode != 0
    assert "Error from server (NotFound)" in raw.stderr
    assert "not served by kubewerk" in raw.stderr, raw.stderr

    # pods/log and pods/exec exist on a cluster; kubewerk runs no containers
    kc("run", "pod1", "--image=busybox")
    logs = kc("logs", "pod1", check=False)
    assert logs.returncode != 0 and "not supported by kubewerk" in logs.stderr, logs.stderr


# -- the simulated cluster ----------------------------------------------------------------


@pytest.fixture
def skc(tmp_path: Path) -> Iterator[KubectlRun]:
    """``kubectl`` against a server running the simulated cluster (``simulate=True``)."""
    if "simulate" not in inspect.signature(EmbeddedServer).parameters:
        pytest.skip("EmbeddedServer has no simulated cluster yet")
    binary = shutil.which("kubectl")
    if binary is None:
        pytest.skip("kubectl is not installed")
    srv = EmbeddedServer("memory", simulate=True).start_in_thread()  # type: ignore[call-arg]
    config = srv.write_kubeconfig(tmp_path / "sim-kubeconfig")

    def run(
        *args: str, check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [binary, f"--cache-dir={tmp_path / 'sim-cache'}", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "KUBECONFIG": str(config)},
            check=False,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {proc.stderr}")
        return proc

    try:
        yield run
    finally:
        srv.stop_thread()


def test_rollout_status_with_the_simulated_cluster(skc: KubectlRun) -> None:
    skc("create", "deployment", "web", "--image=nginx", "--replicas=3")
    out = skc("rollout", "status", "deployment/web", "--timeout=60s", timeout=90)
    assert lines(out.stdout)[-1] == 'deployment "web" successfully rolled out'
    deploy = get_json(skc, "deployment", "web")
    status = deploy["status"]
    assert (status["replicas"], status["readyReplicas"], status["availableReplicas"]) == (3, 3, 3)
    assert status["observedGeneration"] == 1
    conditions = {c["type"]: c for c in status["conditions"]}
    assert conditions["Available"]["status"] == "True"
    assert conditions["Available"]["reason"] == "MinimumReplicasAvailable"
    assert conditions["Progressing"]["reason"] == "NewReplicaSetAvailable"

    table = columns(skc("get", "pods").stdout)
    assert len(table) == 4 and all(row[1:3] == ["1/1", "Running"] for row in table[1:])

    skc("scale", "deployment", "web", "--replicas=1")
    skc("rollout", "status", "deployment/web", "--timeout=60s", timeout=90)
    skc(
        "wait",
        "--for=jsonpath={.status.replicas}=1",
        "deployment/web",
        "--timeout=60s",
        timeout=90,
    )
