"""A real kopf operator (``kopf_operator/operator.py``, run with ``kopf run``) against the
embedded API server: create, update and delete (through its finalizer) of a Database."""

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

from .conftest import KubectlRun

pytestmark = pytest.mark.e2e

OPERATOR = Path(__file__).parent / "kopf_operator" / "operator.py"
DB = "database.demo.kubewerk.dev"


class Operator:
    """``kopf run --standalone`` on the default namespace, as a subprocess; log in ``log``."""

    def __init__(self, kubeconfig: Path, log: Path) -> None:
        self.kubeconfig = kubeconfig
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig), "PYTHONUNBUFFERED": "1"}
        with self.log.open("a") as out:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "kopf",
                    "run",
                    "--standalone",
                    "--namespace",
                    "default",
                    "--verbose",
                    str(OPERATOR),
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=self.log.parent,
            )

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)
        self.proc = None


@pytest.fixture
def operator(kubeconfig: Path, tmp_path: Path, demo: Path) -> Iterator[Operator]:
    op = Operator(kubeconfig, tmp_path / "kopf.log")
    op.start()
    try:
        yield op
    finally:
        op.stop()


def get_json(kc: KubectlRun, *args: str) -> Any:
    return json.loads(kc("get", *args, "-o", "json").stdout)


def test_kopf_operator_handles_create_update_delete(kc: KubectlRun, operator: Operator) -> None:
    manifest = {
        "apiVersion": "demo.kubewerk.dev/v1",
        "kind": "Database",
        "metadata": {"name": "alpha"},
        "spec": {"engine": "postgres", "version": "16", "replicas": 2},
    }
    kc("apply", "-f", "-", input=yaml.safe_dump(manifest))

    # create: the handler writes the ConfigMap and the status (kopf needs a moment to start)
    kc("wait", "--for=create", "configmap/alpha-config", "--timeout=30s", timeout=40)
    kc("wait", "--for=condition=Ready", "db/alpha", "--timeout=20s", timeout=30)
    db = get_json(kc, "db", "alpha")
    assert "demo.kubewerk.dev/db-operator" in db["metadata"]["finalizers"]
    assert db["status"]["replicas"] == 2
    assert db["status"]["conditions"][0]["message"] == "config map written (generation 1)"
    cm = get_json(kc, "cm", "alpha-config")
    assert cm["data"] == {"engine": "postgres", "version": "16", "replicas": "2"}
    ref = cm["metadata"]["ownerReferences"][0]
    assert (ref["kind"], ref["name"], ref["uid"], ref["controller"]) == (
        "Database",
        "alpha",
        db["metadata"]["uid"],
        True,
    )
    # kopf.info() posted a core/v1 Event about the object
    events = get_json(kc, "events", "--field-selector", "involvedObject.name=alpha")["items"]
    assert any(
        e["reason"] == "Provisioned" and e["involvedObject"]["uid"] == db["metadata"]["uid"]
        for e in events
    )

    # update of the spec: the ConfigMap and the status follow
    kc("patch", "db", "alpha", "--type=merge", "-p", '{"spec":{"replicas":3,"version":"17"}}')
    kc(
        "wait",
        "--for=jsonpath={.data.replicas}=3",
        "configmap/alpha-config",
        "--timeout=20s",
        timeout=30,
    )
    assert get_json(kc, "cm", "alpha-config")["data"]["version"] == "17"
    kc("wait", "--for=jsonpath={.status.replicas}=3", "db/alpha", "--timeout=20s", timeout=30)
    db = get_json(kc, "db", "alpha")
    assert db["metadata"]["generation"] == 2
    assert db["status"]["conditions"][0]["message"] == "config map updated (generation 2)"

    # a change made while the operator is down is handled when it comes back (it streams the
    # initial state with sendInitialEvents and compares with its last-handled annotation)
    operator.stop()
    kc("patch", "db", "alpha", "--type=merge", "-p", '{"spec":{"replicas":4}}')
    operator.start()
    kc(
        "wait",
        "--for=jsonpath={.data.replicas}=4",
        "configmap/alpha-config",
        "--timeout=30s",
        timeout=40,
    )
    kc("wait", "--for=jsonpath={.status.replicas}=4", "db/alpha", "--timeout=20s", timeout=30)

    # delete: kubectl waits while kopf's finalizer holds the object and the handler runs
    out = kc("delete", "db", "alpha", "--timeout=30s", timeout=40).stdout
    assert out.strip() == f'{DB} "alpha" deleted'
    assert kc("get", "db", "alpha", check=False).returncode != 0
    assert kc("get", "cm", "alpha-config", check=False).returncode != 0
    assert get_json(kc, "cm", "db-operator-journal")["data"] == {"deleted.alpha": "true"}

    text = operator.log.read_text()
    assert text.count("Handler 'update_fn/spec' succeeded.") == 2
    assert text.count("Handler 'create_fn' succeeded.") == 1  # not re-run after the restart
    assert "Handler 'delete_fn' succeeded." in text
    assert "Removing the finalizer" in text
    for bad in ("Traceback", "[ERROR", "inconsistencies", "APIClientError", "APIServerError"):
        assert bad not in text, text
