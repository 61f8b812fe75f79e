"""kopf's own examples that work with Pods, run with ``kopf run`` against the embedded
server: "02-children" (a KopfExample creates a child Pod and records its uid), the Pod
part of "99-all-at-once" (a labelled child Pod and an event handler filtered by that
label) and "10-builtins" (handlers on every Pod: create/resume start a task, delete
cancels it, so kopf puts its finalizer on Pods).

The handlers are kopf's, rewritten for this repository: the children are created with
the ``kubernetes`` client (the examples use pykube, which is not installed), and the
test asserts what kopf's own example tests assert (its log lines) plus what a cluster
stores (owner references, the Pod's defaults, garbage collection of the children).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import KubectlRun, wait_until

pytestmark = pytest.mark.e2e

OPERATOR = '''
import asyncio

import kopf
import yaml
from kubernetes import client, config

_core = None


def core():
    global _core
    if _core is None:
        config.load_kube_config()
        _core = client.CoreV1Api()
    return _core


@kopf.on.startup()
def configure(settings, **_):
    settings.watching.server_timeout = 30
    settings.watching.client_timeout = 40
    settings.watching.connect_timeout = 5
    settings.batching.idle_timeout = 2
    settings.batching.exit_timeout = 1


# -- 02-children
@kopf.on.create("zalando.org", "v1", "kopfexamples")
def create_fn(spec, **kwargs):
    doc = yaml.safe_load(f"""
        apiVersion: v1
        kind: Pod
        spec:
          containers:
          - name: the-only-one
            image: busybox
            command: ["sh", "-x", "-c"]
            args:
            - |
              echo "FIELD=$FIELD"
              sleep {spec.get('duration', 0)}
            env:
            - name: FIELD
              value: {spec.get('field', 'default-value')}
    """)
    kopf.adopt(doc)
    pod = core().create_namespaced_pod(doc["metadata"]["namespace"], doc)
    return {"children": [pod.metadata.uid]}


# -- 99-all-at-once (its Pod part)
@kopf.on.create("zalando.org", "v1", "kopfexamples")
def create_pod(**kwargs):
    pod_data = yaml.safe_load("""
        apiVersion: v1
        kind: Pod
        spec:
          containers:
          - name: the-only-one
            image: busybox
            command: ["sh", "-x", "-c", "sleep 1"]
    """)
    kopf.adopt(pod_data)
    kopf.label(pod_data, {"application": "kopf-example-10"})
    core().create_namespaced_pod(pod_data["metadata"]["namespace"], pod_data)


@kopf.on.event("", "v1", "pods", labels={"application": "kopf-example-10"})
def example_pod_change(logger, **kwargs):
    logger.info("This pod is special for us.")


# -- 10-builtins
tasks = {}


@kopf.on.resume("", "v1", "pods")
@kopf.on.create("", "v1", "pods")
async def pod_in_sight(namespace, name, logger, **kwargs):
    if namespace.startswith("kube-"):
        return
    task = asyncio.create_task(pod_killer(namespace, name, logger))
    tasks.setdefault(namespace, {})
    tasks[namespace][name] = task


@kopf.on.delete("", "v1", "pods")
async def pod_deleted(namespace, name, **kwargs):
    if namespace in tasks and name in tasks[namespace]:
        tasks[namespace][name].cancel()


async def pod_killer(namespace, name, logger, timeout=30):
    try:
        logger.info(f"=== Pod killing happens in {timeout}s.")
        await asyncio.sleep(timeout)
        logger.info("=== Pod killing happens NOW!")
        core().delete_namespaced_pod(name, namespace)
    except asyncio.CancelledError:
        logger.info("=== Pod killing is cancelled!")
    finally:
        if namespace in tasks and name in tasks[namespace]:
            del tasks[namespace][name]
'''

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "kopfexamples.zalando.org"},
    "spec": {
        "scope": "Namespaced",
        "group": "zalando.org",
        "names": {
            "kind": "KopfExample",
            "plural": "kopfexamples",
            "singular": "kopfexample",
            "shortNames": ["kopfexes", "kopfex"],
        },
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                            },
                            "status": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                            },
                        },
                    }
                },
            }
        ],
    },
}


class Kopf:
    """``kopf run --standalone --all-namespaces`` of the examples, as a subprocess."""

    def __init__(self, kubeconfig: Path, workdir: Path) -> None:
        self.source = workdir / "examples.py"
        self.source.write_text(OPERATOR)
        self.log = workdir / "kopf.log"
        env = {**os.environ, "KUBECONFIG": str(kubeconfig), "PYTHONUNBUFFERED": "1"}
        with self.log.open("w") as out:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "kopf",
                    "run",
                    "--standalone",
                    "--all-namespaces",
                    "--verbose",
                    str(self.source),
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=workdir,
            )

    def text(self) -> str:
        return self.log.read_text()

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)


@pytest.fixture
def kopf_examples(kc: KubectlRun, kubeconfig: Path, tmp_path: Path) -> Iterator[Kopf]:
    kc("apply", "-f", "-", input=yaml.safe_dump(CRD))
    kc("wait", "--for=condition=Established", "crd/kopfexamples.zalando.org", "--timeout=10s")
    operator = Kopf(kubeconfig, tmp_path)
    try:
        yield operator
    finally:
        operator.stop()


def get_json(kc: KubectlRun, *args: str) -> Any:
    return json.loads(kc("get", *args, "-o", "json").stdout)


def test_kopf_examples_with_pods(kc: KubectlRun, kopf_examples: Kopf) -> None:
    example = {
        "apiVersion": "zalando.org/v1",
        "kind": "KopfExample",
        "metadata": {"name": "kopf-example-1", "labels": {"somelabel": "somevalue"}},
        "spec": {"duration": 1, "field": "value", "items": ["item1", "item2"]},
    }
    kc("apply", "-f", "-", input=yaml.safe_dump(example))

    # 02-children: the child Pod is stored and its uid recorded in the status
    def children() -> list[str] | None:
        status = get_json(kc, "kopfexample", "kopf-example-1").get("status", {})
        found: list[str] | None = status.get("create_fn", {}).get("children")
        return found

    (child_uid,) = wait_until(children, timeout=30, interval=0.2)
    owner = get_json(kc, "kopfexample", "kopf-example-1")
    pods = get_json(kc, "pods")["items"]
    child = next(p for p in pods if p["metadata"]["uid"] == child_uid)
    assert child["metadata"]["generateName"] == "kopf-example-1-"
    assert child["metadata"]["labels"]["somelabel"] == "somevalue"
    ref = child["metadata"]["ownerReferences"][0]
    assert ref == {
        "apiVersion": "zalando.org/v1",
        "kind": "KopfExample",
        "name": "kopf-example-1",
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    container = child["spec"]["containers"][0]
    assert container["env"] == [{"name": "FIELD", "value": "value"}]
    assert container["args"] == ['echo "FIELD=$FIELD"\nsleep 1\n']
    # the defaults a cluster adds to the Pod the operator sent
    assert container["imagePullPolicy"] == "Always"
    assert container["terminationMessagePath"] == "/dev/termination-log"
    assert child["spec"]["restartPolicy"] == "Always"
    assert child["spec"]["dnsPolicy"] == "ClusterFirst"
    assert child["status"]["phase"] == "Pending"

    # 99-all-at-once: the labelled child, seen by the filtered event handler
    labelled = wait_until(
        lambda: get_json(kc, "pods", "-l", "application=kopf-example-10")["items"], timeout=20
    )
    assert labelled[0]["metadata"]["ownerReferences"][0]["uid"] == owner["metadata"]["uid"]
    wait_until(lambda: "This pod is special for us." in kopf_examples.text(), timeout=20)

    # 10-builtins: every Pod is seen (kopf's finalizer goes on it for the delete handler)
    def seen(name: str) -> bool:
        return f"[default/{name}] === Pod killing happens in 30s." in kopf_examples.text()

    for pod in (child, labelled[0]):
        wait_until(lambda pod=pod: seen(pod["metadata"]["name"]), timeout=20)

    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": "kopf-pod-", "namespace": "default"},
        "spec": {
            "containers": [
                {
                    "name": "the-only-one",
                    "image": "busybox",
                    "command": ["sh", "-x", "-c", "sleep 1"],
                }
            ]
        },
    }
    name = kc("create", "-f", "-", "-o", "name", input=json.dumps(pod)).stdout.strip()
    name = name.removeprefix("pod/")
    wait_until(lambda: seen(name), timeout=20)
    wait_until(
        lambda: get_json(kc, "pod", name)["metadata"].get("finalizers"), timeout=20, interval=0.2
    )
    assert kc("delete", "pod", name, "--timeout=30s", timeout=40).returncode == 0
    assert kc("get", "pod", name, check=False).returncode != 0
    wait_until(
        lambda: f"[default/{name}] === Pod killing is cancelled!" in kopf_examples.text(),
        timeout=20,
    )
    assert f"[default/{name}] Deletion is in progress:" in kopf_examples.text() or (
        f"[default/{name}] Handler 'pod_deleted' succeeded." in kopf_examples.text()
    )

    # deleting the owner: garbage collection removes both children (kopf releases them)
    kc("delete", "kopfexample", "kopf-example-1", "--timeout=30s", timeout=40)
    wait_until(lambda: not get_json(kc, "pods")["items"], timeout=30, interval=0.2)

    text = kopf_examples.text()
    assert "Handler 'create_fn' succeeded." in text
    assert "Handler 'create_pod' succeeded." in text
    for bad in ("Traceback", "[ERROR", "APIClientError", "APIServerError"):
        assert bad not in text, text
