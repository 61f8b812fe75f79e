"""The real kubectl against the embedded server's admission chain.

A validating and a mutating webhook written with ``kubewerk.webhook`` (typed handlers on
a model of the demo ``Database`` kind) are served over TLS on loopback and registered
with a ``caBundle``; a ValidatingAdmissionPolicy reads its limit from a ConfigMap. What
kubectl prints is what it prints against kube-apiserver: ``Error from server
(Forbidden): error when creating "STDIN": admission webhook "NAME" denied the request:
MSG``, ``Warning: MSG`` lines, the mutated object read back, and the policy's denial
lifted on the next request after ``kubectl patch configmap``.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest
import yaml
from pydantic import Field

from kubewerk.model import KubeModel, Resource
from kubewerk.webhook import AdmissionRequest, Allowed, Denied, WebhookApp, WebhookServer
from kubewerk.webhook.certs import make_certificates, write_certificates

from .conftest import KubectlRun

pytestmark = pytest.mark.e2e

DB = "database.demo.kubewerk.dev"


class DemoSpec(KubeModel):
    engine: str
    version: str | None = None
    replicas: Annotated[int, Field(ge=1, le=7)] | None = None
    storage: str | None = None


class DemoDatabase(
    Resource[DemoSpec, dict[str, Any]], group="demo.kubewerk.dev", version="v1", kind="Database"
):
    """The demo CRD's Database, as the webhooks see it."""


def webhook_app() -> WebhookApp:
    app = WebhookApp()

    @app.validating(DemoDatabase, "/validate")
    async def check(
        db: DemoDatabase, old: DemoDatabase | None, req: AdmissionRequest
    ) -> Allowed | Denied:
        if db.spec.version == "0":
            return Denied("spec.version 0 was never released")
        if db.spec.engine == "mysql":
            return Allowed(warnings=["mysql databases are deprecated here"])
        return Allowed()

    @app.mutating(DemoDatabase, "/mutate")
    async def stamp(db: DemoDatabase, old: DemoDatabase | None, req: AdmissionRequest) -> None:
        db.metadata.labels = {**(db.metadata.labels or {}), "stamped-by": "kubewerk"}
        if db.spec.version is None:
            db.spec.version = "16"

    return app


class ThreadedWebhook:
    """A ``kubewerk.webhook`` server on its own event loop in a thread."""

    def __init__(self, directory: Path) -> None:
        self.certs = make_certificates("hooks", "default", days=2, extra_names=["127.0.0.1"])
        files = write_certificates(self.certs, directory / "certs")
        self.server = WebhookServer(
            webhook_app(),
            host="127.0.0.1",
            port=0,
            cert_file=files["cert"],
            key_file=files["key"],
        )
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.stopping: asyncio.Event | None = None
        self.thread.start()
        assert self.ready.wait(15), "the webhook server did not start"

    def _run(self) -> None:
        async def main() -> None:
            self.stopping = asyncio.Event()
            async with self.server:
                self.ready.set()
                await self.stopping.wait()

        self.loop.run_until_complete(main())

    def stop(self) -> None:
        assert self.stopping is not None
        self.loop.call_soon_threadsafe(self.stopping.set)
        self.thread.join(10)
        self.loop.close()


@pytest.fixture
def hooks(tmp_path: Path) -> Iterator[ThreadedWebhook]:
    server = ThreadedWebhook(tmp_path)
    try:
        yield server
    finally:
        server.stop()


def configuration(kind: str, name: str, path: str, hooks: ThreadedWebhook) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "webhooks": [
            {
                "name": f"{name}.demo.kubewerk.dev",
                "clientConfig": {
                    "url": hooks.server.url + path,
                    "caBundle": hooks.certs.ca_bundle,
                },
                "rules": [
                    {
                        "operations": ["CREATE", "UPDATE"],
                        "apiGroups": ["demo.kubewerk.dev"],
                        "apiVersions": ["v1"],
                        "resources": ["databases"],
                    }
                ],
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
            }
        ],
    }


def database(name: str, **spec: Any) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "demo.kubewerk.dev/v1",
            "kind": "Database",
            "metadata": {"name": name},
            "spec": {"engine": "postgres", **spec},
        }
    )


def apply(kc: KubectlRun, doc: Any, check: bool = True) -> Any:
    text = doc if isinstance(doc, str) else yaml.safe_dump_all(doc)
    return kc("apply", "-f", "-", input=text, check=check)


def test_kubectl_sees_webhook_denials_warnings_and_mutations(
    kc: KubectlRun, demo: Path, hooks: ThreadedWebhook
) -> None:
    out = apply(
        kc,
        [
            configuration("ValidatingWebhookConfiguration", "check", "/validate", hooks),
            configuration("MutatingWebhookConfiguration", "stamp", "/mutate", hooks),
        ],
    ).stdout
    assert "validatingwebhookconfiguration.admissionregistration.k8s.io/check created" in out
    assert "mutatingwebhookconfiguration.admissionregistration.k8s.io/stamp created" in out

    denied = apply(kc, database("zero", version="0"), check=False)
    assert denied.returncode == 1
    assert denied.stderr.strip() == (
        'Error from server (Forbidden): error when creating "STDIN": admission webhook '
        '"check.demo.kubewerk.dev" denied the request: spec.version 0 was never released'
    )
    assert kc("get", "db", "zero", check=False).returncode == 1

    warned = apply(kc, database("legacy", engine="mysql", version="8"))
    assert warned.stderr.strip() == "Warning: mysql databases are deprecated here"
    assert warned.stdout.strip() == f"{DB}/legacy created"

    apply(kc, database("plain", replicas=2))
    db = json.loads(kc("get", "db", "plain", "-o", "json").stdout)
    assert db["metadata"]["labels"] == {"stamped-by": "kubewerk"}
    assert db["spec"] == {"engine": "postgres", "replicas": 2, "version": "16", "storage": "1Gi"}
    # kubectl get shows the mutation in its columns too
    row = kc("get", "db", "plain", "--no-headers", "-L", "stamped-by").stdout.split()
    assert row[:3] == ["plain", "postgres", "2"] and row[-1] == "kubewerk"

    # an update goes through both webhooks; --dry-run=server too (sideEffects None)
    dry = kc(
        "patch", "db", "plain", "--type=merge", "-p", '{"spec":{"version":"0"}}',
        "--dry-run=server", check=False,
    )  # fmt: skip
    assert dry.stderr.strip() == (
        'Error from server (Forbidden): admission webhook "check.demo.kubewerk.dev" '
        "denied the request: spec.version 0 was never released"
    )


POLICY = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "ValidatingAdmissionPolicy",
    "metadata": {"name": "max-replicas.demo.kubewerk.dev"},
    "spec": {
        "failurePolicy": "Fail",
        "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
        "matchConstraints": {
            "resourceRules": [
                {
                    "apiGroups": ["demo.kubewerk.dev"],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE"],
                    "resources": ["databases"],
                }
            ]
        },
        "validations": [
            {
                "expression": "object.spec.replicas <= int(params.data.maxReplicas)",
                "messageExpression": "'at most ' + params.data.maxReplicas + ' replicas'",
                "reason": "Forbidden",
            }
        ],
    },
}
BINDING = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "ValidatingAdmissionPolicyBinding",
    "metadata": {"name": "max-replicas-binding"},
    "spec": {
        "policyName": "max-replicas.demo.kubewerk.dev",
        "validationActions": ["Deny"],
        "paramRef": {
            "name": "db-limits",
            "namespace": "default",
            "parameterNotFoundAction": "Deny",
        },
    },
}
LIMITS = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "db-limits", "namespace": "default"},
    "data": {"maxReplicas": "3"},
}


def test_kubectl_policy_with_configmap_params(kc: KubectlRun, demo: Path) -> None:
    out = apply(kc, [POLICY, BINDING]).stdout
    assert "validatingadmissionpolicy.admissionregistration.k8s.io/" in out

    # no ConfigMap yet: parameterNotFoundAction Deny
    missing = apply(kc, database("big", replicas=5), check=False)
    assert missing.stderr.strip() == (
        'The databases "big" is invalid: : ValidatingAdmissionPolicy '
        "'max-replicas.demo.kubewerk.dev' with binding 'max-replicas-binding' denied request: "
        "failed to configure binding: no params found for policy binding with `Deny` "
        "parameterNotFoundAction"
    )

    apply(kc, [LIMITS])
    denied = apply(kc, database("big", replicas=5), check=False)
    assert denied.returncode == 1
    assert denied.stderr.strip() == (
        'Error from server (Forbidden): error when creating "STDIN": databases.demo.kubewerk.dev '
        "\"big\" is forbidden: ValidatingAdmissionPolicy 'max-replicas.demo.kubewerk.dev' "
        "with binding 'max-replicas-binding' denied request: at most 3 replicas"
    )
    apply(kc, database("small", replicas=3))

    # the rule lives in the ConfigMap: the next request sees the new limit, no restart
    kc("patch", "configmap", "db-limits", "-p", '{"data":{"maxReplicas":"6"}}')
    created = apply(kc, database("big", replicas=5))
    assert created.stdout.strip() == f"{DB}/big created"
    # and an update over the new limit is refused in the same words
    over = kc("patch", "db", "big", "--type=merge", "-p", '{"spec":{"replicas":7}}', check=False)
    assert over.stderr.strip() == (
        'Error from server (Forbidden): databases.demo.kubewerk.dev "big" is forbidden: '
        "ValidatingAdmissionPolicy 'max-replicas.demo.kubewerk.dev' with binding "
        "'max-replicas-binding' denied request: at most 6 replicas"
    )
