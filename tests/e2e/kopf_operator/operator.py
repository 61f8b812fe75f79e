"""A small kopf operator for the demo ``Database`` kind (``databases.demo.kubewerk.dev``).

It runs unchanged against a real cluster or the embedded API server:

    KUBECONFIG=... kopf run --standalone --namespace default tests/e2e/kopf_operator/operator.py

- create: writes a ConfigMap ``<name>-config`` (owned by the database) with the spec,
  the status (``replicas`` and a ``Ready`` condition naming the generation handled) and
  a ``Provisioned`` event;
- update of the spec: rewrites the ConfigMap and the status;
- delete (guarded by kopf's finalizer): deletes the ConfigMap itself and records the
  deletion in the ConfigMap ``db-operator-journal``, then kopf releases the finalizer.
"""

from __future__ import annotations

import datetime
from typing import Any

import kopf
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

GROUP = "demo.kubewerk.dev"
VERSION = "v1"
PLURAL = "databases"
FINALIZER = "demo.kubewerk.dev/db-operator"
JOURNAL = "db-operator-journal"

_core: client.CoreV1Api | None = None


def core() -> client.CoreV1Api:
    global _core
    if _core is None:
        config.load_kube_config()
        _core = client.CoreV1Api()
    return _core


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.peering.standalone = True
    settings.persistence.finalizer = FINALIZER
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(
        prefix="db-operator.demo.kubewerk.dev"
    )
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix="db-operator.demo.kubewerk.dev", key="last-handled-configuration"
    )
    settings.posting.enabled = True  # kopf.info() and handler outcomes become core/v1 Events
    # stream the initial list (sendInitialEvents=true) instead of list+watch
    settings.watching.initial_streaming = True
    settings.watching.server_timeout = 30
    settings.watching.client_timeout = 40
    settings.watching.connect_timeout = 5
    settings.batching.idle_timeout = 2
    settings.batching.exit_timeout = 1
    settings.execution.max_workers = 4


def config_map_data(spec: dict[str, Any]) -> dict[str, str]:
    return {
        "engine": str(spec.get("engine", "")),
        "version": str(spec.get("version", "")),
        "replicas": str(spec.get("replicas", 1)),
    }


def ready_status(spec: kopf.Spec, generation: int, message: str) -> dict[str, Any]:
    """Only fields the CRD's status schema declares (anything else would be pruned)."""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "replicas": int(spec.get("replicas", 1)),
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "Reconciled",
                "message": f"{message} (generation {generation})",
                "lastTransitionTime": now,
            }
        ],
    }


@kopf.on.create(GROUP, VERSION, PLURAL)
def create_fn(
    spec: kopf.Spec,
    name: str,
    namespace: str,
    meta: kopf.Meta,
    body: kopf.Body,
    patch: kopf.Patch,
    **_: Any,
) -> None:
    cm: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": f"{name}-config",
            "labels": {"app.kubernetes.io/managed-by": "db-operator"},
        },
        "data": config_map_data(dict(spec)),
    }
    kopf.adopt(cm, owner=body)
    try:
        core().create_namespaced_config_map(namespace, cm)
    except ApiException as exc:
        if exc.status != 409:
            raise
        core().replace_namespaced_config_map(f"{name}-config", namespace, cm)
    patch.status.update(ready_status(spec, int(meta.get("generation", 1)), "config map written"))
    kopf.info(body, reason="Provisioned", message=f"config map {name}-config written")


@kopf.on.update(GROUP, VERSION, PLURAL, field="spec")
def update_fn(
    spec: kopf.Spec, name: str, namespace: str, meta: kopf.Meta, patch: kopf.Patch, **_: Any
) -> None:
    core().patch_namespaced_config_map(
        f"{name}-config",
        namespace,
        {"data": config_map_data(dict(spec))},
        _content_type="application/merge-patch+json",
    )
    patch.status.update(ready_status(spec, int(meta.get("generation", 1)), "config map updated"))


@kopf.on.delete(GROUP, VERSION, PLURAL)
def delete_fn(name: str, namespace: str, **_: Any) -> None:
    try:
        core().delete_namespaced_config_map(f"{name}-config", namespace)
    except ApiException as exc:
        if exc.status != 404:
            raise
    journal = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": JOURNAL},
        "data": {f"deleted.{name}": "true"},
    }
    try:
        core().create_namespaced_config_map(namespace, journal)
    except ApiException as exc:
        if exc.status != 409:
            raise
        core().patch_namespaced_config_map(
            JOURNAL,
            namespace,
            {"data": journal["data"]},
            _content_type="application/merge-patch+json",
        )
