"""``apiextensions.k8s.io/v1`` CustomResourceDefinition: generation on spec changes,
status owned by the CRD controller, defaults and validation of the apiextensions
server, and the cleanup finalizer that deletes every instance before the CRD goes."""

from __future__ import annotations

from typing import Any, ClassVar

from kubewerk.apiserver.kinds.schemas import object_schema
from kubewerk.apiserver.registry import ServedResource
from kubewerk.apiserver.strategy import PrinterColumn, Strategy
from kubewerk.core.errors import FieldError

JSON = dict[str, Any]

CRD_CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
"""Held while the CRD controller deletes the instances of a deleted CRD."""


def default_crd(crd: JSON) -> None:
    """``SetDefaults_CustomResourceDefinitionSpec``: singular, listKind, conversion."""
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return
    names = spec.get("names")
    if isinstance(names, dict) and isinstance(names.get("kind"), str) and names["kind"]:
        if not names.get("singular"):
            names["singular"] = names["kind"].lower()
        if not names.get("listKind"):
            names["listKind"] = names["kind"] + "List"
    if not isinstance(spec.get("conversion"), dict):
        spec["conversion"] = {"strategy": "None"}
    webhook = spec["conversion"].get("webhook")
    if isinstance(webhook, dict):
        service = (webhook.get("clientConfig") or {}).get("service")
        if isinstance(service, dict) and "port" not in service:
            service["port"] = 443


class CustomResourceDefinitionStrategy(Strategy):
    """A create starts with generation 1 and an empty status (the CRD controller fills
    it); the spec alone bumps the generation; unknown fields are left to ``validate``."""

    prunes_unknown_fields: ClassVar[bool] = False

    def prepare_for_create(self, obj: JSON) -> None:
        obj["metadata"]["generation"] = 1
        obj.pop("status", None)
        obj["status"] = {
            "conditions": [],
            "acceptedNames": {"plural": "", "kind": ""},
            "storedVersions": [],
        }

    def default(self, obj: JSON) -> None:
        default_crd(obj)

    def validate(self, obj: JSON, old: JSON | None) -> list[FieldError]:
        from kubewerk.schema import validate_crd  # the schema engine loads on first use

        return validate_crd(obj, old)

    def finalizers_on_delete(self, finalizers: list[str]) -> list[str]:
        if CRD_CLEANUP_FINALIZER not in finalizers:
            finalizers.append(CRD_CLEANUP_FINALIZER)
        return finalizers


def resource_type() -> ServedResource:
    return ServedResource(
        group="apiextensions.k8s.io",
        resource="customresourcedefinitions",
        kind="CustomResourceDefinition",
        list_kind="CustomResourceDefinitionList",
        singular="customresourcedefinition",
        namespaced=False,
        versions=["v1"],
        storage_version="v1",
        short_names=["crd", "crds"],
        categories=["api-extensions"],
        strategic_kind="apiextensions.k8s.io/CustomResourceDefinition",
        status_subresource=True,
        strategy=CustomResourceDefinitionStrategy(
            columns=[PrinterColumn("Created At", "date", ".metadata.creationTimestamp")],
            cells=lambda o: [o.get("metadata", {}).get("creationTimestamp", "")],
        ),
        schemas={
            "v1": object_schema(
                "CustomResourceDefinition represents a resource "
                "that should be exposed on the API server.",
                {
                    "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                },
                ["spec"],
            )
        },
    )
