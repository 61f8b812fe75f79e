"""Every ``kubectl create <kind>`` subcommand against one embedded server (as ``kubewerk
up`` runs it): kubectl 1.32 sends these objects as Kubernetes protobuf through client-go's
typed clients, so each is created here, then

- the stored object is checked for the fields kubectl set (for the RBAC kinds: the
  rules, subjects, roleRef and aggregationRule exactly as given) and for what
  kube-apiserver adds to them;
- the same object as JSON (``--dry-run=client -o json``, renamed) goes through
  ``kubectl create -f`` and is stored exactly as the protobuf one was (server-made
  values aside);
- ``kubectl get -o yaml`` reads every one back;

plus ``kubectl create token`` (the serviceaccounts/token subresource), ``kubectl auth
can-i`` and ``kubectl auth reconcile -f`` (RBAC objects created, then updated through
protobuf PUTs).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.webhook.certs import make_certificates

pytestmark = pytest.mark.e2e

RBAC = "rbac.authorization.k8s.io"


@dataclass
class Kubectl:
    """kubectl against the module's server, with its own discovery cache."""

    binary: str
    kubeconfig: Path
    cache: Path

    def run(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.binary, f"--cache-dir={self.cache}", *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=30,
            env={**os.environ, "KUBECONFIG": str(self.kubeconfig)},
            check=False,
        )

    def ok(self, *args: str, stdin: str | None = None) -> str:
        out = self.run(*args, stdin=stdin)
        assert out.returncode == 0, f"kubectl {' '.join(args)}: {out.stderr}"
        return out.stdout


@dataclass(frozen=True)
class Case:
    """One subcommand: ``kubectl create <args>`` makes ``resource/name`` at ``path``."""

    id: str
    args: tuple[str, ...]
    path: str  # API path of the object made
    expected: dict[str, Any]  # fields of the stored object (see ``contains``)
    needs: tuple[str, ...] = ()  # ids of cases whose objects this one reads
    volatile: tuple[tuple[str, ...], ...] = ()  # paths the server fills in anew each time

    @property
    def name(self) -> str:
        return self.path.rpartition("/")[2]


NS = "/api/v1/namespaces/default"
APPS = "/apis/apps/v1/namespaces/default"
BATCH = "/apis/batch/v1/namespaces/default"
RBAC_NS = f"/apis/{RBAC}/v1/namespaces/default"
RBAC_CLUSTER = f"/apis/{RBAC}/v1"
SERVICE_IPS = (("spec", "clusterIP"), ("spec", "clusterIPs"))
POD_DEFAULTS = {
    "dnsPolicy": "ClusterFirst",
    "schedulerName": "default-scheduler",
    "securityContext": {},
    "terminationGracePeriodSeconds": 30,
}
CONTAINER_DEFAULTS = {
    "imagePullPolicy": "Always",  # no tag: latest
    "terminationMessagePath": "/dev/termination-log",
    "terminationMessagePolicy": "File",
    "resources": {},
}


def _user(name: str) -> dict[str, str]:
    return {"apiGroup": RBAC, "kind": "User", "name": name}


CASES: list[Case] = [
    Case(
        "clusterrole",
        ("clusterrole", "pod-reader", "--verb=get,list", "--resource=pods,deployments.apps"),
        f"{RBAC_CLUSTER}/clusterroles/pod-reader",
        {
            "rules": [
                {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]},
                {"verbs": ["get", "list"], "apiGroups": ["apps"], "resources": ["deployments"]},
            ]
        },
    ),
    Case(
        "clusterrole-resource-names",
        (
            "clusterrole",
            "cm-reader",
            "--verb=get",
            "--resource=configmaps",
            "--resource-name=a",
            "--resource-name=b",
        ),
        f"{RBAC_CLUSTER}/clusterroles/cm-reader",
        {
            "rules": [
                {
                    "verbs": ["get"],
                    "apiGroups": [""],
                    "resources": ["configmaps"],
                    "resourceNames": ["a", "b"],
                }
            ]
        },
    ),
    Case(
        "clusterrole-non-resource-urls",
        ("clusterrole", "logs", "--verb=get", "--non-resource-url=/logs/*"),
        f"{RBAC_CLUSTER}/clusterroles/logs",
        {"rules": [{"verbs": ["get"], "nonResourceURLs": ["/logs/*"]}]},
    ),
    Case(
        "clusterrole-aggregation-rule",
        ("clusterrole", "monitoring", "--aggregation-rule=example.com/aggregate-to-mon=true"),
        f"{RBAC_CLUSTER}/clusterroles/monitoring",
        {
            "aggregationRule": {
                "clusterRoleSelectors": [{"matchLabels": {"example.com/aggregate-to-mon": "true"}}]
            }
        },
    ),
    Case(
        "clusterrolebinding",
        (
            "clusterrolebinding",
            "readers",
            "--clusterrole=pod-reader",
            "--user=alice",
            "--group=ops",
            "--serviceaccount=kube-system:robot",
        ),
        f"{RBAC_CLUSTER}/clusterrolebindings/readers",
        {
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "pod-reader"},
            "subjects": [
                _user("alice"),
                {"apiGroup": RBAC, "kind": "Group", "name": "ops"},
                {"kind": "ServiceAccount", "name": "robot", "namespace": "kube-system"},
            ],
        },
    ),
    Case(
        "configmap",
        ("configmap", "settings", "--from-literal=mode=fast", "--from-literal=empty="),
        f"{NS}/configmaps/settings",
        {"data": {"mode": "fast", "empty": ""}},
    ),
    Case(
        "cronjob",
        (
            "cronjob",
            "tick",
            "--image=busybox",
            "--schedule=*/5 * * * *",
            "--restart=Never",
            "--",
            "date",
        ),
        f"{BATCH}/cronjobs/tick",
        {
            "spec": {
                "schedule": "*/5 * * * *",
                "concurrencyPolicy": "Allow",
                "suspend": False,
                "successfulJobsHistoryLimit": 3,
                "failedJobsHistoryLimit": 1,
                "jobTemplate": {
                    "metadata": {"name": "tick"},
                    "spec": {
                        "template": {
                            "spec": {
                                "containers": [
                                    {
                                        "name": "tick",
                                        "image": "busybox",
                                        "command": ["date"],
                                        **CONTAINER_DEFAULTS,
                                    }
                                ],
                                "restartPolicy": "Never",
                                **POD_DEFAULTS,
                            }
                        }
                    },
                },
            }
        },
    ),
    Case(
        "deployment",
        ("deployment", "web", "--image=nginx", "--replicas=2", "--port=80"),
        f"{APPS}/deployments/web",
        {
            "metadata": {"labels": {"app": "web"}, "generation": 1},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {
                        "containers": [
                            {
                                "name": "nginx",
                                "image": "nginx",
                                "ports": [{"containerPort": 80, "protocol": "TCP"}],
                                **CONTAINER_DEFAULTS,
                            }
                        ],
                        "restartPolicy": "Always",
                        **POD_DEFAULTS,
                    },
                },
                "strategy": {
                    "type": "RollingUpdate",
                    "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
                },
                "revisionHistoryLimit": 10,
                "progressDeadlineSeconds": 600,
            },
        },
    ),
    Case(
        "ingress",
        (
            "ingress",
            "site",
            "--class=nginx",
            "--rule=foo.com/bar=svc1:8080,tls=foo-cert",
            "--rule=bar.com/*=svc2:http",
            "--default-backend=fallback:80",
            "--annotation=team=web",
        ),
        "/apis/networking.k8s.io/v1/namespaces/default/ingresses/site",
        {
            "metadata": {"annotations": {"team": "web"}},
            "spec": {
                "ingressClassName": "nginx",
                "defaultBackend": {"service": {"name": "fallback", "port": {"number": 80}}},
                "tls": [{"hosts": ["foo.com"], "secretName": "foo-cert"}],
                "rules": [
                    {
                        "host": "foo.com",
                        "http": {
                            "paths": [
                                {
                                    "path": "/bar",
                                    "pathType": "Exact",
                                    "backend": {
                                        "service": {"name": "svc1", "port": {"number": 8080}}
                                    },
                                }
                            ]
                        },
                    },
                    {
                        "host": "bar.com",
                        "http": {
                            "paths": [
                                {
                                    "path": "/",
                                    "pathType": "Prefix",
                                    "backend": {
                                        "service": {"name": "svc2", "port": {"name": "http"}}
                                    },
                                }
                            ]
                        },
                    },
                ],
            },
        },
    ),
    Case(
        "job",
        ("job", "once", "--image=busybox", "--", "echo", "hi"),
        f"{BATCH}/jobs/once",
        {
            "metadata": {"labels": {"batch.kubernetes.io/job-name": "once", "job-name": "once"}},
            "spec": {
                "parallelism": 1,
                "completions": 1,
                "backoffLimit": 6,
                "completionMode": "NonIndexed",
                "suspend": False,
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "once",
                                "image": "busybox",
                                "command": ["echo", "hi"],
                                **CONTAINER_DEFAULTS,
                            }
                        ],
                        "restartPolicy": "Never",
                        **POD_DEFAULTS,
                    }
                },
            },
        },
        volatile=(
            ("metadata", "labels"),
            ("spec", "selector"),
            ("spec", "template", "metadata", "labels"),
        ),
    ),
    Case(
        "job-from-cronjob",
        ("job", "manual", "--from=cronjob/tick"),
        f"{BATCH}/jobs/manual",
        {
            "metadata": {
                "annotations": {"cronjob.kubernetes.io/instantiate": "manual"},
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "CronJob",
                        "name": "tick",
                        "controller": True,
                    }
                ],
            },
            "spec": {
                "template": {
                    "spec": {
                        "containers": [{"name": "tick", "image": "busybox", "command": ["date"]}],
                        "restartPolicy": "Never",
                    }
                }
            },
        },
        needs=("cronjob",),
        volatile=(
            ("metadata", "labels"),
            ("spec", "selector"),
            ("spec", "template", "metadata", "labels"),
        ),
    ),
    Case(
        "namespace",
        ("namespace", "team-x"),
        "/api/v1/namespaces/team-x",
        {
            "metadata": {"labels": {"kubernetes.io/metadata.name": "team-x"}},
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"},
        },
        volatile=(("metadata", "labels"),),
    ),
    Case(
        "poddisruptionbudget-min-available",
        ("poddisruptionbudget", "web-pdb", "--selector=app=web", "--min-available=50%"),
        "/apis/policy/v1/namespaces/default/poddisruptionbudgets/web-pdb",
        {"spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}}},
    ),
    Case(
        "poddisruptionbudget-max-unavailable",
        ("poddisruptionbudget", "db-pdb", "--selector=app=db", "--max-unavailable=1"),
        "/apis/policy/v1/namespaces/default/poddisruptionbudgets/db-pdb",
        {"spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "db"}}}},
    ),
    Case(
        "priorityclass",
        (
            "priorityclass",
            "high",
            "--value=1000",
            "--description=urgent",
            "--preemption-policy=Never",
        ),
        "/apis/scheduling.k8s.io/v1/priorityclasses/high",
        {"value": 1000, "description": "urgent", "preemptionPolicy": "Never"},
    ),
    Case(
        "quota",
        ("quota", "small", "--hard=cpu=1,memory=1G,pods=2", "--scopes=BestEffort"),
        f"{NS}/resourcequotas/small",
        {"spec": {"hard": {"cpu": "1", "memory": "1G", "pods": "2"}, "scopes": ["BestEffort"]}},
    ),
    Case(
        "role",
        ("role", "pod-logs", "--verb=get", "--verb=watch", "--resource=pods,pods/log"),
        f"{RBAC_NS}/roles/pod-logs",
        {
            "rules": [
                {"verbs": ["get", "watch"], "apiGroups": [""], "resources": ["pods", "pods/log"]}
            ]
        },
    ),
    Case(
        "role-resource-names",
        ("role", "one-secret", "--verb=get", "--resource=secrets", "--resource-name=token"),
        f"{RBAC_NS}/roles/one-secret",
        {
            "rules": [
                {
                    "verbs": ["get"],
                    "apiGroups": [""],
                    "resources": ["secrets"],
                    "resourceNames": ["token"],
                }
            ]
        },
    ),
    Case(
        "rolebinding-role",
        (
            "rolebinding",
            "log-readers",
            "--role=pod-logs",
            "--user=alice",
            "--serviceaccount=default:robot",
        ),
        f"{RBAC_NS}/rolebindings/log-readers",
        {
            "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "pod-logs"},
            "subjects": [
                _user("alice"),
                {"kind": "ServiceAccount", "name": "robot", "namespace": "default"},
            ],
        },
    ),
    Case(
        "rolebinding-clusterrole",
        ("rolebinding", "viewers", "--clusterrole=view", "--group=ops"),
        f"{RBAC_NS}/rolebindings/viewers",
        {
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "view"},
            "subjects": [{"apiGroup": RBAC, "kind": "Group", "name": "ops"}],
        },
    ),
    Case(
        "secret-generic",
        ("secret", "generic", "creds", "--from-literal=user=admin", "--type=example.com/login"),
        f"{NS}/secrets/creds",
        {"type": "example.com/login", "data": {"user": base64.b64encode(b"admin").decode()}},
    ),
    Case(
        "secret-docker-registry",
        (
            "secret",
            "docker-registry",
            "pull",
            "--docker-server=r.example.com",
            "--docker-username=u",
            "--docker-password=p",
        ),
        f"{NS}/secrets/pull",
        {"type": "kubernetes.io/dockerconfigjson"},
    ),
    Case(
        "secret-tls",
        ("secret", "tls", "serving", "--cert={dir}/tls.crt", "--key={dir}/tls.key"),
        f"{NS}/secrets/serving",
        {"type": "kubernetes.io/tls"},
    ),
    Case(
        "service-clusterip",
        ("service", "clusterip", "api", "--tcp=80:8080", "--tcp=53:53"),
        f"{NS}/services/api",
        {
            "metadata": {"labels": {"app": "api"}},
            "spec": {
                "type": "ClusterIP",
                "selector": {"app": "api"},
                "ports": [
                    {"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080},
                    {"name": "53-53", "protocol": "TCP", "port": 53, "targetPort": 53},
                ],
                "sessionAffinity": "None",
                "ipFamilies": ["IPv4"],
                "ipFamilyPolicy": "SingleStack",
                "internalTrafficPolicy": "Cluster",
            },
        },
        volatile=SERVICE_IPS,
    ),
    Case(
        "service-clusterip-headless",
        ("service", "clusterip", "peers", "--clusterip=None"),
        f"{NS}/services/peers",
        {"spec": {"type": "ClusterIP", "clusterIP": "None", "clusterIPs": ["None"]}},
    ),
    Case(
        "service-nodeport",
        ("service", "nodeport", "edge", "--tcp=80:8080", "--node-port=30080"),
        f"{NS}/services/edge",
        {
            "spec": {
                "type": "NodePort",
                "externalTrafficPolicy": "Cluster",
                "ports": [
                    {
                        "name": "80-8080",
                        "protocol": "TCP",
                        "port": 80,
                        "targetPort": 8080,
                        "nodePort": 30080,
                    }
                ],
            }
        },
        volatile=(*SERVICE_IPS, ("spec", "ports")),
    ),
    Case(
        "service-loadbalancer",
        ("service", "loadbalancer", "public", "--tcp=443:8443"),
        f"{NS}/services/public",
        {
            "spec": {
                "type": "LoadBalancer",
                "allocateLoadBalancerNodePorts": True,
                "externalTrafficPolicy": "Cluster",
                "ports": [{"name": "443-8443", "protocol": "TCP", "port": 443, "targetPort": 8443}],
            },
            "status": {"loadBalancer": {}},
        },
        volatile=(*SERVICE_IPS, ("spec", "ports")),
    ),
    Case(
        "service-externalname",
        ("service", "externalname", "docs", "--external-name=docs.example.com"),
        f"{NS}/services/docs",
        {"spec": {"type": "ExternalName", "externalName": "docs.example.com"}},
    ),
    Case(
        "serviceaccount",
        ("serviceaccount", "robot"),
        f"{NS}/serviceaccounts/robot",
        {"metadata": {"name": "robot", "namespace": "default"}},
    ),
]
BY_ID = {case.id: case for case in CASES}


@dataclass
class Made:
    """What one subcommand did: kubectl's answer, the stored object, and the JSON kubectl
    writes for the same object (``--dry-run=client -o json``)."""

    result: subprocess.CompletedProcess[str]
    stored: dict[str, Any] | None
    as_json: dict[str, Any] = field(default_factory=dict)


def api_get(server: EmbeddedServer, path: str) -> dict[str, Any] | None:
    try:
        with urllib.request.urlopen(server.url + path, timeout=10) as response:
            body: dict[str, Any] = json.loads(response.read())
            return body
    except urllib.error.HTTPError as err:
        if err.code == 404:
            return None
        raise


@pytest.fixture(scope="module")
def server() -> Iterator[EmbeddedServer]:
    srv = EmbeddedServer("memory").start_in_thread()
    try:
        yield srv
    finally:
        srv.stop_thread()


@pytest.fixture(scope="module")
def kctl(server: EmbeddedServer, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    binary = shutil.which("kubectl")
    if binary is None:
        pytest.skip("kubectl is not installed")
    home = tmp_path_factory.mktemp("kubectl-create")
    certs = make_certificates("serving", "default")
    (home / "tls.crt").write_bytes(certs.cert)
    (home / "tls.key").write_bytes(certs.key)
    return Kubectl(binary, server.write_kubeconfig(home / "kubeconfig"), home / "cache")


def _args(case: Case, kctl: Kubectl) -> list[str]:
    return [a.replace("{dir}", str(kctl.kubeconfig.parent)) for a in case.args]


def _make(case: Case, server: EmbeddedServer, kctl: Kubectl) -> Made:
    args = _args(case, kctl)
    result = kctl.run("create", *args)
    # the flags go before a command's "--"
    dry = kctl.run("create", "--dry-run=client", "-o", "json", *args)
    return Made(
        result,
        api_get(server, case.path),
        json.loads(dry.stdout) if dry.returncode == 0 else {},
    )


@pytest.fixture(scope="module")
def made(server: EmbeddedServer, kctl: Kubectl) -> dict[str, Made]:
    """Every subcommand run once (a few kubectl at a time; a case's ``needs`` first)."""
    kctl.ok("api-resources")  # one discovery into the shared cache
    first = [case for case in CASES if not case.needs]
    later = [case for case in CASES if case.needs]
    assert all(need in {c.id for c in first} for case in later for need in case.needs)
    with ThreadPoolExecutor(max_workers=4) as pool:
        out = dict(
            zip(
                [c.id for c in first],
                pool.map(lambda c: _make(c, server, kctl), first),
                strict=True,
            )
        )
    out.update((case.id, _make(case, server, kctl)) for case in later)
    return out


def contains(got: Any, want: Any, where: str = "") -> None:
    """``got`` has every field of ``want``: objects may have more keys, lists are equal
    in length and element by element."""
    if isinstance(want, dict):
        assert isinstance(got, dict), f"{where}: {got!r} is not an object"
        for k, v in want.items():
            assert k in got, f"{where}.{k} missing in {sorted(got)}"
            contains(got[k], v, f"{where}.{k}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), f"{where}: {got!r} != {want!r}"
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            contains(g, w, f"{where}[{i}]")
    else:
        assert got == want, f"{where}: {got!r} != {want!r}"


def _typed_name(obj: dict[str, Any]) -> str:
    """``kind.group/name`` as kubectl prints and reads it (``configmap/x``,
    ``deployment.apps/x``)."""
    group = obj["apiVersion"].rpartition("/")[0]
    kind = obj["kind"].lower()
    return (
        f"{kind}.{group}/{obj['metadata']['name']}"
        if group
        else f"{kind}/{obj['metadata']['name']}"
    )


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_subcommand_stores_what_kube_stores(case: Case, made: dict[str, Made]) -> None:
    result = made[case.id]
    assert result.result.returncode == 0, result.result.stderr
    stored = result.stored
    assert stored is not None, f"{case.path} not stored"
    assert result.result.stdout.strip() == f"{_typed_name(stored)} created"
    assert stored["metadata"]["name"] == case.name
    assert stored["metadata"]["uid"] and stored["metadata"]["resourceVersion"]
    contains(stored, case.expected)
    # kubectl-create manages what it sent (a ServiceAccount with only a name: nothing)
    managers = [entry.get("manager") for entry in stored["metadata"].get("managedFields", [])]
    assert managers == ([] if case.id == "serviceaccount" else ["kubectl-create"]), managers


def test_rbac_objects_keep_exactly_the_given_rules_and_subjects(made: dict[str, Made]) -> None:
    for case in CASES:
        if RBAC not in case.path:
            continue
        stored = made[case.id].stored
        assert stored is not None, case.id
        for key in ("rules", "subjects", "roleRef", "aggregationRule"):
            if key in case.expected:
                assert stored[key] == case.expected[key], (case.id, key)
        assert set(stored) - {"rules"} == {"apiVersion", "kind", "metadata", *case.expected} - {
            "rules"
        }
        if "rules" not in case.expected:  # an aggregated role: no rules were sent
            assert stored.get("rules") is None, case.id


def test_secret_contents(made: dict[str, Made], kctl: Kubectl) -> None:
    pull = made["secret-docker-registry"].stored
    assert pull is not None and list(pull["data"]) == [".dockerconfigjson"]
    config = json.loads(base64.b64decode(pull["data"][".dockerconfigjson"]))
    auth = config["auths"]["r.example.com"]
    assert (auth["username"], auth["password"]) == ("u", "p")
    assert auth["auth"] == base64.b64encode(b"u:p").decode()
    serving = made["secret-tls"].stored
    assert serving is not None and sorted(serving["data"]) == ["tls.crt", "tls.key"]
    home = kctl.kubeconfig.parent
    assert base64.b64decode(serving["data"]["tls.crt"]) == (home / "tls.crt").read_bytes()
    assert base64.b64decode(serving["data"]["tls.key"]) == (home / "tls.key").read_bytes()


# -- the same objects as JSON through kubectl create -f ------------------------------

COPY = "-json"  # suffix of the copies' names
SYSTEM = ("uid", "resourceVersion", "creationTimestamp", "generation")


def _drop(obj: dict[str, Any], path: tuple[str, ...]) -> None:
    *parents, last = path
    for key in parents:
        obj = obj.get(key) or {}
    obj.pop(last, None)


def _without_creation_timestamps(fields: Any) -> Any:
    """A managedFields set without ``f:creationTimestamp``: kubectl 1.32's JSON has
    ``creationTimestamp: null`` in every nested ObjectMeta (older Go types), which the
    server counts as a set field; its protobuf, decoded as the current Go types do
    (``omitzero``), has none."""
    if not isinstance(fields, dict):
        return fields
    out = {
        k: _without_creation_timestamps(v) for k, v in fields.items() if k != "f:creationTimestamp"
    }
    return {} if out == {".": {}} else out  # "." marks a map with fields of its own


def _comparable(obj: dict[str, Any], case: Case) -> dict[str, Any]:
    """The stored object without its name, system fields, server-made values and the
    write times of its managedFields."""
    out: dict[str, Any] = json.loads(json.dumps(obj))
    meta = out["metadata"]
    for key in ("name", *SYSTEM):
        meta.pop(key, None)
    for entry in meta.get("managedFields", []):
        entry.pop("time", None)
        entry["fieldsV1"] = _without_creation_timestamps(entry.get("fieldsV1"))
    for path in case.volatile:
        _drop(out, path)
    return out


def test_create_f_of_the_same_json_stores_the_same_object(
    made: dict[str, Made], kctl: Kubectl, server: EmbeddedServer, tmp_path: Path
) -> None:
    """The protobuf body and kubectl's JSON of the same object are stored alike."""
    documents = []
    for case in CASES:
        doc = made[case.id].as_json
        assert doc, f"{case.id}: kubectl --dry-run=client -o json failed"
        doc["metadata"]["name"] = case.name + COPY
        if case.id == "service-nodeport":
            doc["spec"]["ports"][0]["nodePort"] = 30081  # 30080 is taken
        documents.append(doc)
    manifest = tmp_path / "all.yaml"
    manifest.write_text(yaml.safe_dump_all(documents))
    out = kctl.ok("create", "-f", str(manifest))
    assert len(out.strip().splitlines()) == len(CASES), out
    for case in CASES:
        first = made[case.id].stored
        assert first is not None
        copy = api_get(server, case.path + COPY)
        assert copy is not None, case.id
        want = _comparable(first, case)
        got = _comparable(copy, case)
        if case.id == "service-nodeport":
            assert copy["spec"]["ports"][0]["nodePort"] == 30081
        assert got == want, case.id


def test_get_o_yaml_reads_every_object_back(made: dict[str, Made], kctl: Kubectl) -> None:
    stored = [made[case.id].stored for case in CASES]
    targets = [_typed_name(obj) for obj in stored if obj is not None]
    assert len(targets) == len(CASES)
    listed = yaml.safe_load(kctl.ok("get", *targets, "-o", "yaml"))
    assert listed["kind"] == "List"
    for obj in stored:
        assert obj is not None
        obj = json.loads(json.dumps(obj))
        obj["metadata"].pop("managedFields", None)  # kubectl leaves them out
    shown = [{**item, "metadata": {**item["metadata"]}} for item in listed["items"]]
    want = []
    for obj in stored:
        assert obj is not None
        meta = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
        want.append({**obj, "metadata": meta})
    assert shown == want


# -- token, can-i, reconcile --------------------------------------------------------------


def _claims(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    claims: dict[str, Any] = json.loads(
        base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
    )
    return claims


def test_create_token(made: dict[str, Made], kctl: Kubectl) -> None:
    account = made["serviceaccount"].stored
    assert account is not None
    token = kctl.ok("create", "token", "robot").strip()
    claims = _claims(token)
    assert claims["sub"] == "system:serviceaccount:default:robot"
    assert claims["kubernetes.io"]["serviceaccount"] == {
        "name": "robot",
        "uid": account["metadata"]["uid"],
    }
    assert claims["exp"] - claims["iat"] == 3600  # kube's default expirationSeconds
    assert claims["aud"]

    secret = made["secret-generic"].stored
    assert secret is not None
    token = kctl.ok(
        "create",
        "token",
        "robot",
        "--duration=10m",
        "--audience=api.example.com",
        "--bound-object-kind=Secret",
        "--bound-object-name=creds",
    ).strip()
    claims = _claims(token)
    assert claims["exp"] - claims["iat"] == 600
    assert claims["aud"] == ["api.example.com"]
    assert claims["kubernetes.io"]["secret"] == {"name": "creds", "uid": secret["metadata"]["uid"]}

    missing = kctl.run("create", "token", "nobody")
    assert missing.returncode != 0
    assert 'serviceaccounts "nobody" not found' in missing.stderr


def test_auth_can_i(kctl: Kubectl) -> None:
    assert kctl.ok("auth", "can-i", "create", "roles.rbac.authorization.k8s.io").strip() == "yes"
    token = ("auth", "can-i", "create", "serviceaccounts", "--subresource=token")
    assert kctl.ok(*token).strip() == "yes"
    listed = kctl.ok("auth", "can-i", "--list")
    assert "*.*" in listed.split()


RECONCILE = """
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: rec-reader}
rules:
- {apiGroups: [""], resources: [pods], verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: rec-readers}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: rec-reader}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: zed}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: rec-config, namespace: rec}
rules:
- {apiGroups: [""], resources: [configmaps], verbs: [get, list]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: rec-config, namespace: rec}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: rec-config}
subjects:
- {kind: ServiceAccount, name: default, namespace: rec}
"""


def _versions(server: EmbeddedServer) -> dict[str, str]:
    paths = {
        "ClusterRole": f"/apis/{RBAC}/v1/clusterroles/rec-reader",
        "ClusterRoleBinding": f"/apis/{RBAC}/v1/clusterrolebindings/rec-readers",
        "Role": f"/apis/{RBAC}/v1/namespaces/rec/roles/rec-config",
        "RoleBinding": f"/apis/{RBAC}/v1/namespaces/rec/rolebindings/rec-config",
    }
    out = {}
    for kind, path in paths.items():
        obj = api_get(server, path)
        assert obj is not None, path
        out[kind] = obj["metadata"]["resourceVersion"]
    return out


def test_auth_reconcile(kctl: Kubectl, server: EmbeddedServer, tmp_path: Path) -> None:
    """Creates through protobuf POSTs, then only what changed through protobuf PUTs."""
    manifest = tmp_path / "rbac.yaml"
    manifest.write_text(RECONCILE)
    out = kctl.ok("auth", "reconcile", "-f", str(manifest))
    assert out.count(" reconciled") == 4, out
    created = _versions(server)  # all four made; and the namespace they need
    assert api_get(server, "/api/v1/namespaces/rec") is not None
    role = api_get(server, f"/apis/{RBAC}/v1/namespaces/rec/roles/rec-config")
    assert role is not None
    assert role["rules"] == [
        {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["configmaps"]}
    ]

    manifest.write_text(
        RECONCILE.replace("verbs: [get]}", "verbs: [get, watch]}").replace(
            "name: zed}",
            "name: zed}\n- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: ops}",
        )
    )
    kctl.ok("auth", "reconcile", "-f", str(manifest))
    updated = _versions(server)
    changed = {kind for kind in created if created[kind] != updated[kind]}
    assert changed == {"ClusterRole", "ClusterRoleBinding"}
    cluster_role = api_get(server, f"/apis/{RBAC}/v1/clusterroles/rec-reader")
    assert cluster_role is not None
    assert cluster_role["rules"] == [
        {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]},
        {"verbs": ["watch"], "apiGroups": [""], "resources": ["pods"]},
    ]
    binding = api_get(server, f"/apis/{RBAC}/v1/clusterrolebindings/rec-readers")
    assert binding is not None
    assert binding["subjects"] == [
        _user("zed"),
        {"apiGroup": RBAC, "kind": "Group", "name": "ops"},
    ]

    kctl.ok("auth", "reconcile", "-f", str(manifest))
    assert _versions(server) == updated  # nothing left to reconcile
