"""``v1`` Namespace: created Active with the ``kubernetes`` finalizer, named by its
label, held by ``spec.finalizers`` while it terminates, finalized through
``namespaces/{name}/finalize`` (Kubernetes' ``pkg/registry/core/namespace``)."""

from __future__ import annotations

from typing import Any, ClassVar

from kubewerk.apiserver.kinds.schemas import object_schema
from kubewerk.apiserver.registry import ALL_VERBS, ServedResource
from kubewerk.apiserver.strategy import AGE, PrinterColumn, Strategy
from kubewerk.core.errors import ApiError
from kubewerk.core.meta import age
from kubewerk.core.validation import NameRule

JSON = dict[str, Any]

NAMESPACE_FINALIZER = "kubernetes"
"""The finalizer the namespace controller removes once the namespace is empty."""
NAME_LABEL = "kubernetes.io/metadata.name"
IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})
"""Namespaces the NamespaceLifecycle admission plugin refuses to delete."""


def refuse_immortal_delete(group: str, resource: str, name: str | None) -> None:
    """Raise kube's 403 for a DELETE of ``default``, ``kube-system`` or ``kube-public``
    (NamespaceLifecycle, the first admission plugin: before webhooks, dryRun or not)."""
    if name in IMMORTAL_NAMESPACES and resource == "namespaces" and group == "":
        raise ApiError.forbidden("namespaces", "", name, "this namespace may not be deleted")


def _label_with_name(ns: JSON) -> None:
    """Namespaces always carry ``kubernetes.io/metadata.name: <name>``."""
    meta = ns.setdefault("metadata", {})
    labels = meta.get("labels")
    if not isinstance(labels, dict):
        labels = meta["labels"] = {}
    labels[NAME_LABEL] = meta.get("name", "")


class NamespaceStrategy(Strategy):
    """Status and ``spec.finalizers`` are the server's: a create starts Active with the
    ``kubernetes`` finalizer, an update keeps the stored spec (``/finalize`` changes
    it), a delete turns the namespace Terminating and ``spec.finalizers`` holds it."""

    name_rule: ClassVar[NameRule] = "label"
    subresources: ClassVar[dict[str, tuple[str, ...]]] = {"finalize": ("update",)}

    def prepare_for_create(self, obj: JSON) -> None:
        super().prepare_for_create(obj)
        obj["status"] = {"phase": "Active"}
        spec = obj.setdefault("spec", {})
        spec["finalizers"] = [NAMESPACE_FINALIZER]
        _label_with_name(obj)

    def prepare_for_update(self, new: JSON, old: JSON) -> None:
        _label_with_name(new)
        new["spec"] = old.get("spec", {})

    def holds_deletion(self, obj: JSON) -> bool:
        return bool((obj.get("spec") or {}).get("finalizers"))

    def prepare_for_delete(self, obj: JSON) -> None:
        obj.setdefault("status", {})["phase"] = "Terminating"


def resource_type() -> ServedResource:
    return ServedResource(
        group="",
        resource="namespaces",
        kind="Namespace",
        list_kind="NamespaceList",
        singular="namespace",
        namespaced=False,
        versions=["v1"],
        storage_version="v1",
        short_names=["ns"],
        # kube's namespace storage has no DeleteCollection: no such verb in discovery or
        # OpenAPI, and DELETE /api/v1/namespaces is 405 MethodNotAllowed
        verbs=tuple(v for v in ALL_VERBS if v != "deletecollection"),
        status_subresource=True,
        strategic_kind="Namespace",
        return_deleted_object=True,
        strategy=NamespaceStrategy(
            columns=[
                PrinterColumn("Status", "string", ".status.phase", "The status of the namespace"),
                AGE,
            ],
            cells=lambda o: [(o.get("status") or {}).get("phase", ""), age(o)],
            field_key="v1/Namespace",
        ),
        schemas={
            "v1": object_schema(
                "Namespace provides a scope for Names.",
                {
                    "spec": {
                        "type": "object",
                        "properties": {
                            "finalizers": {"type": "array", "items": {"type": "string"}}
                        },
                    },
                    "status": {
                        "type": "object",
                        "properties": {
                            "phase": {"type": "string"},
                            "conditions": {"type": "array", "items": {"type": "object"}},
                        },
                    },
                },
            )
        },
    )
