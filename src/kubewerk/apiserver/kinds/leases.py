"""``coordination.k8s.io/v1`` Lease: the default strategy with its Table (Holder)."""

from __future__ import annotations

from kubewerk.apiserver.kinds.schemas import object_schema
from kubewerk.apiserver.registry import ServedResource
from kubewerk.apiserver.strategy import AGE, PrinterColumn, Strategy
from kubewerk.core.meta import age


def resource_type() -> ServedResource:
    return ServedResource(
        group="coordination.k8s.io",
        resource="leases",
        kind="Lease",
        list_kind="LeaseList",
        singular="lease",
        namespaced=True,
        versions=["v1"],
        storage_version="v1",
        strategic_kind="Lease",
        strategy=Strategy(
            columns=[PrinterColumn("Holder", "string", ".spec.holderIdentity"), AGE],
            cells=lambda o: [(o.get("spec") or {}).get("holderIdentity", ""), age(o)],
            # pkg/registry/coordination/lease/strategy.go: AllowCreateOnUpdate is true
            allow_create_on_update=True,
        ),
        schemas={
            "v1": object_schema(
                "Lease defines a lease concept.",
                {
                    "spec": {
                        "type": "object",
                        "properties": {
                            "holderIdentity": {"type": "string"},
                            "leaseDurationSeconds": {"type": "integer", "format": "int32"},
                            "acquireTime": {"type": "string", "format": "date-time"},
                            "renewTime": {"type": "string", "format": "date-time"},
                            "leaseTransitions": {"type": "integer", "format": "int32"},
                            "strategy": {"type": "string"},
                            "preferredHolder": {"type": "string"},
                        },
                    },
                },
            )
        },
    )
