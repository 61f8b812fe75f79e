"""``v1`` ConfigMap: the default strategy with its Table (Data counts entries)."""

from __future__ import annotations

from kubewerk.apiserver.kinds.schemas import BYTES_MAP, STRING_MAP, object_schema
from kubewerk.apiserver.registry import ServedResource
from kubewerk.apiserver.strategy import AGE, PrinterColumn, Strategy
from kubewerk.core.meta import age


def resource_type() -> ServedResource:
    return ServedResource(
        group="",
        resource="configmaps",
        kind="ConfigMap",
        list_kind="ConfigMapList",
        singular="configmap",
        namespaced=True,
        versions=["v1"],
        storage_version="v1",
        short_names=["cm"],
        strategic_kind="ConfigMap",
        strategy=Strategy(
            columns=[PrinterColumn("Data", "string", ".data"), AGE],
            cells=lambda o: [len(o.get("data") or {}) + len(o.get("binaryData") or {}), age(o)],
        ),
        schemas={
            "v1": object_schema(
                "ConfigMap holds configuration data for pods to consume.",
                {
                    "data": STRING_MAP,
                    "binaryData": BYTES_MAP,
                    "immutable": {"type": "boolean"},
                },
            )
        },
    )
