"""The kubectl verbs a user runs every day, against the embedded server with the simulated
cluster (Nodes, scheduler, kubelets, the Deployment and ReplicaSet controllers):
``replace``, ``set``, ``rollout``, ``autoscale``, ``taint``/``cordon``/``drain``,
``label``/``annotate``, the ``get`` output forms and selectors, ``delete`` and ``wait``
options, ``apply --prune`` and the dry runs, ``diff``, ``events``, ``auth whoami``,
subresources, ``explain --recursive``, ``kustomize`` and ``top``.

One server serves the module; every test works in a namespace of its own, named in its
kubeconfig's context as a user's would be, and has a discovery cache of its own. What is
asserted is what kubectl prints against a cluster for the same commands, and its exit code.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.apiserver.simulate import SimulationConfig
from kubewerk.apiserver.simulate.workloads import appended_history

from .conftest import LineReader, wait_until

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[EmbeddedServer, Path]]:
    """One simulated two-node cluster for the module, and its kubeconfig."""
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed")
    # Pods start at once; a Pod deleted gracefully stays Terminating for 0.3 s
    config = SimulationConfig.with_nodes(2, start_seconds=0.05, terminate_seconds=0.3)
    srv = EmbeddedServer("memory", simulate=config, bookmark_interval=0.5).start_in_thread()
    try:
        yield srv, srv.write_kubeconfig(tmp_path_factory.mktemp("verbs") / "kubeconfig")
    finally:
        srv.stop_thread()


@pytest.fixture
def ns(cluster: tuple[EmbeddedServer, Path], request: pytest.FixtureRequest) -> str:
    """A namespace of the test's own (``v-<test name>``)."""
    name = "v-" + request.node.name.removeprefix("test_").replace("_", "-")[:50].strip("-")
    api(cluster[0], "POST", "/api/v1/namespaces", {"metadata": {"name": name}})
    return name


@pytest.fixture
def kenv(cluster: tuple[EmbeddedServer, Path], ns: str, tmp_path: Path) -> dict[str, str]:
    """kubectl's environment: a kubeconfig whose context names the test's namespace, and a
    discovery cache of the test's own."""
    config = yaml.safe_load(cluster[1].read_text())
    config["contexts"][0]["context"]["namespace"] = ns
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    return {**os.environ, "KUBECONFIG": str(kubeconfig), "KUBECACHEDIR": str(tmp_path / "cache")}


class Kubectl:
    """Runs ``kubectl`` in a test's namespace (``check`` fails the test on a non-zero exit);
    ``srv`` and ``ns`` let checks read objects straight from the server."""

    def __init__(self, srv: EmbeddedServer, ns: str, env: dict[str, str]) -> None:
        binary = shutil.which("kubectl")
        assert binary is not None
        self.binary, self.srv, self.ns, self.env = binary, srv, ns, env

    def __call__(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 30
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [self.binary, *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=self.env,
            check=False,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n"
                f"{proc.stderr}"
            )
        return proc


@pytest.fixture
def kc(cluster: tuple[EmbeddedServer, Path], ns: str, kenv: dict[str, str]) -> Kubectl:
    return Kubectl(cluster[0], ns, kenv)


def api(srv: EmbeddedServer, method: str, path: str, body: Any = None) -> Any:
    """One JSON request to the server (for setup that need not go through kubectl)."""
    data = None if body is None else json.dumps(body).encode()
    content = "application/merge-patch+json" if method == "PATCH" else "application/json"
    req = urllib.request.Request(
        srv.url + path, data=data, method=method, headers={"Content-Type": content}
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


RESOURCES = {
    "configmap": "/api/v1/namespaces/{ns}/configmaps",
    "pod": "/api/v1/namespaces/{ns}/pods",
    "service": "/api/v1/namespaces/{ns}/services",
    "node": "/api/v1/nodes",
    "deployment": "/apis/apps/v1/namespaces/{ns}/deployments",
    "replicaset": "/apis/apps/v1/namespaces/{ns}/replicasets",
    "rolebinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
    "hpa": "/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers",
    "pdb": "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets",
    "endpoints": "/api/v1/namespaces/{ns}/endpoints",
}


def read(kc: Kubectl, kind: str, name: str | None = None, selector: str | None = None) -> Any:
    """An object (or a list, without ``name``) of the test's namespace, read from the
    server directly: the checks of what kubectl did need not start kubectl again."""
    path = RESOURCES[kind].format(ns=kc.ns)
    if name is not None:
        path += f"/{name}"
    if selector is not None:
        path += "?labelSelector=" + urllib.parse.quote(selector)
    return api(kc.srv, "GET", path)


def get_json(kc: Kubectl, *args: str) -> Any:
    """``kubectl get ARGS -o json``: for what kubectl itself adds (flags such as
    ``--subresource`` or ``--show-managed-fields``)."""
    return json.loads(kc("get", *args, "-o", "json").stdout)


def lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.strip().splitlines()]


def columns(text: str) -> list[list[str]]:
    """A kubectl table as rows of cells (cells are separated by 2+ spaces)."""
    return [re.split(r"\s{2,}", line.strip()) for line in text.strip().splitlines()]


def configmap(name: str, labels: dict[str, str] | None = None, **data: str) -> str:
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    return yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data})


def rolled_out(kc: Kubectl, name: str) -> None:
    """``kubectl rollout status``, and what it says once the rollout is complete."""
    out = kc("rollout", "status", f"deployment/{name}", "--timeout=30s", timeout=40)
    assert lines(out.stdout)[-1] == f'deployment "{name}" successfully rolled out', out.stdout


def settled(kc: Kubectl, name: str) -> None:
    """Wait, reading the server directly, until the Deployment is rolled out as
    ``rollout status`` judges it (for setup: a kubectl less to start)."""

    def done() -> bool:
        d = read(kc, "deployment", name)
        status = d.get("status") or {}
        want = d["spec"]["replicas"]
        return bool(
            status.get("observedGeneration", 0) >= d["metadata"]["generation"]
            and status.get("updatedReplicas", 0) == want
            and status.get("replicas", 0) == want
            and status.get("availableReplicas", 0) == want
        )

    wait_until(done, timeout=30)


# -- replace -------------------------------------------------------------------------------


def test_replace_and_replace_force(kc: Kubectl, ns: str, tmp_path: Path) -> None:
    kc("create", "configmap", "cfg", "--from-literal=k=v1")
    live = get_json(kc, "configmap", "cfg")  # as a user saves it to edit
    live["data"]["k"] = "v2"
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps(live))

    assert kc("replace", "-f", str(path)).stdout.strip() == "configmap/cfg replaced"
    after = read(kc, "configmap", "cfg")
    assert after["data"] == {"k": "v2"} and after["metadata"]["uid"] == live["metadata"]["uid"]

    # the file still names the old resourceVersion: the server refuses the stale write
    stale = kc("replace", "-f", str(path), check=False)
    assert stale.returncode == 1
    assert stale.stderr.strip() == (
        f'Error from server (Conflict): error when replacing "{path}": Operation cannot be '
        'fulfilled on configmaps "cfg": the object has been modified; please apply your '
        "changes to the latest version and try again"
    )

    # --force deletes and creates again: a new object (uid), whatever the file's version
    forced = kc("replace", "--force", "-f", str(path))
    assert lines(forced.stdout) == ['configmap "cfg" deleted', "configmap/cfg replaced"]
    recreated = read(kc, "configmap", "cfg")
    assert recreated["metadata"]["uid"] != live["metadata"]["uid"]
    assert recreated["data"] == {"k": "v2"}

    missing = tmp_path / "missing.yaml"
    missing.write_text(configmap("absent", k="v"))
    gone = kc("replace", "-f", str(missing), check=False)
    assert gone.returncode == 1
    assert gone.stderr.strip() == (
        f'Error from server (NotFound): error when replacing "{missing}": '
        'configmaps "absent" not found'
    )


# -- set -----------------------------------------------------------------------------------


def test_set_image_env_resources_serviceaccount_selector_subject(kc: Kubectl, ns: str) -> None:
    kc("create", "deployment", "web", "--image=nginx:1.0")
    wrong = kc("set", "image", "deployment/web", "web=nginx:1.1", check=False)
    assert wrong.returncode == 1
    assert wrong.stderr.strip() == 'error: unable to find container named "web"'
    out = kc("set", "image", "deployment/web", "nginx=nginx:1.1")
    assert out.stdout.strip() == "deployment.apps/web image updated"

    assert kc("set", "env", "deployment/web", "FOO=bar", "BAZ=1").stdout.strip() == (
        "deployment.apps/web env updated"
    )
    listed = kc("set", "env", "deployment/web", "--list").stdout
    assert lines(listed) == ["# Deployment web, container nginx", "FOO=bar", "BAZ=1"]
    kc("set", "env", "deployment/web", "FOO-")

    out = kc(
        "set",
        "resources",
        "deployment/web",
        "-c=nginx",
        "--limits=cpu=200m,memory=512Mi",
        "--requests=cpu=0.1",
    )
    assert out.stdout.strip() == "deployment.apps/web resource requirements updated"
    out = kc("set", "serviceaccount", "deployment/web", "robot")
    assert out.stdout.strip() == "deployment.apps/web serviceaccount updated"

    spec = read(kc, "deployment", "web")["spec"]["template"]["spec"]
    container = spec["containers"][0]
    assert container["image"] == "nginx:1.1"
    assert container["env"] == [{"name": "BAZ", "value": "1"}]
    # quantities are stored in their canonical form (0.1 is 100m)
    assert container["resources"] == {
        "limits": {"cpu": "200m", "memory": "512Mi"},
        "requests": {"cpu": "100m"},
    }
    # serviceAccount is the deprecated alias kube's v1 conversion writes back on every read
    assert (spec["serviceAccountName"], spec["serviceAccount"]) == ("robot", "robot")
    # and the alias alone names the account (a manifest from before serviceAccountName)
    overrides = json.dumps({"spec": {"serviceAccount": "robot"}})
    kc("run", "old-style", "--image=busybox", f"--overrides={overrides}")
    pod_spec = read(kc, "pod", "old-style")["spec"]
    assert (pod_spec["serviceAccountName"], pod_spec["serviceAccount"]) == ("robot", "robot")

    kc("create", "service", "clusterip", "front", "--tcp=80:8080")
    out = kc("set", "selector", "service/front", "app=web,tier=front")
    assert out.stdout.strip() == "service/front selector updated"
    assert read(kc, "service", "front")["spec"]["selector"] == {"app": "web", "tier": "front"}

    kc("create", "rolebinding", "viewers", "--clusterrole=view", "--user=alice")
    out = kc(
        "set",
        "subject",
        "rolebinding/viewers",
        "--user=bob",
        "--group=devs",
        f"--serviceaccount={ns}:robot",
    )
    assert out.stdout.strip() == "rolebinding.rbac.authorization.k8s.io/viewers subjects updated"
    subjects = read(kc, "rolebinding", "viewers")["subjects"]
    rbac = "rbac.authorization.k8s.io"
    assert subjects == [
        {"apiGroup": rbac, "kind": "User", "name": "alice"},
        {"apiGroup": rbac, "kind": "User", "name": "bob"},
        {"apiGroup": rbac, "kind": "Group", "name": "devs"},
        {"kind": "ServiceAccount", "name": "robot", "namespace": ns},
    ]


# -- rollout -------------------------------------------------------------------------------


def observed(kc: Kubectl, name: str) -> None:
    """Wait until the Deployment controller has seen the Deployment's newest spec."""

    def seen() -> bool:
        d = read(kc, "deployment", name)
        return bool(
            (d.get("status") or {}).get("observedGeneration", 0) >= d["metadata"]["generation"]
        )

    wait_until(seen, timeout=20)


def history(kc: Kubectl, name: str) -> list[list[str]]:
    out = kc("rollout", "history", f"deployment/{name}").stdout
    rows = columns(out)
    assert rows[0] == [f"deployment.apps/{name}"], out
    assert rows[1] == ["REVISION", "CHANGE-CAUSE"], out
    return rows[2:]


def image(kc: Kubectl, name: str) -> str:
    deploy = read(kc, "deployment", name)
    return str(deploy["spec"]["template"]["spec"]["containers"][0]["image"])


def test_rollout_history_undo_pause_resume_restart(kc: Kubectl, ns: str) -> None:
    kc("create", "deployment", "web", "--image=nginx:1.0", "--replicas=2")
    rolled_out(kc, "web")
    kc("set", "image", "deployment/web", "nginx=nginx:1.1")
    kc("annotate", "deployment/web", "kubernetes.io/change-cause=to 1.1")
    settled(kc, "web")

    def cause_copied() -> bool:
        # the controller's next sync of the Deployment copies the annotation to its new set
        return any(
            (rs["metadata"].get("annotations") or {}).get("kubernetes.io/change-cause") == "to 1.1"
            for rs in read(kc, "replicaset")["items"]
        )

    wait_until(cause_copied, timeout=10)
    assert history(kc, "web") == [["1", "<none>"], ["2", "to 1.1"]]
    detail = kc("rollout", "history", "deployment/web", "--revision=2").stdout
    assert lines(detail)[0] == "deployment.apps/web with revision #2"
    assert re.search(r"^\s+Image:\s+nginx:1\.1$", detail, re.M), detail
    assert re.search(r"^\s+Annotations:\s+kubernetes\.io/change-cause: to 1\.1$", detail, re.M)
    two_sets = columns(kc("get", "replicasets").stdout)
    assert sorted(row[1:3] for row in two_sets[1:]) == [["0", "0"], ["2", "2"]]

    # undo: the previous template comes back as the newest revision
    assert kc("rollout", "undo", "deployment/web").stdout.strip() == (
        "deployment.apps/web rolled back"
    )
    rolled_out(kc, "web")
    assert image(kc, "web") == "nginx:1.0"
    assert history(kc, "web") == [["2", "to 1.1"], ["3", "<none>"]]
    # the ReplicaSet of revision 1 is new again, and remembers it was 1
    revived = [
        rs["metadata"]["annotations"]
        for rs in read(kc, "replicaset")["items"]
        if rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    ]
    assert [a.get("deployment.kubernetes.io/revision-history") for a in revived] == ["1"]
    nowhere = kc("rollout", "undo", "deployment/web", "--to-revision=9", check=False)
    assert nowhere.returncode == 1
    assert nowhere.stderr.strip() == "error: unable to find specified revision 9 in history"

    # paused: a template change waits, and undo is refused until resumed
    assert kc("rollout", "pause", "deployment/web").stdout.strip() == "deployment.apps/web paused"
    again = kc("rollout", "pause", "deployment/web", check=False)
    assert again.returncode == 1
    assert again.stderr.strip() == 'error: deployments.apps "web" is already paused'
    kc("set", "image", "deployment/web", "nginx=nginx:1.2")
    observed(kc, "web")
    waiting = kc("rollout", "status", "deployment/web", "--timeout=1s", check=False)
    assert waiting.returncode == 1
    assert lines(waiting.stdout)[-1] == (
        'Waiting for deployment "web" rollout to finish: 0 out of 2 new replicas have been '
        "updated..."
    )
    assert waiting.stderr.strip() == "error: timed out waiting for the condition"
    paused = read(kc, "deployment", "web")["status"]["conditions"]
    progressing = next(c for c in paused if c["type"] == "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("Unknown", "DeploymentPaused")
    refused = kc("rollout", "undo", "deployment/web", check=False)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        "error: you cannot rollback a paused deployment; resume it first with "
        "'kubectl rollout resume' and try again"
    )
    assert kc("rollout", "resume", "deployment/web").stdout.strip() == (
        "deployment.apps/web resumed"
    )
    not_paused = kc("rollout", "resume", "deployment/web", check=False)
    assert not_paused.returncode == 1
    assert not_paused.stderr.strip() == 'error: deployments.apps "web" is not paused'
    rolled_out(kc, "web")
    assert image(kc, "web") == "nginx:1.2"

    # restart: a new template (the restartedAt annotation), so a new ReplicaSet
    assert kc("rollout", "restart", "deployment/web").stdout.strip() == (
        "deployment.apps/web restarted"
    )
    rolled_out(kc, "web")
    template = read(kc, "deployment", "web")["spec"]["template"]
    restarted = template["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", restarted), restarted
    assert [row[0] for row in history(kc, "web")] == ["2", "3", "4", "5"]

    def two_running() -> bool:
        pods = columns(kc("get", "pods", "-l", "app=web").stdout)[1:]
        return len(pods) == 2 and all(row[1:3] == ["1/1", "Running"] for row in pods)

    # rollout status is done once the new Pods are available; an old one may still be
    # Terminating (its grace period), as on a cluster
    wait_until(two_running, timeout=30)


def test_revision_history_is_bounded_as_the_controller_bounds_it() -> None:
    """What a ReplicaSet rolled back to many times records (kube's 2000-character limit,
    oldest revisions dropped first)."""
    assert appended_history("", "1") == "1"
    assert appended_history("1,3", "5") == "1,3,5"
    full = ",".join(str(n) for n in range(1000, 1400))  # 1999 characters
    assert len(full) == 1999
    assert appended_history(full, "7") == ",".join([*full.split(",")[1:], "7"])
    assert appended_history("1", "9" * 2001) == "1"  # cannot fit however much is dropped


# -- autoscale -----------------------------------------------------------------------------


def test_autoscale(kc: Kubectl, ns: str) -> None:
    kc("create", "deployment", "web", "--image=nginx")
    out = kc("autoscale", "deployment", "web", "--min=2", "--max=5", "--cpu-percent=80")
    assert out.stdout.strip() == "horizontalpodautoscaler.autoscaling/web autoscaled"
    table = columns(kc("get", "hpa").stdout)
    assert table[0] == ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"]
    assert table[1][:6] == ["web", "Deployment/web", "cpu: <unknown>/80%", "2", "5", "0"]
    hpa = read(kc, "hpa", "web")
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"] == {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 2,
        "maxReplicas": 5,
        "metrics": [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 80},
                },
            }
        ],
    }
    # the same HPA read in autoscaling/v1 (the form kubectl autoscale once wrote)
    v1 = json.loads(
        kc(
            "get", "--raw", f"/apis/autoscaling/v1/namespaces/{ns}/horizontalpodautoscalers/web"
        ).stdout
    )
    assert v1["spec"]["targetCPUUtilizationPercentage"] == 80
    again = kc("autoscale", "deployment", "web", "--max=3", check=False)
    assert again.returncode == 1
    assert again.stderr.strip() == (
        'Error from server (AlreadyExists): horizontalpodautoscalers.autoscaling "web" '
        "already exists"
    )


# -- nodes: taint, cordon, drain -----------------------------------------------------------


NODES = ("kubewerk-node-0", "kubewerk-node-1")


def test_taint_cordon_uncordon_drain(kc: Kubectl, ns: str) -> None:
    node = NODES[1]
    try:
        _taints(kc, node)
        _cordon(kc, node)
        _drain(kc, ns)
    finally:
        for name in NODES:
            kc("uncordon", name)
            kc("taint", "nodes", name, "dedicated-", check=False)


def _taints(kc: Kubectl, node: str) -> None:
    out = kc("taint", "nodes", node, "dedicated=db:NoSchedule")
    assert out.stdout.strip() == f"node/{node} tainted"
    twice = kc("taint", "nodes", node, "dedicated=db:NoSchedule", check=False)
    assert twice.returncode == 1
    assert twice.stderr.strip() == (
        f"error: node {node} already has dedicated taint(s) with same effect(s) and "
        "--overwrite is false"
    )
    out = kc("taint", "nodes", node, "dedicated=cache:NoSchedule", "--overwrite")
    assert out.stdout.strip() == f"node/{node} modified"
    assert read(kc, "node", node)["spec"]["taints"] == [
        {"key": "dedicated", "value": "cache", "effect": "NoSchedule"}
    ]
    # a Pod without the toleration is not scheduled there
    kc("taint", "nodes", NODES[0], "dedicated=cache:NoSchedule")
    kc("run", "plain", "--image=busybox")
    kc(
        "wait",
        "--for=jsonpath={.status.conditions[0].reason}=Unschedulable",
        "pod/plain",
        "--timeout=10s",
    )
    message = read(kc, "pod", "plain")["status"]["conditions"][0]["message"]
    assert message.startswith(
        "0/2 nodes are available: 2 node(s) had untolerated taint {dedicated: cache}."
    ), message
    kc("taint", "nodes", NODES[0], "dedicated:NoSchedule-")
    out = kc("taint", "nodes", node, "dedicated:NoSchedule-")
    assert out.stdout.strip() == f"node/{node} untainted"
    absent = kc("taint", "nodes", node, "dedicated:NoSchedule-", check=False)
    assert absent.returncode == 1
    assert absent.stderr.strip() == 'error: taint "dedicated:NoSchedule" not found'
    assert "taints" not in read(kc, "node", node)["spec"]
    kc("wait", "--for=condition=Ready", "pod/plain", "--timeout=10s")
    kc("delete", "pod", "plain", "--now")


def _cordon(kc: Kubectl, node: str) -> None:
    assert kc("cordon", node).stdout.strip() == f"node/{node} cordoned"
    assert kc("cordon", node).stdout.strip() == f"node/{node} already cordoned"
    rows = {row[0]: row[1] for row in columns(kc("get", "nodes").stdout)[1:]}
    assert rows == {NODES[0]: "Ready", NODES[1]: "Ready,SchedulingDisabled"}
    assert read(kc, "node", node)["spec"]["unschedulable"] is True

    # the node lifecycle controller taints a cordoned node (TaintNodesByCondition)
    def taint_keys() -> list[str]:
        return [t["key"] for t in read(kc, "node", node)["spec"].get("taints", [])]

    wait_until(lambda: taint_keys() == ["node.kubernetes.io/unschedulable"], timeout=10)
    described = kc("describe", "node", node).stdout
    assert re.search(r"^Taints:\s+node\.kubernetes\.io/unschedulable:NoSchedule$", described, re.M)
    assert re.search(r"^Unschedulable:\s+true$", described, re.M), described
    assert kc("uncordon", node).stdout.strip() == f"node/{node} uncordoned"
    assert kc("uncordon", node).stdout.strip() == f"node/{node} already uncordoned"
    assert "unschedulable" not in read(kc, "node", node)["spec"]
    wait_until(lambda: taint_keys() == [], timeout=10)


def _drain(kc: Kubectl, ns: str) -> None:
    kc("create", "deployment", "web", "--image=nginx", "--replicas=2")
    settled(kc, "web")
    node = read(kc, "pod", selector="app=web")["items"][0]["spec"]["nodeName"]
    other = NODES[1 - NODES.index(node)]
    kc("run", "bare", "--image=busybox", f"--overrides={json.dumps({'spec': {'nodeName': node}})}")

    refused = kc("drain", node, "--timeout=20s", check=False)
    assert refused.returncode == 1
    assert lines(refused.stdout) == [f"node/{node} cordoned"]
    # kubectl's own wording (it says "cannot delete" twice); the list names every such Pod
    # on the node, other tests' too
    assert refused.stderr.startswith(
        f'error: unable to drain node "{node}" due to error: cannot delete cannot delete Pods '
        "that declare no controller (use --force to override): "
    ), refused.stderr
    assert re.search(rf"[ ,]{re.escape(ns)}/bare[,\n]", refused.stderr), refused.stderr

    on_node = sorted(
        p["metadata"]["name"] for p in read(kc, "pod")["items"] if p["spec"]["nodeName"] == node
    )
    out = kc("drain", node, "--force", "--timeout=20s", timeout=40)
    assert f"node/{node} already cordoned" in out.stdout
    assert out.stdout.strip().endswith(f"node/{node} drained"), out.stdout
    assert "Warning: deleting Pods that declare no controller: " in out.stderr
    assert f"{ns}/bare" in out.stderr
    # drain evicts (pods/eviction), as against a cluster; it deletes only without one
    # (the node also ran other tests' Pods: only this namespace's are checked)
    said = (out.stdout + out.stderr).splitlines()
    evicting = sorted(
        line.removeprefix(f"evicting pod {ns}/")
        for line in said
        if line.startswith(f"evicting pod {ns}/")
    )
    assert evicting == on_node, said
    assert all(f"pod/{name} evicted" in said for name in on_node), said
    settled(kc, "web")
    pods = read(kc, "pod")["items"]
    assert [p["spec"]["nodeName"] for p in pods] == [other, other]
    assert all(p["metadata"]["labels"]["app"] == "web" for p in pods)


def eviction(name: str, **options: Any) -> str:
    body: dict[str, Any] = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": name},
    }
    if options:
        body["deleteOptions"] = options
    return json.dumps(body)


def test_evictions_and_disruption_budgets(kc: Kubectl, ns: str) -> None:
    evict = ["create", "--raw", f"/api/v1/namespaces/{ns}/pods/{{}}/eviction", "-f", "-"]

    def post(pod: str, body: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return kc(*(a.format(pod) for a in evict), input=body, check=check)

    # a Pod outside any budget: its DisruptionTarget condition, then its delete
    kc("run", "bare", "--image=busybox", "--overrides", '{"metadata":{"finalizers":["e2e/hold"]}}')
    kc("wait", "--for=condition=Ready", "pod/bare", "--timeout=10s")
    status = json.loads(post("bare", eviction("bare")).stdout)
    assert status == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": 201,
    }
    pod = read(kc, "pod", "bare")
    assert pod["metadata"]["deletionTimestamp"]
    target = [c for c in pod["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert [(c["status"], c["reason"], c["message"]) for c in target] == [
        ("True", "EvictionByEvictionAPI", "Eviction API: evicting")
    ]
    kc(
        "patch",
        "pod",
        "bare",
        "--type=json",
        "-p",
        '[{"op":"remove","path":"/metadata/finalizers"}]',
    )
    mismatch = post("bare", eviction("other"), check=False)
    assert mismatch.returncode == 1
    assert mismatch.stderr.strip() == (
        "Error from server (BadRequest): name in URL does not match name in Eviction object"
    )

    # a budget: its status is the (simulated) disruption controller's
    kc("create", "deployment", "web", "--image=nginx", "--replicas=2")
    settled(kc, "web")
    kc("create", "pdb", "web", "--selector=app=web", "--min-available=2")
    first, second = sorted(
        p["metadata"]["name"] for p in read(kc, "pod", selector="app=web")["items"]
    )
    wait_until(lambda: (read(kc, "pdb", "web").get("status") or {}).get("currentHealthy") == 2)
    busy = post(first, eviction(first), check=False)
    assert busy.returncode == 1
    assert busy.stderr.strip() == (
        "Error from server (TooManyRequests): Cannot evict pod as it would violate the pod's "
        "disruption budget."
    )
    kc("patch", "pdb", "web", "--type=merge", "-p", '{"spec":{"minAvailable":1}}')
    wait_until(lambda: (read(kc, "pdb", "web").get("status") or {}).get("disruptionsAllowed") == 1)
    dry = post(first, eviction(first, dryRun=["All"]))
    assert json.loads(dry.stdout)["status"] == "Success"
    assert read(kc, "pod", first)["metadata"].get("deletionTimestamp") is None
    assert json.loads(post(first, eviction(first)).stdout)["status"] == "Success"
    # two budgets over one Pod: kube refuses to choose
    kc("create", "pdb", "web2", "--selector=app=web", "--max-unavailable=1")
    two = json.loads(post(second, eviction(second)).stdout)
    assert (two["status"], two["code"]) == ("Failure", 500)
    assert two["message"] == (
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does "
        "not support."
    )
    assert read(kc, "pod", second)["metadata"].get("deletionTimestamp") is None


# -- label, annotate -----------------------------------------------------------------------


def test_label_and_annotate_overwrite_list_remove(kc: Kubectl, ns: str) -> None:
    kc("create", "configmap", "cfg", "--from-literal=k=v")
    assert kc("label", "configmap", "cfg", "tier=front", "env=prod").stdout.strip() == (
        "configmap/cfg labeled"
    )
    refused = kc("label", "configmap", "cfg", "tier=back", check=False)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        "error: 'tier' already has a value (front), and --overwrite is false"
    )
    kc("label", "configmap", "cfg", "tier=back", "--overwrite")
    # kubectl lists them in Go's map order: any order
    listed = lines(kc("label", "configmap", "cfg", "--list").stdout)
    assert sorted(listed) == ["env=prod", "tier=back"]
    assert kc("label", "configmap", "cfg", "env-").stdout.strip() == "configmap/cfg unlabeled"
    assert lines(kc("label", "configmap", "cfg", "--list").stdout) == ["tier=back"]
    # the same value again is not a change
    assert kc("label", "configmap", "cfg", "tier=back", "--overwrite").stdout.strip() == (
        "configmap/cfg not labeled"
    )

    kc("annotate", "configmap", "cfg", "note=one")
    refused = kc("annotate", "configmap", "cfg", "note=two", check=False)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        "error: --overwrite is false but found the following declared annotation(s): "
        "'note' already has a value (one)"
    )
    assert kc("annotate", "configmap", "cfg", "note=two", "--overwrite").stdout.strip() == (
        "configmap/cfg annotated"
    )
    assert kc("annotate", "configmap", "cfg", "note-").stdout.strip() == "configmap/cfg annotated"
    meta = read(kc, "configmap", "cfg")["metadata"]
    assert meta["labels"] == {"tier": "back"} and "annotations" not in meta
    # each verb is its own field manager
    managers = {
        e["manager"]
        for e in get_json(kc, "configmap", "cfg", "--show-managed-fields")["metadata"][
            "managedFields"
        ]
    }
    assert managers == {"kubectl-create", "kubectl-label"}


# -- get: output forms and selectors -------------------------------------------------------


def test_get_sorting_columns_templates_labels_and_selectors(
    kc: Kubectl, ns: str, tmp_path: Path
) -> None:
    docs = [
        configmap("gamma", {"tier": "back", "env": "dev"}, size="3"),
        configmap("alpha", {"tier": "front", "env": "prod"}, size="10"),
        configmap("beta", {"tier": "back"}, size="2"),
    ]
    kc("create", "-f", "-", input="---\n".join(docs))

    by_name = kc("get", "configmaps", "--sort-by=.metadata.name", "-o", "name").stdout
    assert lines(by_name) == ["configmap/alpha", "configmap/beta", "configmap/gamma"]
    # a jsonpath in braces too; kubectl sorts strings naturally ("2" < "3" < "10")
    out = kc(
        "get",
        "configmaps",
        "--sort-by={.data.size}",
        "-o",
        "custom-columns=NAME:.metadata.name,SIZE:.data.size,TIER:.metadata.labels.tier,"
        "ENV:.metadata.labels.env",
    ).stdout
    assert columns(out) == [
        ["NAME", "SIZE", "TIER", "ENV"],
        ["beta", "2", "back", "<none>"],
        ["gamma", "3", "back", "dev"],
        ["alpha", "10", "front", "prod"],
    ]
    template = '{{range .items}}{{.metadata.name}}={{index .data "size"}};{{end}}'
    out = kc("get", "configmaps", "-o", f"go-template={template}").stdout
    assert out == "alpha=10;beta=2;gamma=3;"
    template_file = tmp_path / "names.tmpl"
    template_file.write_text("{{.metadata.name}}")
    out = kc("get", "configmap", "beta", "-o", f"go-template-file={template_file}").stdout
    assert out == "beta"

    shown = columns(kc("get", "configmaps", "--show-labels").stdout)
    assert shown[0] == ["NAME", "DATA", "AGE", "LABELS"]
    assert {row[0]: row[3] for row in shown[1:]} == {
        "alpha": "env=prod,tier=front",
        "beta": "tier=back",
        "gamma": "env=dev,tier=back",
    }
    out = kc("get", "configmaps", "-L", "tier", "-L", "env").stdout
    rows = [line.split() for line in lines(out)]
    assert rows[0] == ["NAME", "DATA", "AGE", "TIER", "ENV"]
    assert [row[:1] + row[3:] for row in rows[1:]] == [
        ["alpha", "front", "prod"],
        ["beta", "back"],
        ["gamma", "back", "dev"],
    ]

    def names(*selector: str) -> list[str]:
        return lines(kc("get", "configmaps", *selector, "-o", "name").stdout)

    assert names("-l", "tier in (back),!env") == ["configmap/beta"]
    assert names("-l", "tier notin (back)") == ["configmap/alpha"]
    assert names("-l", "env") == ["configmap/alpha", "configmap/gamma"]
    assert names("-l", "tier=back,env!=dev") == ["configmap/beta"]
    assert names("--field-selector", "metadata.name!=beta") == [
        "configmap/alpha",
        "configmap/gamma",
    ]
    none = kc("get", "configmaps", "-l", "tier=none")
    assert none.stdout == "" and none.stderr.strip() == f"No resources found in {ns} namespace."
    bad = kc("get", "configmaps", "-l", "tier in back", check=False)
    assert bad.returncode == 1
    assert "unable to parse requirement" in bad.stderr, bad.stderr
    unknown = kc("get", "configmaps", "--field-selector", "data.size=2", check=False)
    assert unknown.returncode == 1
    assert unknown.stderr.strip() == (
        'Error from server (BadRequest): Unable to find "/v1, Resource=configmaps" that match '
        'label selector "", field selector "data.size=2": "data.size" is not a known field '
        'selector: only "metadata.name", "metadata.namespace"'
    )


def test_get_pods_by_field_chunks_raw_and_managed_fields(kc: Kubectl, ns: str) -> None:
    kc("create", "deployment", "web", "--image=nginx", "--replicas=3")
    settled(kc, "web")
    pods = read(kc, "pod")["items"]
    node = pods[0]["spec"]["nodeName"]
    on_node = sorted(p["metadata"]["name"] for p in pods if p["spec"]["nodeName"] == node)
    out = kc(
        "get",
        "pods",
        "--field-selector",
        f"status.phase=Running,spec.nodeName={node}",
        "-o",
        "name",
    ).stdout
    assert lines(out) == [f"pod/{name}" for name in on_node]
    assert kc("get", "pods", "--field-selector", "status.phase=Pending", "-o", "name").stdout == ""

    # one object a page: kubectl follows the continue tokens, the table is whole
    out = kc("get", "pods", "--chunk-size=1", "-v=6")
    pages = [line for line in out.stderr.splitlines() if "/pods?" in line and "GET" in line]
    assert len(pages) == 3 and sum("continue=" in line for line in pages) == 2, pages
    assert [row[0] for row in columns(out.stdout)[1:]] == sorted(
        p["metadata"]["name"] for p in pods
    )

    raw = json.loads(kc("get", "--raw", f"/api/v1/namespaces/{ns}/pods?limit=2").stdout)
    assert raw["kind"] == "PodList" and len(raw["items"]) == 2
    assert raw["metadata"]["continue"] and raw["metadata"]["remainingItemCount"] == 1
    assert kc("get", "--raw", "/readyz").stdout == "ok"
    missing = kc("get", "--raw", f"/api/v1/namespaces/{ns}/pods/nope", check=False)
    assert missing.returncode == 1
    assert missing.stderr.strip() == 'Error from server (NotFound): pods "nope" not found'

    plain = get_json(kc, "deployment", "web")
    assert "managedFields" not in plain["metadata"]
    managed = get_json(kc, "deployment", "web", "--show-managed-fields")["metadata"]
    entries = managed["managedFields"]
    by_manager = {(e.get("manager"), e["operation"], e.get("subresource")) for e in entries}
    # the controllers' writes carry kube-controller-manager's name, the kubelet's its own,
    # as their User-Agents name them on a cluster
    assert by_manager == {
        ("kubectl-create", "Update", None),
        ("kube-controller-manager", "Update", None),  # the revision annotation
        ("kube-controller-manager", "Update", "status"),
    }, by_manager
    pod = get_json(kc, "pod", pods[0]["metadata"]["name"], "--show-managed-fields")
    assert {(e.get("manager"), e.get("subresource")) for e in pod["metadata"]["managedFields"]} == {
        ("kube-controller-manager", None),
        ("kubelet", "status"),
    }


def test_get_watch_only(
    kc: Kubectl, kenv: dict[str, str], cluster: tuple[EmbeddedServer, Path], ns: str
) -> None:
    srv = cluster[0]
    kc("create", "configmap", "before", "--from-literal=k=v")
    binary = shutil.which("kubectl")
    assert binary is not None
    proc = subprocess.Popen(
        [binary, "get", "configmaps", "--watch-only", "--request-timeout=2s", "-v=6"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=kenv,
    )
    reader = LineReader(proc)
    try:
        reader.watching()
        base = f"/api/v1/namespaces/{ns}/configmaps"
        api(srv, "POST", base, {"metadata": {"name": "during"}, "data": {"a": "1"}})
        api(srv, "PATCH", f"{base}/before", {"data": {"k": "v", "x": "y"}})
        api(srv, "DELETE", f"{base}/during")
        assert reader.wait_for(lambda line: line.startswith("NAME")).split() == [
            "NAME",
            "DATA",
            "AGE",
        ]
        seen = [
            reader.wait_for(lambda line: not line.startswith("NAME")).split()[:2] for _ in range(3)
        ]
        # no line for what was there before the watch; one per change after it
        assert seen == [["during", "1"], ["before", "2"], ["during", "1"]]
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            reader.stop()


# -- delete --------------------------------------------------------------------------------


def test_delete_cascade_grace_all_and_selectors(kc: Kubectl, ns: str) -> None:
    kc("create", "deployment", "orphaned", "--image=nginx")
    kc("create", "deployment", "fore", "--image=nginx")
    settled(kc, "orphaned")
    settled(kc, "fore")

    out = kc("delete", "deployment", "orphaned", "--cascade=orphan")
    assert out.stdout.strip() == 'deployment.apps "orphaned" deleted'
    left = read(kc, "replicaset", selector="app=orphaned")["items"]
    assert len(left) == 1 and "ownerReferences" not in left[0]["metadata"]
    assert len(read(kc, "pod", selector="app=orphaned")["items"]) == 1

    # foreground: kubectl waits until the Deployment is gone, and it goes last
    out = kc("delete", "deployment", "fore", "--cascade=foreground", "-v=8")
    assert out.stdout.strip() == 'deployment.apps "fore" deleted'
    assert '"propagationPolicy":"Foreground"' in out.stderr
    assert read(kc, "replicaset", selector="app=fore")["items"] == []
    assert read(kc, "pod", selector="app=fore")["items"] == []

    # a grace period: the Pod is Terminating until its kubelet has stopped it (and here
    # until its finalizer is gone)
    pod = read(kc, "pod", selector="app=orphaned")["items"][0]["metadata"]["name"]
    kc("patch", "pod", pod, "--type=merge", "-p", '{"metadata":{"finalizers":["e2e/hold"]}}')
    out = kc("delete", "pod", pod, "--grace-period=7", "--wait=false", "-v=8")
    assert lines(out.stdout) == [f'pod "{pod}" deleted']
    assert '"gracePeriodSeconds":7' in out.stderr
    assert columns(kc("get", "pod", pod).stdout)[1][2] == "Terminating"
    assert read(kc, "pod", pod)["metadata"]["deletionTimestamp"]
    kc("patch", "pod", pod, "--type=json", "-p", '[{"op":"remove","path":"/metadata/finalizers"}]')
    kc("wait", "--for=delete", f"pod/{pod}", "--timeout=10s")
    # the orphaned ReplicaSet makes a new one
    kc("wait", "--for=condition=Ready", "pod", "-l", "app=orphaned", "--timeout=10s")

    # -l and --all
    kc("create", "configmap", "a", "--from-literal=k=v")
    kc("create", "configmap", "b", "--from-literal=k=v")
    kc("label", "configmap", "a", "drop=yes")
    out = kc("delete", "configmaps", "-l", "drop=yes")
    assert out.stdout.strip() == 'configmap "a" deleted'
    out = kc("delete", "replicasets,configmaps", "--all")
    assert lines(out.stdout) == [
        f'replicaset.apps "{left[0]["metadata"]["name"]}" deleted',
        'configmap "b" deleted',
    ]
    kc("wait", "--for=delete", "pod", "-l", "app=orphaned", "--timeout=10s")
    nothing = kc("delete", "configmaps", "--all")
    assert nothing.stdout.strip() == "No resources found" and nothing.stderr == ""
    missing = kc("delete", "configmap", "nope", check=False)
    assert missing.returncode == 1
    assert missing.stderr.strip() == 'Error from server (NotFound): configmaps "nope" not found'
    assert kc("delete", "configmap", "nope", "--ignore-not-found").stdout == ""
    # --force with no grace: the warning, and the object goes at once
    kc("run", "quick", "--image=busybox")
    out = kc("delete", "pod", "quick", "--force", "--grace-period=0")
    assert out.stdout.strip() == 'pod "quick" force deleted'
    assert out.stderr.strip() == (
        "Warning: Immediate deletion does not wait for confirmation that the running resource "
        "has been terminated. The resource may continue to run on the cluster indefinitely."
    )
    assert kc("get", "pod", "quick", check=False).returncode == 1


# -- wait ----------------------------------------------------------------------------------


def test_wait_for_create_jsonpath_and_delete(
    kc: Kubectl, kenv: dict[str, str], cluster: tuple[EmbeddedServer, Path], ns: str
) -> None:
    binary = shutil.which("kubectl")
    assert binary is not None
    base = f"/api/v1/namespaces/{ns}/configmaps"
    # --for=create (1.31+): waits for an object that does not exist yet
    waiter = subprocess.Popen(
        [binary, "wait", "--for=create", "configmap/later", "--timeout=20s"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=kenv,
    )
    try:
        api(cluster[0], "POST", base, {"metadata": {"name": "later"}, "data": {"phase": "one"}})
        stdout, stderr = waiter.communicate(timeout=25)
    finally:
        if waiter.poll() is None:
            waiter.kill()
            waiter.wait()
    assert waiter.returncode == 0, stderr
    assert stdout.strip() == "configmap/later condition met"

    out = kc("wait", "--for=jsonpath={.data.phase}=one", "configmap/later", "--timeout=5s")
    assert out.stdout.strip() == "configmap/later condition met"
    # without a value: the field only has to be there
    kc("wait", "--for=jsonpath={.data.phase}", "configmap/later", "--timeout=5s")
    late = kc(
        "wait", "--for=jsonpath={.data.phase}=two", "configmap/later", "--timeout=1s", check=False
    )
    assert late.returncode == 1
    assert late.stderr.strip() == "error: timed out waiting for the condition on configmaps/later"

    kc("delete", "configmap", "later", "--wait=false")
    out = kc("wait", "--for=delete", "configmap/later", "--timeout=5s")
    # already gone: nothing to wait for, and no error
    assert out.returncode == 0 and out.stderr == ""
    never = kc("wait", "--for=condition=Ready", "configmap/later", "--timeout=1s", check=False)
    assert never.returncode == 1
    assert never.stderr.strip() == 'Error from server (NotFound): configmaps "later" not found'


# -- apply --prune, dry runs, diff ---------------------------------------------------------


def test_apply_prune_allowlist_dry_runs_and_diff(kc: Kubectl, ns: str, tmp_path: Path) -> None:
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    for name in ("a", "b"):
        (manifests / f"{name}.yaml").write_text(configmap(f"pr-{name}", {"set": "one"}, k="v"))
    prune = ["apply", "--prune", "-l", "set=one", "--prune-allowlist=core/v1/ConfigMap"]
    out = kc(*prune, "-f", str(manifests))
    assert lines(out.stdout) == ["configmap/pr-a created", "configmap/pr-b created"]
    # not in the allow-list, so never pruned though it has the label
    kc("create", "secret", "generic", "keep", "--from-literal=k=v")
    kc("label", "secret", "keep", "set=one")

    (manifests / "b.yaml").unlink()
    out = kc(*prune, "-f", str(manifests), "--dry-run=server")
    assert lines(out.stdout) == [
        "configmap/pr-a unchanged (server dry run)",
        "configmap/pr-b pruned (server dry run)",
    ]
    out = kc(*prune, "-f", str(manifests), "--dry-run=client")
    assert lines(out.stdout) == [
        "configmap/pr-a configured (dry run)",
        "configmap/pr-b pruned (dry run)",
    ]
    assert kc("get", "configmap", "pr-b", "-o", "name").stdout.strip() == "configmap/pr-b"
    out = kc(*prune, "-f", str(manifests))
    assert lines(out.stdout) == ["configmap/pr-a unchanged", "configmap/pr-b pruned"]
    assert lines(kc("get", "configmaps,secrets", "-o", "name").stdout) == [
        "configmap/pr-a",
        "secret/keep",
    ]

    # server dry run: the answer is the object as it would be stored; nothing is stored
    changed = manifests / "a.yaml"
    changed.write_text(configmap("pr-a", {"set": "one"}, k="w"))
    before = read(kc, "configmap", "pr-a")
    dry = yaml.safe_load(kc("apply", "-f", str(changed), "--dry-run=server", "-o", "yaml").stdout)
    assert dry["data"] == {"k": "w"}
    assert dry["metadata"]["uid"] == before["metadata"]["uid"]
    assert read(kc, "configmap", "pr-a") == before

    created = yaml.safe_load(
        kc(
            "create", "deployment", "ghost", "--image=nginx", "--dry-run=server", "-o", "yaml"
        ).stdout
    )
    assert created["metadata"]["name"] == "ghost" and created["metadata"]["uid"]
    assert created["metadata"]["generation"] == 1 and "resourceVersion" not in created["metadata"]
    assert created["spec"]["strategy"]["type"] == "RollingUpdate"  # defaulted by the server
    client = yaml.safe_load(
        kc(
            "create", "deployment", "ghost", "--image=nginx", "--dry-run=client", "-o", "yaml"
        ).stdout
    )
    assert "uid" not in client["metadata"] and "strategy" not in client["spec"].get("strategy", {})
    assert kc("get", "deployment", "ghost", check=False).returncode == 1

    # diff: exit 1 with a diff, 0 without; --server-side merges on the server (dry run)
    diff = kc("diff", "-f", str(changed), check=False)
    assert diff.returncode == 1, diff.stderr
    assert "-  k: v\n+  k: w\n" in diff.stdout
    server_diff = kc("diff", "--server-side", "-f", str(changed), check=False)
    assert server_diff.returncode == 1, server_diff.stderr
    assert "-  k: v\n+  k: w\n" in server_diff.stdout
    assert read(kc, "configmap", "pr-a")["data"] == {"k": "v"}
    kc("apply", "-f", str(changed))
    same = kc("diff", "-f", str(changed))
    assert same.stdout == "" and same.returncode == 0
    new = tmp_path / "new.yaml"
    new.write_text(configmap("fresh", k="v"))
    created_diff = kc("diff", "-f", str(new), check=False)
    assert created_diff.returncode == 1
    assert "+  name: fresh\n" in created_diff.stdout and "-  name" not in created_diff.stdout


# -- events, whoami ------------------------------------------------------------------------


def test_events_and_auth_whoami(kc: Kubectl, ns: str) -> None:
    kc("create", "deployment", "web", "--image=nginx", "--replicas=0")
    events = [
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "web.1"},
            "involvedObject": {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "name": "web",
                "namespace": ns,
            },
            "reason": "ScalingReplicaSet",
            "message": "Scaled up replica set web-1 from 0 to 2",
            "type": "Normal",
            "source": {"component": "deployment-controller"},
            "firstTimestamp": "2026-01-01T00:00:00Z",
            "lastTimestamp": "2026-01-01T00:00:00Z",
            "count": 1,
        },
        # an events.k8s.io/v1 Event: read back through v1 as the same kind of object
        {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": "p.2"},
            "regarding": {"apiVersion": "v1", "kind": "Pod", "name": "p", "namespace": ns},
            "reason": "BackOff",
            "note": "Back-off restarting failed container",
            "type": "Warning",
            "reportingController": "kubelet",
            "reportingInstance": "kubewerk-node-0",
            "action": "Restart",
            "eventTime": "2026-01-01T00:01:00.000000Z",
        },
    ]
    out = kc("create", "-f", "-", input=yaml.safe_dump_all(events))
    assert lines(out.stdout) == ["event/web.1 created", "event.events.k8s.io/p.2 created"]

    table = columns(kc("events").stdout)
    assert table[0] == ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert [row[1:] for row in table[1:]] == [
        [
            "Normal",
            "ScalingReplicaSet",
            "Deployment/web",
            "Scaled up replica set web-1 from 0 to 2",
        ],
        ["Warning", "BackOff", "Pod/p", "Back-off restarting failed container"],
    ]
    only = columns(kc("events", "--for", "deployment/web").stdout)
    assert [row[3] for row in only[1:]] == ["Deployment/web"]
    warnings = columns(kc("events", "--types=Warning").stdout)
    assert [row[2] for row in warnings[1:]] == ["BackOff"]
    empty = kc("events", "--types=Normal", "--for", "pod/p")
    assert empty.stdout == "" and empty.stderr.strip() == f"No events found in {ns} namespace."
    bad = kc("events", "--types=Bad", check=False)
    assert bad.returncode == 1 and "valid --types are" in bad.stderr, bad.stderr

    who = columns(kc("auth", "whoami").stdout)
    assert who[0] == ["ATTRIBUTE", "VALUE"]
    assert who[1] == ["Username", "system:unsecured"]
    review = json.loads(kc("auth", "whoami", "-o", "json").stdout)
    assert (review["kind"], review["apiVersion"]) == (
        "SelfSubjectReview",
        "authentication.k8s.io/v1",
    )
    assert review["status"]["userInfo"]["username"] == "system:unsecured"
    assert "system:masters" in review["status"]["userInfo"]["groups"]


# -- subresources ----------------------------------------------------------------------------


def test_status_and_scale_subresources(kc: Kubectl, ns: str) -> None:
    kc("create", "deployment", "web", "--image=nginx", "--replicas=2")
    settled(kc, "web")
    status = get_json(kc, "deployment", "web", "--subresource=status")
    assert status["kind"] == "Deployment" and status["status"]["readyReplicas"] == 2
    scale = get_json(kc, "deployment", "web", "--subresource=scale")
    assert (scale["kind"], scale["spec"], scale["status"]["selector"]) == (
        "Scale",
        {"replicas": 2},
        "app=web",
    )
    # the tables: /status prints as its kind does, /scale as a Scale (kube's printScale)
    status_table = columns(kc("get", "deployment", "web", "--subresource=status").stdout)
    assert status_table[0] == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert status_table[1][:4] == ["web", "2/2", "2", "2"]
    scale_table = columns(kc("get", "deployment", "web", "--subresource=scale").stdout)
    assert scale_table[0] == ["NAME", "DESIRED", "AVAILABLE", "AGE"]
    assert scale_table[1][:3] == ["web", "2", "2"]
    bulk = kc("get", "deployments", "--subresource=status", check=False)
    assert bulk.returncode == 1
    assert (
        bulk.stderr.strip() == "error: subresource cannot be used when bulk resources are specified"
    )
    none = kc("get", "configmap", "x", "--subresource=status", check=False)
    assert none.returncode == 1

    scaled = kc(
        "patch",
        "deployment",
        "web",
        "--subresource=scale",
        "--type=merge",
        "-p",
        '{"spec":{"replicas":3}}',
    )
    assert scaled.stdout.strip() == "scale.autoscaling/web patched"  # the answer is a Scale
    assert read(kc, "deployment", "web")["spec"]["replicas"] == 3

    # a status patch changes status only (an HPA: no controller here rewrites its status)
    kc("autoscale", "deployment", "web", "--max=4")
    status_patch = ["patch", "hpa", "web", "--subresource=status", "--type=merge", "-p"]
    out = kc(
        *status_patch,
        '{"spec":{"maxReplicas":9},"status":{"currentReplicas":3,"desiredReplicas":3}}',
    )
    assert out.stdout.strip() == "horizontalpodautoscaler.autoscaling/web patched"
    hpa = read(kc, "hpa", "web")
    assert hpa["spec"]["maxReplicas"] == 4
    assert hpa["status"] == {"currentReplicas": 3, "desiredReplicas": 3}
    same = kc(*status_patch, '{"spec":{"maxReplicas":9}}')
    assert same.stdout.strip() == "horizontalpodautoscaler.autoscaling/web patched (no change)"
    invalid = kc(*status_patch, '{"status":{"currentReplicas":-1}}', check=False)
    assert invalid.returncode == 1
    assert invalid.stderr.strip() == (
        'The HorizontalPodAutoscaler "web" is invalid: status.currentReplicas: Invalid value: '
        "-1: must be greater than or equal to 0"
    )


# -- explain, kustomize, top ---------------------------------------------------------------


def test_explain_recursive(kc: Kubectl) -> None:
    out = kc("explain", "deployment.spec.strategy", "--recursive").stdout
    assert lines(out)[:3] == ["GROUP:      apps", "KIND:       Deployment", "VERSION:    v1"]
    assert "FIELD: strategy <DeploymentStrategy>" in out
    fields = out[out.index("FIELDS:") :].splitlines()[1:]
    assert [f.rstrip() for f in fields if f.strip()] == [
        "  rollingUpdate\t<RollingUpdateDeployment>",
        # kube's schema: an allOf reference to IntOrString, a string of format int-or-string
        "    maxSurge\t<string>",
        "    maxUnavailable\t<string>",
        "  type\t<string>",
        # kube's enum (OpenAPIEnums, on by default), printed by kubectl's extractEnum
        "  enum: Recreate, RollingUpdate",
    ]
    pods = kc("explain", "pods", "--recursive").stdout
    assert re.search(r"^      livenessProbe\t<Probe>$", pods, re.M), pods[:2000]
    assert re.search(r"^        httpGet\t<HTTPGetAction>$", pods, re.M)


def test_kustomize_and_apply_k(kc: Kubectl, ns: str, tmp_path: Path) -> None:
    base = tmp_path / "app"
    base.mkdir()
    (base / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "namePrefix": "dev-",
                "labels": [{"pairs": {"team": "a"}, "includeSelectors": False}],
                "resources": ["cm.yaml"],
                "configMapGenerator": [{"name": "gen", "literals": ["x=1"]}],
            }
        )
    )
    (base / "cm.yaml").write_text(configmap("base", k="v"))
    rendered = list(yaml.safe_load_all(kc("kustomize", str(base)).stdout))
    names = [d["metadata"]["name"] for d in rendered]
    assert names[0] == "dev-base" and re.fullmatch(r"dev-gen-[a-z0-9]{10}", names[1]), names
    assert all(d["metadata"]["labels"] == {"team": "a"} for d in rendered)

    out = kc("apply", "-k", str(base))
    assert lines(out.stdout) == [f"configmap/{names[0]} created", f"configmap/{names[1]} created"]
    assert read(kc, "configmap", names[1])["data"] == {"x": "1"}
    out = kc("delete", "-k", str(base))
    assert lines(out.stdout) == [
        f'configmap "{names[0]}" deleted',
        f'configmap "{names[1]}" deleted',
    ]


def test_top_without_a_metrics_api(kc: Kubectl) -> None:
    for args in (("top", "nodes"), ("top", "pods")):
        out = kc(*args, check=False)
        assert out.returncode == 1 and out.stdout == ""
        assert out.stderr.strip() == "error: Metrics API not available"


def test_endpoints_warn_as_deprecated(kc: Kubectl, ns: str) -> None:
    """Kubernetes 1.33 (the version the server reports) deprecates v1 Endpoints: every
    request for them carries the warning kubectl prints; EndpointSlices carry none."""
    kc("create", "deployment", "web", "--image=nginx")
    kc("expose", "deployment", "web", "--port=80")
    warning = "Warning: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"
    settled(kc, "web")

    def addressed() -> bool:
        try:
            return bool(read(kc, "endpoints", "web").get("subsets"))
        except urllib.error.HTTPError:
            return False  # not written yet

    wait_until(addressed, timeout=10)
    out = kc("get", "endpoints")
    assert out.stderr.strip() == warning
    assert columns(out.stdout)[0] == ["NAME", "ENDPOINTS", "AGE"]
    assert columns(out.stdout)[1][0] == "web" and columns(out.stdout)[1][1].endswith(":80")
    slices = kc("get", "endpointslices", "-l", "kubernetes.io/service-name=web")
    assert slices.stderr == "" and columns(slices.stdout)[1][:4][1:3] == ["IPv4", "80"]


def test_subresources_of_other_kinds_in_discovery(kc: Kubectl) -> None:
    """pods/eviction and serviceaccounts/token take other kinds than their resource's, and
    discovery says which, in the legacy list (what ``kubectl drain`` reads) and in the
    aggregated document (what kubectl 1.30+ reads first)."""
    legacy = json.loads(kc("get", "--raw", "/api/v1").stdout)["resources"]
    by_name = {r["name"]: r for r in legacy}
    assert by_name["pods/eviction"] == {
        "name": "pods/eviction",
        "singularName": "",
        "namespaced": True,
        "group": "policy",
        "version": "v1",
        "kind": "Eviction",
        "verbs": ["create"],
    }
    token = by_name["serviceaccounts/token"]
    assert (token["group"], token["version"], token["kind"]) == (
        "authentication.k8s.io",
        "v1",
        "TokenRequest",
    )
    req = urllib.request.Request(
        kc.srv.url + "/api",
        headers={"Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"},
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        aggregated = json.loads(resp.read())
    core = aggregated["items"][0]["versions"][0]["resources"]
    subs = {
        (r["resource"], s["subresource"]): (s["responseKind"], s["verbs"])
        for r in core
        for s in r.get("subresources", [])
    }
    assert subs[("pods", "eviction")] == (
        {"group": "policy", "version": "v1", "kind": "Eviction"},
        ["create"],
    )
    assert subs[("serviceaccounts", "token")] == (
        {"group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest"},
        ["create"],
    )
    assert subs[("namespaces", "finalize")] == (
        {"group": "", "version": "v1", "kind": "Namespace"},
        ["update"],
    )
