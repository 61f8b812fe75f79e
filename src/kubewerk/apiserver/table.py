"""Server-side printing: ``meta.k8s.io/v1`` Table responses (what ``kubectl get`` shows).

A Table has a Name column (unless the kind's strategy says otherwise), then the columns
its strategy gives for the served version: a CRD's ``additionalPrinterColumns`` (or
Age when it declares none), the columns kube-apiserver prints for a built-in kind.
"""

from __future__ import annotations

import time
from typing import Any

from kubewerk.apiserver.registry import ServedResource

JSON = dict[str, Any]

_NAME_COLUMN = {
    "name": "Name",
    "type": "string",
    "format": "name",
    "description": "Name must be unique within a namespace. Is required when creating resources, "
    "although some resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
    "priority": 0,
}


def column_definitions(rtype: ServedResource, version: str) -> list[JSON]:
    strategy = rtype.strategy
    defs: list[JSON] = [dict(_NAME_COLUMN)] if strategy.name_column else []
    for col in strategy.columns(version):
        defs.append(
            {
                "name": col.name,
                "type": "string" if col.type == "date" else col.type,
                "format": col.format,
                "description": col.description,
                "priority": col.priority,
            }
        )
    return defs


def row(rtype: ServedResource, version: str, obj: JSON, include_object: str, now: float) -> JSON:
    meta = obj.get("metadata") or {}
    strategy = rtype.strategy
    cells: list[Any] = [strategy.name_cell(obj, version)] if strategy.name_column else []
    cells.extend(strategy.cells(obj, version, now))
    out: JSON = {"cells": cells}
    mode = include_object or "Metadata"
    if mode == "Object":
        out["object"] = obj
    elif mode == "Metadata":
        out["object"] = {
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": meta,
        }
    return out


def to_table(
    rtype: ServedResource,
    version: str,
    items: list[JSON],
    list_meta: JSON,
    include_object: str = "",
    headers: bool = True,
) -> JSON:
    """A Table of ``items`` (already in the served version)."""
    now = time.time()
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": column_definitions(rtype, version) if headers else [],
        "rows": [row(rtype, version, o, include_object, now) for o in items],
    }
