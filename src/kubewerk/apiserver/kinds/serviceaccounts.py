"""``v1`` ServiceAccount: the default strategy with its Table; a delete answers the object."""

from __future__ import annotations

from kubewerk.apiserver.kinds.schemas import OBJECT_REFERENCE, object_schema
from kubewerk.apiserver.registry import ServedResource
from kubewerk.apiserver.strategy import AGE, PrinterColumn, Strategy
from kubewerk.core.meta import age


def resource_type() -> ServedResource:
    return ServedResource(
        group="",
        resource="serviceaccounts",
        kind="ServiceAccount",
        list_kind="ServiceAccountList",
        singular="serviceaccount",
        namespaced=True,
        versions=["v1"],
        storage_version="v1",
        short_names=["sa"],
        strategic_kind="ServiceAccount",
        return_deleted_object=True,
        strategy=Strategy(
            columns=[PrinterColumn("Secrets", "string", ".secrets"), AGE],
            cells=lambda o: [len(o.get("secrets") or []), age(o)],
        ),
        schemas={
            "v1": object_schema(
                "ServiceAccount binds together a name, a principal and secrets.",
                {
                    "secrets": {"type": "array", "items": OBJECT_REFERENCE},
                    "imagePullSecrets": {
                        "type": "array",
                        "items": {"type": "object", "properties": {"name": {"type": "string"}}},
                    },
                    "automountServiceAccountToken": {"type": "boolean"},
                },
            )
        },
    )
